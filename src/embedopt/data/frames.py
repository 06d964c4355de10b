"""Data frames and columns of the user's own ids, read into codes 0..n-1.

Every estimator that takes ids (users, items, objects, tensor modes) reads
them here, once (issue 22):

* a pandas DataFrame is read **by column position**, never by name (as
  Surprise's ``load_from_df``): the id columns, then the value column where
  the estimator takes values; every id column of a frame is mapped through
  :class:`~embedopt.data.IdMap`, integer ids too (sorted codes: ids that are
  exactly 0..n-1 give the identity map, so the fit is the positional one);
* arrays and tuples: a column of strings or objects is mapped the same way;
  an integer (or integral float) column stays positions as it always was
  (remapping it would silently shift users who have no training rows);
* at predict time, :func:`encode_ids` translates the user's ids with the
  fitted map and applies the estimator's ``unknown`` policy (see
  :data:`UNKNOWN_POLICIES`).

pandas stays optional: it is never imported here; a frame can only come from
pandas, so one is recognised through ``sys.modules``. Other frame libraries
(polars, pyarrow) are converted through pandas' interchange protocol, which
needs pandas installed (the error says so).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._core import DataValidationError
from .ids import IdMap, _as_ids

__all__ = [
    "UNKNOWN_POLICIES",
    "decode_ids",
    "encode_ids",
    "extend_ids",
    "fitted_maps",
    "frame_columns",
    "is_frame",
    "is_id_column",
    "map_id_columns",
    "pair_columns",
    "public_ids",
    "repeated_ids_error",
]

#: The values of every estimator's ``unknown`` parameter: what ``predict``
#: (``recommend``, ``transform``...) does with an id it did not see at fit
#: (or, on a model fitted on positions, a position beyond the fitted size):
#: ``"raise"`` a DataValidationError naming the id, ``"nan"`` a NaN result
#: for it, ``"fallback"`` the result of a model that has no row for it (each
#: estimator documents which).
UNKNOWN_POLICIES = ("raise", "nan", "fallback")


def is_frame(X: object) -> bool:
    """Whether ``X`` is a data frame (without importing pandas).

    A pandas DataFrame, or a frame of another library that offers the
    interchange protocol (``__dataframe__``: polars, pyarrow), which
    :func:`frame_columns` reads through pandas.

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
    """
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(X, pd.DataFrame):
        return True
    return hasattr(X, "__dataframe__") and not isinstance(X, np.ndarray)


def _as_pandas(X: object, owner: str):
    try:
        import pandas as pd
    except ImportError:
        raise DataValidationError(
            f"{owner} reads a {type(X).__name__} data frame through pandas, which "
            "is not installed: pip install pandas, or pass NumPy arrays "
            "(a tuple of columns)."
        ) from None
    return pd.api.interchange.from_dataframe(X)


def frame_columns(
    X: object,
    roles: Sequence[str],
    *,
    owner: str,
    values: str = "required",
    extra_hint: str = "",
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The id columns (and the value column) of a data frame, by position.

    Parameters
    ----------
    X : pandas.DataFrame (or a frame with the interchange protocol)
    roles : sequence of str
        What each id column holds, in order ("user", "item"...): the frame's
        first ``len(roles)`` columns.
    owner : str
        The estimator or method, for messages.
    values : {"required", "optional", "refuse"}
        Whether one more column, the values, must follow the ids, may follow
        them (and is then returned), or must not.
    extra_hint : str
        Appended to the message when a frame has a column too many.

    Returns
    -------
    columns : list of numpy.ndarray
        The id columns as they are (mapped by :func:`map_id_columns`).
    values : numpy.ndarray or None

    Raises
    ------
    DataValidationError
        A frame with another number of columns (the message lists the
        expected ones).
    """
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(X, pd.DataFrame):
        X = _as_pandas(X, owner)
    n, k = len(roles), X.shape[1]
    expected = {
        "required": (n + 1,),
        "optional": (n, n + 1),
        "refuse": (n,),
    }[values]
    if k not in expected:
        layout = ", ".join(roles) + (", value" if values == "required" else "")
        if values == "optional":
            layout += "[, value]"
        hint = extra_hint if k > max(expected) and extra_hint else ""
        raise DataValidationError(
            f"{owner} reads a DataFrame's columns by position as ({layout}); got "
            f"{k} column(s) {list(X.columns)}.{(' ' + hint) if hint else ''}"
        )
    columns = [X.iloc[:, j].to_numpy() for j in range(n)]
    vals = None
    if k == n + 1:
        column = X.iloc[:, n]
        vals = column.to_numpy()
        if vals.dtype.kind == "O":  # nullable numbers: NA becomes NaN
            vals = _numeric_values(column, f"{X.columns[n]!r} (column {n})", owner)
    return columns, vals


