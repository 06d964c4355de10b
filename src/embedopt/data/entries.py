"""Observed entries of partially observed matrices and tensors."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, DataWarning, as_array, persistable

__all__ = ["DuplicateEntriesError", "ObservedEntries", "as_observed_entries"]

_AGGREGATIONS = ("mean", "sum", "first", "last", "max", "min")

_INT64_MAX = int(np.iinfo(np.int64).max)
_BOOLEAN_INDICES = (
    "Indices must be integers; got booleans (a mask?). Use np.flatnonzero(mask) "
    "for the positions it selects."
)
#: An inferred size (max index + 1) from this one up is checked for sparse use:
#: below it, the per-index state of any fit is small whatever the indices.
_SPARSE_CHECK_SIZE = 10_000
#: ... and draws a DataWarning when fewer than one index in this many occurs.
_SPARSE_RATIO = 100


class DuplicateEntriesError(DataValidationError):
    """Entries repeat a position (raised by :class:`ObservedEntries`).

    It carries the position, so that an estimator that mapped the user's ids
    can say which of their ids repeat
    (:func:`~embedopt.data.frames.repeated_ids_error`).

    Parameters
    ----------
    message : str
    position : tuple of int
        The first repeated position (codes).
    count : int
        How many entries repeat a position.

    Attributes
    ----------
    position : tuple of int
    count : int
    """

    def __init__(self, message: str, position: tuple[int, ...], count: int):
        super().__init__(message)
        self.position, self.count = position, count


@persistable
class ObservedEntries:
    """The observed entries of an m x n matrix (or a D-way tensor), in COO form.

    Parameters
    ----------
    indices : array-like of int, shape (nnz, ndim), or sequence of ndim 1-D arrays
        Position of each observed entry (0-based).
    values : array-like of float, shape (nnz,)
        Observed values.
    shape : tuple of int, optional
        Size of each mode; inferred as ``max index + 1`` when omitted.
    validate : bool
        Check the entries (see Raises). Only internal code that derives entries
        from already validated ones passes False.

    Attributes
    ----------
    indices : numpy.ndarray of int64, shape (nnz, ndim)
    values : numpy.ndarray of float, shape (nnz,)
    shape : tuple of int

    Raises
    ------
    DataValidationError
        On empty input, NaN or infinite values, non-integer, negative or
        out-of-range indices, a wrong number of index arrays or of values, or
        duplicate positions (aggregate them with :meth:`aggregate_duplicates`).

    Examples
    --------
    >>> obs = ObservedEntries.from_coo([0, 1, 2], [1, 0, 2], [5.0, 3.0, 4.0])
    >>> obs.shape, obs.nnz
    ((3, 3), 3)
    """

    def __init__(
        self,
        indices: ArrayLike | Sequence[ArrayLike],
        values: ArrayLike,
        shape: tuple[int, ...] | None = None,
        *,
        validate: bool = True,
        check_duplicates: bool = True,
    ):
        idx = _as_index_matrix(indices)
        vals = as_array(values, "The observed values")
        if vals.ndim != 1:
            vals = vals.reshape(-1) if vals.size == idx.shape[0] else vals
        if vals.ndim != 1 or vals.shape[0] != idx.shape[0]:
            raise DataValidationError(
                f"Got {idx.shape[0]} index tuples but values of shape {vals.shape}; "
                "give exactly one value per observed position."
            )
        if np.iscomplexobj(vals):
            raise DataValidationError(
                f"Observed values must be real; got dtype {vals.dtype}. Pass "
                "np.real(values) (or np.abs) explicitly if that is what you mean."
            )
        if not np.issubdtype(vals.dtype, np.floating):
            if not _is_numeric(vals):
                raise DataValidationError(
                    f"Observed values must be numeric; got dtype {vals.dtype}."
                )
            vals = vals.astype(np.float64)
        if shape is None:
            if idx.shape[0] == 0:
                raise DataValidationError("No observed entries: the input is empty.")
            names = _mode_names(idx.shape[1])
            shape = tuple(
                infer_size(idx[:, d], names[d], "shape") for d in range(idx.shape[1])
            )
        self.shape = _as_shape(shape)
        self.indices = idx
        self.values = vals
        if validate:
            _validate(self, check_duplicates=check_duplicates)

    # -- constructors -------------------------------------------------------------
    @classmethod
    def from_coo(
        cls,
        rows: ArrayLike,
        cols: ArrayLike,
        values: ArrayLike,
        shape: tuple[int, int] | None = None,
    ) -> ObservedEntries:
        """Build from row indices, column indices and values.

        Parameters
        ----------
        rows, cols : array-like of int, shape (nnz,)
        values : array-like of float, shape (nnz,)
        shape : tuple of int, optional

        Returns
        -------
        ObservedEntries
        """
        rows, cols = as_array(rows, "rows"), as_array(cols, "cols")
        if rows.shape != cols.shape:
            raise DataValidationError(
                f"rows and cols must have the same length; got {rows.shape} and "
                f"{cols.shape}."
            )
        return cls((rows, cols), values, shape)

    @classmethod
    def from_scipy(cls, matrix: sp.spmatrix | sp.sparray) -> ObservedEntries:
        """Build from a scipy.sparse matrix: stored entries are the observed ones.

        Explicitly stored zeros count as observed zeros; duplicates stored in a
        COO matrix are an error (SciPy would silently sum them).

        Parameters
        ----------
        matrix : scipy.sparse matrix or array, 2-D

        Returns
        -------
        ObservedEntries
        """
        coo = sp.coo_matrix(matrix)
        return cls((coo.row, coo.col), coo.data, coo.shape)

    @classmethod
    def from_dense(cls, array: ArrayLike | torch.Tensor) -> ObservedEntries:
        """Build from a dense array in which NaN marks a missing entry.

        Parameters
        ----------
        array : array-like of float, 2-D or more

        Returns
        -------
        ObservedEntries
        """
        a = as_array(array, "The dense input")
        if np.iscomplexobj(a):
            raise DataValidationError(
                f"A dense input must be real; got dtype {a.dtype}. Pass np.real(X) "
                "explicitly if that is what you mean."
            )
        if not _is_numeric(a):
            raise DataValidationError(
                f"A dense input must be numeric with NaN for missing entries; got "
                f"dtype {a.dtype}."
            )
        a = a.astype(np.float64) if not np.issubdtype(a.dtype, np.floating) else a
        if a.ndim < 2:
            raise DataValidationError(
                f"A dense input must be 2-D (or a tensor); got shape {a.shape}. For "
                "COO data pass a tuple (rows, cols, values)."
            )
        if np.isinf(a).any():
            pos = tuple(int(i) for i in np.argwhere(np.isinf(a))[0])
            raise DataValidationError(
                f"The dense input contains infinite values (first at {pos}); only "
                "NaN may mark missing entries."
            )
        mask = ~np.isnan(a)
        idx = np.argwhere(mask)
        return cls(idx, a[mask], a.shape)

    # -- views ---------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of modes (2 for a matrix)."""
        return len(self.shape)

    @property
    def nnz(self) -> int:
        """Number of observed entries."""
        return int(self.values.shape[0])

    @property
    def rows(self) -> np.ndarray:
        """Row (mode-0) index of each entry."""
        return self.indices[:, 0]

    @property
    def cols(self) -> np.ndarray:
        """Column (mode-1) index of each entry."""
        return self.indices[:, 1]

    def __len__(self) -> int:
        return self.nnz

    def __repr__(self) -> str:
        return f"ObservedEntries(shape={self.shape}, nnz={self.nnz})"

    def subset(self, selection: ArrayLike) -> ObservedEntries:
        """Entries selected by a boolean mask or an index array.

        Parameters
        ----------
        selection : array-like of bool or int

        Returns
        -------
        ObservedEntries
            Same shape, fewer entries.
        """
        sel = np.asarray(selection)
        return ObservedEntries(
            self.indices[sel], self.values[sel], self.shape, validate=False
        )

    def with_values(self, values: ArrayLike) -> ObservedEntries:
        """Same positions, new values (validated for NaN/inf).

        Parameters
        ----------
        values : array-like, shape (nnz,)

        Returns
        -------
        ObservedEntries
        """
        out = ObservedEntries(self.indices, values, self.shape, validate=False)
        if out.nnz != self.nnz:
            raise DataValidationError(f"Expected {self.nnz} values, got {out.nnz}.")
        _check_values(out.values)
        return out

    def to_scipy(self, format: str = "csr") -> sp.spmatrix:
        """Return the observed entries as a scipy.sparse matrix (2-D only).

        Parameters
        ----------
        format : {"csr", "csc", "coo"}

        Returns
        -------
        scipy.sparse matrix
        """
        if self.ndim != 2:
            raise DataValidationError("to_scipy needs a matrix (ndim == 2).")
        coo = sp.coo_matrix((self.values, (self.rows, self.cols)), shape=self.shape)
        return coo.asformat(format)

    def aggregate_duplicates(self, how: str = "mean") -> ObservedEntries:
        """Merge entries observed more than once at the same position.

        Parameters
        ----------
        how : {"mean", "sum", "first", "last", "max", "min"}

        Returns
        -------
        ObservedEntries
            One entry per distinct position (sorted by linear index).
        """
        if how not in _AGGREGATIONS:
            raise DataValidationError(
                f"how must be one of {_AGGREGATIONS}; got {how!r}."
            )
        if not _fits_int64(self.shape):
            raise DataValidationError(
                f"Cannot aggregate entries of shape {self.shape}: its size exceeds "
                "int64. Remap the indices to 0..n-1 first."
            )
        lin = np.ravel_multi_index(tuple(self.indices.T), self.shape)
        order = np.argsort(lin, kind="stable")
        lin_s, vals_s = lin[order], self.values[order]
        uniq, start, counts = np.unique(lin_s, return_index=True, return_counts=True)
        if how == "mean":
            agg = np.add.reduceat(vals_s, start) / counts
        elif how == "sum":
            agg = np.add.reduceat(vals_s, start)
        elif how == "first":
            agg = vals_s[start]
        elif how == "last":
            agg = vals_s[start + counts - 1]
        elif how == "max":
            agg = np.maximum.reduceat(vals_s, start)
        else:
            agg = np.minimum.reduceat(vals_s, start)
        idx = np.stack(np.unravel_index(uniq, self.shape), axis=1)
        return ObservedEntries(idx, agg, self.shape, validate=False)


