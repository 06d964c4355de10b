"""Smooth losses on observed entries: value, derivative and smoothness.

Every loss is a small object with ``value(x, y)`` and ``grad(x, y)``
(elementwise, on tensors), its Lipschitz-smoothness constant ``rho`` (the step
size of AIS-Impute is ``1 / rho``, Proposition 3.1 of Yao & Kwok), and
``check_labels`` that rejects labels the loss does not fit. Any rho-smooth
loss can be plugged in by subclassing :class:`Loss`.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .._core import (
    Registry,
    check_plus_minus_one,
    instance_or_named,
    persistable,
)

__all__ = [
    "LOSSES",
    "LogisticLoss",
    "Loss",
    "SquareLoss",
    "SquaredHingeLoss",
    "get_loss",
]


#: Entries per slice of :meth:`Loss.total` on large vectors.
TOTAL_CHUNK = 1 << 22


class Loss:
    """Base class of losses ``l(x, y)`` of a prediction x and an observation y.

    Attributes
    ----------
    name : str
    rho : float
        Lipschitz constant of ``d l / d x`` in x.
    binary : bool
        True when observations must be +/-1 labels (then accuracy is the
        natural metric and centering is meaningless).
    """

    name = "loss"
    rho = 1.0
    binary = False

    def value(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Elementwise loss."""
        raise NotImplementedError

    def grad(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Elementwise derivative with respect to x."""
        raise NotImplementedError

    #: Whether ``value`` is elementwise in (x, y) alone, so that :meth:`total`
    #: may evaluate it on slices (a loss with per-entry state, such as an
    #: offset per observed entry, is not).
    elementwise = False

    def total(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Sum of the elementwise losses, accumulated in float64.

        Above :data:`TOTAL_CHUNK` entries an :attr:`elementwise` loss is
        summed slice by slice: the float64 copy of the whole vector that
        ``sum(dtype=float64)`` makes (8 bytes per observed entry, with the
        loss values 12) is then never made; below it, one sum as always.
        """
        n = x.shape[0] if x.dim() else 1
        if not self.elementwise or n <= TOTAL_CHUNK:
            return float(self.value(x, y).sum(dtype=torch.float64))
        acc = 0.0
        for s in range(0, n, TOTAL_CHUNK):
            part = slice(s, s + TOTAL_CHUNK)
            acc += float(self.value(x[part], y[part]).sum(dtype=torch.float64))
        return acc

    def check_labels(self, y: np.ndarray) -> None:
        """Raise :class:`DataValidationError` if the loss does not fit ``y``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@persistable
class SquareLoss(Loss):
    """``l(x, y) = (x - y)^2 / 2``; rho = 1 (problem (1) of Yao & Kwok)."""

    name = "square"
    elementwise = True
    rho = 1.0

    def value(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.5 * (x - y) ** 2

    def grad(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x - y


def _check_pm1(name: str, y: np.ndarray) -> None:
    check_plus_minus_one(
        y,
        lambda n_bad, i: (
            f"The {name} loss needs +/-1 labels, but {n_bad} observed value(s) "
            f"are not +/-1 (first: entry {i} is {y[i]!r}). Map the labels to "
            "+/-1 or use loss='square'."
        ),
    )


@persistable
class LogisticLoss(Loss):
    """``l(x, y) = log(1 + exp(-x y))`` for y in {-1, +1}; rho = 1/4.

    Evaluated as ``softplus(-x y)`` and its derivative as
    ``-y sigmoid(-x y)``, which stay finite for any x.
    """

    name = "logistic"
    elementwise = True
    rho = 0.25
    binary = True

    def value(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.softplus(-x * y)

    def grad(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -y * torch.sigmoid(-x * y)

    def check_labels(self, y: np.ndarray) -> None:
        _check_pm1(self.name, y)


@persistable
class SquaredHingeLoss(Loss):
    """``l(x, y) = max(0, 1 - x y)^2 / 2`` for y in {-1, +1}; rho = 1."""

    name = "squared_hinge"
    elementwise = True
    rho = 1.0
    binary = True

    def value(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.clamp(1 - x * y, min=0) ** 2

    def grad(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -y * torch.clamp(1 - x * y, min=0)

    def check_labels(self, y: np.ndarray) -> None:
        _check_pm1(self.name, y)


#: Losses by name.
LOSSES = Registry(
    "loss",
    {
        "square": SquareLoss,
        "logistic": LogisticLoss,
        "squared_hinge": SquaredHingeLoss,
    },
    owner="embedopt.completion",
)


def get_loss(loss: str | Loss) -> Loss:
    """Resolve a loss given by name or as a :class:`Loss` instance.

    Parameters
    ----------
    loss : {"square", "logistic", "squared_hinge"} or Loss

    Returns
    -------
    Loss
    """
    return instance_or_named(loss, Loss, LOSSES, "loss", "a Loss instance")
