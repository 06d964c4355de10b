"""The smooth-objective protocol of the second-order solvers, and two adapters.

A point ``x`` is either one tensor or a tuple of tensors (factors, e.g. the
``(X, Y)`` of a bilinear factorization or the two towers' parameters); the
solvers of :mod:`embedopt.optim` (line search, Newton-CG, L-BFGS) and the
conjugate gradient of :func:`embedopt.linalg.cg` only touch points through
the helpers of :mod:`embedopt.linalg.points` (``inner``, ``axpy``,
``norm``, ``flatten`` ...), so one loop serves both shapes. Gradients,
Hessian- and Gauss-Newton-vector products have the shape of ``x``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch

from ..linalg.points import Point, as_tuple, pack

__all__ = [
    "AutogradObjective",
    "FunctionObjective",
    "GaussNewtonObjective",
    "HessianObjective",
    "Objective",
]


@runtime_checkable
class Objective(Protocol):
    """A smooth objective ``f(x)`` with its gradient.

    ``x`` is a :data:`Point` (a tensor or a tuple of tensors) and the gradient
    has its shape. Values are Python floats (or 0-d tensors), computed in
    whatever precision the objective chooses (float64 accumulation is
    recommended for sums over many terms).

    Second-order solvers additionally look for two optional methods (see
    :class:`HessianObjective` and :class:`GaussNewtonObjective`):

    - ``hvp(x, v)``: the Hessian-vector product ``nabla^2 f(x) v``;
    - ``gnvp(x, v)``: the Gauss-Newton-vector product ``J(x)^T H_l J(x) v``
      for ``f = l(r(x))`` with convex ``l``: a PSD approximation of the
      Hessian that drops the second derivatives of the model ``r``.
    """

    def value(self, x: Point) -> float:
        """The objective value ``f(x)``."""
        ...

    def value_and_grad(self, x: Point) -> tuple[float, Point]:
        """``f(x)`` and ``nabla f(x)`` (shape of x), in one pass."""
        ...


@runtime_checkable
class HessianObjective(Objective, Protocol):
    """An :class:`Objective` with Hessian-vector products."""

    def hvp(self, x: Point, v: Point) -> Point:
        """``nabla^2 f(x) v`` (shape of x)."""
        ...


@runtime_checkable
class GaussNewtonObjective(Objective, Protocol):
    """An :class:`Objective` with Gauss-Newton-vector products."""

    def gnvp(self, x: Point, v: Point) -> Point:
        """``J(x)^T H_l J(x) v`` (shape of x), a PSD curvature product."""
        ...


# -- adapters -----------------------------------------------------------------------
class FunctionObjective:
    """An :class:`Objective` from plain callables.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``.
    value : callable, optional
        ``value(x) -> float``, when cheaper than ``fun`` (line searches call
        it for rejected trial points); default ``fun(x)[0]``.
    hvp : callable, optional
        ``hvp(x, v)``, the Hessian-vector product.
    gnvp : callable, optional
        ``gnvp(x, v)``, the Gauss-Newton-vector product.

    Examples
    --------
    >>> A = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    >>> obj = FunctionObjective(lambda x: (0.5 * x @ A @ x, A @ x),
    ...                         hvp=lambda x, v: A @ v)
    >>> obj.value(torch.ones(2))
    tensor(1.5000)
    """

    def __init__(
        self,
        fun: Callable,
        *,
        value: Callable | None = None,
        hvp: Callable | None = None,
        gnvp: Callable | None = None,
    ):
        self._fun = fun
        self._value = value
        # Only advertise the products that exist: solvers test with hasattr.
        if hvp is not None:
            self.hvp = hvp
        if gnvp is not None:
            self.gnvp = gnvp

    def value(self, x: Point) -> float:
        """``f(x)``."""
        if self._value is not None:
            return self._value(x)
        return self._fun(x)[0]

    def value_and_grad(self, x: Point) -> tuple[float, Point]:
        """``f(x)`` and its gradient."""
        return self._fun(x)


class AutogradObjective:
    """An :class:`Objective` with gradient and Hessian-vector products by autograd.

    The fallback for objectives without closed-form derivatives, and the
    reference the closed forms are tested against. ``hvp`` differentiates
    ``<nabla f(x), v>`` a second time (Pearlmutter's trick): one extra
    backward pass, no Hessian formed.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> 0-d tensor``, differentiable by torch in ``x`` (a tensor
        or a tuple of tensors).

    Examples
    --------
    >>> obj = AutogradObjective(lambda x: (x**4).sum())
    >>> obj.hvp(torch.ones(2), torch.tensor([1.0, 0.0]))
    tensor([12.,  0.])
    """

    def __init__(self, fun: Callable[[Point], torch.Tensor]):
        self.fun = fun

    def value(self, x: Point) -> float:
        """``f(x)`` as a float."""
        with torch.no_grad():
            return float(self.fun(x))

    def value_and_grad(self, x: Point) -> tuple[float, Point]:
        """``f(x)`` and ``nabla f(x)`` by one backward pass."""
        xs = [a.detach().requires_grad_(True) for a in as_tuple(x)]
        with torch.enable_grad():
            f = self.fun(pack(x, xs))
            grads = torch.autograd.grad(f, xs)
        return float(f.detach()), pack(x, [g.detach() for g in grads])

    def hvp(self, x: Point, v: Point) -> Point:
        """``nabla^2 f(x) v`` by double backward."""
        xs = [a.detach().requires_grad_(True) for a in as_tuple(x)]
        with torch.enable_grad():
            grads = torch.autograd.grad(self.fun(pack(x, xs)), xs, create_graph=True)
            gv = sum((g * w).sum() for g, w in zip(grads, as_tuple(v), strict=True))
            out = torch.autograd.grad(gv, xs, allow_unused=True)
        return pack(
            x,
            [
                torch.zeros_like(a.detach()) if h is None else h.detach()
                for a, h in zip(xs, out, strict=True)
            ],
        )