def _as_index_matrix(indices) -> np.ndarray:
    if (
        isinstance(indices, (tuple, list))
        and len(indices) > 0
        and all(np.ndim(a) == 1 for a in indices)
    ):
        arrays = [as_array(a, "An index array") for a in indices]
        if any(a.dtype == np.bool_ for a in arrays):  # np.stack would cast them
            raise DataValidationError(_BOOLEAN_INDICES)
        lengths = {a.shape[0] for a in arrays}
        if len(lengths) != 1:
            raise DataValidationError(
                "Index arrays must all have the same length; got lengths "
                f"{[a.shape[0] for a in arrays]}."
            )
        idx = (
            np.stack(arrays, axis=1)
            if arrays[0].shape[0]
            else np.empty((0, len(arrays)), dtype=np.int64)
        )
    else:
        idx = as_array(indices, "The indices")
        if idx.ndim != 2:
            raise DataValidationError(
                f"indices must have shape (nnz, ndim) or be a tuple of 1-D arrays; "
                f"got shape {idx.shape}."
            )
    return _as_int(idx)


def _as_shape(shape) -> tuple[int, ...]:
    """A shape given by the user as a tuple of ints (numpy ints included)."""
    dims = None
    if not isinstance(shape, (str, bytes)):
        try:
            dims = tuple(shape)
        except TypeError:
            dims = None
    if not dims or any(
        isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral)
        for s in dims
    ):
        raise DataValidationError(
            f"shape must be a tuple of ints, one size per mode; got {shape!r}."
        )
    return tuple(int(s) for s in dims)