#: What pandas infers for a column of numbers (NA skipped).
_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "decimal", "empty")


def _numeric_values(column, name: str, owner: str) -> np.ndarray:
    """An object value column as float64, NA as NaN; numbers only (pandas
    alone would read the strings "3" as 3.0, which the tuple form refuses)."""
    kind = sys.modules["pandas"].api.types.infer_dtype(column, skipna=True)
    if kind in _NUMBER_KINDS:
        try:
            return column.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            pass
    raise DataValidationError(
        f"The value column {name} of the frame given to {owner} must hold "
        f"numbers; got dtype {column.dtype} ({kind} values). Convert it first, "
        f"e.g. frame[{column.name!r}].astype(float)."
    )


def is_id_column(values: object) -> bool:
    """Whether an array-like column holds ids to map (strings or objects).

    Integer, float and boolean columns are positions (or refused as such);
    anything NumPy reads as text or Python objects is a column of ids.

    Parameters
    ----------
    values : array-like

    Returns
    -------
    bool
    """
    if hasattr(values, "detach") or np.ndim(values) == 0:
        return False
    try:
        kind = np.asarray(values).dtype.kind
    except (ValueError, TypeError):
        return False
    return kind in "OUS"


def map_id_columns(
    columns: Sequence[ArrayLike],
    roles: Sequence[str],
    *,
    every: bool = False,
    shared: bool = False,
) -> tuple[list[np.ndarray], list[IdMap | None]]:
    """Codes of the id columns to map; the other columns as they are.

    Parameters
    ----------
    columns : sequence of array-like, each 1-D
    roles : sequence of str
        What each column holds ("user", "item", "object"...), for messages.
    every : bool
        Map every column (a data frame's), not only those of strings or
        objects (:func:`is_id_column`).
    shared : bool
        One map over all columns (the objects of a comparison are one set):
        then every column is mapped if any is.

    Returns
    -------
    columns : list of numpy.ndarray
        int64 codes where mapped, else the column unchanged.
    maps : list of IdMap or None
        The map of each column (the same object for all with ``shared``), or
        None for a column left as positions.

    Raises
    ------
    DataValidationError
        A column to map holding missing ids (None, NaN), fractional numbers,
        booleans, or both integers and strings; the message names the column.
    """
    mapped = [every or is_id_column(c) for c in columns]
    names = [f"column {j} ({role} ids)" for j, role in enumerate(roles)]
    if shared and any(mapped):
        parts = [_as_ids(c, name) for c, name in zip(columns, names, strict=True)]
        kinds = {p.dtype.kind == "i" for p in parts}
        if len(kinds) > 1:
            raise DataValidationError(
                f"The {roles[0]} ids mix integer and string columns; convert them "
                "to one type, e.g. str."
            )
        id_map, codes = IdMap.fit(np.concatenate(parts), names[0].split(" (")[0])
        split = np.split(codes, np.cumsum([p.size for p in parts])[:-1])
        return list(split), [id_map] * len(parts)
    out, maps = [], []
    for column, name, on in zip(columns, names, mapped, strict=True):
        if on:
            id_map, codes = IdMap.fit(column, name)
            out.append(codes)
            maps.append(id_map)
        else:
            out.append(column)
            maps.append(None)
    return out, maps


