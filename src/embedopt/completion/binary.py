"""Row and column offsets for the +/-1 losses, fitted by the loss itself.

+/-1 labels cannot be centered by subtracting offsets (the square loss's
:class:`~embedopt.completion.Centering`), yet they have the same additive
structure: in a signed network some users rate (or are rated) positively far
more often than others, which is what the degree features of Leskovec et al.
(2010) capture. Here the offsets enter the loss instead,

    min_X  sum_{Omega} l(mu + a_i + b_j + X_ij, O_ij) + lambda ||X||_*,

with ``mu, a, b`` fitted first, alone, by ridge-penalized minimization of the
same loss, and then held fixed while the low-rank part is fitted (its
problem is an :class:`OffsetProblem`: the loss carries the offsets of the
training entries, the validation predictions include theirs).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .._core import ConvergenceWarning, DeviceLike, DtypeLike
from ..data import ObservedEntries
from ..optim import lbfgs
from .centering import Centering
from .losses import LogisticLoss, Loss
from .problem import CompletionProblem, Factors, problem_pair

__all__ = [
    "LossCentering",
    "OffsetProblem",
    "ShiftedLoss",
    "make_centering",
    "offset_problems",
]


class ShiftedLoss(Loss):
    """``l(x + offset, y)``: a loss with a fixed offset per observed entry.

    Parameters
    ----------
    base : Loss
    offset : torch.Tensor, shape (nnz,)
        In the order of the values the loss is evaluated on (a problem's
        canonical order).
    """

    def __init__(self, base: Loss, offset: torch.Tensor):
        self.base, self.offset = base, offset
        self.name, self.rho, self.binary = base.name, base.rho, base.binary

    def value(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.base.value(x + self.offset, y)

    def grad(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.base.grad(x + self.offset, y)

    def check_labels(self, y: np.ndarray) -> None:
        self.base.check_labels(y)

    def __repr__(self) -> str:
        return f"ShiftedLoss({self.base!r})"


class LossCentering(Centering):
    """Offsets ``mu + sum_d a^d_{i_d}`` fitted by a (+/-1) loss, not subtracted.

    ``fit`` minimizes ``sum_Omega l(mu + sum_d a^d_{i_d}, o) + reg rho / 2
    sum_d |a^d|^2`` (L-BFGS, float64; mu is not penalized): ``reg`` counts
    pseudo-observations at the loss's largest curvature ``rho``, as the
    square loss's ``Centering`` counts them. ``transform`` leaves the labels
    as they are (the offsets go into the loss, see :func:`offset_problems`);
    ``offsets`` and ``inverse_transform`` add them to predictions.

    Parameters
    ----------
    center : {"none", "global", "row", "column", "both"}
        Which offsets (as in :class:`Centering`; "global" is mu alone).
    loss : Loss
        A +/-1 loss (:class:`LogisticLoss` by default).
    reg : float
    max_iter : int
        L-BFGS iterations.
    """

    def __init__(
        self,
        center: str = "both",
        loss: Loss | None = None,
        reg: float = 5.0,
        max_iter: int = 200,
    ):
        super().__init__(center, scale=False, reg=reg)
        self.loss = LogisticLoss() if loss is None else loss
        self.max_iter = max_iter

    def fit(
        self, entries: ObservedEntries, sample_weight: np.ndarray | None = None
    ) -> LossCentering:
        """Fit the offsets to observed +/-1 entries.

        Parameters
        ----------
        entries : ObservedEntries
        sample_weight : array-like of shape (nnz,), optional
            Weights of the entries' losses.

        Returns
        -------
        self
        """
        modes = self._modes(entries.ndim)
        self.scale_ = 1.0
        self.mean_, self.offsets_ = 0.0, [np.zeros(n) for n in entries.shape]
        if self.center == "none":
            return self
        idx = [torch.as_tensor(entries.indices[:, d]) for d in modes]
        y = torch.as_tensor(entries.values, dtype=torch.float64)
        w = None
        if sample_weight is not None:
            w = torch.as_tensor(np.asarray(sample_weight, dtype=np.float64))
        sizes = [entries.shape[d] for d in modes]
        penalty = self.reg * self.loss.rho

        def fun(theta):
            parts = torch.split(theta[1:], sizes)
            x = theta[0] + sum((p[i] for p, i in zip(parts, idx, strict=True)), 0.0)
            g = self.loss.grad(x, y)
            losses = self.loss.value(x, y)
            if w is not None:
                g, losses = w * g, w * losses
            grads = [
                torch.zeros(n, dtype=g.dtype).index_add_(0, i, g) + penalty * p
                for n, i, p in zip(sizes, idx, parts, strict=True)
            ]
            ridge = 0.5 * penalty * float(theta[1:] @ theta[1:])
            value = float(losses.sum(dtype=torch.float64)) + ridge
            return value, torch.cat([g.sum()[None], *grads])

        theta = torch.zeros(1 + sum(sizes), dtype=torch.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            theta = lbfgs(
                fun, theta, max_iter=self.max_iter, tol=1e-10, owner="LossCentering"
            ).x
        self.mean_ = float(theta[0])
        for d, p in zip(modes, torch.split(theta[1:], sizes), strict=True):
            self.offsets_[d] = p.numpy().copy()
        return self

    def transform(self, entries: ObservedEntries) -> ObservedEntries:
        """``entries`` unchanged: +/-1 labels are not shifted."""
        return entries


class OffsetProblem(CompletionProblem):
    """A completion problem whose predictions sit on top of fixed offsets.

    The training loss is ``ShiftedLoss(loss, offsets of the training
    entries)``, so every solver, ``lambda_max`` and the post-processing fit
    the low-rank part ``X`` of ``offsets + X`` unchanged;
    ``predict(..., "validation")`` adds the validation entries' offsets, so
    validation scores are those of the whole model. Training predictions
    stay the low-rank part alone (the loss adds the offsets).

    Parameters
    ----------
    X, validation : ObservedEntries
    centering : Centering
        Fitted; its ``offsets`` at each entry are the fixed offsets.
    loss, device, dtype, sample_weight, validation_weight
        As in :class:`CompletionProblem`.
    """

    def __init__(
        self,
        X: ObservedEntries,
        *,
        centering: Centering,
        loss: str | Loss,
        validation: ObservedEntries | None = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = None,
        sample_weight: np.ndarray | None = None,
        validation_weight: np.ndarray | None = None,
    ):
        super().__init__(
            X,
            loss=loss,
            validation=validation,
            device=device,
            dtype=dtype,
            sample_weight=sample_weight,
            validation_weight=validation_weight,
        )
        self.offset = self._offsets(centering, self.entries, self.unfoldings)
        self.loss = ShiftedLoss(self.loss, self.offset)
        self.validation_offset = None
        if validation is not None:
            self.validation_offset = self._offsets(
                centering, validation, self.validation[0]
            )

    def _offsets(self, centering, entries, unfoldings) -> torch.Tensor:
        idx = entries.indices
        if len(unfoldings) == 1:  # a matrix: canonical order is the CSR order
            idx = idx[unfoldings[0].pattern.order.cpu().numpy()]
        off = centering.offsets(idx)
        return torch.as_tensor(off, dtype=self.dtype).to(self.device)

    def predict(
        self, factors: Factors | list[Factors], which: str = "train"
    ) -> torch.Tensor:
        """Low-rank values at the training entries; with the offsets at the
        validation entries (see the class description).

        Parameters
        ----------
        factors : tuple (U, s, V) or list of them
        which : {"train", "validation"}

        Returns
        -------
        torch.Tensor
        """
        out = super().predict(factors, which)
        return out + self.validation_offset if which == "validation" else out


def offset_problems(
    centering: Centering,
    train: ObservedEntries,
    validation: ObservedEntries | None,
    refit: ObservedEntries | None = None,
    *,
    sample_weight: np.ndarray | None = None,
    validation_weight: np.ndarray | None = None,
    refit_weight: np.ndarray | None = None,
    **options,
) -> tuple[OffsetProblem, OffsetProblem | None]:
    """The path (or solve) and refit problems of a fit with loss offsets.

    Parameters
    ----------
    centering : Centering
        Fitted (a :class:`LossCentering`).
    train, validation, refit : ObservedEntries
        As in :func:`~embedopt.completion.path.completion_problems`.
    sample_weight, validation_weight, refit_weight : numpy.ndarray, optional
        The weights of the three sets of entries.
    **options
        ``loss``, ``device``, ``dtype``.

    Returns
    -------
    problem, refit_problem : OffsetProblem, OffsetProblem or None
    """
    return problem_pair(
        lambda entries, **kw: OffsetProblem(
            entries, centering=centering, **kw, **options
        ),
        (train, validation, refit),
        (sample_weight, validation_weight, refit_weight),
    )


def make_centering(center: str, loss: Loss, scale: bool, reg: float) -> Centering:
    """The (unfitted) centering of a fit: offsets inside a +/-1 loss
    (:class:`LossCentering`) for ``center`` other than "none", else the
    subtracted offsets of :class:`Centering`.

    Parameters
    ----------
    center : str
        A resolved mode (not "auto").
    loss : Loss
    scale : bool
    reg : float

    Returns
    -------
    Centering
    """
    if loss.binary and center != "none":
        return LossCentering(center, loss, reg)
    return Centering(center, scale, reg)
