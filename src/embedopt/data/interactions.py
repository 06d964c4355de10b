"""User-item interactions and per-user / per-item side features.

Two-tower models (the trainable index of :mod:`embedopt.quantization`, the
all-pairs similarity learning of :mod:`embedopt.similarity`) learn from
observed (user, item) pairs, optionally valued, and from side features of the
users and items: categorical codes (gender, age bucket, genre id) and dense
vectors (multi-hot genres, text embeddings). :func:`as_interactions` and
:func:`as_side_features` accept what users have at hand, check it once and
return the two containers the models read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._core import DataValidationError, as_array
from .entries import ObservedEntries, _as_int, infer_size

__all__ = [
    "Interactions",
    "InteractionsLike",
    "SideFeatures",
    "as_interactions",
    "as_side_features",
]


@dataclass(frozen=True, eq=False)
class Interactions:
    """Observed (user, item) pairs of an ``n_users x n_items`` problem.

    Build it with :func:`as_interactions`, which validates the input.

    Attributes
    ----------
    users, items : numpy.ndarray of int64, shape (n_pairs,)
        User (row) and item (column) index of each pair.
    shape : tuple of int
        ``(n_users, n_items)``.
    values : numpy.ndarray of float64, shape (n_pairs,), or None
        The value of each pair (a rating, a count) when the input had one;
        implicit-feedback models ignore it.
    """

    users: np.ndarray
    items: np.ndarray
    shape: tuple[int, int]
    values: np.ndarray | None = None

    @property
    def n_users(self) -> int:
        """Number of users (rows)."""
        return self.shape[0]

    @property
    def n_items(self) -> int:
        """Number of items (columns)."""
        return self.shape[1]

    def __len__(self) -> int:
        return int(self.users.shape[0])

    def __repr__(self) -> str:
        return f"Interactions(shape={self.shape}, n_pairs={len(self)})"


#: Pairs in any form :func:`as_interactions` takes.
InteractionsLike = Interactions | ObservedEntries | sp.spmatrix | sp.sparray | tuple


def as_interactions(
    X: InteractionsLike,
    shape: tuple[int, int] | None = None,
) -> Interactions:
    """Validate (user, item) interactions.

    Parameters
    ----------
    X : Interactions, ObservedEntries, scipy.sparse matrix or tuple
        The observed pairs: a tuple ``(users, items[, values])`` of 1-D
        integer arrays of the same length, optionally with one value per
        pair; or a sparse ``n_users x n_items`` matrix whose stored entries
        are the pairs (with their values). An :class:`ObservedEntries`
        matrix (or an :class:`Interactions`) is already validated and
        carries its own shape, which is kept.
    shape : tuple (n_users, n_items), optional
        For a tuple input; default ``(max user + 1, max item + 1)``.

    Returns
    -------
    Interactions

    Raises
    ------
    DataValidationError
        If ``X`` is of another type, the index arrays are empty, not 1-D, of
        different lengths, not integers, negative or beyond ``shape``, or the
        values are not finite numbers, one per pair.

    Examples
    --------
    >>> as_interactions(([0, 1, 1], [2, 0, 1]))
    Interactions(shape=(2, 3), n_pairs=3)
    """
    if isinstance(X, Interactions):
        return X
    if sp.issparse(X):
        coo = sp.coo_matrix(X)
        if shape is not None and tuple(shape) != coo.shape:
            raise DataValidationError(
                f"The interaction matrix has shape {coo.shape}; expected "
                f"{tuple(shape)}."
            )
        if coo.nnz == 0:
            raise DataValidationError("The interaction matrix has no nonzeros.")
        coo.sum_duplicates()
        values = _check_values(coo.data, coo.nnz)
        return Interactions(
            coo.row.astype(np.int64), coo.col.astype(np.int64), coo.shape, values
        )
    if isinstance(X, ObservedEntries):
        if X.ndim != 2:
            raise DataValidationError(
                f"Interactions must be a matrix of (user, item) pairs; got "
                f"ObservedEntries of a {X.ndim}-way tensor."
            )
        return Interactions(X.rows, X.cols, (X.shape[0], X.shape[1]), X.values)
    if not (isinstance(X, tuple) and len(X) in (2, 3)):
        raise DataValidationError(
            "Interactions must be ObservedEntries or a tuple (users, items[, "
            f"values]); got {type(X).__name__}."
        )
    users, items = as_array(X[0], "users"), as_array(X[1], "items")
    if users.shape != items.shape or users.ndim != 1 or users.size == 0:
        raise DataValidationError(
            "Interactions must be two non-empty 1-D arrays (users, items) of the "
            f"same length; got shapes {users.shape} and {items.shape}."
        )
    if not (
        np.issubdtype(users.dtype, np.integer)
        and np.issubdtype(items.dtype, np.integer)
    ):
        raise DataValidationError(
            "User and item indices must be integers; got dtypes "
            f"{users.dtype} and {items.dtype}."
        )
    users, items = _as_int(users), _as_int(items)  # uint64 above 2**63 refused
    if users.min() < 0 or items.min() < 0:
        raise DataValidationError(
            "User and item indices must be non-negative; got min user "
            f"{int(users.min())}, min item {int(items.min())}."
        )
    shape = _check_shape(shape, users, items)
    values = None if len(X) == 2 else _check_values(X[2], users.size)
    return Interactions(users.astype(np.int64), items.astype(np.int64), shape, values)


def _check_shape(shape, users: np.ndarray, items: np.ndarray) -> tuple[int, int]:
    if shape is None:
        return infer_size(users, "user", "shape"), infer_size(items, "item", "shape")
    if not (
        isinstance(shape, (tuple, list))
        and len(shape) == 2
        and all(isinstance(s, (int, np.integer)) and s >= 1 for s in shape)
    ):
        raise DataValidationError(
            f"shape must be a pair of positive ints (n_users, n_items); got {shape!r}."
        )
    shape = int(shape[0]), int(shape[1])
    if users.max() >= shape[0] or items.max() >= shape[1]:
        raise DataValidationError(
            f"Indices exceed shape {shape}: max user {int(users.max())}, max item "
            f"{int(items.max())}."
        )
    return shape


def _check_values(values, n: int) -> np.ndarray:
    v = as_array(values, "Interaction values")
    if v.shape != (n,) or v.dtype.kind not in "iuf":
        raise DataValidationError(
            f"Interaction values must be {n} real numbers, one per pair; got dtype "
            f"{v.dtype}, shape {v.shape}."
        )
    if not np.isfinite(v).all():
        raise DataValidationError(
            f"Interaction values must be finite; pair {int(np.argmin(np.isfinite(v)))}"
            " has NaN or inf."
        )
    return v.astype(np.float64)


@dataclass(frozen=True, eq=False)
class SideFeatures:
    """Side features of ``n`` users or items, split by kind.

    Build it with :func:`as_side_features`, which validates the input.

    Attributes
    ----------
    categorical : numpy.ndarray of int64, shape (n, c)
        One column of category codes per categorical feature.
    cardinalities : tuple of int, length c
        Number of categories of each column (``max code + 1``).
    dense : numpy.ndarray of float32, shape (n, d)
        The dense features side by side (d may be 0).
    """

    categorical: np.ndarray
    cardinalities: tuple[int, ...]
    dense: np.ndarray

    @property
    def n(self) -> int:
        """Number of rows (users or items)."""
        return int(self.categorical.shape[0])

    @property
    def n_categorical(self) -> int:
        """Number of categorical features c."""
        return int(self.categorical.shape[1])

    @property
    def n_dense(self) -> int:
        """Width d of the dense features."""
        return int(self.dense.shape[1])

    def __repr__(self) -> str:
        cards = list(self.cardinalities)
        return (
            f"SideFeatures(n={self.n}, cardinalities={cards}, n_dense={self.n_dense})"
        )


def as_side_features(
    features: Mapping[str, ArrayLike] | SideFeatures | None, n: int, name: str = "side"
) -> SideFeatures:
    """Validate per-row side features and split them into categorical and dense.

    Parameters
    ----------
    features : dict of str to array-like, SideFeatures or None
        One entry per feature, ``n`` rows each: a 1-D integer array holds
        category codes (0-based), a 1-D boolean array a two-category feature,
        a 2-D float array a dense feature (e.g. multi-hot genres). Dense
        features are concatenated in dict order. None means no features.
    n : int
        Number of rows expected (users or items).
    name : str
        What the rows are ("user", "item"), used in error messages.

    Returns
    -------
    SideFeatures

    Raises
    ------
    DataValidationError
        If a feature has another number of rows, negative codes, NaN or
        infinite dense values, or another dtype or number of dimensions.

    Examples
    --------
    >>> f = as_side_features({"genre": [0, 2, 1], "tags": np.eye(3)}, 3, "item")
    >>> f.cardinalities, f.n_dense
    ((3,), 3)
    """
    if isinstance(features, SideFeatures):
        if features.n != n:
            raise DataValidationError(
                f"{name} features have {features.n} rows; expected {n}."
            )
        return features
    if features is not None and not isinstance(features, Mapping):
        raise DataValidationError(
            f"{name} features must be a dict of arrays (name -> values); got "
            f"{type(features).__name__}."
        )
    cats, cards, dense = [], [], []
    for key, values in (features or {}).items():
        a = as_array(values, f"{name} feature {key!r}")
        if a.ndim == 0 or a.shape[0] != n:
            raise DataValidationError(
                f"{name} feature {key!r} has {a.shape[0] if a.ndim else 0} rows; "
                f"expected {n}."
            )
        if a.ndim == 1 and np.issubdtype(a.dtype, np.integer):
            a = _as_int(a)  # uint64 codes above 2**63 refused, not wrapped
            if a.min() < 0:
                raise DataValidationError(
                    f"{name} feature {key!r} has negative category codes "
                    f"(min {int(a.min())}); codes must be 0-based."
                )
            cats.append(a)
            cards.append(int(a.max()) + 1)
        elif a.ndim == 2 and np.issubdtype(a.dtype, np.floating):
            if not np.isfinite(a).all():
                raise DataValidationError(f"{name} feature {key!r} has NaN/inf.")
            with np.errstate(over="ignore"):  # checked just below
                a = a.astype(np.float32)
            if not np.isfinite(a).all():
                raise DataValidationError(
                    f"{name} feature {key!r} has values beyond the float32 range "
                    f"(|x| > {float(np.finfo(np.float32).max):.3g}); scale them."
                )
            dense.append(a)
        elif a.ndim == 1 and a.dtype == bool:
            cats.append(a.astype(np.int64))
            cards.append(2)
        else:
            raise DataValidationError(
                f"{name} feature {key!r} must be 1-D integer codes or a 2-D float "
                f"array; got dtype {a.dtype}, shape {a.shape}."
            )
    return SideFeatures(
        categorical=np.stack(cats, 1) if cats else np.zeros((n, 0), np.int64),
        cardinalities=tuple(cards),
        dense=np.concatenate(dense, 1) if dense else np.zeros((n, 0), np.float32),
    )
