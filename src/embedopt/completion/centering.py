"""Global, row and column centering (and scaling) of observed values.

Nuclear-norm completion shrinks towards zero, so raw ratings (1-5 stars) are
first reduced to residuals around a simple additive model
``o_ij ~ mu + a_i + b_j`` and optionally divided by their standard deviation;
predictions are mapped back.
"""

from __future__ import annotations

import numpy as np

from .._core import InvalidParameterError
from ..data import ObservedEntries

__all__ = ["CENTERINGS", "Centering"]

#: Centering modes.
CENTERINGS = ("none", "global", "row", "column", "both")


class Centering:
    """Fit and apply ``(o_ij - mu - a_i - b_j) / sigma``.

    Parameters
    ----------
    center : {"none", "global", "row", "column", "both"}
        ``"global"``: subtract the mean; ``"row"`` / ``"column"``: also per-row /
        per-column offsets; ``"both"``: row and column offsets fitted jointly by
        alternating ridge regressions.
    scale : bool
        Divide the centered values by their standard deviation (with
        ``center="global"`` this is the z-scoring of Yao & Kwok's MovieLens
        protocol).
    reg : float
        Ridge penalty of the offsets, in pseudo-observations: an offset is the
        sum of its residuals divided by ``count + reg``. Shrinks the offsets of
        rows/columns with few observations towards 0 (0 gives plain means).
    n_sweeps : int
        Alternating passes for ``"both"``.

    Attributes
    ----------
    mean_ : float
    row_offset_ : numpy.ndarray, shape (m,)
    col_offset_ : numpy.ndarray, shape (n,)
    scale_ : float
    """

    def __init__(
        self,
        center: str = "both",
        scale: bool = False,
        reg: float = 5.0,
        n_sweeps: int = 10,
    ):
        if center not in CENTERINGS:
            raise InvalidParameterError(
                f"The 'center' parameter must be a str among {set(CENTERINGS)}. Got "
                f"{center!r}."
            )
        self.center = center
        self.scale = scale
        self.reg = reg
        self.n_sweeps = n_sweeps

    def fit(self, entries: ObservedEntries) -> Centering:
        """Fit the offsets (and scale) to observed entries.

        Parameters
        ----------
        entries : ObservedEntries

        Returns
        -------
        self
        """
        m, n = entries.shape
        r, c, v = entries.rows, entries.cols, entries.values.astype(np.float64)
        self.mean_ = float(v.mean()) if self.center != "none" else 0.0
        a, b = np.zeros(m), np.zeros(n)
        res = v - self.mean_
        cnt_r = np.bincount(r, minlength=m) + self.reg
        cnt_c = np.bincount(c, minlength=n) + self.reg
        cnt_r[cnt_r == 0], cnt_c[cnt_c == 0] = 1, 1
        sweeps = self.n_sweeps if self.center == "both" else 1
        for _ in range(sweeps):
            if self.center in ("row", "both"):
                a = np.bincount(r, weights=res - b[c], minlength=m) / cnt_r
            if self.center in ("column", "both"):
                b = np.bincount(c, weights=res - a[r], minlength=n) / cnt_c
        self.row_offset_, self.col_offset_ = a, b
        centered = res - a[r] - b[c]
        sd = float(centered.std()) if self.scale else 1.0
        self.scale_ = sd if sd > 0 else 1.0
        return self

    def offsets(self, rows, cols) -> np.ndarray:
        """``mu + a_i + b_j`` at the given positions."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        return self.mean_ + self.row_offset_[rows] + self.col_offset_[cols]

    def transform(self, entries: ObservedEntries) -> ObservedEntries:
        """Centered (and scaled) copy of ``entries``."""
        vals = (entries.values - self.offsets(entries.rows, entries.cols)) / self.scale_
        return entries.with_values(vals)

    def inverse_transform(self, rows, cols, pred) -> np.ndarray:
        """Map predictions of the centered model back to the original scale."""
        return np.asarray(pred, dtype=np.float64) * self.scale_ + self.offsets(
            rows, cols
        )
