"""Shared derivative checks for the "derivatives" kind of test (DESIGN.md).

Closed-form gradients, Hessian-, Jacobian- and Gauss-Newton-vector products
are compared against autograd and against central finite differences, in
float64. Points may be one tensor or a tuple of tensors (factors).

- :func:`check_grad`: a gradient against autograd and finite differences,
  optionally batched (independent problems along leading axes, perturbed all
  at once: one pair of evaluations per trailing coordinate);
- :func:`check_hvp`: a Hessian-vector product against double backward and
  finite differences of the gradient;
- :func:`check_jvp`: a Jacobian-vector product against forward-mode autograd
  and finite differences;
- :func:`autograd_grad`, :func:`autograd_jvp`, :func:`autograd_vjp`,
  :func:`central_difference`: the references themselves, for tests that
  compare only some entries or build products (e.g. ``J^T J v``).
"""

from __future__ import annotations

import numpy as np
import torch

from embedopt.linalg.points import as_tuple, axpy, pack

__all__ = [
    "autograd_grad",
    "autograd_jvp",
    "autograd_vjp",
    "central_difference",
    "check_grad",
    "check_hvp",
    "check_jvp",
]


def _leaves(x):
    return pack(x, [a.detach().clone().requires_grad_(True) for a in as_tuple(x)])


def autograd_grad(fun, x):
    """The gradient of ``fun(x).sum()`` by reverse-mode autograd (shape of x)."""
    xs = _leaves(x)
    with torch.enable_grad():
        out = torch.autograd.grad(fun(xs).sum(), as_tuple(xs), allow_unused=True)
    pairs = zip(as_tuple(x), out, strict=True)
    return pack(x, [torch.zeros_like(a) if g is None else g for a, g in pairs])


def autograd_jvp(fun, x, v):
    """``J(x) v`` of a tensor-valued ``fun`` by forward-mode autograd."""
    return torch.func.jvp(lambda *a: fun(pack(x, a)), as_tuple(x), as_tuple(v))[1]


def autograd_vjp(fun, x, u):
    """``J(x)^T u`` of a tensor-valued ``fun`` by reverse-mode autograd."""
    _, pullback = torch.func.vjp(lambda *a: fun(pack(x, a)), *as_tuple(x))
    return pack(x, list(pullback(u)))


def central_difference(fun, t0: float = 0.0, eps: float = 1e-6):
    """``(fun(t0 + eps) - fun(t0 - eps)) / (2 eps)`` for a function of a scalar."""
    return (fun(t0 + eps) - fun(t0 - eps)) / (2 * eps)


def _fd_grad(fun, x, eps, batch_dims):
    parts = as_tuple(x)
    num = [torch.zeros_like(a) for a in parts]
    for k, a in enumerate(parts):
        for idx in np.ndindex(*a.shape[batch_dims:]):
            pos = (Ellipsis, *idx) if batch_dims else idx

            def shifted(t, k=k, pos=pos):
                E = [torch.zeros_like(b) for b in parts]
                E[k][pos] = t
                return fun(pack(x, [b + e for b, e in zip(parts, E, strict=True)]))

            num[k][pos] = central_difference(shifted, 0.0, eps)
    return pack(x, num)


def check_grad(
    fun,
    x,
    grad,
    *,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    autograd_rtol: float | None = None,
    autograd_atol: float | None = None,
    batch_dims: int = 0,
    autograd: bool = True,
    finite_differences: bool = True,
) -> None:
    """Assert that ``grad`` is the gradient of ``fun`` at ``x``.

    Parameters
    ----------
    fun : callable
        ``fun(x)``: a scalar, or with ``batch_dims`` one value per batch
        element (shape ``x.shape[:batch_dims]``); differentiable by torch
        when ``autograd``.
    x : torch.Tensor or tuple of torch.Tensor
        float64.
    grad : torch.Tensor or tuple of torch.Tensor
        The closed form to check (shape of x).
    eps : float
        Central-difference step.
    rtol, atol : float
        Tolerances against finite differences.
    autograd_rtol, autograd_atol : float, optional
        Tolerances against autograd (default: torch's for the dtype).
    batch_dims : int
        Leading axes of x that index independent problems: each coordinate
        of the trailing axes is perturbed in every batch element at once
        (``x.ndim`` for an elementwise function).
    autograd, finite_differences : bool
        Which references to compare with.
    """
    if autograd:
        ref = autograd_grad(fun, x)
        for a, b in zip(as_tuple(grad), as_tuple(ref), strict=True):
            torch.testing.assert_close(a, b, rtol=autograd_rtol, atol=autograd_atol)
    if finite_differences:
        with torch.no_grad():
            ref = _fd_grad(fun, x, eps, batch_dims)
        for a, b in zip(as_tuple(grad), as_tuple(ref), strict=True):
            torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


def _check_directional(
    fn,
    x,
    v,
    actual,
    autograd_reference,
    *,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    autograd: bool = True,
    finite_differences: bool = True,
) -> None:
    """Compare ``actual`` with ``autograd_reference()`` and with the central
    difference of ``fn`` along ``v``, ``(fn(x + eps v) - fn(x - eps v)) / (2 eps)``."""
    refs = []
    if autograd:
        refs.append(autograd_reference())
    if finite_differences:
        with torch.no_grad():
            plus, minus = fn(axpy(eps, v, x)), fn(axpy(-eps, v, x))
        pairs = zip(as_tuple(plus), as_tuple(minus), strict=True)
        refs.append(tuple((p - m) / (2 * eps) for p, m in pairs))
    for ref in refs:
        for a, b in zip(as_tuple(actual), as_tuple(ref), strict=True):
            torch.testing.assert_close(a, b.detach(), rtol=rtol, atol=atol)


def _autograd_hvp(fun, x, v):
    xs = _leaves(x)
    with torch.enable_grad():
        g = torch.autograd.grad(fun(xs), as_tuple(xs), create_graph=True)
        gv = sum((a * b).sum() for a, b in zip(g, as_tuple(v), strict=True))
        return torch.autograd.grad(gv, as_tuple(xs))


def check_hvp(fun, x, v, hv, *, grad=None, **options) -> None:
    """Assert that ``hv`` is the Hessian-vector product ``nabla^2 fun(x) v``.

    Parameters
    ----------
    fun : callable
        Scalar function, differentiable twice by torch (for the autograd
        reference, and for the finite differences when ``grad`` is None).
    x, v, hv : torch.Tensor or tuple of torch.Tensor
        Point, direction and the product to check (float64).
    grad : callable, optional
        ``grad(x)``, the gradient used by the finite differences
        ``(grad(x + eps v) - grad(x - eps v)) / (2 eps)``; default autograd.
    **options
        ``eps`` (1e-6), ``rtol`` (1e-6), ``atol`` (1e-8), ``autograd`` and
        ``finite_differences`` (True): the step, the tolerances and which
        references to compare with.
    """
    grad = grad or (lambda z: autograd_grad(fun, z))
    _check_directional(grad, x, v, hv, lambda: _autograd_hvp(fun, x, v), **options)


def check_jvp(fun, x, v, jv, **options) -> None:
    """Assert that ``jv`` is the Jacobian-vector product ``J(x) v`` of ``fun``.

    Parameters
    ----------
    fun : callable
        Tensor-valued function of x.
    x, v : torch.Tensor or tuple of torch.Tensor
        Point and direction (float64).
    jv : torch.Tensor
        The product to check (shape of ``fun(x)``).
    **options
        As in :func:`check_hvp`.
    """
    _check_directional(fun, x, v, jv, lambda: autograd_jvp(fun, x, v), **options)
