"""scikit-learn style estimators for matrix and tensor completion."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
from numpy.typing import ArrayLike

from .._core import (
    RUN_CONSTRAINTS,
    BaseEstimator,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    InstanceOf,
    Interval,
    InvalidParameterError,
    NotFittedError,
    Options,
    RandomStateLike,
    as_array,
    check_is_fitted,
    check_memory,
    check_sample_weight,
    resolve_fit_context,
    to_numpy,
    validate_params,
)
from ..data import ObservedEntries, as_observed_entries
from ..data.entries import DuplicateEntriesError
from ..data.frames import (
    UNKNOWN_POLICIES,
    encode_ids,
    extend_ids,
    fitted_maps,
    frame_columns,
    is_frame,
    is_id_column,
    map_id_columns,
    public_ids,
    repeated_ids_error,
)
from ..linalg.distributed import PROCESS_GROUP_CONSTRAINT, Communicator
from ..metrics import rmse
from ..nn import RetrievalMixin
from ..optim import IterationState
from .binary import make_centering
from .centering import (
    CENTERINGS,
    check_center,
    choose_centering,
    split_weighted,
)
from .cp import CP_RIDGES, cp_als, cp_grid, cp_predict, cp_ranks
from .distributed import fit_centering, shared_seed
from .fold_in import (
    as_svd,
    component_ridge,
    fold_in_factors,
    grown_factors,
    refit_centering,
)
from .losses import LOSSES, Loss, SquareLoss, get_loss
from .path import (
    completion_problems,
    fit_path,
    refit_entries,
    refit_sample_weight,
    warm_refit,
)
from .postprocess import refine_ridge
from .problem import CompletionProblem, EntriesLike
from .proximal import check_mode_weights, default_mode_weights
from .regularizers import (
    REGULARIZERS,
    NuclearNorm,
    Regularizer,
    resolve_regularizer,
)
from .solvers import SOLVERS, resolve_solver

__all__ = ["MatrixCompletion", "TensorCompletion"]


#: Bytes per row and per column of each unfolding that a fit needs at least:
#: the float64 counts and sums of the centering, the CSR row pointers, and the
#: first columns of the factors (more as the rank grows).
_BYTES_PER_INDEX = 64
#: What to do when the shape is too large (it is max index + 1 by default).
_SIZE_HINT = (
    "A stray index or ids never remapped to 0..n-1 are the usual cause (the "
    "shape is max index + 1 unless shape= is given): drop the stray entries, or "
    "pass a DataFrame to map the ids to 0..n-1 (the model keeps the map; "
    "or np.unique(ids, return_inverse=True) by hand)."
)


def _check_size(owner: str, shape: tuple, device) -> None:
    """Refuse shapes whose per-row / per-column state cannot fit on ``device``."""
    total = 0
    for d in range(len(shape) if len(shape) > 2 else 1):
        others = [s for k, s in enumerate(shape) if k != d]
        total += shape[d] + math.prod(others)  # the mode-d unfolding's rows + cols
    kind = "matrix" if len(shape) == 2 else "tensor"
    check_memory(
        owner,
        _BYTES_PER_INDEX * total,
        device,
        f"the {' x '.join(map(str, shape))} {kind}'s per-row and per-column state",
        _SIZE_HINT,
    )


def _roles(ndim: int) -> tuple[str, ...]:
    """What the id columns of a matrix (tensor) are, in messages and maps."""
    return ("user", "item") if ndim == 2 else tuple(f"mode-{d}" for d in range(ndim))


def _index_arrays(X, cols, ndim: int, owner: str) -> list:
    """The ``ndim`` index (or id) columns of positions given in any accepted form."""
    if is_frame(X):
        return frame_columns(X, _roles(ndim), owner=owner, values="optional")[0]
    if cols is not None:
        arrays = (X, cols)
    elif isinstance(X, ObservedEntries):
        arrays = tuple(X.indices.T)
    elif isinstance(X, tuple) and len(X) in (ndim, ndim + 1):
        arrays = X[:ndim]
    else:
        a = as_array(X, "Positions")
        if a.ndim != 2 or a.shape[1] != ndim:
            raise DataValidationError(
                f"Positions must be an (n, {ndim}) array, a tuple of {ndim} index "
                f"arrays or ObservedEntries; got shape {a.shape}."
            )
        arrays = tuple(a.T)
    arrays = [np.atleast_1d(as_array(a, "An index array")) for a in arrays]
    if (
        len(arrays) != ndim
        or len({a.shape for a in arrays}) != 1
        or arrays[0].ndim != 1
    ):
        raise DataValidationError(
            f"Expected {ndim} 1-D index arrays of the same length; got shapes "
            f"{[a.shape for a in arrays]}."
        )
    return arrays


def _positions(idx: np.ndarray, size: int, name: str, unknown: str) -> np.ndarray:
    """Checked int64 positions of one mode; beyond ``size``: -1 unless raised."""
    if idx.dtype == np.bool_ or idx.dtype.kind not in "iuf":
        raise DataValidationError(
            f"{name} indices must be integers; got an array of dtype {idx.dtype}."
        )
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        if not np.all(np.floor(idx) == idx):
            raise DataValidationError(f"{name} indices must be integers.")
        idx = idx.astype(np.int64)
    bad = (idx < 0) | (idx >= size) if unknown == "raise" else idx < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{int(bad.sum())} {name} index(es) out of range [0, {size}); first: "
            f"position {i} has {name} {int(idx[i])}."
        )
    idx = idx.astype(np.int64)
    return idx if unknown == "raise" else np.where(idx >= size, -1, idx)


def _index_matrix(
    X, cols, shape, maps=None, unknown: str = "raise", owner: str = "the estimator"
) -> np.ndarray:
    """Positions given in any accepted form, as a checked (n, ndim) int64 array.

    A mode with an id map takes the user's ids; -1 marks an unknown id (or a
    position beyond the fitted size) where ``unknown`` is not ``"raise"``.
    """
    ndim = len(shape)
    arrays = _index_arrays(X, cols, ndim, owner)
    if maps is None or isinstance(X, ObservedEntries):  # entries hold codes
        maps = [None] * ndim
    out = []
    for d, (idx, size) in enumerate(zip(arrays, shape, strict=True)):
        if maps[d] is not None:
            what = f"{_roles(ndim)[d]} ids"
            out.append(
                encode_ids(idx, maps[d], what=what, unknown=unknown, owner=owner)
            )
            continue
        name = ("row", "column")[d] if ndim == 2 else f"mode-{d}"
        out.append(_positions(idx, size, name, unknown))
    return np.stack(out, axis=1)


def _id_columns(X, y, owner: str, ndim: int | None):
    """``(columns, values, from_frame)`` of input that may hold ids: a frame,
    a COO tuple, or positions with ``y``; None for the other forms."""
    if is_frame(X):
        if y is not None:
            raise DataValidationError(
                f"{owner} reads the values from the frame's last column; pass "
                "y=None with a DataFrame."
            )
        k = X.shape[1] - 1 if ndim is None else ndim
        columns, values = frame_columns(X, _roles(max(k, 1)), owner=owner)
        return columns, values, True
    if y is not None:
        if isinstance(X, tuple):
            return list(X), y, False
        a = as_array(X, "Positions")
        return (list(a.T), y, False) if a.ndim == 2 else None
    if not isinstance(X, tuple):
        return None
    if len(X) == 3 and ndim in (2, None) and np.ndim(X[0]) == 1:
        return [X[0], X[1]], X[2], False
    if len(X) == 2:
        idx = X[0]
        if isinstance(idx, (tuple, list)) and all(np.ndim(a) == 1 for a in idx):
            return list(idx), X[1], False
        if isinstance(idx, np.ndarray) and idx.ndim == 2:
            return list(idx.T), X[1], False
    return None


def _mapped_shape(shape, maps) -> tuple | None:
    """``shape`` checked against the sizes the id maps fix (None: infer all)."""
    if shape is None:
        return None
    for d, id_map in enumerate(maps):
        if id_map is not None and d < len(shape) and shape[d] != len(id_map):
            raise DataValidationError(
                f"shape={tuple(shape)} gives mode {d} size {shape[d]}, but its ids "
                f"were mapped to {len(id_map)} codes (one per distinct id): leave "
                "shape=None with ids, or pass positions 0..n-1."
            )
    return shape


def _unfolded_columns(idx: np.ndarray, shape, d: int) -> np.ndarray:
    """Column of each position in the mode-d unfolding (as in the problem)."""
    if len(shape) == 2:
        return idx[:, 1 - d]
    others = [k for k in range(len(shape)) if k != d]
    return np.ravel_multi_index(tuple(idx[:, others].T), [shape[k] for k in others])


#: Lambdas of the path of ``n_lambdas="auto"``: the nuclear norm's, and the
#: finer grid of a nonconvex regularizer, whose validation error turns
#: sharply at its optimum (it stops shrinking the leading singular values).
_PATH_LENGTH = {"nuclear": 20, "nonconvex": 30}


def _path_length(n_lambdas, regularizer) -> int:
    """``n_lambdas`` with "auto" resolved for the regularizer (None: nuclear)."""
    if n_lambdas != "auto":
        return n_lambdas
    return _PATH_LENGTH["nuclear" if regularizer is None else "nonconvex"]


def _positive(weight: np.ndarray | None, n: int) -> np.ndarray:
    """Which of ``n`` entries count as observed: weight > 0 (None: all)."""
    return np.ones(n, bool) if weight is None else weight > 0


def _seen_matrix(rows: np.ndarray, cols: np.ndarray, shape) -> sp.csr_matrix:
    """The seen pairs of ``recommend`` as a CSR of int8 ones (repeats: one)."""
    seen = sp.csr_matrix(
        (np.ones(rows.size, np.int8), (rows, cols)), shape=tuple(shape[:2])
    )
    seen.data[:] = 1  # a pair given twice was summed to 2
    return seen


class _CompletionEstimator(BaseEstimator):
    """Shared fit / predict machinery of the completion estimators."""

    _ndim: ClassVar[int | None] = 2
    #: The parameters every solve receives as they are, under the same names.
    _solve_parameters: ClassVar[tuple[str, ...]] = (
        "max_iter",
        "tol",
        "lam_decay",
        "power_iters",
        "max_rank",
        "verbose",
        "callback",
    )

    def _entries(self, X, y, shape, *, fitted: bool = False) -> ObservedEntries:
        """Observed entries of ``X`` (``y``): ids mapped at fit (new maps) or,
        with ``fitted``, through the maps of the fitted model."""
        owner = type(self).__name__
        maps = self._id_maps() if fitted else None
        read = _id_columns(X, y, owner, len(shape) if fitted else self._ndim)
        if read is not None and (
            read[2] or any(map(is_id_column, read[0])) or (maps and any(maps))
        ):
            columns, values, frame = read
            if fitted:
                columns = [
                    c if m is None else encode_ids(c, m, what=f"{r} ids", owner=owner)
                    for c, m, r in zip(columns, maps, _roles(len(maps)), strict=False)
                ]
            else:
                columns, maps = map_id_columns(
                    columns, _roles(len(columns)), every=frame
                )
                shape = _mapped_shape(shape, maps)
                self._fit_maps = maps
            try:
                entries = ObservedEntries(tuple(columns), values, shape)
            except DuplicateEntriesError as exc:
                raise repeated_ids_error(
                    exc.position, exc.count, maps, _roles(len(maps)), owner
                ) from None
        elif y is None:
            entries = as_observed_entries(X, shape, owner=owner)
        else:
            a = X if isinstance(X, tuple) else as_array(X, "Positions")
            ndim = (
                len(a) if isinstance(a, tuple) else (a.shape[1] if a.ndim == 2 else 0)
            )
            big = (np.iinfo(np.int64).max,) * max(ndim, 1)
            idx = _index_matrix(X, None, big)
            entries = ObservedEntries(idx, as_array(y, "y"), shape)
        self._check_entries(entries)
        return entries

    def _fit_entries(self, X, y, shape) -> ObservedEntries:
        """``fit``'s entries, their ids mapped and kept (``user_ids_``...)."""
        self._fit_maps = None
        entries = self._entries(X, y, shape)
        self._store_ids(self._fit_maps or [None] * entries.ndim)
        del self._fit_maps
        return entries

    def _id_maps(self) -> list:
        """The fitted id map of each mode (None: fitted on positions)."""
        return fitted_maps(self, self._mode_ids())

    def _mode_ids(self) -> list:
        raise NotImplementedError

    def _store_ids(self, maps: list) -> None:
        raise NotImplementedError

    def _check_entries(self, entries: ObservedEntries) -> None:
        if self._ndim is not None and entries.ndim != self._ndim:
            raise DataValidationError(
                f"{type(self).__name__} needs {self._ndim}-D entries; got shape "
                f"{entries.shape}. Use TensorCompletion for tensors."
            )
        if self._ndim is None and entries.ndim < 3:
            raise DataValidationError(
                f"TensorCompletion needs entries of 3 or more modes; got shape "
                f"{entries.shape}. Use MatrixCompletion for matrices."
            )

    def _check_loss(self) -> tuple[Loss, str]:
        """The loss, and the centering mode (``"auto"``: resolved in ``fit``)."""
        loss = get_loss(self.loss)
        return loss, check_center(self.center, loss, type(self).__name__)

    def _split(self, entries: ObservedEntries, weight, validation, rs):
        """``(train, weights), (validation, weights)``, held out if needed.

        The weights of held-out entries follow them; entries given as
        ``validation`` carry none (weight 1).
        """
        val = None
        if validation is not None:
            val = self._entries(validation, None, entries.shape, fitted=True)
            if val.shape != entries.shape:
                raise DataValidationError(
                    f"validation entries have shape {val.shape}, training entries "
                    f"{entries.shape}."
                )
        if self.lam != "auto" or val is not None:
            return (entries, weight), (val, None)
        if entries.nnz < 2:
            raise DataValidationError(
                "lam='auto' needs at least 2 observed entries to hold some out "
                "for validation; pass a float lam."
            )
        f = self.validation_fraction
        train, held = split_weighted(entries, weight, (1 - f, f), rs.numpy)
        for (_, w), what in ((train, "trained on"), (held, "held out")):
            if w is not None and not (w > 0).any():
                raise DataValidationError(
                    f"Every entry {what} to select lambda (validation_fraction="
                    f"{f}) has sample_weight 0. Pass validation entries, another "
                    "validation_fraction or random_state, or a float lam."
                )
        return train, held

    def _problems(self, entries, weight, validation, ctx, loss, center, comm=None):
        """Split, choose and fit the centering, and build the training problem
        and the refit problem on every entry (None unless ``lam="auto"`` with
        ``refit``); over the processes of ``comm`` when there is one. Returns
        the two problems and the split ``((train, w), (validation, w))``."""
        split = self._split(entries, weight, validation, ctx.random_state)
        (train, w_train), (val, w_val) = split
        self.center_, self.centering_selection_ = choose_centering(
            center,
            train,
            val,
            reg=self.center_reg,
            random_state=ctx.random_state.numpy,
            sample_weight=w_train,
            validation_weight=w_val,
        )
        self.centering_ = fit_centering(
            make_centering(self.center_, loss, self.scale, self.center_reg),
            train,
            w_train,
            comm,
        )
        # The refit uses every entry: a held-out part of entries is in entries.
        refit = w_refit = None
        if self.lam == "auto" and self.refit:
            given = None if validation is None else val
            refit = refit_entries(entries, given)
            w_refit = refit_sample_weight(entries, given, weight)
        # what the final solve trains on, for partial_fit
        self.entries_, self.sample_weight_ = (
            (train, w_train) if refit is None else (refit, w_refit)
        )
        problems = completion_problems(
            self.centering_,
            train,
            val,
            refit,
            loss=loss,
            device=ctx.device,
            dtype=ctx.dtype,
            sample_weight=w_train,
            validation_weight=w_val,
            refit_weight=w_refit,
            process_group=comm,
        )
        return problems, split

    def fit(
        self,
        X: EntriesLike,
        y: ArrayLike | None = None,
        *,
        shape: tuple[int, ...] | None = None,
        validation: EntriesLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> _CompletionEstimator:
        """Fit the completed matrix (tensor) to observed entries.

        Parameters
        ----------
        X : DataFrame, ObservedEntries, scipy.sparse, tuple (rows, cols,
            values) / (indices, values), dense array with NaN, or an (nnz,
            ndim) array of positions when ``y`` is given
            Observed entries (scipy.sparse: stored entries are observed). A
            pandas DataFrame is read by column position, never by name: the
            id columns (user, item; the D modes of a tensor), then the value;
            its ids, integers too, are mapped to codes 0..n-1 in sorted order
            (:class:`~embedopt.data.IdMap`; ids exactly 0..n-1 give the
            positional fit) and kept (``user_ids_``...), and ``predict``,
            ``score`` then take the same ids. In a tuple or position array, a
            column of strings (objects) is mapped the same way; an integer
            column stays positions.
        y : array-like, optional
            Values at the positions ``X``.
        shape : tuple of int, optional
            Shape for COO/position input (default: max index + 1); a mode of
            ids has one code per distinct id (a different size is refused).
        validation : same types as X (with values), optional
            Entries used to select lambda (``lam="auto"``) and tracked in
            ``history_``.
        sample_weight : array-like of shape (nnz,), optional
            One non-negative finite weight per observed entry of ``X`` (in
            the order of its entries: the positions with ``y``, the COO
            order of a tuple or of ``X.tocoo()``, the row-major order of the
            observed cells of a dense array), not all 0. Fits ``sum_Omega
            w_ij l(X_ij, O_ij) + lambda ||X||_*`` (see
            :class:`~embedopt.completion.CompletionProblem`); weight 0 drops
            an entry. Duplicate positions are still an error: to merge
            repeated observations, average them
            (:meth:`~embedopt.data.ObservedEntries.aggregate_duplicates`)
            and pass their counts as weights (the same square-loss objective
            up to a constant). The weights also weigh the centering (weighted
            means), ``lambda_max`` of ``lam="auto"`` (of the weighted
            gradient) and the validation error: entries held out of ``X``
            keep their weights and the error is weighted, as the training
            loss is, so a weight-0 entry is absent everywhere. Entries given
            as ``validation`` count with weight 1 (also in the refit).

        Returns
        -------
        self
        """
        ctx = self._start_fit()
        loss, center = self._check_loss()
        comm, ctx = self._group(ctx)
        regularizer = self._regularizer()
        entries = self._fit_entries(X, y, shape)
        _check_size(type(self).__name__, entries.shape, ctx.device)
        loss.check_labels(entries.values)
        weight = None
        if sample_weight is not None:
            weight = check_sample_weight(
                sample_weight,
                entries.nnz,
                owner=f"{type(self).__name__}.fit",
                unit="entry",
            )
        (problem, refit_problem), split = self._problems(
            entries, weight, validation, ctx, loss, center, comm
        )
        solver = resolve_solver(self.solver)
        fitted = fit_path(
            problem,
            lam=self.lam,
            refit_problem=refit_problem,
            solver=solver,
            postprocess=self.postprocess,
            n_lambdas=_path_length(self.n_lambdas, regularizer),
            lambda_min_ratio=self.lambda_min_ratio,
            patience=self.patience,
            regularizer=regularizer,
            random_state=ctx.random_state,
            **self._param_values(self._solve_parameters),
        )
        self.lam_ = fitted.lam
        self.regularizer_ = (regularizer or NuclearNorm()).at(self.lam_)
        self.path_ = None if fitted.path is None else fitted.path.summary()
        self._loss, self.shape_ = loss, entries.shape
        self._store_result(fitted.result, solver=solver)
        factors = fitted.factors
        if comm is not None:  # this process's rows of U -> all of them
            factors = problem.gather_factors(factors)
        self._export(factors)
        self._remember_entries(entries, weight)
        self._finish_fit(split)
        return self

    def _group(self, ctx):
        """``(communicator, context)``: no group, or its checks and one seed."""
        return None, ctx

    def _regularizer(self) -> Regularizer | None:
        """``regularizer`` with ``regularizer_params``, checked (None: nuclear)."""
        reg = self.regularizer
        if isinstance(reg, str) and reg == "auto":
            reg = "nuclear" if get_loss(self.loss).binary else "mcp"
        return resolve_regularizer(reg, self.regularizer_params, type(self).__name__)

    def _remember_entries(self, entries: ObservedEntries, weight) -> None:
        """Keep what later methods need of the training entries (nothing)."""

    def _finish_fit(self, split) -> None:
        """A last step of ``fit`` given its split ``((train, w), (validation,
        w))`` (nothing; TensorCompletion scores its CP models here)."""

    def _mode_factors(self) -> list:
        raise NotImplementedError

    def _set_mode_factors(self, factors: list) -> None:
        raise NotImplementedError

    # -- new data ----------------------------------------------------------------
    def partial_fit(
        self,
        X: EntriesLike,
        y: ArrayLike | None = None,
        *,
        refit: Literal["new", "all"] = "new",
        sample_weight: ArrayLike | None = None,
    ) -> _CompletionEstimator:
        """Add observed entries to a fitted model, users and items new to it too.

        Parameters
        ----------
        X : DataFrame, tuple, positions with ``y``, ObservedEntries,
            scipy.sparse, dense array with NaN
            The new entries, in the forms :meth:`fit` takes and in the ids
            of the fit (a model fitted on positions takes positions, and
            grows ``shape_`` for positions beyond it). Ids the model has not
            seen are added to ``user_ids_`` / ``item_ids_`` (``mode_ids_``),
            which stay sorted: the codes of known ids may move, and the
            factor rows, offsets and ``entries_`` move with them. An entry at
            a position already in ``entries_`` replaces it (a new rating).
        y : array-like, optional
            Values at the positions ``X``.
        refit : {"new", "all"}
            ``"new"`` (matrices): solve only the rows of users and the
            columns of items without training entries so far, everything
            else fixed (see :mod:`embedopt.completion.fold_in`): a user's
            factor row is the minimizer of the fitted loss on its entries
            plus the ridge ``lam_ / 2 ||a||^2`` that the nuclear norm puts on
            a balanced factor row (with a nonconvex ``regularizer`` the same
            ridge, its slope at 0: more shrinkage than the fit's leading
            directions had), in closed form for the square loss; its
            offset is the fitted centering's formula for it, the mean and
            the items' offsets fixed (the residuals' weighted sum over
            ``count + center_reg``). Entries of known users at known items
            are kept in ``entries_`` for a later ``refit="all"`` but change
            nothing now. ``"all"``: the same fold-in, then AIS-Impute at the
            fitted ``lam_`` on every entry (``entries_``), warm-started from
            the extended factors, with the centering refitted (same mode)
            and the fit's post-processing; what a fit with ``lam=lam_``
            would give, in a fraction of its time. Tensors take ``"all"``
            only: mode d's ``V_d`` has a row per combination of the other
            modes' indices, so a new index brings new rows into every other
            mode's factors, touched only by its own entries, and no
            fixed-subspace row solve places it. A CP model (``model_="cp"``)
            is refitted too: the latent solution as above, then CP-ALS on
            every entry from the CP factors (new indices start at 0 rows),
            the rank, ridge and choice of model kept.
        sample_weight : array-like of shape (nnz,), optional
            Weights of the new entries (as in :meth:`fit`); the entries of
            a fit without weights weigh 1.

        Returns
        -------
        self
            An unfitted model is fitted on ``X`` (``fit``, ``refit`` unused).
        """
        vars(self).pop("item_index_", None)  # new or refitted items outdate it
        if not hasattr(self, "shape_"):
            return self.fit(X, y, sample_weight=sample_weight)
        validate_params(
            f"{type(self).__name__}.partial_fit",
            {"refit": refit},
            {"refit": [Options(["new", "all"])]},
        )
        if refit == "new" and len(self.shape_) > 2:
            raise InvalidParameterError(
                "TensorCompletion.partial_fit takes refit='all' only: a new index "
                "of one mode adds rows to every other mode's factors (see the "
                "docstring)."
            )
        if not hasattr(self, "entries_"):
            raise NotFittedError(
                f"This {type(self).__name__} keeps no training entries (saved by "
                "an older embedopt): fit it again to use partial_fit."
            )
        added, weight, grow = self._added_entries(X, y, sample_weight)
        with self._unchanged_on_error():
            new = self._grow(*grow)
            self._merge_entries(added, weight)
            folded = self._fold_in(new)
            if refit == "all":
                self._refit_all(folded)
        return self

    def _added_entries(self, X, y, sample_weight):
        """``partial_fit``'s entries in grown codes, their weights, and the
        growth ``(maps, old_to_new, shape)``; nothing of the model changed."""
        owner = f"{type(self).__name__}.partial_fit"
        ndim, maps = len(self.shape_), self._id_maps()
        read = _id_columns(X, y, owner, ndim)
        if read is None:  # entries, sparse, dense: codes (positions)
            given = as_observed_entries(X, None, owner=owner)
            columns, values = list(given.indices.T), given.values
        else:
            columns, values = read[0], as_array(read[1], "y")
        if len(columns) != ndim:
            raise DataValidationError(
                f"{owner} needs {ndim} index columns (the model's modes); got "
                f"{len(columns)}."
            )
        grown, codes, old_to_new, shape = [], [], [], []
        for d, (column, m) in enumerate(zip(columns, maps, strict=True)):
            what = f"{_roles(ndim)[d]} ids"
            if m is not None and read is not None:
                m, c, moved = extend_ids(m, column, what=what)
            else:
                big = np.iinfo(np.int64).max
                c = _positions(np.asarray(column), big, what.split()[0], "raise")
                if m is not None and c.size and c.max() >= len(m):
                    raise DataValidationError(
                        f"{owner}: codes beyond the {len(m)} {what} of the fit; "
                        "pass new ids in a DataFrame or tuple of ids."
                    )
                moved = np.arange(self.shape_[d], dtype=np.int64)
            grown.append(m)
            codes.append(c)
            old_to_new.append(moved)
            size = int(c.max()) + 1 if c.size else 0
            shape.append(max(len(m) if m is not None else size, self.shape_[d]))
        entries = ObservedEntries(np.stack(codes, 1), values, tuple(shape))
        _check_size(type(self).__name__, entries.shape, self._factors_device())
        self._loss.check_labels(entries.values)
        if sample_weight is not None:
            sample_weight = check_sample_weight(
                sample_weight, entries.nnz, owner=owner, unit="entry"
            )
        return entries, sample_weight, (grown, old_to_new, entries.shape)

    def _factors_device(self) -> torch.device:
        """The device the fitted factors live on."""
        return self._mode_factors()[0][0].device

    def _grow(self, maps, old_to_new, shape) -> list:
        """Move the model to the grown codes (factors, offsets, entries_);
        per mode, the mask of the indices without training entries."""
        old = self.entries_
        idx = np.stack(
            [m[i] for m, i in zip(old_to_new, old.indices.T, strict=True)], axis=1
        )
        self.entries_ = ObservedEntries(idx, old.values, shape, validate=False)
        factors = grown_factors(self._mode_factors(), self.shape_, shape, old_to_new)
        self.centering_ = copy.copy(self.centering_)  # a new object: see partial_fit
        self.centering_.offsets_ = list(self.centering_.offsets_)
        for d, offsets in enumerate(self.centering_.offsets_):
            grown = np.zeros(shape[d])
            grown[old_to_new[d]] = offsets
            self.centering_.offsets_[d] = grown
        self.shape_ = tuple(shape)
        seen = getattr(self, "_seen", None)  # recommend's seen pairs, re-coded
        if seen is not None:
            seen = seen.tocoo()
            rows, cols = old_to_new[0][seen.row], old_to_new[1][seen.col]
            self._seen = _seen_matrix(rows, cols, shape)
        if any(m is not None for m in maps):
            self._store_ids(maps)
        self._set_mode_factors(factors)
        w = self.sample_weight_
        return [
            np.bincount(idx[:, d] if w is None else idx[w > 0, d], minlength=shape[d])
            == 0
            for d in range(len(shape))
        ]

    def _merge_entries(self, added: ObservedEntries, weight) -> None:
        """``entries_`` plus ``added``; an added entry replaces an old one."""
        old, w_old = self.entries_, self.sample_weight_
        # a binary search of the old positions among the few added ones
        have = np.ravel_multi_index(tuple(old.indices.T), old.shape)
        given = np.sort(np.ravel_multi_index(tuple(added.indices.T), old.shape))
        at = np.searchsorted(given, have).clip(0, given.size - 1)
        keep = given[at] != have
        self.entries_ = ObservedEntries(
            np.concatenate([old.indices[keep], added.indices]),
            np.concatenate([old.values[keep], added.values]),
            old.shape,
            validate=False,
        )
        if w_old is not None or weight is not None:
            w_old = np.ones(old.nnz) if w_old is None else w_old
            weight = np.ones(added.nnz) if weight is None else weight
            self.sample_weight_ = np.concatenate([w_old[keep], weight])
        seen = getattr(self, "_seen", None)
        if seen is not None:  # the added entries are seen now (weight > 0)
            seen, new = seen.tocoo(), added.indices[_positive(weight, added.nnz)]
            rows = np.concatenate([seen.row, new[:, 0]])
            self._seen = _seen_matrix(
                rows, np.concatenate([seen.col, new[:, 1]]), old.shape
            )

    def _fold_in(self, new: list) -> bool:
        """Offsets and factor rows of the indices in ``new`` that now have
        entries (matrices; tensors start them at 0 for ``refit="all"``);
        whether factor rows were solved (zero rows keep an SVD one)."""
        entries, w = self.entries_, self.sample_weight_
        has = [
            np.bincount(entries.indices[:, d], minlength=n) > 0
            for d, n in enumerate(entries.shape)
        ]
        new = [n & h for n, h in zip(new, has, strict=True)]
        if not any(n.any() for n in new):
            return False
        self.centering_.fold_in(entries, new, w)
        if len(self.shape_) > 2:
            return False
        touch = new[0][entries.indices[:, 0]] | new[1][entries.indices[:, 1]]
        part = self.centering_.transform(entries.subset(np.flatnonzero(touch)))
        factors = fold_in_factors(
            self.factors_,
            part.indices,
            part.values,
            None if w is None else w[touch],
            (new[0], new[1]),
            lam=self._fold_in_lam(),
            loss=self._loss,
        )
        self._set_mode_factors([factors])
        return True

    def _fold_in_lam(self) -> float | torch.Tensor:
        """The penalty of (1) in fold_in: ``lam_``; for a refined model
        (whose rows minimize the square loss plus ``ridge ||a||^2``) the
        ridge of that refinement; for a nonconvex regularizer, ``lam_``
        times its weights at the fitted singular values, per component (its
        refit froze them there; :func:`~.fold_in.component_ridge`), at least
        the refinement's ridge."""
        finishing = self._finishing()
        if finishing != "refine" and self.regularizer_.convex:
            return self.lam_
        centered = self.centering_.transform(self.entries_).values
        ridge = refine_ridge(centered, self.sample_weight_)
        if finishing == "refine":
            return ridge
        s = self.factors_[1]
        return component_ridge(self.lam_, self.regularizer_.weights(s)[:-1], ridge)

    def _finishing(self) -> str:
        """What the fit did after its last solve: "refine", "postprocess", "none"."""
        if self.path_ is None:
            return "postprocess" if self.postprocess else "none"
        i = int(np.argmin(np.abs(self.path_["lambdas"] - self.lam_)))
        if self.path_["refined"][i]:
            return "refine"
        return "postprocess" if self.path_["postprocessed"][i] else "none"

    def _refit_all(self, folded: bool) -> None:
        """AIS-Impute at ``lam_`` on ``entries_``, warm-started (``refit="all"``);
        ``folded``: rows were added to the factors (an SVD again first)."""
        ctx = self._start_fit()
        entries, w = self.entries_, self.sample_weight_
        self.centering_ = refit_centering(
            getattr(self, "centering_", None),
            self.center_,
            self._loss,
            self.scale,
            self.center_reg,
            entries,
            w,
        )
        problem = CompletionProblem(
            self.centering_.transform(entries),
            loss=self._loss,
            device=ctx.device,
            dtype=ctx.dtype,
            sample_weight=w,
        )
        init = [
            as_svd(*f) if folded else f
            for f in (problem.on_device(*f) for f in self._mode_factors())
        ]
        fitted = warm_refit(
            problem,
            init if len(init) > 1 else init[0],
            lam=self.lam_,
            solver=self.solver_,
            finish=self._finishing(),
            regularizer=self._regularizer(),
            random_state=ctx.random_state,
            **self._param_values(self._solve_parameters),
        )
        self._store_result(fitted.result, solver=self.solver_)
        self._set_mode_factors(
            list(fitted.factors) if len(init) > 1 else [fitted.factors]
        )

    # -- prediction --------------------------------------------------------------
    def decision_function(
        self, X: EntriesLike, cols: ArrayLike | None = None
    ) -> np.ndarray:
        """Completed values at the given positions, on the original scale.

        Parameters
        ----------
        X : (n, ndim) array of positions, tuple of index arrays, DataFrame,
            ObservedEntries, or (matrices) the row indices with ``cols``
            The user's ids where the model was fitted on ids (a frame: its
            first ndim columns, a value column after them is ignored);
            ObservedEntries always hold codes 0..n-1.
        cols : array-like, optional
            Column indices (ids) (matrices).

        Returns
        -------
        numpy.ndarray of float64, shape (n,)
            Never forms the dense matrix (tensor): O(n rank) work. Where an
            id is unknown (or a position beyond ``shape_``), what
            ``unknown`` says: an error, NaN, or the fallback value.
        """
        check_is_fitted(self, "shape_")
        return self._values_at(self._query(X, cols))

    def _values_at(self, idx: np.ndarray) -> np.ndarray:
        """Completed values at codes ``idx`` (n, ndim); -1 marks unknown ids."""
        known = (idx >= 0).all(axis=1)
        if not known.all():
            return self._with_unknown(idx, known)
        return self._scores(idx)

    def _query(self, X, cols=None) -> np.ndarray:
        """(n, ndim) codes of the positions (ids) asked; -1 marks unknown ones."""
        return _index_matrix(
            X, cols, self.shape_, self._id_maps(), self.unknown, type(self).__name__
        )

    def _scores(self, idx: np.ndarray) -> np.ndarray:
        """Completed values at known positions ``idx`` (n, ndim), original scale."""
        out = np.zeros(idx.shape[0], dtype=np.float64)
        step = 1 << 20
        for d, (U, s, V) in enumerate(self._mode_factors()):
            if s.numel() == 0:
                continue
            Us = U * s
            col = _unfolded_columns(idx, self.shape_, d)
            row = idx[:, d]
            for a in range(0, row.size, step):
                ri = torch.as_tensor(row[a : a + step], device=U.device)
                ci = torch.as_tensor(col[a : a + step], device=U.device)
                out[a : a + step] += to_numpy((Us[ri] * V[ci]).sum(1).double())
        return self.centering_.inverse_transform(tuple(idx.T), out)

    def _with_unknown(self, idx: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Values where some mode is unknown: NaN (``unknown="nan"``) or, with
        ``"fallback"``, the model's value for an id without data: the low-rank
        part is 0 there (its factor row would be 0), which leaves the fitted
        mean plus the offsets of the known modes (0 with ``center="none"``)."""
        out = np.full(idx.shape[0], np.nan)
        if known.any():
            out[known] = self._scores(idx[known])
        if self.unknown == "fallback":
            cen, rest = self.centering_, ~known
            value = np.full(int(rest.sum()), cen.mean_)
            for off, i in zip(cen.offsets_, idx[rest].T, strict=True):
                value += np.where(i >= 0, off[np.maximum(i, 0)], 0.0)
            out[rest] = value
        return out

    def predict(self, X: EntriesLike, cols: ArrayLike | None = None) -> np.ndarray:
        """Predicted entries: values, or +/-1 labels for binary losses.

        Parameters
        ----------
        X, cols
            See :meth:`decision_function`.

        Returns
        -------
        numpy.ndarray, shape (n,)
            NaN where ``unknown="nan"`` met an unknown id.
        """
        scores = self.decision_function(X, cols)
        if self._loss.binary:
            return np.where(np.isnan(scores), np.nan, np.where(scores >= 0, 1.0, -1.0))
        return scores

    def score(
        self,
        X: EntriesLike,
        y: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> float:
        """Negative RMSE (greater is better), or accuracy for binary losses.

        Parameters
        ----------
        X : DataFrame, ObservedEntries, tuple, scipy.sparse, dense array with
            NaN, or positions with ``y``
            As for :meth:`fit`, in the ids of the fit.
        y : array-like, optional
        sample_weight : array-like of shape (n,), optional
            One non-negative weight per entry (as in :meth:`fit`): the
            weighted RMSE ``sqrt(sum w e^2 / sum w)``, or weighted accuracy.

        Returns
        -------
        float
            NaN where ``unknown="nan"`` met an unknown id.
        """
        check_is_fitted(self, "shape_")
        if (
            self.unknown == "raise"
            or _id_columns(X, y, type(self).__name__, len(self.shape_)) is None
        ):
            entries = self._entries(X, y, self.shape_, fitted=True)
            pred = self._values_at(entries.indices)
            values = entries.values
        else:  # unknown ids are no error: no ObservedEntries of them
            columns, values, _ = _id_columns(
                X, y, type(self).__name__, len(self.shape_)
            )
            idx = self._query(tuple(columns))
            values = ObservedEntries(
                np.maximum(idx, 0), values, self.shape_, check_duplicates=False
            ).values
            pred = self._values_at(idx)
        if self._loss.binary:
            hits = np.where(pred >= 0, 1.0, -1.0) == values
        if sample_weight is None:
            if self._loss.binary:
                return float(np.mean(hits))
            return -rmse(values, pred)
        w = check_sample_weight(
            sample_weight,
            values.size,
            owner=f"{type(self).__name__}.score",
            unit="entry",
        )
        w = w / w.max()  # the same weighted mean, no overflow
        if self._loss.binary:
            return float(np.sum(w * hits) / np.sum(w))
        err = (pred - values) ** 2
        return -float(np.sqrt(np.sum(w * err) / np.sum(w)))

    def to_dense(self, max_elements: int = 10**8) -> np.ndarray:
        """The whole completed matrix (tensor) on the original scale; small only.

        Parameters
        ----------
        max_elements : int
            Refuse to build an array with more entries than this.

        Returns
        -------
        numpy.ndarray of shape ``shape_``
            Rows (columns, modes) in code order: that of ``user_ids_``
            (``item_ids_``, ``mode_ids_``) where the model was fitted on ids.
        """
        check_is_fitted(self, "shape_")
        validate_params(
            f"{type(self).__name__}.to_dense",
            {"max_elements": max_elements},
            {"max_elements": [Interval(int, 0, None)]},
        )
        size = math.prod(self.shape_)
        if size > max_elements:
            raise DataValidationError(
                f"The completed array has {size} entries (> max_elements="
                f"{max_elements}); use predict(...) for the entries you need."
            )
        idx = np.stack(np.unravel_index(np.arange(size), self.shape_), axis=1)
        return self._values_at(idx).reshape(self.shape_)  # codes, not ids


class MatrixCompletion(_CompletionEstimator, RetrievalMixin):
    """Low-rank matrix completion with nuclear-norm (or nonconvex) regularization.

    Fits ``min_X sum_{Omega} l(X_ij, O_ij) + lambda ||X||_*`` with AIS-Impute
    (or one of its baselines), on centered values, with lambda chosen on a
    validation set by default, and post-processed singular values; with
    ``regularizer``, ``lambda r(X)`` of a nonconvex low-rank regularizer
    instead (Sec. 3.7 of Yao & Kwok).

    A fitted model is also a recommender, with the retrieval surface of the
    two-tower models (:class:`~embedopt.nn.RetrievalMixin`):
    ``recommend(users, k, *, exclude_seen, items, filter_items)`` ranks the
    items of each user by the completed matrix, ``U diag(s) V^T`` plus the
    centering offsets (the scores are the predicted ratings of
    :meth:`decision_function`, up to float rounding: the item offset changes
    the ranking, the user's offset and the mean do not but keep the scores
    on the ratings' scale), batched over users, never the m x n matrix;
    ``exclude_seen`` leaves out the training entries (those of ``X`` with a
    positive weight; not ``validation``). ``similar_items`` and
    ``similar_users`` rank by the cosine of the rows of ``V diag(s)`` (``U
    diag(s)``): as ``U`` (``V``) has orthonormal columns, that is the cosine
    between two columns (rows) of the centered completed matrix, the
    adjusted-cosine similarity of item-based collaborative filtering on the
    completed ratings. Rows of ``V`` alone would weigh a direction of
    singular value 0.01 like the leading one, and ``V diag(s)^(1/2)`` has no
    such reading. ``evaluate`` ranks held-out entries as relevant pairs
    (every entry, whatever its value: pass only the liked ones to count
    those).

    Parameters
    ----------
    lam : float or "auto"
        lambda. ``"auto"`` solves a warm-started path (see
        :func:`~embedopt.completion.lambda_path`) and keeps the lambda with the
        best validation score; validation entries are the ``validation``
        argument of ``fit`` or, without it, a random ``validation_fraction`` of
        the training entries.
    loss : {"square", "logistic", "squared_hinge"} or Loss
        The +/-1 losses are for binary completion (e.g. link signs); their
        ``score`` is accuracy.
    solver : {"ais_impute", "ais_impute_exact", "soft_impute", "apg", "auto"}
        ``"auto"`` is ``"ais_impute"`` (see
        :func:`~embedopt.completion.resolve_solver`).
    regularizer : str or Regularizer
        "auto" (default), "nuclear", "tnn", "capped_l1", "lsp" or "mcp":
        ``r(X) = sum_i rbar(sigma_i(X))``
        (:mod:`~embedopt.completion.regularizers`): the nuclear norm, the
        truncated nuclear norm (the leading ``rank`` singular values free),
        capped-l1, the log-sum penalty or the minimax concave penalty, each
        with slope 1 at 0 so that lambda and its path keep their meaning.
        A nonconvex one runs the same solver with the weighted SVT of its
        linearization at the current iterate, recomputed at every
        iteration (IRNN's reweighting inside AIS-Impute, Lemma 3.6); the
        path and post-processing are unchanged. The refit on all training
        entries and ``partial_fit(refit="all")`` freeze those weights at
        their start (the validated solution), so that they stay near it.
        Any spelling (``"capped-l1"``). ``"auto"``: ``"mcp"`` for the square
        loss, ``"nuclear"`` for the +/-1 losses (not measured with
        another). MCP stops shrinking the leading singular values, so the
        validation picks a larger lambda and a lower rank: on ratings it
        predicts better in less time (ML-1M, three 80/20 splits: test RMSE
        about 1 % lower at half the rank in 0.6-0.7x the time;
        ``benchmarks/completion/libmf_peer.py --variants '{"regularizer":
        "nuclear"}' '{}'``). On small exactly low-rank matrices the nuclear
        norm is up to a few percent better: pass ``"nuclear"`` there, and for
        the convex problem (1) of the paper.
    regularizer_params : dict, optional
        The named regularizer's parameters: ``{"rank": int}`` for "tnn"
        (default 5); ``{"gamma": float}`` for "capped_l1", "lsp", "mcp":
        their scale ``theta = gamma * lambda`` at each lambda (defaults 4,
        8, 16: :data:`~embedopt.completion.regularizers.REGULARIZER_DEFAULTS`),
        or ``{"theta": float}`` for a fixed one on the scale of the
        singular values. None for "nuclear" and for an instance.
    max_rank : int, optional
        Cap on the rank of the iterates.
    max_iter : int
        Iterations per solve.
    tol : float
        Relative objective change that stops a solve (paper: 1e-4).
    lam_decay : float
        Continuation factor nu in (0, 1).
    power_iters : int
        Power iterations per approximate SVT (paper: 3).

        Defaults ``tol=1e-3`` and ``power_iters=1`` (not the paper's 1e-4 and
        3): the lambda path only needs to rank the lambdas, each SVT is warm
        started from the last iterate's subspace, and the selected solution
        is then refitted: MovieLens-1M fits in 2.6x less CPU time at the same
        test RMSE to 3e-4 (``benchmarks/completion/defaults.py``). The
        functions (:func:`ais_impute`, :func:`lambda_path`) keep the paper's
        values.
    postprocess : bool or "auto"
        Refit the singular values after solving (Sec. 3.6). ``"auto"`` (with
        ``lam="auto"``) keeps whichever of the raw and post-processed solutions
        validates better at each lambda; with a fixed ``lam`` it means True.
    center : {"auto", "none", "global", "row", "column", "both"}
        Offsets removed before the low-rank fit (see
        :class:`~embedopt.completion.Centering`). With the +/-1 losses only
        ``"none"`` or ``"both"``: their labels are not shifted, ``"both"``
        fits a row and a column offset inside the loss instead
        (:class:`~embedopt.completion.binary.LossCentering`), which ranks
        better but, at the lambda that validation accuracy selects, is not
        more accurate (Bitcoin Alpha signs, 5 splits: median test AUC 0.81
        -> 0.90, the same median accuracy, a worse worst split;
        ``benchmarks/completion/link_prediction.py``).
        ``"auto"``: ``"none"`` for the +/-1 losses; otherwise chosen
        from the data by :func:`~embedopt.completion.select_centering` on the
        validation entries (a held-out tenth of the training entries when
        there are none; "both" when there are fewer than 20 entries):
        ``"both"`` on ratings (MovieLens), ``"none"`` on a zero-mean low-rank
        matrix, where fitted offsets are noise (Table III problem: test NMSE
        0.12 with "both", 0.037 with "none"; ``benchmarks/completion/
        defaults.py``).
    scale : bool
        Also divide centered values by their standard deviation.
    center_reg : float
        Ridge pseudo-count of the row/column offsets.
    n_lambdas, lambda_min_ratio, patience : int or "auto", float, int
        The path of ``lam="auto"`` (see
        :func:`~embedopt.completion.lambda_path`). ``n_lambdas="auto"``: 20
        for the nuclear norm, 30 for a nonconvex regularizer (a ratio of 1.26
        between lambdas instead of 1.41), whose validation error turns more
        sharply at its optimum.
    validation_fraction : float
        Fraction of entries held out to select lambda when ``fit`` receives no
        validation entries.
    refit : bool
        With ``lam="auto"``, solve once more at the selected lambda on training
        plus validation entries (warm-started, so cheap): the held-out part of
        the training entries, or the ``validation`` entries passed to ``fit``.
    unknown : {"raise", "nan", "fallback"}
        What ``predict`` (``decision_function``, ``score``) does with an id
        unseen at fit, or a position beyond ``shape_`` of a model fitted on
        positions: raise a DataValidationError naming it, predict NaN, or
        predict what the model predicts for an id without data, whose factor
        row is 0: the fitted mean plus the offsets of the known ids
        (``centering_``; 0 with ``center="none"``). ``recommend`` follows
        the same rule: an unknown user gets NaN scores, or the items ranked
        by that prediction, the mean plus the item offsets (ties, e.g. all
        of them with ``center="none"``, by training entries per item:
        popularity), nothing excluded; ``similar_items`` /
        ``similar_users`` give an unknown id the items / users with the
        most training entries.
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
    callback : callable, optional
        Called after every solver iteration (see :mod:`embedopt.optim`).
    process_group : None, "default" or torch.distributed.ProcessGroup
        Data-parallel fit (see Notes): None fits in this process;
        ``"default"`` spreads the rows over the default process group
        (``torch.distributed.init_process_group``, e.g. under ``torchrun``),
        a group object over that group. Every process of the group calls
        ``fit`` with the same data and parameters and ends with the same
        model.

    Attributes
    ----------
    U_ : numpy.ndarray, shape (m, rank_)
    s_ : numpy.ndarray, shape (rank_,)
    V_ : numpy.ndarray, shape (n, rank_)
        ``U_ diag(s_) V_^T`` is the completed matrix on the centered/scaled scale.
    factors_ : tuple of torch.Tensor
        The same factors as tensors on the fitting device.
    rank_ : int
    lam_ : float
        The lambda used (selected one with ``lam="auto"``).
    path_ : dict or None
        With ``lam="auto"``: ``lambdas``, ``scores``, ``ranks``, ``times``,
        ``metric``, ``postprocessed`` and ``refined`` (which solution was
        scored at each lambda, see :func:`~embedopt.completion.lambda_path`).
    centering_ : Centering
        A :class:`~embedopt.completion.binary.LossCentering` for a +/-1 loss
        with ``center="both"``.
    center_ : str
        The centering mode used (``center``, or the one ``"auto"`` chose).
    centering_selection_ : CenteringSelection or None
        With ``center="auto"`` and a non-binary loss: the validation errors
        and test statistics behind ``center_``.
    solver_ : str
        The registry name of the solver that ran (``solver`` resolved).
    regularizer_ : Regularizer
        The regularizer of the final solve, its scale at ``lam_``
        (``NuclearNorm()`` by default).
    history_ : dict of numpy.ndarray
        Convergence history of the final solve.
    n_iter_ : int
    stop_reason_ : str
    objective_ : float
        The final solve's objective (before any post-processing).
    shape_ : tuple of int
    user_ids_, item_ids_ : numpy.ndarray or None
        The ids of the rows and columns, in code order (sorted), as int64 or
        str, where ``fit`` mapped them (a DataFrame, string ids); None for
        positions.
    entries_ : ObservedEntries
        The entries the final solve was fitted on (codes; every entry, or
        the training part of a ``lam="auto"`` fit without ``refit``),
        kept for :meth:`partial_fit`, which adds to them.
    sample_weight_ : numpy.ndarray or None
        Their weights (None: all 1).

    Notes
    -----
    With ``process_group``, every solve of the fit (the lambda path, the
    refit) is data-parallel AIS-Impute
    (:mod:`embedopt.completion.distributed`): each process keeps a block of
    rows with their entries,
    sums over the observed entries (loss, validation error, ``Z^T Q``) are
    all-reduced, and the rows of ``U_`` are all-gathered at the end, so every
    process holds bitwise the same model, equal to a one-process fit up to
    rounding. The centering is fitted the same way (each process on its
    rows' entries, the sums all-reduced); the split, the choice of
    ``center="auto"`` and the seen pairs of ``recommend`` are computed by
    every process on the whole data (the same on each; a ``random_state``
    that is not an int is replaced by a seed drawn on the group's first
    process). Only ``solver="ais_impute"`` runs on a group,
    and ``postprocess="auto"`` scores the raw and post-processed solutions
    but not the rank-r refinements (``refine``: their ALS has no
    data-parallel form here); ``partial_fit`` runs in one process.

    Examples
    --------
    >>> from embedopt.data import make_low_rank_matrix
    >>> from embedopt.completion import MatrixCompletion
    >>> prob = make_low_rank_matrix(300, rank=3, random_state=0)
    >>> model = MatrixCompletion(random_state=0).fit(prob.observed)
    >>> model.predict([0, 1], [2, 3]).shape
    (2,)
    """

    _parameter_constraints: ClassVar[dict] = {
        "lam": [Interval(float, 0, None, closed="neither"), Options(["auto"])],
        "loss": [Options(LOSSES), InstanceOf(Loss, "a Loss instance")],
        "solver": [Options(SOLVERS), Options(["auto"])],
        "regularizer": [
            Options(REGULARIZERS),
            Options(["auto"]),
            InstanceOf(Regularizer, "a Regularizer instance"),
        ],
        "regularizer_params": [InstanceOf(dict, "a dict"), None],
        "max_rank": [Interval(int, 1, None), None],
        "max_iter": [Interval(int, 1, None)],
        "tol": [Interval(float, 0, None)],
        "lam_decay": [Interval(float, 0, 1, closed="neither")],
        "power_iters": [Interval(int, 0, None)],
        "postprocess": ["boolean", Options(["auto"])],
        "center": [Options((*CENTERINGS, "auto"))],
        "scale": ["boolean"],
        "center_reg": [Interval(float, 0, None)],
        "n_lambdas": [Interval(int, 1, None), Options(["auto"])],
        "lambda_min_ratio": [Interval(float, 0, 1, closed="neither")],
        "patience": [Interval(int, 1, None), None],
        "validation_fraction": [Interval(float, 0, 1, closed="neither")],
        "refit": ["boolean"],
        "unknown": [Options(UNKNOWN_POLICIES)],
        **RUN_CONSTRAINTS,
        "process_group": PROCESS_GROUP_CONSTRAINT,
    }

    def __init__(
        self,
        lam: float | Literal["auto"] = "auto",
        *,
        loss: str | Loss = "square",
        solver: str = "ais_impute",
        regularizer: str | Regularizer = "auto",
        regularizer_params: dict | None = None,
        max_rank: int | None = None,
        max_iter: int = 500,
        tol: float = 1e-3,
        lam_decay: float = 0.85,
        power_iters: int = 1,
        postprocess: bool | Literal["auto"] = "auto",
        center: str = "auto",
        scale: bool = False,
        center_reg: float = 5.0,
        n_lambdas: int | Literal["auto"] = "auto",
        lambda_min_ratio: float = 1e-3,
        patience: int | None = 1,
        validation_fraction: float = 0.1,
        refit: bool = True,
        unknown: str = "raise",
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float32",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
        process_group: Literal["default"] | dist.ProcessGroup | None = None,
    ):
        self._store_params(locals())

    def _group(self, ctx):
        """``(communicator, context)`` of ``process_group``, checked before any
        work; the context's seed is the group's first process's."""
        if self.process_group is None:
            return None, ctx
        owner = type(self).__name__
        comm = Communicator(self.process_group, owner)
        if resolve_solver(self.solver) != "ais_impute":
            raise InvalidParameterError(
                f"{owner}: solver={self.solver!r} runs in one process only; with a "
                "process_group use 'ais_impute' or 'auto'."
            )
        seed = shared_seed(self.random_state, comm, ctx.device)
        return comm, resolve_fit_context(
            random_state=seed, device=ctx.device, dtype=ctx.dtype, owner=owner
        )

    def _export(self, factors) -> None:
        self.factors_ = tuple(factors)
        U, s, V = (to_numpy(a) for a in factors)
        self.U_, self.s_, self.V_ = U, s, V
        self.rank_ = int(s.shape[0])

    def _mode_factors(self) -> list:
        return [self.factors_]

    def _set_mode_factors(self, factors: list) -> None:
        self._export(factors[0])

    def _store_ids(self, maps: list) -> None:
        self.user_ids_, self.item_ids_ = (public_ids(m) for m in maps)

    def _mode_ids(self) -> list:
        return [self.user_ids_, self.item_ids_]

    # -- the retrieval hooks (RetrievalMixin) ----------------------------------------
    _similarity = "cosine"
    _pair_values = "optional"  # held-out entries may carry their values

    def _remember_entries(self, entries: ObservedEntries, weight) -> None:
        """The training entries (weight > 0) as the seen pairs of ``recommend``
        (``partial_fit`` re-codes and extends them)."""
        keep = _positive(weight, entries.nnz)
        self._seen = _seen_matrix(entries.rows[keep], entries.cols[keep], entries.shape)

    def _offset_columns(self, side: int, codes: np.ndarray, like) -> torch.Tensor:
        """The two columns that add the centering to an inner product: a
        user's ``[mean + a_u, 1]``, an item's ``[1, b_i]``."""
        cen = self.centering_
        off = cen.offsets_[side][codes]
        ones = np.ones(codes.size)
        cols = [cen.mean_ + off, ones] if side == 0 else [ones, off]
        return torch.as_tensor(np.stack(cols, 1), dtype=like.dtype, device=like.device)

    def _user_vectors(self, users: np.ndarray) -> torch.Tensor:
        U, s, _ = self.factors_
        head = U[torch.as_tensor(users, device=U.device)] * (s * self.centering_.scale_)
        return torch.cat([head, self._offset_columns(0, users, U)], 1)

    def _item_vectors(self, items: np.ndarray | None) -> torch.Tensor:
        _, _, V = self.factors_
        items = np.arange(self.shape_[1]) if items is None else items
        head = V[torch.as_tensor(items, device=V.device)]
        return torch.cat([head, self._offset_columns(1, items, V)], 1)

    def _neighbour_vectors(self, side: int, codes: np.ndarray | None) -> torch.Tensor:
        U, s, V = self.factors_
        W = (U, V)[side] * s
        return W if codes is None else W[torch.as_tensor(codes, device=W.device)]

    def _fallback_items(self, k: int, candidates: np.ndarray | None):
        """Items by what ``predict`` gives an unknown user, the mean plus the
        item offsets; ties by training entries per item, then lowest code."""
        counts = self._counts(1)
        codes = np.arange(counts.size) if candidates is None else candidates
        value = self.centering_.mean_ + self.centering_.offsets_[1][codes]
        order = np.lexsort((codes, -counts[codes], -value))[:k]
        return codes[order], value[order]


class TensorCompletion(_CompletionEstimator):
    """Low-rank tensor completion with the scaled latent nuclear norm.

    Fits ``min sum_{Omega} l(sum_d X^d, O) + sum_d lambda_d ||X^d_<d>||_*``
    (problem (30) of Yao & Kwok) with AIS-Impute for tensors (Algorithm 4): one
    low-rank component per mode, each kept as the SVD of its mode-d unfolding,
    so no dense tensor or unfolding is ever formed. ``lambda_d = lam *
    mode_weights[d]``; lambda is chosen on a validation set by default and the
    singular values post-processed (Sec. 4.5).

    Unlike :class:`MatrixCompletion` it has no ``recommend``: a tensor's
    cells are (user, item, context...) and which mode asks, which mode is
    ranked and what the other modes are held at is the application's
    choice, not the model's. Score the candidate cells with :meth:`predict`
    (O(cells x rank), no dense tensor) and take their top-k.

    Parameters
    ----------
    lam : float or "auto"
    mode_weights : sequence of float, optional
        Default ``sqrt(max_k I_k / I_d)`` (the paper's ``(1, 1, sqrt(m/3))`` for
        m x m x 3 tensors, Sec. 5.6).
    loss, solver, regularizer, regularizer_params, max_rank, max_iter, tol,
    lam_decay, power_iters, postprocess, center, scale, center_reg, n_lambdas,
    lambda_min_ratio, patience, validation_fraction, refit, unknown,
    random_state, device, dtype, verbose, callback
        As in :class:`MatrixCompletion`, except that ``tol`` and
        ``power_iters`` keep the paper's 1e-4 and 3 and ``regularizer`` is
        ``"nuclear"`` (the matrix defaults were tuned on matrices only).
        ``center="both"``, which ``center="auto"`` picks when the offsets
        predict held-out entries better, removes an offset per index of
        every mode. A nonconvex
        ``regularizer`` applies to every mode's component, at its own
        ``lambda_d`` (``theta = gamma * lambda_d``). ``postprocess="auto"``
        with the square loss and ``lam="auto"`` (or ``validation``) also
        fits masked CP models on the centered training entries (sparse
        CP-ALS, :mod:`embedopt.completion.cp`; the ranks of
        :func:`~embedopt.completion.cp.cp_ranks` with each ridge of
        ``CP_RIDGES``), scores them on the same validation entries as the
        lambda path and keeps a CP model, refitted on every training entry
        from its start, where one validates better than the latent
        solution: the latent norm's components are low-rank in one
        unfolding each and cannot share what the modes have in common,
        which a CP model does (issue 24).

    Attributes
    ----------
    model_ : {"latent", "cp"}
        The model that predicts: the latent-norm solution (``factors_``)
        or the CP model (``cp_factors_``).
    factors_ : list of tuple of torch.Tensor
        ``(U_d, s_d, V_d)`` per mode: ``X^d_<d> = U_d diag(s_d) V_d^T``;
        the latent solution, also kept (refitted) when ``model_="cp"``.
    ranks_ : list of int
        Rank of each latent component.
    cp_rank_, cp_ridge_ : int, float or None
        Rank and ridge (on values divided by their RMS) of the CP model;
        None when ``model_="latent"``.
    cp_factors_ : list of numpy.ndarray or None
        ``A_d`` of shape ``(I_d, cp_rank_)``: the centered completion is
        ``sum_k prod_d A_d[i_d, k]``.
    cp_n_sweeps_ : int or None
        ALS sweeps of the CP refit.
    model_selection_ : dict or None
        Validation RMSE (centered scale) of the latent solution
        (``"latent"``) and of each CP model scored (``"cp"``, with
        ``"cp_ranks"`` and ``"cp_ridges"``); None when none were scored.
    lam_, path_, centering_, center_, centering_selection_, solver_,
    regularizer_, history_, n_iter_, stop_reason_, objective_, shape_,
    entries_, sample_weight_
        As in :class:`MatrixCompletion` (``regularizer_`` at ``lam_``, before
        the mode weights).
    mode_ids_ : list or None
        Per mode, its ids in code order (int64 or str) where ``fit`` mapped
        them, or None for a mode of positions; None when every mode was
        given as positions.

    Examples
    --------
    >>> from embedopt.data import make_low_rank_tensor
    >>> prob = make_low_rank_tensor(40, random_state=0)
    >>> model = TensorCompletion(random_state=0).fit(prob.observed)
    >>> model.predict([[0, 1, 2]]).shape
    (1,)
    """

    _ndim = None
    _solve_parameters = (*_CompletionEstimator._solve_parameters, "mode_weights")
    _parameter_constraints: ClassVar[dict] = {
        **MatrixCompletion._parameter_constraints,
        "mode_weights": [
            InstanceOf((list, tuple, np.ndarray), "a sequence of floats"),
            None,
        ],
    }

    def __init__(
        self,
        lam: float | Literal["auto"] = "auto",
        *,
        mode_weights: Sequence[float] | None = None,
        loss: str | Loss = "square",
        solver: str = "ais_impute",
        regularizer: str | Regularizer = "nuclear",
        regularizer_params: dict | None = None,
        max_rank: int | None = None,
        max_iter: int = 500,
        tol: float = 1e-4,
        lam_decay: float = 0.85,
        power_iters: int = 3,
        postprocess: bool | Literal["auto"] = "auto",
        center: str = "auto",
        scale: bool = False,
        center_reg: float = 5.0,
        n_lambdas: int | Literal["auto"] = "auto",
        lambda_min_ratio: float = 1e-3,
        patience: int | None = 1,
        validation_fraction: float = 0.1,
        refit: bool = True,
        unknown: str = "raise",
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float32",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    def _check_entries(self, entries: ObservedEntries) -> None:
        super()._check_entries(entries)
        check_mode_weights(self.mode_weights, entries.shape, type(self).__name__)

    def _export(self, factors) -> None:
        self.factors_ = [tuple(f) for f in factors]
        self.ranks_ = [int(f[1].numel()) for f in factors]
        w = self.mode_weights
        self.mode_weights_ = (
            list(w) if w is not None else default_mode_weights(self.shape_)
        )

    def _mode_factors(self) -> list:
        return self.factors_

    def _set_mode_factors(self, factors: list) -> None:
        self._export(factors)

    def _store_ids(self, maps: list) -> None:
        ids = [public_ids(m) for m in maps]
        self.mode_ids_ = None if all(i is None for i in ids) else ids

    def _mode_ids(self) -> list:
        return self.mode_ids_ or [None] * len(self.shape_)

    # -- the CP model that postprocess="auto" also scores (completion/cp.py) --
    def _finish_fit(self, split) -> None:
        self.model_, self.cp_rank_, self.cp_factors_ = "latent", None, None
        self.cp_ridge_ = self.cp_n_sweeps_ = self.model_selection_ = None
        if self._scores_cp():
            self._choose_model(*split)

    def _scores_cp(self) -> bool:
        """Whether the fit scores CP models beside the latent solution: the
        defaults' ``postprocess="auto"`` with the square loss and a lambda
        path scored on validation entries."""
        return (
            isinstance(self.postprocess, str)
            and self.postprocess == "auto"
            and isinstance(self._loss, SquareLoss)
            and self.path_ is not None
            and self.path_["metric"] == "rmse"
        )

    def _choose_model(self, train_part, val_part) -> None:
        """Score CP models of :func:`~embedopt.completion.cp.cp_ranks` and
        :data:`~embedopt.completion.cp.CP_RIDGES` on the validation entries
        (centered as the path's are), keep the best model and refit a
        winning CP model on ``entries_``, warm-started."""
        (train, w_train), (val, w_val) = train_part, val_part
        ranks = cp_ranks(self.shape_, int(_positive(w_train, train.nnz).sum()))
        if val is None or not ranks:
            return
        i = int(np.argmin(np.abs(self.path_["lambdas"] - self.lam_)))
        latent = float(self.path_["scores"][i])
        ct, cv = self.centering_.transform(train), self.centering_.transform(val)
        w = np.ones(cv.nnz) if w_val is None else w_val
        fits = cp_grid(
            ct.indices, ct.values, ct.shape, ranks, CP_RIDGES, weight=w_train
        )
        scores = [
            float(
                np.sqrt(
                    np.sum(w * (cp_predict(f.factors, cv.indices) - cv.values) ** 2)
                    / np.sum(w)
                )
            )
            for _, _, f in fits
        ]
        self.model_selection_ = {
            "latent": latent,
            "cp_ranks": [r for r, _, _ in fits],
            "cp_ridges": [a for _, a, _ in fits],
            "cp": scores,
        }
        best = int(np.argmin(scores))
        if scores[best] < latent:
            self.model_ = "cp"
            self.cp_rank_, self.cp_ridge_, fit = fits[best]
            self._refit_cp(fit.factors)

    def _refit_cp(self, init: list) -> None:
        """CP-ALS on every training entry (``entries_``), from ``init``."""
        c = self.centering_.transform(self.entries_)
        fit = cp_als(
            c.indices,
            c.values,
            c.shape,
            self.cp_rank_,
            weight=self.sample_weight_,
            init=init,
            ridge=self.cp_ridge_,
        )
        self.cp_factors_, self.cp_n_sweeps_ = fit.factors, fit.n_sweeps

    def _scores(self, idx: np.ndarray) -> np.ndarray:
        if getattr(self, "model_", "latent") != "cp":
            return super()._scores(idx)
        values = cp_predict(self.cp_factors_, idx)
        return self.centering_.inverse_transform(tuple(idx.T), values)

    def _grow(self, maps, old_to_new, shape) -> list:
        if getattr(self, "model_", "latent") == "cp":  # new indices: zero rows
            grown = []
            for A, moved, n in zip(self.cp_factors_, old_to_new, shape, strict=True):
                B = np.zeros((n, A.shape[1]))
                B[moved] = A
                grown.append(B)
            self.cp_factors_ = grown
        return super()._grow(maps, old_to_new, shape)

    def _refit_all(self, folded: bool) -> None:
        super()._refit_all(folded)
        if getattr(self, "model_", "latent") == "cp":
            self._refit_cp(self.cp_factors_)
