"""Gradient descent with Armijo backtracking on a smooth objective, optionally
with a diagonal scaling.

One iteration at x with gradient g and a positive diagonal D (identity
without scaling)::

    d  = -D^{-1} g
    t  = Armijo backtracking on f from t0          (f(x + t d) <= f + c1 t <g, d>)
    x <- x + t d
    t0 = growth * t                                 (next first trial)

Starting each search from a multiple of the last accepted step lets t grow
again after a cut, so the method keeps about one or two function values per
iteration once t has settled. The first trial of the first search is
t = 1 with a scaling (a diagonal Newton step), else a move of x by
``initial_step`` times its norm. The history has the objective, gradient norm, accepted
step and function values per iteration, like :func:`~embedopt.optim.newton_cg`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import PROGRESS_CONSTRAINTS, InstanceOf, Interval, validated_params
from ..linalg.points import Point, as_tuple, norm, pack
from .line_search import armijo_backtracking
from .monitor import IterationState, solver_monitor, start_gradient_run
from .objective import Objective
from .result import SolverResult

__all__ = ["ARMIJO_GD_CONSTRAINTS", "armijo_gradient_descent"]

_LS_TRIALS = 40
#: What a non-finite objective most likely means here.
_NONFINITE_HINT = (
    "the objective or its gradient overflows (check the scaling of the data)"
)

#: Constraints of :func:`armijo_gradient_descent`'s parameters.
ARMIJO_GD_CONSTRAINTS = {
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "preconditioner": [
        "callable",
        InstanceOf((torch.Tensor, tuple), "a tensor or tuple of tensors"),
        None,
    ],
    "initial_step": [Interval(float, 0, None, closed="neither")],
    "growth": [Interval(float, 1, None)],
    "c1": [Interval(float, 0, 1, closed="neither")],
    **PROGRESS_CONSTRAINTS,
}


def _scaled(g: Point, diag: Point | None) -> Point:
    if diag is None:
        return pack(g, [-a for a in as_tuple(g)])
    return pack(g, [-a / d for a, d in zip(as_tuple(g), as_tuple(diag), strict=True)])


@validated_params(ARMIJO_GD_CONSTRAINTS)
def armijo_gradient_descent(
    objective: Objective,
    x0: Point,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    preconditioner: Point | Callable[[Point], Point] | None = None,
    initial_step: float = 1e-2,
    growth: float = 2.0,
    c1: float = 1e-4,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "GD",
    owner: str | None = None,
) -> SolverResult:
    """Minimize a smooth objective by (diagonally scaled) gradient descent.

    Each iteration searches along ``d = -D^{-1} grad f(x)`` (``D = I``
    without a preconditioner) by Armijo backtracking, starting from
    ``growth`` times the step accepted last.

    Parameters
    ----------
    objective : Objective
        Has ``value_and_grad`` (see :class:`~embedopt.optim.objective.Objective`).
    x0 : Point
        Starting point: a tensor or a tuple of tensors.
    max_iter : int
        Iterations at most.
    tol : float
        Stop when ``||grad f(x)|| <= tol ||grad f(x0)||``.
    preconditioner : callable, tensor or tuple of tensors, optional
        The diagonal scaling D (positive, shaped like x): fixed, or
        ``preconditioner(x) -> D`` called once per iteration (e.g. the
        diagonal of a Gauss-Newton matrix, estimated by
        :func:`~embedopt.linalg.hutchinson_diagonal`, plus a damping).
    initial_step : float
        Without scaling, the first trial step moves x by this fraction of
        ``max(||x||, 1)``; with a scaling the first trial is t = 1.
    growth : float
        Each search starts from ``growth`` times the last accepted step.
    c1 : float
        Armijo sufficient-decrease constant.
    verbose, callback, name, owner
        As in :func:`~embedopt.optim.newton_cg`.

    Returns
    -------
    SolverResult
        History per iteration: iteration, time, objective, grad_norm, step,
        n_evals (function values of the line search). ``stop_reason``:
        ``"tol"``, ``"max_iter"``, ``"callback"`` or ``"line_search"`` (no
        step decreased f: usually f is at rounding level).

    Examples
    --------
    >>> from embedopt.optim import AutogradObjective
    >>> obj = AutogradObjective(lambda x: ((x - 1) ** 2).sum())
    >>> res = armijo_gradient_descent(obj, torch.zeros(2), tol=1e-8)
    >>> bool(torch.allclose(res.x, torch.ones(2), atol=1e-6))
    True
    """
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, _NONFINITE_HINT
    )
    x, f, g = start_gradient_run(objective, x0, monitor)
    step = None
    for _ in monitor:
        diag = preconditioner(x) if callable(preconditioner) else preconditioner
        d = _scaled(g, diag)
        if step is None:
            # A scaling that models the curvature makes t = 1 the natural
            # first trial (a diagonal Newton step); without one, t has no scale.
            step = (
                1.0
                if diag is not None
                else (initial_step * max(norm(x), 1.0) / max(norm(d), 1e-300))
            )
        ls = armijo_backtracking(
            objective.value_and_grad,
            x,
            f,
            g,
            d,
            step=step,
            c1=c1,
            max_trials=_LS_TRIALS,
        )
        if ls.success:
            x, f, g = ls.x, ls.value, ls.grad
            step = growth * ls.step
        else:
            monitor.stop_reason = "line_search"
        if monitor.record(
            x,
            objective=f,
            grad_norm=norm(g),
            step=ls.step if ls.success else 0.0,
            n_evals=ls.n_evals,
        ):
            break
    return monitor.result(x)
