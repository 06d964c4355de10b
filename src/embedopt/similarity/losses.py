"""Losses on the observed pairs: value and the first two derivatives in the score.

The all-pairs objective (paper eq. 5, 7) charges each observed pair (i, j) a
loss ``l(Y_ij, Yhat_ij)`` that is twice differentiable and convex in the
predicted score ``Yhat_ij``. Its value feeds the function value, its first
derivative the gradient (Algorithm 1, the sparse matrix X of eq. 17) and its
second derivative the Gauss-Newton product (Sec. 3.4). A loss here is an
object with three element-wise methods, ``value(y, z)``, ``first(y, z)``,
``second(y, z)``; :data:`LOSSES` names the built-in ones and
:class:`AutogradLoss` turns any element-wise torch function into one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import InvalidParameterError, Registry, persistable

__all__ = ["LOSSES", "AutogradLoss", "LogisticLoss", "SquareLoss", "get_loss"]

#: A loss as :func:`get_loss` takes it: a name of :data:`LOSSES`, an object
#: with ``value``, ``first`` and ``second``, or an element-wise ``fun(y, z)``.
LossLike = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | object


@persistable
class SquareLoss:
    """``l(y, z) = (y - z)^2 / 2`` (the paper's choice for rating-like labels)."""

    name = "square"

    def value(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Element-wise loss."""
        return 0.5 * (y - z) ** 2

    def first(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``dl/dz = z - y``."""
        return z - y

    def second(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``d^2 l / dz^2 = 1``."""
        return torch.ones_like(z)


@persistable
class LogisticLoss:
    """``l(y, z) = log(1 + exp(-y z))`` for labels ``y`` in {-1, +1}.

    Implicit feedback (every observed label 1) gives ``log(1 + exp(-z))``.
    Computed with ``softplus`` so that large ``|z|`` neither overflows nor
    loses the tail.
    """

    name = "logistic"

    def value(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Element-wise loss."""
        return torch.nn.functional.softplus(-y * z)

    def first(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``dl/dz = -y sigmoid(-y z)``."""
        return -y * torch.sigmoid(-y * z)

    def second(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``d^2 l / dz^2 = sigmoid(y z) sigmoid(-y z)`` (``y^2 = 1``)."""
        s = torch.sigmoid(y * z)
        return s * (1.0 - s)


class AutogradLoss:
    """A loss from any element-wise, twice-differentiable torch function.

    The derivatives come from autograd: the loss is separable, so the
    gradient of ``sum l(y, z)`` in z is the element-wise first derivative, and
    differentiating that sum once more gives the element-wise second
    derivative.

    Parameters
    ----------
    fun : callable
        ``fun(y, z) -> tensor`` of the shape of ``z``, convex in ``z`` (the
        Gauss-Newton matrix is only positive semidefinite when it is).
    name : str, optional

    Examples
    --------
    >>> huber = AutogradLoss(lambda y, z: torch.nn.functional.huber_loss(
    ...     z, y, reduction="none"))
    >>> huber.first(torch.zeros(2), torch.tensor([0.5, 3.0]))
    tensor([0.5000, 1.0000])
    """

    def __init__(self, fun: Callable, name: str | None = None):
        if not callable(fun):
            raise InvalidParameterError(
                f"AutogradLoss needs a callable fun(y, z); got {type(fun).__name__}."
            )
        self.fun = fun
        self.name = name or getattr(fun, "__name__", "custom")

    def value(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Element-wise loss."""
        return self.fun(y, z)

    def _derivatives(self, y, z, order: int) -> torch.Tensor:
        with torch.enable_grad():
            z = z.detach().requires_grad_(True)
            (d1,) = torch.autograd.grad(self.fun(y, z).sum(), z, create_graph=order > 1)
            if order == 1:
                return d1.detach()
            (d2,) = torch.autograd.grad(d1.sum(), z, allow_unused=True)
        return torch.zeros_like(z.detach()) if d2 is None else d2.detach()

    def first(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``dl/dz`` by autograd."""
        return self._derivatives(y, z, 1)

    def second(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``d^2 l / dz^2`` by double backward."""
        return self._derivatives(y, z, 2)


#: Built-in observed-pair losses by name.
LOSSES = Registry(
    "loss", {"square": SquareLoss, "logistic": LogisticLoss}, owner="similarity"
)


def get_loss(loss: LossLike) -> object:
    """The loss object for a name, a loss object, or an element-wise callable.

    Parameters
    ----------
    loss : str, loss object or callable
        A name of :data:`LOSSES`; an object with ``value``, ``first`` and
        ``second``; or a callable ``fun(y, z)`` (wrapped in
        :class:`AutogradLoss`).

    Returns
    -------
    object
        Has ``value``, ``first``, ``second``.

    Raises
    ------
    InvalidParameterError
        For another kind of object, or a custom loss whose methods do not map
        two tensors ``(y, z)`` to a tensor of the shape of ``z`` (checked on a
        probe of two pairs, before any fit).
    """
    if isinstance(loss, str):
        return LOSSES.get(loss)()
    if all(callable(getattr(loss, m, None)) for m in ("value", "first", "second")):
        return _probed(loss)
    if callable(loss):
        return _probed(AutogradLoss(loss))
    raise InvalidParameterError(
        f"The 'loss' parameter must be one of {sorted(LOSSES)}, an object with "
        f"value/first/second methods, or a callable fun(y, z). Got "
        f"{type(loss).__name__}."
    )


def _probed(loss):
    """``loss``, once its methods returned tensors of the right shape on a
    probe: a custom loss that does not fails here, with its name, rather
    than deep inside a solver."""
    y = torch.tensor([1.0, 0.0])
    z = torch.tensor([0.5, -0.5])
    for method in ("value", "first", "second"):
        try:
            out = getattr(loss, method)(y, z)
        except Exception as exc:  # any error of user code, reported as such
            raise InvalidParameterError(
                f"The 'loss' parameter is a custom loss that failed on a probe: "
                f"{method}(y, z) with y = "
                f"{y.tolist()}, z = {z.tolist()} raised {type(exc).__name__}: "
                f"{exc}"
            ) from exc
        if not isinstance(out, torch.Tensor) or out.shape != z.shape:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out)
            raise InvalidParameterError(
                f"The 'loss' parameter is a custom loss that must return a tensor "
                f"of the shape of z from "
                f"{method}(y, z); on a probe with z of shape {tuple(z.shape)} it "
                f"returned {got}."
            )
    return loss
