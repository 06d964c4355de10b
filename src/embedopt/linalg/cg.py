"""Preconditioned conjugate gradient for symmetric PSD operators on points.

Solves ``A x = b`` where A is given only by its product ``matvec(v) = A v``
on a point (a tensor or a tuple of tensors, see :mod:`embedopt.linalg.points`):
the inner solver of truncated Newton and Gauss-Newton methods, where A is a
Hessian or Gauss-Newton matrix never formed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._core import InstanceOf, Interval, validate_params
from .points import Point, as_tuple, axpy, clone, inner, norm, pack, zeros_like

__all__ = ["CGResult", "cg"]

_CONSTRAINTS = {
    "rtol": [Interval(float, 0, None)],
    "atol": [Interval(float, 0, None)],
    "max_iter": [Interval(int, 0, None), None],
    "preconditioner": [
        "callable",
        InstanceOf((torch.Tensor, tuple), "a tensor or tuple of tensors"),
        None,
    ],
}


@dataclass
class CGResult:
    """Outcome of :func:`cg`.

    Attributes
    ----------
    x : Point
        The approximate solution (see :func:`cg` on negative curvature).
    n_iter : int
        Iterations performed (= products with A).
    residual_norm : float
        ``||r||`` of the recurrence residual ``r = b - A x`` at the end.
    converged : bool
        Whether ``||r|| <= max(rtol ||b||, atol)``.
    negative_curvature : bool
        Whether a direction p with ``<p, A p> <= 0`` stopped the iteration
        (A is not positive definite).
    """

    x: Point
    n_iter: int
    residual_norm: float
    converged: bool
    negative_curvature: bool


def _as_preconditioner(preconditioner) -> Callable[[Point], Point]:
    if preconditioner is None:
        return lambda r: r
    if callable(preconditioner):
        return preconditioner
    diag = as_tuple(preconditioner)
    return lambda r: pack(r, [a / d for a, d in zip(as_tuple(r), diag, strict=True)])


def cg(
    matvec: Callable[[Point], Point],
    b: Point,
    *,
    x0: Point | None = None,
    rtol: float = 1e-5,
    atol: float = 0.0,
    max_iter: int | None = None,
    preconditioner: Callable[[Point], Point] | Point | None = None,
) -> CGResult:
    """Solve ``A x = b`` by (preconditioned) conjugate gradient.

    Nocedal & Wright, Algorithm 5.3: with ``z = M^{-1} r``,
    ``alpha = <r, z> / <p, A p>``, ``x += alpha p``, ``r -= alpha A p``,
    ``p = z + (<r+, z+> / <r, z>) p``. Stops when
    ``||r|| <= max(rtol ||b||, atol)`` (the rule of
    :func:`scipy.sparse.linalg.cg`), after ``max_iter`` iterations, or on
    negative curvature.

    Parameters
    ----------
    matvec : callable
        ``matvec(v) -> A v`` for a symmetric positive (semi-)definite A; v
        and the result have the structure of ``b``.
    b : Point
        Right-hand side (a tensor or a tuple of tensors).
    x0 : Point, optional
        Starting point (default zero, which truncated Newton methods rely
        on: every iterate is then a descent direction).
    rtol, atol : float
        Relative and absolute residual tolerances.
    max_iter : int, optional
        Iterations at most; default 10 times the number of unknowns (as
        SciPy).
    preconditioner : callable, tensor or tuple of tensors, optional
        ``M^{-1}``: a callable ``r -> M^{-1} r`` (an approximation of
        ``A^{-1} r``, like SciPy's ``M``), or the diagonal of M (e.g. the
        diagonal of A, Jacobi) as a point shaped like b, by which residuals
        are divided. M must be symmetric positive definite.

    Returns
    -------
    CGResult
        On negative curvature (``<p, A p> <= 0``) ``x`` is the iterate so
        far, or the first direction ``p_0 = M^{-1} b`` if that happens at
        the first iteration from ``x0 = 0`` (Nocedal & Wright, Algorithm
        7.1): a direction along which ``<b, x> > 0`` either way.

    Examples
    --------
    >>> A = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    >>> res = cg(lambda v: A @ v, torch.tensor([1.0, 2.0], dtype=torch.float64))
    >>> res.converged, res.n_iter
    (True, 2)
    """
    validate_params(
        "cg",
        dict(rtol=rtol, atol=atol, max_iter=max_iter, preconditioner=preconditioner),
        _CONSTRAINTS,
    )
    precond = _as_preconditioner(preconditioner)
    if x0 is None:
        x, r = zeros_like(b), clone(b)
    else:
        x = clone(x0)
        r = axpy(-1.0, matvec(x), b)
    if max_iter is None:
        max_iter = 10 * sum(a.numel() for a in as_tuple(b))
    threshold = max(rtol * norm(b), atol)
    r_norm = norm(r)
    z = precond(r)
    p, rz = z, inner(r, z)
    k = 0
    while k < max_iter and r_norm > threshold:
        Ap = matvec(p)
        curvature = inner(p, Ap)
        if curvature <= 0:
            if k == 0 and x0 is None:
                x = clone(p)
            return CGResult(x, k, r_norm, False, True)
        alpha = rz / curvature
        x = axpy(alpha, p, x)
        r = axpy(-alpha, Ap, r)
        r_norm = norm(r)
        k += 1
        z = precond(r)
        rz, rz_prev = inner(r, z), rz
        p = axpy(rz / rz_prev, p, z)
    return CGResult(x, k, r_norm, r_norm <= threshold, False)
