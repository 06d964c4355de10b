"""Random splits of observed entries."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .._core import (
    DataValidationError,
    InvalidParameterError,
    RandomStateLike,
    resolve_random_state,
)
from .entries import ObservedEntries
from .interactions import Interactions, InteractionsLike, as_interactions

__all__ = ["kfold_entries", "split_by_user", "split_entries"]


def _fractions(fractions, owner: str) -> np.ndarray:
    fr = np.asarray(fractions, dtype=float)
    if fr.ndim != 1 or fr.size < 2 or (fr <= 0).any() or abs(fr.sum() - 1) > 1e-9:
        raise InvalidParameterError(
            f"The 'fractions' parameter of {owner} must be a sequence of at "
            f"least two positive floats summing to 1. Got {tuple(fractions)!r}."
        )
    return fr


def random_parts(
    n: int, fractions, random_state: RandomStateLike, owner: str, what: str
) -> list[np.ndarray]:
    """Sorted indices of each part when n items are split at random in ``fractions``.

    The one random split behind :func:`split_entries` and
    :func:`~embedopt.data.split_comparisons`: a permutation of ``range(n)``
    cut at the rounded cumulative fractions.

    Parameters
    ----------
    n : int
        Items to split.
    fractions : sequence of float
        Positive, summing to 1.
    random_state : None, int or numpy Generator
    owner : str
        The splitting function, for messages.
    what : str
        What the items are (``"entries"``, ``"comparisons"``).

    Returns
    -------
    list of numpy.ndarray of int
        One index array per fraction, each sorted.

    Raises
    ------
    InvalidParameterError
        For fractions that are not positive or do not sum to 1.
    DataValidationError
        When a part would be empty (too few items for the fractions).
    """
    fr = _fractions(fractions, owner)
    bounds = np.round(np.cumsum(fr) * n).astype(int)
    bounds[-1] = n
    sizes = np.diff(bounds, prepend=0)
    if (sizes < 1).any():
        k = int(np.flatnonzero(sizes < 1)[0])
        raise DataValidationError(
            f"{owner}: {n} {what} cannot be split in fractions "
            f"{tuple(float(f) for f in fr)}: part {k} would be empty. Give more "
            f"{what} or other fractions."
        )
    perm = resolve_random_state(random_state, owner).numpy.permutation(n)
    return [np.sort(part) for part in np.split(perm, bounds[:-1])]


def split_entries(
    entries: ObservedEntries,
    fractions: Sequence[float] = (0.8, 0.2),
    *,
    random_state: RandomStateLike = None,
) -> tuple[ObservedEntries, ...]:
    """Split observed entries at random into disjoint parts.

    Parameters
    ----------
    entries : ObservedEntries
    fractions : sequence of float
        Fraction of the entries in each part; must sum to 1 (e.g. the paper's
        MovieLens protocol ``(0.5, 0.25, 0.25)``).
    random_state : None, int or numpy Generator

    Returns
    -------
    tuple of ObservedEntries
        One per fraction, in order.

    Raises
    ------
    DataValidationError
        When a part would be empty (fewer entries than parts need).
    """
    parts = random_parts(
        entries.nnz, fractions, random_state, "split_entries", "entries"
    )
    return tuple(entries.subset(idx) for idx in parts)


def kfold_entries(
    entries: ObservedEntries, n_splits: int = 5, *, random_state: RandomStateLike = None
) -> Iterator[tuple[ObservedEntries, ObservedEntries]]:
    """K-fold cross-validation over observed entries (shuffled).

    Parameters
    ----------
    entries : ObservedEntries
    n_splits : int
    random_state : None, int or numpy Generator

    Yields
    ------
    train, test : ObservedEntries
    """
    if not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise InvalidParameterError(
            "The 'n_splits' parameter of kfold_entries must be an int in [2, inf). "
            f"Got {n_splits!r}."
        )
    rng = resolve_random_state(random_state, "kfold_entries").numpy
    folds = np.array_split(rng.permutation(entries.nnz), n_splits)
    for k in range(n_splits):
        test = np.sort(folds[k])
        mask = np.ones(entries.nnz, dtype=bool)
        mask[test] = False
        yield entries.subset(mask), entries.subset(test)


def split_by_user(
    interactions: InteractionsLike,
    fractions: Sequence[float] = (0.8, 0.2),
    *,
    random_state: RandomStateLike = None,
) -> tuple[Interactions, ...]:
    """Split each user's interactions at random into disjoint parts.

    The per-user protocol of implicit-feedback ranking: every user keeps
    about ``fractions[0]`` of their pairs for training and the rest is
    divided among the other parts, so each user with enough pairs is
    evaluated (a global random split leaves light users out of the test
    set). A user's ``c`` pairs go ``round(cumsum(fractions) * c)`` to each
    part; a user with a single pair keeps it for training.

    Parameters
    ----------
    interactions : Interactions, ObservedEntries, scipy.sparse matrix or tuple
        See :func:`~embedopt.data.as_interactions`.
    fractions : sequence of float
        Positive, summing to 1.
    random_state : None, int or numpy Generator

    Returns
    -------
    tuple of Interactions
        One per fraction, all with the shape of the input.
    """
    data = as_interactions(interactions)
    fr = _fractions(fractions, "split_by_user")
    rng = resolve_random_state(random_state, "split_by_user").numpy
    # Shuffle, then stable-sort by user: each user's pairs in random order.
    perm = rng.permutation(len(data))
    perm = perm[np.argsort(data.users[perm], kind="stable")]
    users = data.users[perm]
    starts = np.searchsorted(users, users, side="left")
    counts = np.bincount(users, minlength=data.n_users)[users]
    rank = np.arange(users.size) - starts  # position within the user's pairs
    bounds = np.round(np.cumsum(fr)[:, None] * counts[None, :]).astype(np.int64)
    bounds[0] = np.maximum(bounds[0], 1)  # a single pair stays in training
    part = (rank[None, :] >= bounds).sum(0)
    out = []
    for p in range(fr.size):
        sel = perm[part == p]
        values = None if data.values is None else data.values[sel]
        out.append(Interactions(data.users[sel], data.items[sel], data.shape, values))
    return tuple(out)
