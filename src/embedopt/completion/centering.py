"""Global, row, column (and per-mode) centering and scaling of observed values.

Nuclear-norm completion shrinks towards zero, so raw ratings (1-5 stars) are
first reduced to residuals around a simple additive model
``o_ij ~ mu + a_i + b_j`` and optionally divided by their standard deviation;
predictions are mapped back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._core import InvalidParameterError, persistable
from ..data import ObservedEntries, split_entries
from ..data.splits import random_parts
from .losses import Loss

__all__ = [
    "CENTERINGS",
    "MIN_CENTERING_SPLIT",
    "Centering",
    "CenteringSelection",
    "check_center",
    "choose_centering",
    "select_centering",
]

#: Centering modes.
CENTERINGS = ("none", "global", "row", "column", "both")
#: Alternating sweeps of a warm-started ``Centering.fit`` (its ``init``).
WARM_SWEEPS = 3


@persistable
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

    def fit(
        self,
        entries: ObservedEntries,
        sample_weight: ArrayLike | None = None,
        *,
        all_reduce: Callable[[np.ndarray], np.ndarray] | None = None,
        init: Centering | None = None,
    ) -> Centering:
        """Fit the offsets (and scale) to observed entries.

        Parameters
        ----------
        entries : ObservedEntries
        sample_weight : array-like of shape (nnz,), optional
            Weights of the entries: the mean, the offsets (weighted sums of
            residuals over ``sum w + reg``) and the standard deviation are
            weighted; a weight-0 entry is ignored.
        all_reduce : callable, optional
            The elementwise sum of a float64 array over the processes of a
            group (:mod:`embedopt.completion.distributed`): ``entries`` are
            then this process's part (indices in the whole shape), every
            sum over entries goes through it, and every process fits the
            offsets of all the entries (equal to one process's up to the
            rounding of the sums).
        init : Centering, optional
            A fitted centering of the same mode whose offsets start the
            alternating sweeps of ``"both"`` (a warm start after entries were
            added, ``partial_fit(refit="all")``): its offsets, padded with 0
            for indices new to ``entries.shape``, replace the zeros, and
            ``WARM_SWEEPS`` (3) sweeps run instead of ``n_sweeps``. The sweeps
            contract towards the same fixed point, so from offsets already
            near it three of them leave it closer than ``n_sweeps`` from zero
            do (``tests/completion/test_centering_warm.py``).

        Returns
        -------
        self
        """
        idx, v = entries.indices, entries.values.astype(np.float64)
        w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        mean, std, total = _mean, _std, _identity
        if all_reduce is not None:
            mean, std = (
                _summed(_group_mean, all_reduce),
                _summed(_group_std, all_reduce),
            )
            total = all_reduce
        self.mean_ = mean(v, w) if self.center != "none" else 0.0
        offsets = [np.zeros(n) for n in entries.shape]
        modes = self._modes(entries.ndim)
        res = v - self.mean_
        counts = {
            d: np.maximum(
                total(np.bincount(idx[:, d], weights=w, minlength=entries.shape[d]))
                + self.reg,
                1e-12,
            )
            for d in modes
        }
        sweeps = self.n_sweeps
        if init is not None and len(modes) > 1:
            for d in modes:
                start = np.asarray(init.offsets_[d])[: entries.shape[d]]
                offsets[d][: start.size] = start
            sweeps = min(WARM_SWEEPS, self.n_sweeps)
        # contiguous index columns, and each mode's offsets at the entries
        # (gathered once per update: the same sums as gathering every time)
        cols = {d: np.ascontiguousarray(idx[:, d]) for d in modes}
        at = {d: offsets[d][cols[d]] for d in modes}
        fitted = sum((at[d] for d in modes), np.zeros_like(res))
        for _ in range(sweeps if len(modes) > 1 else 1):
            for d in modes:
                # Residual without mode d's own offset, averaged per index.
                partial = res - (fitted - at[d])
                wp = partial if w is None else w * partial
                offsets[d] = (
                    total(np.bincount(cols[d], weights=wp, minlength=entries.shape[d]))
                    / counts[d]
                )
                at[d] = offsets[d][cols[d]]
                fitted = sum(at[k] for k in modes)
        self.offsets_ = offsets
        centered = res - fitted
        sd = std(centered, w) if self.scale else 1.0
        self.scale_ = sd if sd > 0 else 1.0
        return self

    def fold_in(
        self,
        entries: ObservedEntries,
        new: list[np.ndarray],
        sample_weight: ArrayLike | None = None,
    ) -> Centering:
        """Fit the offsets of indices new to the fit, every other one fixed.

        A new index's offset is what :meth:`fit` computes for it at its
        fixed point: the weighted sum of its residuals (after the mean and
        the other modes' offsets) over ``sum w + reg``. Alternates
        ``n_sweeps`` times when several centered modes have new indices.

        Parameters
        ----------
        entries : ObservedEntries
            Training entries (those of the new indices are read), in the
            grown shape; ``offsets_`` already hold one (zero) offset per
            new index.
        new : list of numpy.ndarray of bool
            Per mode, which indices are new.
        sample_weight : array-like of shape (nnz,), optional

        Returns
        -------
        self
        """
        idx, v = entries.indices, entries.values.astype(np.float64)
        w = np.ones(v.size) if sample_weight is None else np.asarray(sample_weight)
        modes = [d for d in self._modes(entries.ndim) if new[d].any()]
        for _ in range(self.n_sweeps if len(modes) > 1 else 1):
            for d in modes:
                rows = new[d][idx[:, d]]
                i = idx[rows, d]
                others = sum(
                    self.offsets_[k][idx[rows, k]]
                    for k in self._modes(entries.ndim)
                    if k != d
                )
                res = w[rows] * (v[rows] - self.mean_ - others)
                n = entries.shape[d]
                total = np.bincount(i, weights=res, minlength=n)
                count = np.bincount(i, weights=w[rows], minlength=n) + self.reg
                self.offsets_[d][new[d]] = (total / np.maximum(count, 1e-12))[new[d]]
        return self

    @property
    def row_offset_(self) -> np.ndarray:
        """Offsets of mode 0 (rows)."""
        return self.offsets_[0]

    @property
    def col_offset_(self) -> np.ndarray:
        """Offsets of mode 1 (columns)."""
        return self.offsets_[1]

    def offsets(self, indices: tuple[ArrayLike, ...] | ArrayLike) -> np.ndarray:
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

    def inverse_transform(
        self, indices: tuple[ArrayLike, ...] | ArrayLike, pred: ArrayLike
    ) -> np.ndarray:
        """Map predictions of the centered model back to the original scale."""
        return np.asarray(pred, dtype=np.float64) * self.scale_ + self.offsets(indices)


def _mean(v: np.ndarray, w: np.ndarray | None) -> float:
    """Mean of ``v``, weighted by ``w`` unless None (scaled to max 1 first)."""
    if w is None:
        return float(v.mean())
    w = w / w.max()
    return float(np.sum(w * v) / np.sum(w))


def _std(v: np.ndarray, w: np.ndarray | None) -> float:
    """Standard deviation of ``v``, weighted by ``w`` unless None."""
    if w is None:
        return float(v.std())
    return float(np.sqrt(_mean((v - _mean(v, w)) ** 2, w)))


def _identity(a: np.ndarray) -> np.ndarray:
    return a


def _summed(fn, all_reduce):
    return lambda v, w: fn(v, w, all_reduce)


def _group_mean(v: np.ndarray, w: np.ndarray | None, all_reduce) -> float:
    """:func:`_mean` of the entries of every process (``all_reduce`` sums)."""
    sums = np.array([v.sum(), v.size] if w is None else [np.sum(w * v), w.sum()])
    total, count = all_reduce(sums)
    return float(total / count)


def _group_std(v: np.ndarray, w: np.ndarray | None, all_reduce) -> float:
    """:func:`_std` of the entries of every process (``all_reduce`` sums)."""
    mean = _group_mean(v, w, all_reduce)
    return float(np.sqrt(_group_mean((v - mean) ** 2, w, all_reduce)))


def split_weighted(
    entries: ObservedEntries,
    sample_weight: np.ndarray | None,
    fractions: tuple[float, ...],
    random_state: np.random.Generator,
) -> list[tuple[ObservedEntries, np.ndarray | None]]:
    """:func:`~embedopt.data.split_entries` with the weights following their entries.

    Parameters
    ----------
    entries : ObservedEntries
    sample_weight : numpy.ndarray of shape (nnz,) or None
    fractions : tuple of float
    random_state : numpy.random.Generator

    Returns
    -------
    list of (ObservedEntries, numpy.ndarray or None)
        One ``(part, its weights)`` per fraction; the same parts as
        ``split_entries(entries, fractions, random_state=random_state)``.
    """
    if sample_weight is None:
        parts = split_entries(entries, fractions, random_state=random_state)
        return [(part, None) for part in parts]
    parts = random_parts(
        entries.nnz, fractions, random_state, "split_entries", "entries"
    )
    return [(entries.subset(i), sample_weight[i]) for i in parts]


@persistable
@dataclass
class CenteringSelection:
    """What :func:`select_centering` decided, and on which numbers.

    Attributes
    ----------
    center : str
        The selected mode.
    mse : dict
        Validation mean squared error of the offsets alone, per mode.
    z : dict
        ``z["both"]``: the paired z statistic of the reduction in squared
        error from "none" to "both" (positive: the offsets predict better).
    """

    center: str
    mse: dict
    z: dict


def select_centering(
    train: ObservedEntries,
    validation: ObservedEntries,
    *,
    reg: float = 5.0,
    n_sweeps: int = 10,
    z_min: float = 2.0,
    sample_weight: ArrayLike | None = None,
    validation_weight: ArrayLike | None = None,
) -> CenteringSelection:
    """Choose ``"none"`` or ``"both"`` from held-out entries.

    Offsets are fitted on ``train`` and judged by how well they alone predict
    ``validation``: "both" (mean + row + column offsets, every mode for
    tensors) replaces "none" (predict 0) only when it lowers the squared
    error significantly, by a paired test (mean reduction over its standard
    error above ``z_min``). A tie keeps "none".

    Why: offsets help nuclear-norm completion only when they are real. On
    ratings they are; on a zero-mean low-rank matrix they are noise fitted
    from a few dozen entries per row, which the low-rank fit must then undo
    (Yao & Kwok's Table III problem, m = 1000: test NMSE of the default fit
    0.12 with "both", 0.037 with "none"; ``benchmarks/completion/
    defaults.py``, more figures in its README). "global" is not a candidate:
    the mean of an exactly low-rank matrix can be significant, yet
    subtracting it adds a rank-one term; where a large mean matters, "both"
    removes it too.

    Parameters
    ----------
    train, validation : ObservedEntries
    reg, n_sweeps
        Of the fitted :class:`Centering`.
    z_min : float
        Significance threshold.
    sample_weight, validation_weight : array-like, optional
        Weights of the ``train`` entries (the offsets are fitted with them)
        and of the ``validation`` entries (the squared errors, their mean
        reduction and its standard error are weighted, the latter with
        Kish's effective sample size ``(sum w)^2 / sum w^2``).

    Returns
    -------
    CenteringSelection
        ``mse`` also reports "global", for information.
    """
    v = validation.values.astype(np.float64)
    vw = None if validation_weight is None else np.asarray(validation_weight, float)
    errors = {"none": v**2}
    for mode in ("global", "both"):
        cen = Centering(mode, reg=reg, n_sweeps=n_sweeps).fit(train, sample_weight)
        errors[mode] = (v - cen.offsets(validation.indices)) ** 2
    # Paired test of the reduction in squared error from "none" to "both".
    d = errors["none"] - errors["both"]
    mean, se = _mean_and_se(d, vw)
    z = {"both": mean / se if se > 0 else (np.inf if mean > 0 else 0.0)}
    best = "both" if z["both"] > z_min else "none"
    mse = {k: _mean(e, vw) if e.size else float("nan") for k, e in errors.items()}
    return CenteringSelection(best, mse, z)


def _mean_and_se(d: np.ndarray, w: np.ndarray | None) -> tuple[float, float]:
    """Mean of ``d`` and its standard error (weighted: Kish's effective size)."""
    if w is None:
        se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
        return (float(d.mean()) if d.size else 0.0), se
    w = w / w.max()  # no overflow or underflow in the squares
    mean = _mean(d, w)
    n_eff = float(w.sum() ** 2 / np.sum(w**2))
    if n_eff <= 1:
        return mean, 0.0
    var = _mean((d - mean) ** 2, w) * n_eff / (n_eff - 1)
    return mean, float(np.sqrt(var / n_eff))


#: Fewest training entries that ``center="auto"`` splits to choose the
#: centering when no validation entries are at hand (the held-out tenth must
#: hold at least 2).
MIN_CENTERING_SPLIT = 20


def check_center(center: str, loss: Loss, owner: str) -> str:
    """The centering mode a loss allows: ``"auto"`` is ``"none"`` for +/-1 losses.

    Parameters
    ----------
    center : {"auto", "none", "global", "row", "column", "both"}
    loss : Loss
        Its ``binary`` says whether it takes +/-1 labels (which cannot be
        centered).
    owner : str
        Named in the error message.

    Returns
    -------
    str
        ``center``, or ``"none"`` for ``"auto"`` with a +/-1 loss (``"auto"``
        with any other loss is left for :func:`choose_centering`).

    Raises
    ------
    InvalidParameterError
        For a centering other than ``"none"`` with a +/-1 loss.
    """
    if center == "auto":
        return "none" if loss.binary else "auto"
    if loss.binary and center not in ("none", "both"):
        raise InvalidParameterError(
            f"The 'center' parameter of {owner} must be 'none' or 'both' with "
            f"the {loss.name} loss (its +/-1 labels are not shifted; 'both' "
            f"fits row and column offsets inside the loss). Got {center!r}."
        )
    return center


def choose_centering(
    center: str,
    train: ObservedEntries,
    validation: ObservedEntries | None,
    *,
    reg: float,
    random_state: np.random.Generator,
    sample_weight: np.ndarray | None = None,
    validation_weight: np.ndarray | None = None,
) -> tuple[str, CenteringSelection | None]:
    """The centering mode of a fit: ``center``, or the one ``"auto"`` selects.

    ``"auto"`` runs :func:`select_centering` on the validation entries or,
    when there are fewer than 2, on a held-out tenth of ``train`` (at least
    :data:`MIN_CENTERING_SPLIT` entries); with too few entries to test the
    offsets it is ``"both"`` (offsets shrunk by ``reg`` pseudo-counts are the
    safer guess for ratings).

    Parameters
    ----------
    center : {"auto", "none", "global", "row", "column", "both"}
    train : ObservedEntries
    validation : ObservedEntries or None
    reg : float
        Ridge pseudo-count of the offsets.
    random_state : numpy.random.Generator
        Draws the held-out tenth.
    sample_weight, validation_weight : numpy.ndarray, optional
        Weights of the ``train`` and ``validation`` entries (see
        :func:`select_centering`); they follow their entries into the
        held-out tenth, and only entries of positive weight count as held out.

    Returns
    -------
    center : str
    selection : CenteringSelection or None
        The numbers behind an ``"auto"`` choice made by :func:`select_centering`.
    """
    if center != "auto":
        return center, None
    fit_on, held = (train, sample_weight), (validation, validation_weight)
    if _too_few(*held) and train.nnz >= MIN_CENTERING_SPLIT:
        # A fixed lam needs no validation set: hold one out for this decision.
        fit_on, held = split_weighted(train, sample_weight, (0.9, 0.1), random_state)
    if _too_few(*held):
        return "both", None
    selection = select_centering(
        fit_on[0],
        held[0],
        reg=reg,
        sample_weight=fit_on[1],
        validation_weight=held[1],
    )
    return selection.center, selection


def _too_few(entries: ObservedEntries | None, weight: np.ndarray | None) -> bool:
    """Fewer than 2 held-out entries (of positive weight) to test offsets on."""
    if entries is None:
        return True
    return (entries.nnz if weight is None else int((weight > 0).sum())) < 2
