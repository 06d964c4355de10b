"""Estimating the diagonal of an operator known only through products."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .points import Point, as_tuple, pack

__all__ = ["hutchinson_diagonal"]


def hutchinson_diagonal(
    matvec: Callable[[Point], Point],
    like: Point,
    *,
    n_probes: int = 4,
    generator: torch.Generator | None = None,
) -> Point:
    """Unbiased estimate of ``diag(A)`` from ``n_probes`` products with A.

    Bekas, Kokiopoulou & Saad (2007): for Rademacher vectors z (entries
    ±1), ``E[z * (A z)] = diag(A)``; the estimate averages ``z * (A z)``
    over the probes. Exact for a diagonal A with one probe; otherwise its
    variance falls as ``1 / n_probes`` and grows with the off-diagonal mass.

    Parameters
    ----------
    matvec : callable
        ``matvec(v) -> A v`` on points shaped like ``like``.
    like : Point
        A point (tensor or tuple of tensors) giving the shapes, dtypes and
        devices of the probes.
    n_probes : int
        Products with A (>= 1).
    generator : torch.Generator, optional
        Draws of the probes (on the CPU; moved to each part's device).

    Returns
    -------
    Point
        Shaped like ``like``.

    Examples
    --------
    >>> A = torch.diag(torch.tensor([1.0, 2.0, 3.0]))
    >>> hutchinson_diagonal(lambda v: A @ v, torch.zeros(3), n_probes=1)
    tensor([1., 2., 3.])
    """
    if int(n_probes) < 1:
        raise ValueError(f"n_probes must be >= 1; got {n_probes!r}.")
    parts = as_tuple(like)
    total = [torch.zeros_like(a) for a in parts]
    for _ in range(int(n_probes)):
        z = [
            (torch.randint(0, 2, a.shape, generator=generator) * 2 - 1).to(
                device=a.device, dtype=a.dtype
            )
            for a in parts
        ]
        Az = as_tuple(matvec(pack(like, z)))
        for acc, zi, ai in zip(total, z, Az, strict=True):
            acc.add_(zi * ai)
    return pack(like, [acc / n_probes for acc in total])