def encode_ids(
    values: ArrayLike,
    id_map: IdMap,
    *,
    what: str,
    unknown: str = "raise",
    owner: str = "the estimator",
) -> np.ndarray:
    """Codes of the user's ids at predict time; -1 marks an unknown id.

    Parameters
    ----------
    values : array-like of int or str, 1-D
    id_map : IdMap
        The map fitted with the model.
    what : str
        What the ids are ("user ids"...), for messages.
    unknown : {"raise", "nan", "fallback"}
        The estimator's policy: ``"raise"`` refuses an unknown id, the other
        two leave -1 for the estimator to handle.
    owner : str
        The estimator, named in the message with the parameter to change.

    Returns
    -------
    numpy.ndarray of int64

    Raises
    ------
    DataValidationError
        An id the map does not hold (with ``unknown="raise"``), or a column
        that is no column of ids.
    """
    codes = id_map.encode(np.ravel(_column(values, what)), unknown="missing", what=what)
    if unknown == "raise" and (codes < 0).any():
        first = int(np.flatnonzero(codes < 0)[0])
        raise DataValidationError(
            f"{what} holds {int((codes < 0).sum())} id(s) unseen at fit, the first "
            f"{np.ravel(np.asarray(values, dtype=object))[first]!r} at position "
            f"{first}. Set unknown='nan' or unknown='fallback' on {owner} to "
            "predict for them anyway (see its docstring), or drop them."
        )
    return codes


def extend_ids(
    id_map: IdMap, values: ArrayLike, *, what: str
) -> tuple[IdMap, np.ndarray, np.ndarray]:
    """The map grown by the ids of ``values`` it does not hold (``partial_fit``).

    Codes stay the sorted order of the ids (as :meth:`IdMap.fit` makes
    them), so an id new to the map may move the codes of known ids: the
    returned ``old_to_new`` says where each one went, for the arrays a model
    indexes by code (factor rows, offsets, training entries).

    Parameters
    ----------
    id_map : IdMap
        The fitted map.
    values : array-like of int or str, 1-D
        Ids of new data: known ones and new ones.
    what : str
        What the ids are ("user ids"...), for messages.

    Returns
    -------
    grown : IdMap
        ``id_map`` itself when every id is known.
    codes : numpy.ndarray of int64
        The codes of ``values`` in ``grown``.
    old_to_new : numpy.ndarray of int64, shape (len(id_map),)
        ``grown`` code of each code of ``id_map``.

    Raises
    ------
    DataValidationError
        Ids of another kind than the map's (strings for a map of integers, or
        the reverse), missing or fractional ids.
    """
    values = _as_ids(np.ravel(_column(values, what)), what)
    if (
        len(id_map)
        and values.size
        and (values.dtype.kind == "i") != (id_map.ids.dtype.kind == "i")
    ):
        kinds = ("integers", "strings")
        have = kinds[id_map.ids.dtype.kind != "i"]
        raise DataValidationError(
            f"{what} must be {have} like the ids of the fit; got "
            f"{kinds[values.dtype.kind != 'i']}. Convert the column first."
        )
    codes = id_map.encode(values, unknown="missing", what=what)
    if (codes >= 0).all():
        return id_map, codes, np.arange(len(id_map), dtype=np.int64)
    grown, _ = IdMap.fit(np.concatenate([id_map.ids, values[codes < 0]]), what)
    old_to_new = grown.encode(id_map.ids, what=what)
    return grown, grown.encode(values, what=what), old_to_new


def _column(values, what: str) -> np.ndarray:
    arr = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values)
    if arr.dtype.kind in "US" and not isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=object)  # ["a", 1] stays mixed
    if arr.ndim > 1 and arr.size == arr.shape[0]:
        arr = arr.reshape(-1)
    if arr.ndim > 1:
        raise DataValidationError(
            f"{what} must be one column of ids (1-d); got shape {arr.shape}."
        )
    return arr


def public_ids(id_map: IdMap | None) -> np.ndarray | None:
    """A map's ids as a fitted attribute (``user_ids_``...): int64 or str.

    Both are stored without pickle (``numpy.save``); None stays None (a
    column fitted on positions).

    Parameters
    ----------
    id_map : IdMap or None

    Returns
    -------
    numpy.ndarray or None
    """
    if id_map is None:
        return None
    return id_map.ids.astype(np.int64 if id_map.ids.dtype.kind == "i" else str)


