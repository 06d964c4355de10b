"""Users' own identifiers: a map between a column of ids and the codes 0..n-1.

The solvers index users, items, objects and tensor modes by 0..n-1; users
bring strings or sparse integers (MovieLens movieIds go to 193,609 with 9,724
used). :class:`IdMap` is the one translation both ways, kept with a fitted
model so that its results come back in the user's ids (issue 22).

Choices: the codes follow the **sorted** order of the distinct ids, so the
same ids give the same codes whatever their order in the data and whether
pandas is installed (``pandas.factorize(sort=True)`` when it is, NumPy's
``unique`` otherwise: the same result, pandas is faster on strings). Ids are
integers or strings, one kind per column: floats are accepted when they are
whole numbers (a CSV column of integers read as float), and a column mixing
kinds, or holding None / NaN, is refused, since its order would be
arbitrary.
"""

from __future__ import annotations

import weakref
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._core import DataValidationError, InvalidParameterError, persistable

__all__ = ["IdMap"]


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _as_ids(values: ArrayLike, what: str) -> np.ndarray:
    """A 1-d array of integer or string ids (int64, or str / object)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "US" and not isinstance(values, np.ndarray):
        # NumPy turns ["a", 1] into strings; look at what the user gave
        arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise DataValidationError(
            f"{what} must be one column of ids (1-d); got shape {arr.shape}."
        )
    kind = arr.dtype.kind
    if kind in "iu":
        return _int64_ids(arr, what)
    if kind == "b":
        raise DataValidationError(f"{what} must be integers or strings; got bools.")
    if kind == "f":
        if not np.isfinite(arr).all():
            bad = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise DataValidationError(
                f"{what} holds a missing id (NaN or inf) at position {bad}."
            )
        if not np.array_equal(arr, np.round(arr)):
            raise DataValidationError(
                f"{what} must be integers or strings; got fractional numbers."
            )
        return arr.astype(np.int64)
    if kind in "US":
        return arr
    if kind == "O":
        return _object_ids(arr, what)
    raise DataValidationError(
        f"{what} must be integers or strings; got dtype {arr.dtype}."
    )


def _object_ids(arr: np.ndarray, what: str) -> np.ndarray:
    """Object arrays (what pandas gives for strings): one kind of id, no gaps."""
    pd = _pandas()
    if pd is not None:  # one pass in C; the loop below then only names the culprit
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind == "string":
            return arr
        if kind == "integer":
            return _int64_ids(arr, what)
    kinds = set()
    for pos, value in enumerate(arr):
        if isinstance(value, str):
            kinds.add(str)
        elif isinstance(value, int | np.integer) and not isinstance(value, bool):
            kinds.add(int)
        else:
            raise DataValidationError(
                f"{what} must be integers or strings; position {pos} holds "
                f"{value!r}. Drop or fill missing ids before fitting."
            )
        if len(kinds) > 1:
            raise DataValidationError(
                f"{what} mixes integer and string ids (first mix at position "
                f"{pos}); convert the column to one type, e.g. str."
            )
    return _int64_ids(arr, what) if kinds == {int} else arr


def _refuse_the_pad(uniques: np.ndarray, codes: np.ndarray, what: str) -> None:
    """-1 (integer ids) and "" (string ids) pad the answers of ``recommend``
    and ``similar_items`` where fewer than k items exist: as an id they
    would be read as "no item". ``uniques`` is sorted ("" comes first)."""
    pad = -1 if uniques.dtype.kind == "i" else ""
    at = int(np.searchsorted(uniques, pad)) if uniques.size else 0
    if at < uniques.size and uniques[at] == pad:
        pos = int(np.flatnonzero(np.ravel(codes) == at)[0])
        raise DataValidationError(
            f"{what} holds {pad!r} at position {pos}, the value that pads "
            "recommend's answers (no item); give that id another name, or drop "
            "the rows without an id."
        )


def _int64_ids(arr: np.ndarray, what: str) -> np.ndarray:
    """Integer ids as int64; ids outside its range are refused (uint64 ids
    above 2**63 - 1 wrapped onto negative ones)."""
    top = np.iinfo(np.int64).max
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "u":
        if not (arr.size and arr.max() > top):
            return arr.astype(np.int64)
    else:  # Python ints (an object column)
        try:
            return arr.astype(np.int64)
        except OverflowError:
            pass
    big = next(int(v) for v in arr.flat if not -top - 1 <= int(v) <= top)
    raise DataValidationError(
        f"{what} holds the id {big}, outside the 64-bit signed integers ids "
        "are kept in; give such ids as strings (e.g. frame[column].astype(str))."
    )


#: pandas Index (hash table) of each live ``IdMap.ids`` array, by its id().
_INDEXES: dict[int, tuple[weakref.ref, object]] = {}


def _hash_index(ids: np.ndarray, pd):
    """The pandas Index of ``ids``, built once per array and kept while it lives.

    Building the hash table is what a lookup costs: for 10^6 string ids 57 ms
    a call against 0.03 ms with the table kept, which a service predicting a
    few entries per request pays every time. Kept here, not on the IdMap,
    because persistence stores an IdMap's attributes; the weak reference
    checks that the entry is this very array (ids of freed arrays are reused)
    and drops the entry with it.
    """
    key = id(ids)
    entry = _INDEXES.get(key)
    if entry is not None and entry[0]() is ids:
        return entry[1]
    index = pd.Index(ids)
    _INDEXES[key] = (weakref.ref(ids, lambda _, k=key: _INDEXES.pop(k, None)), index)
    return index


@persistable
class IdMap:
    """The distinct ids of one column and their codes 0..n-1 (sorted order).

    Parameters
    ----------
    ids : array-like of int or str
        The distinct ids, sorted and unique (as :meth:`fit` makes them).

    Attributes
    ----------
    ids : numpy.ndarray
        ``ids[code]`` is the user's id of a code.

    Examples
    --------
    >>> ids, codes = IdMap.fit(["b", "a", "b", "c"])
    >>> codes
    array([1, 0, 1, 2])
    >>> ids.decode([2, 0]).tolist()
    ['c', 'a']
    >>> ids.encode(["c", "z"], unknown="missing")
    array([ 2, -1])
    """

    def __init__(self, ids: ArrayLike) -> None:
        ids = _as_ids(ids, "ids")
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
            raise DataValidationError(
                "IdMap ids must be sorted and unique; build it with IdMap.fit."
            )
        self.ids = ids.astype(np.int64 if ids.dtype.kind == "i" else object)

    @classmethod
    def fit(cls, values: ArrayLike, what: str = "ids") -> tuple[IdMap, np.ndarray]:
        """The map of a column's distinct ids and the column's codes.

        Parameters
        ----------
        values : array-like of int or str, shape (n,)
        what : str
            How error messages name the column ("user ids", ...).

        Returns
        -------
        id_map : IdMap
        codes : numpy.ndarray of int64, shape (n,)
            ``id_map.ids[codes] == values``.
        """
        values = _as_ids(values, what)
        pd = _pandas()
        if pd is not None and values.dtype.kind == "i":
            codes, uniques = pd.factorize(values, sort=True)
        elif pd is not None:  # hash, then sort the distinct ids only, as str:
            # factorize(sort=True) compares Python objects (10x slower)
            codes, uniques = pd.factorize(values)
            uniques = np.asarray(uniques).astype(str)
            order = np.argsort(uniques)  # distinct: no ties
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            codes, uniques = rank[codes], uniques[order]
        elif values.dtype.kind == "O":  # NumPy sorts fixed-width str far faster
            uniques, codes = np.unique(values.astype(str), return_inverse=True)
        else:
            uniques, codes = np.unique(values, return_inverse=True)
        _refuse_the_pad(np.asarray(uniques), np.asarray(codes), what)
        id_map = cls.__new__(cls)
        # strings are kept as objects whichever path ran (same ids, same dtype)
        kind = np.int64 if values.dtype.kind == "i" else object
        id_map.ids = np.asarray(uniques).astype(kind)
        return id_map, np.asarray(codes, dtype=np.int64).reshape(-1)

    def __len__(self) -> int:
        return int(self.ids.size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdMap) and np.array_equal(self.ids, other.ids)

    def __repr__(self) -> str:
        return f"IdMap({len(self)} ids)"

    @property
    def is_identity(self) -> bool:
        """Whether the ids are exactly the codes 0..n-1 (nothing to translate)."""
        return self.ids.dtype.kind == "i" and np.array_equal(
            self.ids, np.arange(len(self))
        )

    def encode(
        self,
        values: ArrayLike,
        *,
        unknown: Literal["raise", "missing"] = "raise",
        what: str = "ids",
    ) -> np.ndarray:
        """Codes of the user's ids.

        Parameters
        ----------
        values : array-like of int or str, shape (n,)
        unknown : {"raise", "missing"}
            An id the map does not hold: a ``DataValidationError`` naming it,
            or the code -1.
        what : str
            How error messages name the column.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        if unknown not in ("raise", "missing"):
            raise InvalidParameterError(
                "The 'unknown' parameter of IdMap.encode must be a str among "
                f"{{'missing', 'raise'}}. Got {unknown!r}."
            )
        values = _as_ids(values, what)
        codes = np.full(values.size, -1, dtype=np.int64)
        pd = _pandas()
        if not (len(self) and values.size and _same_kind(values, self.ids)):
            pass  # nothing can match
        elif pd is not None:  # a hash lookup
            codes = _hash_index(self.ids, pd).get_indexer(values).astype(np.int64)
        else:
            pos = np.searchsorted(self.ids, values).clip(0, len(self) - 1)
            hit = self.ids[pos] == values
            codes[hit] = pos[hit]
        if unknown == "raise" and (codes < 0).any():
            first = int(np.flatnonzero(codes < 0)[0])
            n_new = int((codes < 0).sum())
            raise DataValidationError(
                f"{what} holds {n_new} id(s) unseen at fit, the first "
                f"{values[first : first + 1].tolist()[0]!r} at position {first}."
            )
        return codes

    def decode(self, codes: ArrayLike) -> np.ndarray:
        """The user's ids of codes 0..n-1 (any shape)."""
        codes = np.asarray(codes)
        if codes.dtype.kind not in "iu":
            raise DataValidationError(f"codes must be integers; got {codes.dtype}.")
        if codes.size and (codes.min() < 0 or codes.max() >= len(self)):
            raise DataValidationError(
                f"codes must lie in 0..{len(self) - 1}; got {codes.min()}..."
                f"{codes.max()}."
            )
        return self.ids[codes]


def _same_kind(values: np.ndarray, ids: np.ndarray) -> bool:
    """Whether two id columns hold the same kind of id (int, or str)."""
    return (values.dtype.kind == "i") == (ids.dtype.kind == "i")
