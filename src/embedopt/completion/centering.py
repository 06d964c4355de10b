"""Global, row, column (and per-mode) centering and scaling of observed values.

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
    """Fit and apply ``(o - mu - sum_d a^d_{i_d}) / sigma``.

    Parameters
    ----------
    center : {"none", "global", "row", "column", "both"}
        ``"global"``: subtract the mean; ``"row"`` / ``"column"``: also per-row
        (mode-0) / per-column (mode-1) offsets; ``"both"``: offsets of every
        mode (rows and columns of a matrix) fitted jointly by alternating ridge
        regressions.
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
    offsets_ : list of numpy.ndarray
        One offset vector per mode (zeros for modes not centered).
    row_offset_, col_offset_ : numpy.ndarray
        ``offsets_[0]`` and ``offsets_[1]``.
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

    def _modes(self, ndim: int) -> list[int]:
        return {
            "none": [],
            "global": [],
            "row": [0],
            "column": [1],
            "both": list(range(ndim)),
        }[self.center]

    def fit(self, entries: ObservedEntries) -> Centering:
        """Fit the offsets (and scale) to observed entries.

        Parameters
        ----------
        entries : ObservedEntries

        Returns
        -------
        self
        """
        idx, v = entries.indices, entries.values.astype(np.float64)
        self.mean_ = float(v.mean()) if self.center != "none" else 0.0
        offsets = [np.zeros(n) for n in entries.shape]
        modes = self._modes(entries.ndim)
        res = v - self.mean_
        counts = {
            d: np.maximum(
                np.bincount(idx[:, d], minlength=entries.shape[d]) + self.reg, 1e-12
            )
            for d in modes
        }
        fitted = np.zeros_like(res)
        for _ in range(self.n_sweeps if len(modes) > 1 else 1):
            for d in modes:
                # Residual without mode d's own offset, averaged per index.
                partial = res - (fitted - offsets[d][idx[:, d]])
                offsets[d] = (
                    np.bincount(idx[:, d], weights=partial, minlength=entries.shape[d])
                    / counts[d]
                )
                fitted = sum(offsets[k][idx[:, k]] for k in modes)
        self.offsets_ = offsets
        centered = res - fitted
        sd = float(centered.std()) if self.scale else 1.0
        self.scale_ = sd if sd > 0 else 1.0
        return self

    @property
    def row_offset_(self) -> np.ndarray:
        """Offsets of mode 0 (rows)."""
        return self.offsets_[0]

    @property
    def col_offset_(self) -> np.ndarray:
        """Offsets of mode 1 (columns)."""
        return self.offsets_[1]

    def offsets(self, indices) -> np.ndarray:
        """``mu + sum_d a^d_{i_d}`` at the given positions.

        Parameters
        ----------
        indices : tuple of index arrays (one per mode) or (n, ndim) array
        """
        cols = indices if isinstance(indices, tuple) else tuple(np.asarray(indices).T)
        out = np.full(np.asarray(cols[0]).shape, self.mean_)
        for off, i in zip(self.offsets_, cols, strict=True):
            out = out + off[np.asarray(i)]
        return out

    def transform(self, entries: ObservedEntries) -> ObservedEntries:
        """Centered (and scaled) copy of ``entries``."""
        vals = (entries.values - self.offsets(entries.indices)) / self.scale_
        return entries.with_values(vals)

    def inverse_transform(self, indices, pred) -> np.ndarray:
        """Map predictions of the centered model back to the original scale."""
        return np.asarray(pred, dtype=np.float64) * self.scale_ + self.offsets(indices)