def repeated_ids_error(
    position: Sequence[int],
    count: int,
    maps: Sequence[IdMap | None],
    roles: Sequence[str],
    owner: str,
) -> DataValidationError:
    """The error for entries that repeat a position, in the user's ids.

    With the fix that applies to what the user passed (a frame or id
    columns), not to the codes the estimator built from them.

    Parameters
    ----------
    position : sequence of int
        The first repeated position, one code per column.
    count : int
        How many entries repeat a position.
    maps : sequence of IdMap or None
        The columns' maps (None: a column of positions).
    roles : sequence of str
        What the columns are ("user", "item", ...).
    owner : str
        The estimator, as messages name it.

    Returns
    -------
    DataValidationError
    """
    named = ", ".join(
        f"{r} {decode_ids([c], public_ids(m))[0].item()!r}"
        for r, c, m in zip(roles, position, maps, strict=True)
    )
    return DataValidationError(
        f"{owner}.fit got {count} repeated ({', '.join(roles)}) position(s), e.g. "
        f"({named}): one value per position. Aggregate them first, e.g. "
        f"frame.groupby([{', '.join(roles)} columns], as_index=False).mean() "
        "(or .last())."
    )


def decode_ids(codes: ArrayLike, ids: np.ndarray | None) -> np.ndarray:
    """The user's ids of codes (any shape), with -1 (a pad) kept as a pad.

    Parameters
    ----------
    codes : array-like of int
        Codes 0..n-1; -1 pads.
    ids : numpy.ndarray or None
        The fitted ids (``item_ids_``...); None returns the codes unchanged.

    Returns
    -------
    numpy.ndarray
        ``ids[codes]``; a pad becomes -1 for integer ids, ``""`` for strings.
    """
    codes = np.asarray(codes)
    if ids is None:
        return codes
    out = ids[np.maximum(codes, 0)]
    out[codes < 0] = -1 if ids.dtype.kind == "i" else ""
    return out


def pair_columns(
    X: object,
    *,
    owner: str,
    weight_hint: str = "pass it as sample_weight= to fit.",
) -> tuple[tuple[np.ndarray, ...], list[IdMap | None]] | None:
    """(user, item) pairs given as ids: a frame, or a tuple with a string column.

    A frame has exactly two columns, users then items (a third is refused:
    weights go in ``sample_weight``); a tuple ``(users, items[, values])``
    is mapped column by column where a column holds strings or objects.

    Parameters
    ----------
    X : object
        What ``fit`` received.
    owner : str
        The estimator, for messages.
    weight_hint : str
        What the message of a frame with a third column says to do with it.

    Returns
    -------
    tuple or None
        ``((users, items[, values]), [user_map, item_map])`` with codes for
        mapped columns; None for input without ids (positions, sparse
        matrices, Interactions), read as before.
    """
    if is_frame(X):
        columns, _ = frame_columns(
            X,
            ("user", "item"),
            owner=owner,
            values="refuse",
            extra_hint="A pair's weight (a rating, a count) is not read from the "
            f"frame: {weight_hint}",
        )
        codes, maps = map_id_columns(columns, ("user", "item"), every=True)
        return tuple(codes), maps
    if (
        isinstance(X, tuple)
        and len(X) in (2, 3)
        and (is_id_column(X[0]) or is_id_column(X[1]))
    ):
        codes, maps = map_id_columns(X[:2], ("user", "item"))
        return (*codes, *X[2:]), maps
    return None


def fitted_maps(model: object, arrays: Sequence[np.ndarray | None]) -> list:
    """The IdMaps of a fitted model's id arrays (``user_ids_``...), built once.

    The maps are cached beside the model (not on it: what a model holds is
    saved with it) with the arrays they were built from, and rebuilt when an
    attribute holds another array (a refit, a loaded model).

    Parameters
    ----------
    model : object
        The estimator.
    arrays : sequence of numpy.ndarray or None
        Its fitted ids per column; None for a column of positions.

    Returns
    -------
    list of IdMap or None
    """
    try:
        cached = _MAPS.get(model)
    except TypeError:  # not weakly referable: no cache
        cached = None
    if cached is not None and len(cached[0]) == len(arrays):
        if all(a is b for a, b in zip(cached[0], arrays, strict=True)):
            return cached[1]
    maps = [None if a is None else IdMap(a) for a in arrays]
    try:
        _MAPS[model] = (list(arrays), maps)
    except TypeError:
        pass
    return maps


#: model -> (its id arrays, their IdMaps): :func:`fitted_maps`' cache.
_MAPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
