"""Arithmetic on points: one tensor or a tuple of tensors.

Solvers that work on factors (the ``(X, Y)`` of a bilinear factorization, the
parameters of two towers) as well as on single tensors touch their iterates
only through these helpers, so one loop serves both shapes: the conjugate
gradient of :func:`~embedopt.linalg.cg` here, the line search, Newton-CG and
L-BFGS of :mod:`embedopt.optim` above.

Inner products and norms accumulate in float64: iterates close to each other
cancel, and CG's recurrences are sensitive to rounding in ``<p, A p>``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "Point",
    "as_tuple",
    "axpy",
    "clone",
    "flatten",
    "inner",
    "lincomb",
    "norm",
    "pack",
    "scale",
    "unflatten",
    "zeros_like",
]

#: A point of an objective's domain: one tensor or a tuple of tensors.
Point = torch.Tensor | tuple[torch.Tensor, ...]


def as_tuple(x: Point) -> tuple[torch.Tensor, ...]:
    """The tensors of a point, as a tuple (``(x,)`` for a single tensor).

    Parameters
    ----------
    x : Point

    Returns
    -------
    tuple of torch.Tensor
    """
    return x if isinstance(x, tuple) else (x,)


def pack(like: Point, parts: Sequence[torch.Tensor]) -> Point:
    """Tensors ``parts`` in the structure of ``like`` (the inverse of :func:`as_tuple`).

    Parameters
    ----------
    like : Point
        A tuple gives a tuple, a tensor gives ``parts[0]``.
    parts : sequence of torch.Tensor

    Returns
    -------
    Point
    """
    return tuple(parts) if isinstance(like, tuple) else parts[0]


def inner(x: Point, y: Point) -> float:
    """``<x, y>``, summed over every tensor of the points, in float64.

    Parameters
    ----------
    x, y : Point
        Same structure and shapes.

    Returns
    -------
    float
    """
    total = 0.0
    for a, b in zip(as_tuple(x), as_tuple(y), strict=True):
        total += float(torch.sum(a.double() * b.double()))
    return total


def norm(x: Point) -> float:
    """The Euclidean norm of a point (all tensors together), in float64."""
    return inner(x, x) ** 0.5


def _map(fn, x: Point, *others: Point) -> Point:
    """``fn`` applied tensor by tensor, in the structure of ``x``."""
    tensors = zip(as_tuple(x), *map(as_tuple, others), strict=True)
    return pack(x, [fn(*ts) for ts in tensors])


def axpy(alpha: float, x: Point, y: Point) -> Point:
    """``y + alpha x`` (new tensors; neither input is modified).

    Computed as ``y + alpha * x`` with two roundings (no fused multiply-add),
    so a step ``x + t d`` is reproducible bit for bit across call sites.

    Parameters
    ----------
    alpha : float
    x, y : Point
        Same structure and shapes.

    Returns
    -------
    Point
    """
    return _map(lambda a, b: b + alpha * a, x, y)


def lincomb(alpha: float, x: Point, beta: float, y: Point) -> Point:
    """``alpha x + beta y`` (new tensors) for points of one structure."""
    return _map(lambda a, b: alpha * a + beta * b, x, y)


def scale(alpha: float, x: Point) -> Point:
    """``alpha x`` (new tensors)."""
    return _map(lambda a: alpha * a, x)


def zeros_like(x: Point) -> Point:
    """Zeros with the structure, shapes, dtypes and devices of ``x``."""
    return _map(torch.zeros_like, x)


def clone(x: Point) -> Point:
    """A detached copy of ``x``."""
    return _map(lambda a: a.detach().clone(), x)


def flatten(x: Point) -> torch.Tensor:
    """All entries of ``x`` in one 1-D tensor (tensors concatenated in order).

    Parameters
    ----------
    x : Point
        Tensors of one dtype and device.

    Returns
    -------
    torch.Tensor
        Shape ``(sum of numels,)``.

    See Also
    --------
    unflatten : the inverse.
    """
    return torch.cat([a.reshape(-1) for a in as_tuple(x)])


def unflatten(v: torch.Tensor, like: Point) -> Point:
    """Split a 1-D tensor into a point shaped like ``like`` (views of ``v``).

    Parameters
    ----------
    v : torch.Tensor
        Shape ``(sum of numels of like,)``.
    like : Point
        Gives the structure and shapes.

    Returns
    -------
    Point
    """
    parts, start = [], 0
    for a in as_tuple(like):
        parts.append(v[start : start + a.numel()].view(a.shape))
        start += a.numel()
    return pack(like, parts)