def _fits_int64(shape) -> bool:
    """Whether every linear index of ``shape`` fits in int64."""
    size = 1
    for n in shape:
        size *= int(n)
    return size <= _INT64_MAX


def _mode_names(ndim: int) -> list[str]:
    return ["row", "column"] if ndim == 2 else [f"mode-{d}" for d in range(ndim)]


def infer_size(idx: np.ndarray, what: str, parameter: str) -> int:
    """``max index + 1`` of non-negative indices, checked.

    Parameters
    ----------
    idx : numpy.ndarray of int64, 1-D, non-empty
    what : str
        What an index is, for messages ("row", "object", "user"...).
    parameter : str
        The parameter that sets the size explicitly ("shape", "n_objects").

    Returns
    -------
    int

    Raises
    ------
    DataValidationError
        When the largest index is the largest int64 (the size does not fit
        in int64: usually a missing-value sentinel).

    Warns
    -----
    DataWarning
        When the size is at least 10,000 and fewer than 1 % of its indices
        occur: one stray index, or ids that were never remapped to
        ``0..n-1``, make every fit allocate and sweep the whole range.
    """
    top = int(idx.max())
    if top >= _INT64_MAX:
        raise DataValidationError(
            f"The largest {what} index is {top}, the largest int64: the size "
            "(index + 1) does not fit in int64. Is it a missing-value sentinel? "
            "Drop those entries or remap the ids to 0..n-1."
        )
    size = top + 1
    if size >= _SPARSE_CHECK_SIZE:
        used = np.unique(idx)
        if used.size * _SPARSE_RATIO < size:
            stray = ""
            if used.size > 1 and top > 10 * (int(used[-2]) + 1):
                stray = f" (the largest, {top}, is far above the next, {used[-2]})"
            warnings.warn(
                f"{what} indices reach {top}, so the inferred size is {size}, "
                f"but only {used.size} distinct {what} indices occur"
                f"{stray}. Every fit allocates and sweeps all {size}: drop a stray "
                "index, pass a DataFrame (or string ids) to map the ids to 0..n-1 "
                "(the model then keeps the map and predicts in your ids; or "
                "np.unique(ids, return_inverse=True) by hand), or pass "
                f"{parameter}= to set the size (which also silences this warning).",
                DataWarning,
                stacklevel=3,
            )
    return size


