"""scikit-learn style estimator for ordinal embedding."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import ClassVar, Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    RUN_CONSTRAINTS,
    BaseEstimator,
    ConvergenceWarning,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    InstanceOf,
    Interval,
    Options,
    RandomStateLike,
    as_array,
    check_is_fitted,
    to_numpy,
    validate_params,
)
from ..data import Comparisons, as_comparisons, as_quadruplets
from ..data.frames import (
    UNKNOWN_POLICIES,
    encode_ids,
    extend_ids,
    fitted_maps,
    frame_columns,
    is_frame,
    map_id_columns,
    public_ids,
)
from ..optim import IterationState
from ..optim import lbfgs as optim_lbfgs
from . import baselines  # noqa: F401  (registers the baselines in SOLVERS first)
from .losses import LOSSES, OrdinalLoss, get_loss
from .problem import OrdinalProblem, comparison_weights
from .solvers import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EPSILON,
    RIDGE_SOLVERS,
    SOLVERS,
    resolve_lam,
    resolve_n_init,
    resolve_solver,
    solver_defaults,
)

__all__ = ["OrdinalEmbedding"]

# Which estimator parameters each solver takes besides the common ones.
_SBB_PARAMS = (
    "epsilon",
    "relative_epsilon",
    "batch_size",
    "update_frequency",
    "learning_rate",
    "output",
)
_SOLVER_PARAMS = {
    "svrg_sbb": _SBB_PARAMS,
    "svrg_sbb_pl": (*_SBB_PARAMS, "module_epochs"),
    "svrg": ("batch_size", "update_frequency", "learning_rate", "output"),
    "sgd": ("batch_size", "update_frequency", "learning_rate", "learning_rate_decay"),
    "gd": ("update_frequency", "learning_rate"),
    "cvx": ("update_frequency", "learning_rate"),
    "lbfgs": (),
}


#: The columns of a frame of comparisons, by position.
_LAYOUTS = {
    3: ("head", "closer", "farther"),  # triplet (i, j, k): d(i, j) < d(i, k)
    4: ("first", "second", "third", "fourth"),  # (i, j, l, k): d(i, j) < d(l, k)
}


def _comparison_columns(X, owner: str) -> tuple[list, bool] | None:
    """``(columns, from_frame)`` of comparisons given as a frame or as an
    array of ids (strings, objects); None for the other forms."""
    if is_frame(X):
        k = X.shape[1]
        if k not in _LAYOUTS:
            raise DataValidationError(
                f"{owner} reads a DataFrame of comparisons by column position: "
                f"3 columns {_LAYOUTS[3]} (triplets) or 4 {_LAYOUTS[4]} "
                f"(quadruplets); got {k} column(s) {list(X.columns)}. Responses "
                "go in y."
            )
        return frame_columns(X, _LAYOUTS[k], owner=owner, values="refuse")[0], True
    if isinstance(X, (Comparisons, str, bytes)) or hasattr(X, "detach"):
        return None
    try:
        a = np.asarray(X)
    except (ValueError, TypeError):
        return None
    if a.ndim == 2 and a.shape[1] in _LAYOUTS and a.dtype.kind in "OUS":
        return list(a.T), False
    return None


def _final(result) -> float:
    """The last recorded objective of a solver run (+inf if it has none)."""
    values = result.history.get("objective")
    return float(values[-1]) if values is not None and len(values) else float("inf")


def _best_of(solve, n_init: int, args: tuple, kwargs: dict):
    """The run with the lowest final objective of ``n_init`` calls ``solve(*args,
    **kwargs)``.

    Every start draws its own initial embedding from the one resolved random
    state in ``kwargs``, so the restarts are reproducible.
    """
    result = None
    for _ in range(n_init):
        run = solve(*args, **kwargs)
        if result is None or _final(run) < _final(result):
            result = run
    return result


class OrdinalEmbedding(BaseEstimator):
    """Embedding of objects in R^p from relative comparisons (triplets, quadruplets).

    Learns ``X`` (one row per object) whose squared distances agree with the
    comparisons "i is closer to j than to k" (triplets ``(i, j, k)``) or "the
    pair (i, j) is closer than (l, k)" (quadruplets), by minimizing one of the
    losses of :mod:`embedopt.ordinal.losses`: by default with full-batch
    L-BFGS up to 10^5 comparisons and SVRG-SBB (Ma et al., Algorithm 1)
    above, or with the solver named. Parameters left at None take the
    chosen solver's defaults (:func:`~embedopt.ordinal.solvers.solver_defaults`;
    the runs that chose every default are in ``benchmarks/ordinal/README.md``,
    and ``benchmarks/ordinal/defaults.py`` compares them with cblearn's).

    Parameters
    ----------
    n_components : int
        p, the embedding dimension.
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
    solver : {"auto", "lbfgs", "svrg_sbb", "svrg_sbb_pl", "svrg", "sgd", "gd", "cvx"}
        Full-batch L-BFGS, Algorithm 1, Algorithm 2 (PL variant), SVRG with
        a fixed step, SGD with a decaying step, batch gradient descent, and
        the convex Gram-matrix baseline (projected gradient descent, O(n^3)
        per step). ``"auto"`` runs ``"lbfgs"`` up to
        :data:`~embedopt.ordinal.solvers.AUTO_LBFGS_MAX_COMPARISONS`
        (10^5) comparisons and ``"svrg_sbb"`` above; ``solver_`` says which
        ran: below that size L-BFGS finishes sooner
        (:func:`~embedopt.ordinal.resolve_solver`;
        ``benchmarks/ordinal/threshold.py`` re-measures the crossing).
    epsilon : float
        SBB epsilon (eq. (17)); 0 gives SVRG-SBB_0.
    relative_epsilon : bool
        ``epsilon`` in units of the curvature scale ``r / n_objects`` of the
        mean loss (r objects per comparison), or absolute as in eq. (17);
        see :func:`~embedopt.ordinal.svrg_sbb`.
    batch_size : int
        b, comparisons per inner step; at most the comparisons sampled per
        epoch (the default is capped there, a larger given b is clipped with
        a warning).
    update_frequency : int, optional
        m, comparisons sampled per epoch (default: |Q| / 4 for SVRG-SBB above
        ``AUTO_LBFGS_MAX_COMPARISONS`` comparisons, faster there to a given
        held-out error; all, as in the paper, otherwise); it also sets the budget
        of an epoch (``|Q| + 2m`` gradient calls) for every stochastic
        solver.
    learning_rate : float or "auto"
        First step (SBB) or fixed step (other solvers), in units of a
        full-gradient step on the mean loss; "auto" measures the curvature
        at the start.
    max_iter : int, optional
        Epochs (L-BFGS: iterations); default 100 epochs, 1000 L-BFGS
        iterations.
    tol : float, optional
        Relative objective change between epochs that stops the solver
        (default 1e-3 for SVRG-SBB, 1e-4 for the other stochastic solvers).
        L-BFGS stops when an iteration changes the objective by ``tol``
        times its value after the first iteration (default 1e-5, the best
        held-out error of SOE on Table I among 1e-4, 1e-5 and 1e-6; see
        :func:`~embedopt.ordinal.lbfgs`).
    output : {"last", "random"}
        SVRG solvers: last snapshot or a uniformly drawn inner iterate.
    module_epochs : int
        Epochs per module of ``solver="svrg_sbb_pl"``.
    learning_rate_decay : float
        SGD step learning_rate_decay.
    lam : float or "auto"
        Weight of the ridge ``lam ||X||_F^2`` added to the mean loss (the
        trace regularizer ``lam tr(G)`` of ``solver="cvx"``); taken by the
        L-BFGS and convex solvers. ``"auto"``: ``1 / (2 |Q|)`` (``|Q|`` the
        sum of the weights of a weighted fit) for the likelihood losses STE
        and CKL -- the MAP estimate under a standard
        normal prior on every coordinate, i.e. ``||X||^2 / 2`` added to the
        summed negative log-likelihood -- and 0 for the others and for the
        stochastic solvers, which have no ridge term (``solver="auto"`` picks
        them above 10^5 comparisons, where ``1 / (2 |Q|)`` is below 5e-6).
        The prior lowered or kept the held-out error of STE and CKL on every
        benchmark set (STE on the music triplets: 0.193 -> 0.172) and raised
        it for t-STE, SOE and GNMDS, which keep 0
        (:func:`~embedopt.ordinal.resolve_lam`).
    mu : float, optional
        CKL's mu (default 0.1).
    alpha : float, optional
        t-STE's degrees of freedom (default ``max(n_components - 1, 1)``).
    margin : float, optional
        GNMDS (default 1) or SOE (default 0.1) margin.
    init_scale : float, optional
        Standard deviation of the random initial embedding; default 1 for
        L-BFGS, 0.1 for the other solvers.
    n_init : int or "auto"
        Random starts; the fit with the lowest final objective is kept.
        ``"auto"``: 3 for SOE in at most 2 dimensions, else 1 (always 1 when
        ``fit`` gets an ``init``; :func:`~embedopt.ordinal.resolve_n_init`).
        SOE's hinge has poor local minima in the plane (cblearn restarts it
        10 times by default in every dimension): on eurodist 3 starts took
        the median held-out error from 0.052 to 0.049, while in more
        dimensions and for the other losses they did not help.
    unknown : {"raise", "nan", "fallback"}
        What ``transform``, ``decision_function``, ``predict`` and ``score``
        do with an object unseen at fit (an id, or a position beyond
        ``n_objects_`` of a model fitted on positions): raise a
        DataValidationError naming it, or, with ``"nan"`` and
        ``"fallback"`` alike, NaN coordinates and decisions, the response 0
        from ``predict``, counted as wrong by ``score``: an object without
        comparisons has no place in the embedding (no comparison constrains
        it), so there is nothing to fall back on.
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}, optional
        Default float64 for L-BFGS (SciPy's own precision, which its line
        search needs near the end), float32 for the other solvers.
    verbose : int
    callback : callable, optional
        Called once per epoch (see :mod:`embedopt.optim`).

    Attributes
    ----------
    embedding_ : numpy.ndarray, shape (n_objects_, n_components)
    embedding_tensor_ : torch.Tensor
        The same on the fitting device.
    n_objects_ : int
    object_ids_ : numpy.ndarray or None
        The objects' ids in code order (sorted; int64 or str) where ``fit``
        mapped them (a DataFrame, string ids); None for positions.
    loss_ : OrdinalLoss
        The loss with its resolved parameters.
    history_ : dict of numpy.ndarray
        Per epoch: objective, time, step_size, grad_evals, passes, grad_norm
        and, with ``validation``, val_error.
    n_iter_ : int
    stop_reason_ : str
    solver_ : str
        The solver that ran (what ``solver="auto"`` chose).
    lam_ : float
        The ridge weight used (what ``lam="auto"`` chose; 0 for solvers
        without a ridge term).
    comparisons_ : numpy.ndarray of int64, shape (m, 3) or (m, 4)
        The oriented comparisons fitted (codes), kept for
        :meth:`partial_fit`, which adds to them.
    comparison_weight_ : numpy.ndarray or None
        Their ``sample_weight`` (None: all equal).

    Examples
    --------
    >>> from embedopt.data import make_planted_embedding
    >>> from embedopt.ordinal import OrdinalEmbedding
    >>> prob = make_planted_embedding(40, 2, n_train=2000, n_test=500, random_state=0)
    >>> model = OrdinalEmbedding(2, random_state=0, device="cpu").fit(prob.train)
    >>> model.score(prob.test) > 0.85
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(int, 1, None)],
        "loss": [Options(LOSSES), InstanceOf(OrdinalLoss, "an OrdinalLoss instance")],
        "solver": [Options(SOLVERS), Options(["auto"])],
        "epsilon": [Interval(float, 0, None)],
        "relative_epsilon": ["boolean"],
        "batch_size": [Interval(int, 1, None)],
        "update_frequency": [Interval(int, 1, None), None],
        "learning_rate": [
            Interval(float, 0, None, closed="neither"),
            Options(["auto"]),
        ],
        "max_iter": [Interval(int, 1, None), None],
        "tol": [Interval(float, 0, None), None],
        "output": [Options(["last", "random"])],
        "module_epochs": [Interval(int, 1, None)],
        "learning_rate_decay": [Interval(float, 0, None)],
        "lam": [Interval(float, 0, None), Options(["auto"])],
        "mu": [Interval(float, 0, None), None],
        "alpha": [Interval(float, 0, None, closed="neither"), None],
        "margin": [Interval(float, 0, None), None],
        "init_scale": [Interval(float, 0, None, closed="neither"), None],
        "n_init": [Interval(int, 1, None), Options(["auto"])],
        "unknown": [Options(UNKNOWN_POLICIES)],
        **RUN_CONSTRAINTS,
        "dtype": ["dtype", None],
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        loss: str | OrdinalLoss = "ste",
        solver: str = "auto",
        epsilon: float = DEFAULT_EPSILON,
        relative_epsilon: bool = True,
        batch_size: int = DEFAULT_BATCH_SIZE,
        update_frequency: int | None = None,
        learning_rate: float | Literal["auto"] = "auto",
        max_iter: int | None = None,
        tol: float | None = None,
        output: str = "last",
        module_epochs: int = 5,
        learning_rate_decay: float = 1.0,
        lam: float | Literal["auto"] = "auto",
        mu: float | None = None,
        alpha: float | None = None,
        margin: float | None = None,
        init_scale: float | None = None,
        n_init: int | Literal["auto"] = "auto",
        unknown: str = "raise",
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = None,
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    # -- fitting -----------------------------------------------------------------
    def fit(
        self,
        X: Comparisons | ArrayLike,
        y: ArrayLike | None = None,
        *,
        n_objects: int | None = None,
        validation: Comparisons | ArrayLike | None = None,
        init: ArrayLike | torch.Tensor | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> OrdinalEmbedding:
        """Learn the embedding from comparisons.

        Parameters
        ----------
        X : Comparisons, DataFrame or array-like, shape (m, 3) or (m, 4)
            Oriented comparisons (the first pair is the closer one), or
            comparisons as asked when ``y`` is given. A DataFrame is read by
            column position: 3 columns (head, closer, farther) of triplets or
            4 of quadruplets (i, j, l, k), responses in ``y``; its ids (an
            array of strings too) are mapped with one map over all columns
            to codes 0..n-1 in sorted order and kept (``object_ids_``), and
            ``transform``, ``predict``, ``score`` then take them. Integer
            arrays stay positions.
        y : array-like of {-1, +1}, shape (m,), optional
            Responses: +1 when the first pair is the closer one.
        n_objects : int, optional
            Number of objects (default: max index + 1; with ids, the number
            of distinct ids).
        validation : Comparisons or array-like, optional
            Held-out oriented comparisons whose triplet error is recorded in
            ``history_["val_error"]`` every epoch (off the clock).
        init : array-like, shape (n_objects, n_components), optional
            Initial embedding (default: random ``N(0, init_scale^2)``). One
            whose rows are all equal (all zeros) is refused: it is a saddle
            point of every ordinal loss (except for ``solver="cvx"``).
        sample_weight : array-like of float, shape (m,), optional
            One finite weight >= 0 per comparison (e.g. the reliability of
            the crowd worker who answered it): every solver minimizes the
            weighted mean loss ``(1 / sum w) sum_q w_q ell_q`` (plus the
            ridge). An integer weight k counts the comparison k times (also
            in ``lam="auto"``, ``1 / (2 sum w)``), a weight 0 leaves it out;
            the weights of degenerate comparisons are dropped with them.
            None: all equal (the unweighted fit).

        Returns
        -------
        self
        """
        ctx = self._start_fit()
        owner = type(self).__name__
        X, n_objects, validation = self._map_objects(X, n_objects, validation)
        comps = as_comparisons(X, y, n_objects=n_objects, owner=owner)
        weights = comparison_weights(sample_weight, X, comps, owner)
        n_fit = len(comps) if weights is None else int(np.count_nonzero(weights))
        solver = resolve_solver(self.solver, n_fit)
        loss = get_loss(
            self.loss,
            self.n_components,
            mu=self.mu,
            alpha=self.alpha,
            margin=self.margin,
        )
        kwargs = self._solver_options(solver, ctx, n_fit)
        evidence = n_fit if weights is None else float(weights.sum())
        lam = resolve_lam(self.lam, solver, loss, evidence)
        if solver in RIDGE_SOLVERS:
            kwargs["lam"] = lam
        n_init = resolve_n_init(self.n_init, loss, self.n_components, init)
        result = _best_of(
            SOLVERS.get(solver),
            n_init,
            (comps, self.n_components),
            dict(
                init=init,
                loss=loss,
                validation=validation,
                sample_weight=weights,
                **kwargs,
            ),
        )
        self.loss_ = loss
        # kept for partial_fit (codes, oriented; zero weights kept)
        self.comparisons_, self.comparison_weight_ = comps.indices, weights
        self.embedding_tensor_ = result.x
        self.embedding_ = to_numpy(result.x).astype(np.float64)
        self.n_objects_ = comps.n_objects
        self.lam_ = lam
        self._store_result(result, solver=solver)
        return self

    def _map_objects(self, X, n_objects, validation):
        """``fit``'s comparisons with their ids mapped (one map over every
        column: the objects are one set), setting ``object_ids_``, and the
        validation comparisons in the same codes."""
        read = _comparison_columns(X, type(self).__name__)
        self.object_ids_ = None
        if read is None:
            return X, n_objects, validation
        columns, maps = map_id_columns(
            read[0], _LAYOUTS[len(read[0])], every=read[1], shared=True
        )
        if n_objects is not None and n_objects != len(maps[0]):
            raise DataValidationError(
                f"n_objects={n_objects}, but the object ids were mapped to "
                f"{len(maps[0])} codes (one per distinct id): leave n_objects=None "
                "with ids, or pass positions 0..n-1."
            )
        self.object_ids_ = public_ids(maps[0])
        if validation is not None:
            validation = self._codes(validation, "raise")
        return np.stack(columns, axis=1), n_objects, validation

    def _codes(self, X, unknown: str):
        """Comparisons in the fitted ids as codes (-1: unknown, where
        ``unknown`` allows it); other input unchanged."""
        if self.object_ids_ is None:
            return X
        read = _comparison_columns(X, type(self).__name__)
        if read is None:
            if isinstance(X, Comparisons) or hasattr(X, "detach"):
                return X  # codes already
            a = np.asarray(X)
            if a.ndim != 2:
                return X
            read = list(a.T), False
        id_map = fitted_maps(self, [self.object_ids_])[0]
        owner = type(self).__name__
        columns = [
            encode_ids(c, id_map, what="object ids", unknown=unknown, owner=owner)
            for c in read[0]
        ]
        return np.stack(columns, axis=1)

    def _solver_options(self, solver: str, ctx, n_comparisons: int) -> dict:
        """The keywords of this estimator's parameters for ``solver``.

        The run options with the solver's defaults for those left at None
        (:func:`~embedopt.ordinal.solvers.solver_defaults`), the solver's own
        parameters (``_SOLVER_PARAMS``); ``fit`` adds the data, the start,
        the loss and, for the solvers with a ridge term, ``lam``.
        """
        defaults = solver_defaults(
            solver,
            n_comparisons,
            max_iter=self.max_iter,
            tol=self.tol,
            init_scale=self.init_scale,
            dtype=ctx.dtype if self.dtype is not None else None,
            update_frequency=self.update_frequency,
        )
        kwargs = {**ctx.run_options(self, dtype=defaults.pop("dtype")), **defaults}
        own = self._param_values(_SOLVER_PARAMS[solver])
        kwargs.update({k: v for k, v in own.items() if k not in defaults})
        return kwargs

    # -- new data ----------------------------------------------------------------
    def partial_fit(
        self,
        X: Comparisons | ArrayLike,
        y: ArrayLike | None = None,
        *,
        refit: Literal["new", "all"] = "new",
        sample_weight: ArrayLike | None = None,
    ) -> OrdinalEmbedding:
        """Add comparisons to a fitted embedding, objects new to it too.

        Parameters
        ----------
        X : Comparisons, DataFrame or array-like, shape (m, 3) or (m, 4)
            As in :meth:`fit`, in the ids of the fit (a model fitted on
            positions takes positions; beyond ``n_objects_`` they are new
            objects). New ids join ``object_ids_``, which stays sorted: the
            codes of known objects may move, their rows with them.
        y : array-like of {-1, +1}, shape (m,), optional
        refit : {"new", "all"}
            ``"new"``: place only the objects without comparisons so far,
            every other row fixed: the fitted objective (the mean loss of
            every comparison plus the ``lam_`` ridge) over the new rows is
            the loss of the comparisons that involve them plus their ridge,
            minimized by L-BFGS from 5 random starts at the scale of the
            fitted embedding (the lowest objective wins). Comparisons among
            known objects are kept (``comparisons_``) but move nothing.
            ``"all"``: the same placement, then ``fit`` on every comparison
            from the resulting embedding (``init``).
        sample_weight : array-like of float, shape (m,), optional
            Weights of the new comparisons; those of a fit without weights
            weigh 1.

        Returns
        -------
        self
            An unfitted model is fitted on ``X`` (``fit``).
        """
        if not hasattr(self, "embedding_"):
            return self.fit(X, y, sample_weight=sample_weight)
        owner = f"{type(self).__name__}.partial_fit"
        validate_params(owner, {"refit": refit}, {"refit": [Options(["new", "all"])]})
        codes, n, old_to_new, id_map = self._partial_codes(X, owner)
        comps = as_comparisons(codes, y, n_objects=n, owner=owner)
        weights = comparison_weights(sample_weight, codes, comps, owner)
        ctx = self._start_fit()
        with self._unchanged_on_error():
            new = self._grow_objects(comps, weights, n, old_to_new, id_map)
            self._place(new, ctx)
            if refit == "all":
                ids, w = self.object_ids_, self.comparison_weight_
                self.fit(
                    self.comparisons_,
                    n_objects=n,
                    init=self.embedding_,
                    sample_weight=w,
                )
                self.object_ids_ = ids
        return self

    def _partial_codes(self, X, owner: str):
        """``partial_fit``'s comparisons as codes of the grown objects, their
        number, where the fitted codes went, and the grown map (or None)."""
        n_old = self.n_objects_
        same = np.arange(n_old, dtype=np.int64)
        read = _comparison_columns(X, owner)
        if self.object_ids_ is None:
            if read is not None:
                raise DataValidationError(
                    f"{owner}: this model was fitted on positions; pass "
                    "comparisons of integer positions (new objects get the next "
                    "ones)."
                )
            a = X.indices if isinstance(X, Comparisons) else as_array(X, "X")
            big = int(a.max()) + 1 if a.size and a.dtype.kind in "iu" else 0
            return X, max(n_old, big), same, None
        if read is None:
            if isinstance(X, Comparisons):
                return X, n_old, same, fitted_maps(self, [self.object_ids_])[0]
            a = as_array(X, "X")
            if a.ndim != 2 or a.shape[1] not in _LAYOUTS:
                return X, n_old, same, None  # as_comparisons names the problem
            read = list(a.T), False
        id_map = fitted_maps(self, [self.object_ids_])[0]
        grown, codes, moved = extend_ids(
            id_map, np.concatenate(read[0]), what="object ids"
        )
        return codes.reshape(len(read[0]), -1).T, len(grown), moved, grown

    def _grow_objects(self, comps, weights, n, old_to_new, id_map) -> np.ndarray:
        """Move the model to the grown codes and append the comparisons; the
        mask of the objects without comparisons before them."""
        old = old_to_new[self.comparisons_]
        had = np.zeros(n, bool)
        had[old.ravel()] = True
        new_idx = comps.indices
        if old.shape[1] != new_idx.shape[1]:  # triplets and quadruplets: one kind
            old, new_idx = as_quadruplets(old), as_quadruplets(new_idx)
        w_old = self.comparison_weight_
        if w_old is not None or weights is not None:
            w_old = np.ones(len(old)) if w_old is None else w_old
            weights = np.ones(len(new_idx)) if weights is None else weights
            self.comparison_weight_ = np.concatenate([w_old, weights])
        self.comparisons_ = np.concatenate([old, new_idx])
        E = torch.zeros(
            (n, self.embedding_tensor_.shape[1]),
            dtype=self.embedding_tensor_.dtype,
            device=self.embedding_tensor_.device,
        )
        E[torch.as_tensor(old_to_new, device=E.device)] = self.embedding_tensor_
        self.embedding_tensor_ = E
        self.embedding_ = to_numpy(E).astype(np.float64)
        self.n_objects_ = n
        if id_map is not None:
            self.object_ids_ = public_ids(id_map)
        seen = np.zeros(n, bool)
        seen[new_idx.ravel()] = True
        return seen & ~had

    def _place(self, new: np.ndarray, ctx, n_starts: int = 5) -> None:
        """The rows of the ``new`` objects: the fitted objective over them,
        every other row fixed, by L-BFGS from ``n_starts`` random starts."""
        if not new.any():
            return
        touch = new[self.comparisons_].any(axis=1)
        w = self.comparison_weight_
        problem = OrdinalProblem(
            self.comparisons_[touch],
            self.loss_,
            n_objects=self.n_objects_,
            device=self.embedding_tensor_.device,
            dtype="float64",
            sample_weight=None if w is None else w[touch],
        )
        # (1/|Q|) sum_Q l + lam ||X||^2 over the new rows, in units of the
        # mean over the comparisons that touch them: the ridge grows by |Q|/|Q_s|
        share = touch.mean() if w is None else w[touch].sum() / w.sum()
        ridge = self.lam_ / share
        fixed = self.embedding_tensor_.to(torch.float64)
        rows = torch.as_tensor(np.flatnonzero(new), device=fixed.device)

        def fun(Z):
            X = fixed.index_copy(0, rows, Z)
            f, g = problem.value_and_grad(X)
            f = f + ridge * float(torch.sum(Z * Z))
            return f, g[rows] + 2 * ridge * Z

        scale = float(fixed[torch.as_tensor(~new)].std()) or 1.0
        best = None
        for _ in range(n_starts):
            Z0 = torch.as_tensor(
                ctx.random_state.numpy.normal(0, scale, (rows.numel(), fixed.shape[1])),
                device=fixed.device,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                run = optim_lbfgs(fun, Z0, max_iter=500, tol=1e-10, owner="partial_fit")
            value = float(fun(run.x)[0])
            if best is None or value < best[0]:
                best = (value, run.x)
        E = fixed.index_copy(0, rows, best[1]).to(self.embedding_tensor_.dtype)
        self.embedding_tensor_ = E
        self.embedding_ = to_numpy(E).astype(np.float64)

    def fit_transform(
        self, X: Comparisons | ArrayLike, y: ArrayLike | None = None, **fit_params
    ) -> np.ndarray:
        """Fit, then return ``embedding_``.

        Parameters
        ----------
        X, y
            See :meth:`fit`.
        **fit_params
            ``n_objects``, ``validation``, ``init``, ``sample_weight``.

        Returns
        -------
        numpy.ndarray, shape (n_objects, n_components)
        """
        return self.fit(X, y, **fit_params).embedding_

    # -- using the embedding -------------------------------------------------------
    def transform(self, objects: ArrayLike | None = None) -> np.ndarray:
        """Coordinates of objects in the learned embedding.

        Parameters
        ----------
        objects : array-like, optional
            Object indices, or the objects' ids where the model was fitted on
            ids (default: all objects, in code order).

        Returns
        -------
        numpy.ndarray, shape (len(objects), n_components)
            NaN rows for unknown objects (``unknown="nan"`` / ``"fallback"``).
        """
        check_is_fitted(self, "embedding_")
        if objects is None:
            return self.embedding_.copy()
        if self.object_ids_ is not None:
            idx = encode_ids(
                np.atleast_1d(objects),
                fitted_maps(self, [self.object_ids_])[0],
                what="object ids",
                unknown=self.unknown,
                owner=type(self).__name__,
            )
        else:
            idx = self._positions(as_array(objects, "objects"))
        out = self.embedding_[np.maximum(idx, 0)]
        out[idx < 0] = np.nan
        return out

    def _positions(self, idx: np.ndarray) -> np.ndarray:
        """Checked object positions; -1 beyond ``n_objects_`` unless raised."""
        if idx.dtype == object or not np.issubdtype(idx.dtype, np.integer):
            raise DataValidationError(
                f"objects must be integer indices; got dtype {idx.dtype}."
            )
        top = idx.max() if self.unknown == "raise" and idx.size else -1
        if idx.size and (idx.min() < 0 or top >= self.n_objects_):
            raise DataValidationError(
                f"object indices must be in [0, {self.n_objects_}); got range "
                f"[{idx.min()}, {idx.max()}]."
            )
        return np.where(idx >= self.n_objects_, -1, idx)

    def decision_function(self, X: Comparisons | ArrayLike) -> np.ndarray:
        """``d(first pair) - d(second pair)`` in the embedding (< 0: first closer).

        Parameters
        ----------
        X : Comparisons or array-like of int, shape (m, 3) or (m, 4)
            Comparisons as asked (not dropped even if degenerate).

        Returns
        -------
        numpy.ndarray of float64, shape (m,)
        """
        check_is_fitted(self, "embedding_")
        Q = as_quadruplets(self._codes(X, self.unknown))
        top = Q.max() if self.unknown == "raise" else -1
        if (self.object_ids_ is None and Q.min() < 0) or top >= self.n_objects_:
            raise DataValidationError(
                f"Comparisons index objects outside [0, {self.n_objects_}), the "
                "objects of the fitted embedding."
            )
        return self._decision(np.where(Q >= self.n_objects_, -1, Q))

    def _decision(self, Q: np.ndarray) -> np.ndarray:
        """``decision_function`` of (m, 4) codes; NaN where one is -1 (unknown)."""
        unknown = (Q < 0).any(axis=1)
        E = torch.as_tensor(self.embedding_)
        q = torch.as_tensor(np.maximum(Q, 0))
        e = E[q[:, 0::2]] - E[q[:, 1::2]]
        d = (e * e).sum(-1)
        out = to_numpy(d[:, 0] - d[:, 1])
        out[unknown] = np.nan
        return out

    def predict(self, X: Comparisons | ArrayLike) -> np.ndarray:
        """Responses: +1 where the first pair is closer, -1 otherwise (ties: -1).

        Parameters
        ----------
        X : Comparisons or array-like of int, shape (m, 3) or (m, 4)

        Returns
        -------
        numpy.ndarray of int64, shape (m,)
            0 where a comparison names an unknown object (``unknown``).
        """
        d = self.decision_function(X)
        return np.where(np.isnan(d), 0, np.where(d < 0, 1, -1)).astype(np.int64)

    def score(
        self,
        X: Comparisons | ArrayLike,
        y: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> float:
        """Triplet accuracy: fraction of comparisons the embedding agrees with.

        ``1 - triplet_error`` (ties count as errors; degenerate comparisons are
        dropped with a warning, their weights with them).

        Parameters
        ----------
        X : Comparisons or array-like of int, shape (m, 3) or (m, 4)
            Oriented comparisons, or comparisons as asked with ``y``.
        y : array-like of {-1, +1}, optional
        sample_weight : array-like of float, shape (m,), optional
            One weight >= 0 per comparison: the weighted accuracy
            ``sum_q w_q [q right] / sum_q w_q``.

        Returns
        -------
        float
        """
        check_is_fitted(self, "embedding_")
        owner = type(self).__name__
        X = self._codes(X, self.unknown)
        if self.object_ids_ is not None and isinstance(X, np.ndarray) and (X < 0).any():
            # stand-ins beyond the fitted objects: oriented by y, then unknown
            fake = self.n_objects_ + np.arange(X.size).reshape(X.shape)
            comps = as_comparisons(np.where(X < 0, fake, X), y, owner=owner)
            weights = comparison_weights(sample_weight, X, comps, owner)
            Q = comps.as_quadruplets()
            d = self._decision(np.where(Q >= self.n_objects_, -1, Q))
            return float(np.average(d < 0, weights=weights))
        comps = as_comparisons(X, y, owner=owner)
        weights = comparison_weights(sample_weight, X, comps, owner)
        return float(np.average(self.predict(comps) == 1, weights=weights))
