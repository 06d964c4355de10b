"""Tiny seeded NPKL instances and their dense references, shared by the sdp tests."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from embedopt.linalg import project_psd
from embedopt.sdp import NPKLProblem, knn_laplacian, sample_pairs


def tiny_npkl(
    n: int = 12, n_pairs: int = 6, lam: float = 1.0, seed: int = 0, device="cpu"
):
    """A float64 NPKL problem on n Gaussian points in two classes."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 3)) + 1.0 * y[:, None]
    lap = knn_laplacian(X, 4)
    ml, cl = sample_pairs(y, n_pairs, seed)
    return NPKLProblem(n, ml, cl, lap, lam=lam, device=device)


def dense_objective(problem: NPKLProblem):
    """``Z -> f(Z)`` by the dense formula of eq. 13 (autograd-friendly)."""
    mask, target, lap = (torch.tensor(a) for a in problem.dense())

    def f(Z):
        S = 0.5 * (Z + Z.T)
        return 0.5 * (mask * (S - target) ** 2).sum() + (Z * lap).sum()

    return f


@lru_cache(maxsize=4)
def reference_optimum(n: int = 12, n_pairs: int = 6, lam: float = 1.0) -> float:
    """``min_{Z PSD} f(Z)`` by projected gradient on the PSD cone, run long.

    f has curvature at most 1, so the step 1/2 is safe; 3000 projected
    steps reach rounding level on these sizes.
    """
    f = dense_objective(tiny_npkl(n, n_pairs, lam))
    Z = torch.zeros(n, n, dtype=torch.float64, requires_grad=True)
    for _ in range(3000):
        (G,) = torch.autograd.grad(f(Z), Z)
        with torch.no_grad():
            Z = project_psd(Z - 0.5 * (G + G.T)).requires_grad_(True)
    with torch.no_grad():
        value = float(f(Z))
    return value