def _is_numeric(a: np.ndarray) -> bool:
    """Whether ``a`` holds numbers: not booleans, text or Python objects."""
    return np.issubdtype(a.dtype, np.number)


def _as_int(idx: np.ndarray) -> np.ndarray:
    if idx.dtype == np.bool_:
        raise DataValidationError(_BOOLEAN_INDICES)
    if np.issubdtype(idx.dtype, np.unsignedinteger) and idx.size:
        top = int(idx.max())
        if top > _INT64_MAX:
            pos = np.unravel_index(int(np.argmax(idx)), idx.shape)
            raise DataValidationError(
                f"Indices must fit in int64; entry {tuple(int(p) for p in pos)} is "
                f"{top} ({idx.dtype}), above 2**63 - 1. Is it a wrapped negative "
                "value or a sentinel? Indices are 0-based positions."
            )
    if np.issubdtype(idx.dtype, np.integer):
        return idx.astype(np.int64, copy=False)
    if np.issubdtype(idx.dtype, np.floating):
        # float16/32 hold integers exactly in float64, and 2**63 below would
        # overflow float16 (a NumPy warning)
        idx = idx.astype(np.float64, copy=False)
        # float64 holds 2**63 exactly, int64 does not: >= refuses it too
        bad = ~np.isfinite(idx) | (np.floor(idx) != idx) | (np.abs(idx) >= 2.0**63)
        if bad.any():
            pos = np.argwhere(bad)[0]
            value = float(idx[tuple(pos)])
            what = "integers" if np.floor(value) != value else "integers below 2**63"
            raise DataValidationError(
                f"Indices must be {what}; entry {int(pos[0])} has index {value!r} "
                f"in mode {int(pos[1])}."
            )
        return idx.astype(np.int64)
    raise DataValidationError(f"Indices must be integers; got dtype {idx.dtype}.")


def _check_values(vals: np.ndarray) -> None:
    finite = np.isfinite(vals)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        kind = "NaN" if np.isnan(vals[bad[0]]) else "infinite"
        raise DataValidationError(
            f"{bad.size} observed value(s) are NaN or infinite (first: entry "
            f"{int(bad[0])} is {kind}). Drop those entries or impute them before "
            "fitting; missing entries are simply not listed."
        )


