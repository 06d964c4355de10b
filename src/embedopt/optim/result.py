"""Solver results and convergence history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["History", "SolverResult"]


class History:
    """Per-iteration records with equal-length columns.

    Columns appear the first time a value is appended under their name; earlier
    rows are back-filled with NaN, and rows that omit a known column get NaN, so
    every column always has one entry per iteration.
    """

    def __init__(self) -> None:
        self._columns: dict[str, list] = {}
        self._n = 0

    def append(self, **values: Any) -> None:
        """Add one row.

        Parameters
        ----------
        **values
            Scalars by column name.
        """
        for key in values:
            if key not in self._columns:
                self._columns[key] = [np.nan] * self._n
        for key, col in self._columns.items():
            col.append(_scalar(values.get(key, np.nan)))
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: str) -> bool:
        return key in self._columns

    def column(self, key: str) -> list:
        """Return the column ``key`` as a list (a view, do not modify)."""
        return self._columns[key]

    def last(self, key: str, default: float = np.nan) -> Any:
        """Return the latest value of ``key`` (``default`` if absent)."""
        col = self._columns.get(key)
        return col[-1] if col else default

    def as_dict(self) -> dict[str, np.ndarray]:
        """Return the history as a dict of equal-length NumPy arrays."""
        return {k: np.asarray(v) for k, v in self._columns.items()}


def _scalar(v):
    if hasattr(v, "item") and getattr(v, "ndim", 0) == 0:
        return v.item()
    return v


@dataclass
class SolverResult:
    """What every embedopt solver returns.

    Attributes
    ----------
    x : object
        The solution (solver-specific: a tensor, a tuple of factors...).
    n_iter : int
        Number of outer iterations performed.
    stop_reason : str
        ``"tol"`` (tolerance met), ``"max_iter"`` (budget exhausted),
        ``"callback"`` (a callback returned True), or a solver-specific reason.
    history : dict of str to numpy.ndarray
        Equal-length arrays: ``iteration``, ``time`` (seconds since the start,
        excluding callbacks and monitoring-only evaluations), ``objective``, and
        what the method has (rank, step size, validation metric...).
    elapsed : float
        Wall-clock seconds of the whole solve.
    info : dict
        Extra solver-specific outputs (e.g. the post-processed singular values).
    """

    x: Any
    n_iter: int
    stop_reason: str
    history: dict[str, np.ndarray]
    elapsed: float
    info: dict = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        """True when the solver stopped because its tolerance was met."""
        return self.stop_reason == "tol"
