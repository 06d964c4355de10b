"""L-BFGS for small smooth problems whose function lives on any torch device.

SciPy's L-BFGS-B does the quasi-Newton algebra on a float64 NumPy copy of the
iterate; the function and gradient run in torch, on the iterate's device and
in its dtype. The run goes through :class:`~embedopt.optim.IterationMonitor`
like every other solver: one history row per L-BFGS iteration (SciPy's
callback), the callback protocol, progress bar and logging, and the
:class:`~embedopt.ConvergenceWarning` at ``max_iter``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from .._core import PROGRESS_CONSTRAINTS, Interval, Options, validated_params
from ..linalg.points import Point, flatten, norm, unflatten
from .monitor import IterationMonitor, IterationState, RelativeChange
from .result import SolverResult

__all__ = ["LBFGS_CONSTRAINTS", "lbfgs"]

#: Constraints of :func:`lbfgs`'s parameters.
LBFGS_CONSTRAINTS = {
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "history_size": [Interval(int, 1, None)],
    "stop": [Options(["scipy", "relative_objective", "initial_objective"])],
    "evaluate": ["callable", None],
    **PROGRESS_CONSTRAINTS,
}


def _never(history) -> bool:
    return False  # SciPy applies the tolerances itself


class _Stop(Exception):
    """Raised from SciPy's callback when the monitor says stop."""


class _Calls:
    """``fun`` on SciPy's float64 vectors, in x0's dtype, device and structure."""

    def __init__(self, fun, x0: Point, monitor: IterationMonitor):
        self.fun, self.like, self.monitor = fun, x0, monitor
        flat = flatten(x0)
        self.dtype, self.device = flat.dtype, flat.device
        self.last: dict = {}  # the latest evaluation
        self.count = 0  # evaluations asked for by SciPy

    def point(self, z: np.ndarray) -> Point:
        # a copy: SciPy updates its iterate in place, the tensor may be kept
        flat = torch.tensor(z, dtype=self.dtype, device=self.device)
        return unflatten(flat, self.like)

    def evaluate(self, z: np.ndarray):
        x = self.point(z)
        f, g = self.fun(x)
        f = float(f)
        if not self.last and not math.isfinite(f):
            raise self.monitor.instability(f"the objective is {f} at x0")
        self.last.update(z=z.copy(), x=x, f=f, g=g)
        return f, flatten(g).detach().double().cpu().numpy()

    def __call__(self, z: np.ndarray):
        self.count += 1
        return self.evaluate(z)


@validated_params(LBFGS_CONSTRAINTS)
def lbfgs(
    fun: Callable[[Point], tuple[torch.Tensor | float, Point]],
    x0: Point,
    *,
    max_iter: int = 100,
    tol: float = 1e-8,
    history_size: int = 10,
    stop: str = "scipy",
    evaluate: Callable[[Point], Mapping[str, Any]] | None = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "L-BFGS",
    owner: str | None = None,
) -> SolverResult:
    """Minimize a smooth function of a tensor or of factors with L-BFGS.

    The function and its gradient are evaluated in ``x0``'s dtype and on its
    device; only the iterate travels to SciPy's L-BFGS-B (in float64), so
    the expensive part (e.g. a pass over millions of observed entries) stays
    on the GPU when there is one. A tuple of tensors (e.g. the factor of a
    Burer-Monteiro factorization with other blocks) is flattened for SciPy
    and handed back to ``fun`` in its own shapes.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``, the gradient with the structure of
        ``x``.
    x0 : Point
        Starting point: a tensor (any shape) or a tuple of tensors of one
        dtype and device.
    max_iter : int
        Maximum number of L-BFGS iterations.
    tol : float
        Projected-gradient tolerance (``gtol``: the largest gradient entry)
        and relative function tolerance (``ftol``) of SciPy.
    history_size : int
        Number of stored correction pairs.
    stop : {"scipy", "relative_objective", "initial_objective"}
        ``"scipy"``: SciPy's own tests with ``gtol = ftol = tol`` (``ftol``
        compares the decrease with ``max(|f|, 1)``, an absolute test for
        objectives below 1). ``"relative_objective"``: the library's rule
        (:class:`~embedopt.optim.RelativeChange`): stop when
        ``|f_t - f_{t-1}| <= tol |f_{t-1}|`` between iterations, whatever
        the scale of f (SciPy's tests then only catch an exact stationary
        point). ``"initial_objective"``: stop when an iteration changes f by
        at most ``tol |f_1|`` (f after the first iteration), for objectives
        that decay to 0 (see :class:`~embedopt.optim.RelativeChange`).
    evaluate : callable, optional
        ``evaluate(x) -> dict`` of extra history values (e.g. a held-out
        error), called after each iteration off the clock.
    verbose, callback, name, owner
        As in :func:`~embedopt.optim.svrg` (the callback is called once per
        L-BFGS iteration, from SciPy's callback).

    Returns
    -------
    SolverResult
        ``x`` has the structure of ``x0``; ``history`` per iteration:
        iteration, time, objective, grad_norm (Euclidean). ``stop_reason``:
        ``"tol"``, ``"max_iter"``, ``"callback"``, or ``"line_search"`` when
        SciPy's line search could not decrease f further (usually at
        rounding level; SciPy's message is in ``info["message"]``).
        ``info["n_fev"]``: function evaluations.

    Raises
    ------
    NumericalInstabilityError
        If the objective is NaN or infinite at ``x0`` or at an iterate.
    """
    monitor = IterationMonitor(
        name,
        max_iter,
        tol,
        stopping=_never
        if stop == "scipy"
        else RelativeChange(
            tol, relative_to="first" if stop == "initial_objective" else "previous"
        ),
        verbose=verbose,
        callback=callback,
        owner=owner,
        nonfinite_hint="the function overflows there (check the scaling of the "
        "data or the starting point)",
    )
    monitor.start()
    calls = _Calls(fun, x0, monitor)
    kept: dict = {}  # the latest recorded iterate

    def on_iteration(xk: np.ndarray):
        # Old-style callback(xk): works with every supported SciPy; stopping
        # raises _Stop, caught below (StopIteration needs SciPy >= 1.11).
        if not np.array_equal(xk, calls.last["z"]):
            with monitor.paused():  # SciPy accepted an earlier point: re-evaluate
                calls.evaluate(xk)
        kept.update(calls.last)
        extra = {}
        if evaluate is not None:
            with monitor.paused():
                extra = dict(evaluate(kept["x"]))
        values = {"objective": kept["f"], "grad_norm": norm(kept["g"]), **extra}
        if monitor.record(kept["x"], **values):
            raise _Stop

    scipy_tol = tol if stop == "scipy" else 0.0
    options = {
        "maxiter": max_iter,
        "gtol": scipy_tol,
        "ftol": scipy_tol,
        "maxcor": history_size,
    }
    # Imported here: scipy.optimize costs ~0.45 s, a third of ``import
    # embedopt`` beyond torch, and most programs never call L-BFGS.
    from scipy.optimize import minimize

    try:
        res = minimize(
            calls,
            flatten(x0).detach().double().cpu().numpy(),
            jac=True,
            method="L-BFGS-B",
            callback=on_iteration,
            options=options,
        )
    except _Stop:
        x, message = kept["x"], f"stopped by {monitor.stop_reason}"
    else:
        if not math.isfinite(float(res.fun)):
            raise monitor.instability(f"the objective became {float(res.fun)}")
        monitor.stop_reason = "tol" if res.success else "line_search"
        x, message = calls.point(res.x), str(res.message)
    return monitor.result(x, message=message, n_fev=calls.count)