def _validate(obs: ObservedEntries, check_duplicates: bool = True) -> None:
    idx, shape = obs.indices, obs.shape
    if obs.nnz == 0:
        raise DataValidationError("No observed entries: the input is empty.")
    if idx.shape[1] != len(shape):
        raise DataValidationError(
            f"Indices have {idx.shape[1]} modes but shape {shape} has {len(shape)}."
        )
    if any(not isinstance(s, numbers.Integral) or s < 1 for s in shape):
        raise DataValidationError(f"Every dimension must be >= 1; got shape {shape}.")
    neg = idx < 0
    if neg.any():
        e, d = (int(x) for x in np.argwhere(neg)[0])
        raise DataValidationError(
            f"{int(neg.sum())} negative index value(s); first: entry {e} has index "
            f"{int(idx[e, d])} in mode {d}. Indices are 0-based and non-negative."
        )
    over = idx >= np.asarray(shape)[None, :]
    if over.any():
        e, d = (int(x) for x in np.argwhere(over)[0])
        raise DataValidationError(
            f"{int(over.sum())} index value(s) out of range; first: entry {e} has "
            f"index {int(idx[e, d])} in mode {d}, whose size is {shape[d]}. Pass a "
            "larger shape or remap the indices (they are 0-based)."
        )
    _check_values(obs.values)
    if check_duplicates:
        if _fits_int64(shape):
            lin = np.ravel_multi_index(tuple(idx.T), shape)
            s = np.sort(lin)
            dup = s[1:] == s[:-1]
            first = np.unravel_index(s[1:][dup][0], shape) if dup.any() else None
        else:  # no linear index fits in int64: compare the rows themselves
            rows = idx[np.lexsort(idx.T[::-1])]
            dup = (rows[1:] == rows[:-1]).all(axis=1)
            first = rows[1:][dup][0] if dup.any() else None
        if dup.any():
            position = tuple(int(x) for x in first)
            raise DuplicateEntriesError(
                f"{int(dup.sum())} duplicate position(s), e.g. "
                f"{position}. Aggregate them first, e.g. with "
                "ObservedEntries(...).aggregate_duplicates('mean') (or 'sum', "
                "'last'), or pass validate=False to ObservedEntries and call "
                ".aggregate_duplicates.",
                position,
                int(dup.sum()),
            )


def as_observed_entries(
    X: ObservedEntries | sp.spmatrix | sp.sparray | tuple | ArrayLike | torch.Tensor,
    shape: tuple[int, ...] | None = None,
    *,
    owner: str | None = None,
) -> ObservedEntries:
    """Convert any supported input to :class:`ObservedEntries`.

    Parameters
    ----------
    X : ObservedEntries, scipy.sparse matrix, tuple, or array
        - ``ObservedEntries``: used as is;
        - scipy.sparse: the stored entries are the observed ones;
        - a tuple ``(rows, cols, values)`` (or ``(indices, values)`` for
          tensors): COO triples;
        - a dense array or tensor: NaN marks missing entries.
    shape : tuple of int, optional
        Shape for COO input (inferred from the indices otherwise).
    owner : str, optional
        Name used in error messages.

    Returns
    -------
    ObservedEntries
    """
    if isinstance(X, ObservedEntries):
        if shape is not None and tuple(shape) != X.shape:
            raise DataValidationError(
                f"shape={tuple(shape)} does not match the entries' shape {X.shape}."
            )
        return X
    if sp.issparse(X):
        return ObservedEntries.from_scipy(X)
    if isinstance(X, tuple):
        if len(X) == 3:
            return ObservedEntries.from_coo(X[0], X[1], X[2], shape)
        if len(X) == 2:
            return ObservedEntries(X[0], X[1], shape)
        raise DataValidationError(
            "A tuple input must be (rows, cols, values) or (indices, values); got a "
            f"tuple of length {len(X)}."
        )
    if hasattr(X, "detach"):
        X = X.detach().cpu().numpy()
    if isinstance(X, (np.ndarray, list)):
        return ObservedEntries.from_dense(X)
    who = f"{owner} " if owner else ""
    raise DataValidationError(
        f"{who}cannot read input of type {type(X).__name__}: pass ObservedEntries, a "
        "scipy.sparse matrix, a tuple (rows, cols, values) or a dense array with NaN "
        "for missing entries."
    )
