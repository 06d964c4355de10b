"""Relative comparisons (triplets and quadruplets) for ordinal embedding."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    InvalidParameterError,
    RandomStateLike,
    check_plus_minus_one,
)
from .entries import _as_int, _is_numeric, infer_size
from .splits import random_parts

__all__ = [
    "ComparisonWarning",
    "Comparisons",
    "as_comparisons",
    "as_quadruplets",
    "split_comparisons",
]


class ComparisonWarning(UserWarning):
    """Some comparisons were dropped because they carry no information."""


class Comparisons:
    """Oriented triplets or quadruplets over ``n_objects`` objects.

    A triplet ``(i, j, k)`` states that object i is closer to j than to k,
    ``d(i, j) < d(i, k)``; a quadruplet ``(i, j, l, k)`` states
    ``d(i, j) < d(l, k)`` (the order of Ma et al., eq. (1)-(3), with the label
    ``y_q > 0`` already applied). A triplet is the quadruplet ``(i, j, i, k)``.

    Parameters
    ----------
    indices : array-like of int, shape (m, 3) or (m, 4)
        Object indices (0-based) of each comparison.
    responses : array-like of {-1, +1}, shape (m,), optional
        Answers to the comparisons as asked: +1 keeps the statement above, -1
        reverses it (the second pair is the closer one). Reversed comparisons
        are stored oriented (j and k swapped, or the two pairs swapped).
    n_objects : int, optional
        Number of objects; default ``max index + 1``.
    drop_degenerate : bool
        Drop comparisons that repeat an index where it makes them meaningless
        (``i == j``, ``i == k`` or ``j == k`` in a triplet; ``i == j``,
        ``l == k`` or the same pair on both sides of a quadruplet) with a
        :class:`ComparisonWarning` that counts them. With False they raise.
    validate : bool
        Check the input (see Raises). Only internal code deriving comparisons
        from validated ones passes False.

    Attributes
    ----------
    indices : numpy.ndarray of int64, shape (m, 3) or (m, 4)
        Oriented comparisons.
    n_objects : int
    n_dropped : int
        Number of degenerate comparisons removed.
    kept : numpy.ndarray of int64 or None
        Positions, among the rows given, of the comparisons kept when some
        were dropped (to align per-comparison data such as weights); None
        when every row was kept.

    Raises
    ------
    DataValidationError
        Before any work, on a wrong shape (not (m, 3) or (m, 4)), empty input,
        non-integer, negative or out-of-range indices, responses that are not
        +/-1 or not one per comparison, or when no comparison is left after
        dropping degenerate ones.

    Examples
    --------
    >>> c = Comparisons([[0, 1, 2], [2, 1, 0]], responses=[1, -1])
    >>> c.indices.tolist(), c.kind, len(c)
    ([[0, 1, 2], [2, 0, 1]], 'triplet', 2)
    """

    def __init__(
        self,
        indices: ArrayLike,
        responses: ArrayLike | None = None,
        n_objects: int | None = None,
        *,
        drop_degenerate: bool = True,
        validate: bool = True,
    ):
        self.n_dropped = 0
        self.kept = None
        if not validate:
            self.indices = np.asarray(indices, dtype=np.int64)
            self.n_objects = int(n_objects)
            return
        idx = _as_comparison_matrix(indices)
        if responses is not None:
            idx = _orient(idx, responses)
        if n_objects is None:
            n_objects = infer_size(idx.ravel(), "object", "n_objects")
        elif isinstance(n_objects, bool) or not isinstance(
            n_objects, (int, np.integer)
        ):
            raise InvalidParameterError(
                f"The 'n_objects' parameter of Comparisons must be an int in [2, inf)."
                f" Got {n_objects!r}."
            )
        self.n_objects = int(n_objects)
        _check_range(idx, self.n_objects)
        keep = ~_degenerate(idx)
        n_bad = int((~keep).sum())
        if n_bad:
            if not drop_degenerate:
                first = int(np.flatnonzero(~keep)[0])
                raise DataValidationError(
                    f"{n_bad} comparison(s) repeat an index (first: row {first} is "
                    f"{idx[first].tolist()}); they carry no information. Pass "
                    "drop_degenerate=True to drop them."
                )
            if n_bad == idx.shape[0]:
                raise DataValidationError(
                    f"All {n_bad} comparisons repeat an index (e.g. "
                    f"{idx[0].tolist()}); no informative comparison is left."
                )
            warnings.warn(
                f"Dropped {n_bad} of {idx.shape[0]} comparisons that repeat an index "
                f"(first: {idx[np.flatnonzero(~keep)[0]].tolist()}); they carry no "
                "information.",
                ComparisonWarning,
                stacklevel=2,
            )
            idx = idx[keep]
            self.n_dropped = n_bad
            self.kept = np.flatnonzero(keep)
        self.indices = idx

    # -- views ---------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """``"triplet"`` or ``"quadruplet"``."""
        return "triplet" if self.indices.shape[1] == 3 else "quadruplet"

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def __repr__(self) -> str:
        return (
            f"Comparisons(kind={self.kind!r}, n_comparisons={len(self)}, "
            f"n_objects={self.n_objects})"
        )

    def as_quadruplets(self) -> np.ndarray:
        """The comparisons as quadruplets; a triplet (i, j, k) becomes (i, j, i, k).

        Returns
        -------
        numpy.ndarray of int64, shape (m, 4)
        """
        if self.indices.shape[1] == 4:
            return self.indices
        return self.indices[:, [0, 1, 0, 2]]

    def subset(self, selection: ArrayLike) -> Comparisons:
        """Comparisons selected by a boolean mask or an index array.

        Parameters
        ----------
        selection : array-like of bool or int
            A mask of length ``len(self)``, or positions (in any order,
            repeats allowed).

        Returns
        -------
        Comparisons
            Over the same ``n_objects``.
        """
        return Comparisons(
            self.indices[np.asarray(selection)],
            n_objects=self.n_objects,
            validate=False,
        )


def as_quadruplets(comparisons: Comparisons | ArrayLike) -> np.ndarray:
    """Comparisons as asked, as an (m, 4) int64 array of quadruplets.

    A triplet ``(i, j, k)`` asks about the pairs ``(i, j)`` and ``(i, k)``:
    it becomes ``(i, j, i, k)``. Unlike :func:`as_comparisons`, nothing is
    oriented or dropped (degenerate comparisons included), which is what
    scoring an embedding on given questions needs.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)

    Returns
    -------
    numpy.ndarray of int64, shape (m, 4)

    Raises
    ------
    DataValidationError
        If the input is not an (m, 3) or (m, 4) array of integer indices.
    """
    if hasattr(comparisons, "as_quadruplets"):
        return np.asarray(comparisons.as_quadruplets())
    Q = _as_comparison_matrix(comparisons)
    return Q[:, [0, 1, 0, 2]] if Q.shape[1] == 3 else Q


def _as_comparison_matrix(indices) -> np.ndarray:
    if hasattr(indices, "detach"):
        indices = indices.detach().cpu().numpy()
    try:
        idx = np.asarray(indices)
    except ValueError as exc:  # ragged nested lists
        raise DataValidationError(
            "Comparisons must be an (m, 3) array of triplets or an (m, 4) array of "
            f"quadruplets; could not read the input as an array ({exc})."
        ) from exc
    if idx.dtype == object or not (
        np.issubdtype(idx.dtype, np.number) or idx.dtype == np.bool_
    ):
        raise DataValidationError(
            "Comparisons must be integer object indices; got an array of dtype "
            f"{idx.dtype}."
        )
    if idx.size == 0:
        raise DataValidationError("No comparisons: the input is empty.")
    if idx.ndim != 2 or idx.shape[1] not in (3, 4):
        raise DataValidationError(
            "Comparisons must be an (m, 3) array of triplets (i, j, k) or an (m, 4) "
            f"array of quadruplets (i, j, l, k); got shape {idx.shape}."
        )
    return _as_int(idx)


def _orient(idx: np.ndarray, responses) -> np.ndarray:
    y = np.asarray(
        responses.detach().cpu() if hasattr(responses, "detach") else responses
    )
    if y.ndim != 1 or y.shape[0] != idx.shape[0]:
        raise DataValidationError(
            f"Got {idx.shape[0]} comparisons but responses of shape {y.shape}; give "
            "exactly one +/-1 response per comparison."
        )
    if not _is_numeric(y):
        raise DataValidationError(
            f"Responses must be +1 or -1; got an array of dtype {y.dtype}."
        )
    check_plus_minus_one(
        y,
        lambda n_bad, i: (
            f"{n_bad} response(s) are not +1 or -1 (first: comparison {i} has "
            f"{y[i]!r}). Use +1 when the first pair is the closer one, -1 otherwise."
        ),
    )
    out = idx.copy()
    flip = y == -1
    if idx.shape[1] == 3:
        out[flip, 1], out[flip, 2] = idx[flip, 2], idx[flip, 1]
    else:
        out[flip] = idx[flip][:, [2, 3, 0, 1]]
    return out


def _check_range(idx: np.ndarray, n_objects: int) -> None:
    if n_objects < 2:
        raise DataValidationError(
            f"Comparisons need at least 2 objects; got n_objects={n_objects}."
        )
    # Both faults are reported alike: how many, the first one, and the fix.
    for bad, fault, fix in (
        (
            idx < 0,
            "negative object index(es)",
            "Object indices are 0-based and non-negative.",
        ),
        (
            idx >= n_objects,
            f"object index(es) out of range [0, {n_objects})",
            "Pass a larger n_objects or remap the indices to 0..n_objects-1.",
        ),
    ):
        if bad.any():
            r, c = (int(x) for x in np.argwhere(bad)[0])
            raise DataValidationError(
                f"{int(bad.sum())} {fault}; first: comparison {r} has "
                f"{int(idx[r, c])} in column {c}. {fix}"
            )


def _degenerate(idx: np.ndarray) -> np.ndarray:
    if idx.shape[1] == 3:
        i, j, k = idx.T
        return (i == j) | (i == k) | (j == k)
    i, j, l, k = idx.T
    same_pair = ((i == l) & (j == k)) | ((i == k) & (j == l))
    return (i == j) | (l == k) | same_pair


def as_comparisons(
    X: Comparisons | ArrayLike | torch.Tensor,
    y: ArrayLike | None = None,
    *,
    n_objects: int | None = None,
    owner: str | None = None,
) -> Comparisons:
    """Convert any supported input to :class:`Comparisons`.

    Parameters
    ----------
    X : Comparisons, array-like or tensor of int, shape (m, 3) or (m, 4)
        Oriented comparisons, or comparisons as asked when ``y`` is given.
    y : array-like of {-1, +1}, shape (m,), optional
        Responses (see :class:`Comparisons`).
    n_objects : int, optional
        Number of objects (default: max index + 1).
    owner : str, optional
        Name used in error messages.

    Returns
    -------
    Comparisons
    """
    if isinstance(X, Comparisons):
        if y is not None:
            raise DataValidationError(
                "Comparisons are already oriented; pass responses only with an index "
                "array."
            )
        if n_objects is not None and n_objects != X.n_objects:
            if n_objects < X.n_objects:
                raise DataValidationError(
                    f"n_objects={n_objects} is smaller than the comparisons' "
                    f"n_objects={X.n_objects}."
                )
            return Comparisons(X.indices, n_objects=n_objects, validate=False)
        return X
    if isinstance(X, (str, bytes, dict)) or X is None:
        who = f"{owner} " if owner else ""
        raise DataValidationError(
            f"{who}cannot read comparisons from {type(X).__name__}: pass an (m, 3) "
            "array of triplets, an (m, 4) array of quadruplets or Comparisons."
        )
    return Comparisons(X, y, n_objects)


def split_comparisons(
    comparisons: Comparisons,
    fractions: Sequence[float] = (0.8, 0.2),
    *,
    random_state: RandomStateLike = None,
) -> tuple[Comparisons, ...]:
    """Split comparisons at random into disjoint parts.

    Parameters
    ----------
    comparisons : Comparisons
    fractions : sequence of float
        Fraction of the comparisons in each part; must sum to 1 (the music
        experiment of Ma et al., Sec. 5.3, uses ``(0.8, 0.2)``).
    random_state : None, int or numpy Generator

    Returns
    -------
    tuple of Comparisons
        One per fraction, in order; all with the same ``n_objects``.

    Raises
    ------
    DataValidationError
        When a part would be empty (fewer comparisons than parts need).
    """
    parts = random_parts(
        len(comparisons), fractions, random_state, "split_comparisons", "comparisons"
    )
    return tuple(comparisons.subset(idx) for idx in parts)
