"""L-BFGS for small smooth problems whose function lives on any torch device."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from scipy.optimize import minimize

from .result import SolverResult

__all__ = ["lbfgs"]


def lbfgs(
    fun: Callable[[torch.Tensor], tuple[torch.Tensor | float, torch.Tensor]],
    x0: torch.Tensor,
    *,
    max_iter: int = 100,
    tol: float = 1e-8,
    history_size: int = 10,
) -> SolverResult:
    """Minimize a smooth function of a small vector with L-BFGS.

    The function and its gradient are evaluated in ``x0``'s dtype and on its
    device; only the small iterate travels to SciPy's L-BFGS-B (in float64), so
    the expensive part (e.g. a pass over millions of observed entries) stays on
    the GPU when there is one.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``.
    x0 : torch.Tensor
        Starting point (1-D).
    max_iter : int
        Maximum number of L-BFGS iterations.
    tol : float
        Projected-gradient tolerance (``pgtol``) and relative function tolerance.
    history_size : int
        Number of stored correction pairs.

    Returns
    -------
    SolverResult
        ``x`` is a tensor like ``x0``; ``history`` has the objective per
        function evaluation.
    """
    t0 = time.perf_counter()
    values: list[float] = []

    def wrapped(z: np.ndarray):
        x = torch.as_tensor(z, dtype=x0.dtype, device=x0.device)
        f, g = fun(x)
        f = float(f)
        values.append(f)
        return f, g.detach().double().cpu().numpy()

    res = minimize(
        wrapped,
        x0.detach().double().cpu().numpy(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": tol, "maxcor": history_size},
    )
    x = torch.as_tensor(res.x, dtype=x0.dtype, device=x0.device)
    n = len(values)
    history = {
        "iteration": np.arange(1, n + 1),
        "objective": np.asarray(values),
    }
    return SolverResult(
        x=x,
        n_iter=int(res.nit),
        stop_reason="tol" if res.success else "max_iter",
        history=history,
        elapsed=time.perf_counter() - t0,
        info={"message": str(res.message), "n_fev": int(res.nfev)},
    )
