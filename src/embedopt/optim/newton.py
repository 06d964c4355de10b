"""Truncated Newton-CG with Levenberg-Marquardt damping and Armijo line search.

One outer iteration at ``x`` with gradient ``g``::

    B     = nabla^2 f(x)  or  J^T H_l J            (use="hessian" / "gauss_newton")
    d     ~ solve (B + mu I) d = -g  by CG         (rtol cg_rtol, at most cg_max_iter)
    pred  = -(<g, d> + <d, B d> / 2)               (= (mu ||d||^2 - <g, d>) / 2)
    t     = Armijo backtracking on f from t = 1
    rho   = (f(x) - f(x + d)) / pred               (0 when the step was cut)
    mu   <- mu * 3/2 if rho < 1/4,  mu * 2/3 if rho > 3/4
    x    <- x + t d

B is only applied through products (``objective.hvp`` or ``objective.gnvp``),
never formed. CG starts from 0, so every CG iterate is a descent direction
for positive definite ``B + mu I``; on negative curvature (possible with the
Hessian of a non-convex f) it returns the last iterate, still a descent
direction. The damping rule is Martens' (2010) "Levenberg-Marquardt style"
heuristic; the line search keeps the method globally convergent whatever
mu is (Nocedal & Wright, Sec. 7.1).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import (
    PROGRESS_CONSTRAINTS,
    InstanceOf,
    Interval,
    InvalidParameterError,
    Options,
    validated_params,
)
from ..linalg.cg import cg
from ..linalg.points import Point, axpy, inner, norm, scale
from .line_search import armijo_backtracking
from .monitor import IterationState, solver_monitor, start_gradient_run
from .objective import Objective
from .result import SolverResult

__all__ = ["NEWTON_CG_CONSTRAINTS", "newton_cg"]

_LS_TRIALS = 30
#: What a non-finite objective most likely means here.
_NONFINITE_HINT = (
    "the objective or its derivatives overflow (check the scaling of the data, "
    "or increase 'damping')"
)
_RHO_LOW, _RHO_HIGH = 0.25, 0.75  # ratios that grow / shrink the damping
_GROW, _SHRINK = 1.5, 2.0 / 3.0

#: Constraints of :func:`newton_cg`'s parameters (callers may check them early).
NEWTON_CG_CONSTRAINTS = {
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "use": [Options(["hessian", "gauss_newton"])],
    "cg_rtol": [Interval(float, 0, 1, closed="neither")],
    "cg_max_iter": [Interval(int, 1, None), None],
    "damping": [Interval(float, 0, None)],
    "preconditioner": [
        "callable",
        InstanceOf((torch.Tensor, tuple), "a tensor or tuple of tensors"),
        None,
    ],
    "line_search": ["boolean"],
    "c1": [Interval(float, 0, 1, closed="neither")],
    "stop_on": [Options(["grad_norm", "objective"])],
    **PROGRESS_CONSTRAINTS,
}


def _damped_newton_direction(product, x: Point, g: Point, mu: float, pre, options):
    """CG on ``(B + mu I) d = -g`` with B applied by ``product(x, v)``."""

    def matvec(v):
        out = product(x, v)
        return axpy(mu, v, out) if mu else out

    return cg(matvec, scale(-1.0, g), preconditioner=pre, **options)


def _adapt_damping(mu: float, decrease: float | None, g: Point, d: Point) -> float:
    """Martens' rule from ``rho`` = actual / predicted decrease of the full step.

    The decrease the undamped model predicts is ``-(<g, d> + <d, B d> / 2)``;
    a CG iterate from 0 has its residual ``-g - (B + mu I) d`` orthogonal to
    d, so ``<d, B d> = -<g, d> - mu ||d||^2`` and the prediction is
    ``(mu ||d||^2 - <g, d>) / 2`` (the classical Levenberg-Marquardt formula)
    without another curvature product. ``decrease=None``: the line search
    cut the full step, which counts as a poor model (rho = 0).
    """
    predicted = 0.5 * (mu * inner(d, d) - inner(g, d))
    rho = decrease / predicted if decrease is not None and predicted > 0 else 0.0
    if rho < _RHO_LOW:
        return mu * _GROW
    return mu * _SHRINK if rho > _RHO_HIGH else mu


def _curvature_product(objective, use: str, owner: str):
    method = "hvp" if use == "hessian" else "gnvp"
    product = getattr(objective, method, None)
    if not callable(product):
        raise InvalidParameterError(
            f"The 'use' parameter of {owner} is {use!r}, but the objective has no "
            f"'{method}(x, v)' method. Implement it, choose the other product, or "
            "wrap a differentiable function in AutogradObjective (which has hvp)."
        )
    return product


@validated_params(NEWTON_CG_CONSTRAINTS)
def newton_cg(
    objective: Objective,
    x0: Point,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    use: str = "hessian",
    cg_rtol: float = 0.1,
    cg_max_iter: int | None = None,
    damping: float = 0.0,
    preconditioner: (
        Point | Callable[[Point, float], Point | Callable[[Point], Point]] | None
    ) = None,
    line_search: bool = True,
    c1: float = 1e-4,
    stop_on: str = "grad_norm",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "Newton-CG",
    owner: str | None = None,
) -> SolverResult:
    """Minimize a smooth objective by truncated (Gauss-)Newton-CG.

    Each outer iteration solves ``(B + mu I) s = -grad f(x)`` inexactly by
    conjugate gradients (B the Hessian or the Gauss-Newton matrix, applied
    by products only), then steps along s (by Armijo backtracking from the
    full step ``t = 1`` with ``line_search``) and, with damping on, adapts mu.

    Parameters
    ----------
    objective : Objective
        Has ``value``, ``value_and_grad`` and, depending on ``use``, ``hvp``
        or ``gnvp`` (see :class:`~embedopt.optim.objective.Objective`).
    x0 : Point
        Starting point: a tensor or a tuple of tensors (factors).
    max_iter : int
        Outer (Newton) iterations at most.
    tol : float
        Stop when ``||grad f(x)|| <= tol ||grad f(x0)||`` (or, with
        ``stop_on="objective"``, when one iteration changes f by less than
        ``tol`` relative to it).
    use : {"hessian", "gauss_newton"}
        The curvature B: the Hessian (``objective.hvp``) or the
        Gauss-Newton matrix (``objective.gnvp``, PSD, for losses of the form
        ``l(r(x))``).
    cg_rtol : float
        Relative residual of the inner CG solve, ``||r|| <= cg_rtol ||g||``
        (an inexact Newton forcing term; smaller is closer to the exact
        Newton step).
    cg_max_iter : int, optional
        CG iterations per outer iteration at most (default: CG's own).
    damping : float
        Initial Levenberg-Marquardt damping mu >= 0, added to the curvature
        (``B + mu I``) and adapted by the ratio of actual to predicted
        decrease; 0 turns damping off (the rule is multiplicative).
    preconditioner : callable, tensor or tuple of tensors, optional
        M, an approximation of ``B + mu I`` for the inner CG: a fixed
        diagonal (shaped like x), or ``preconditioner(x, mu)`` called once
        per outer iteration and returning what
        :func:`~embedopt.linalg.cg` accepts (a diagonal, or a callable
        ``r -> M^{-1} r``), e.g. the Jacobi diagonal ``diag(B(x)) + mu``.
    line_search : bool
        Armijo backtracking on the exact objective (from the full step);
        False always takes the full step.
    c1 : float
        Armijo sufficient-decrease constant.
    stop_on : {"grad_norm", "objective"}
        The stopping test of ``tol`` (see :func:`~embedopt.optim.start_gradient_run`).
    verbose, callback, name, owner
        As in :func:`~embedopt.optim.svrg` (the callback is called once per
        outer iteration).

    Returns
    -------
    SolverResult
        ``x`` has the structure of ``x0``. ``history`` per outer iteration:
        iteration, time, objective, grad_norm, cg_iter, step (the accepted
        t), damping (mu used for the step). ``stop_reason`` is ``"tol"``,
        ``"max_iter"``, ``"callback"``, or ``"line_search"`` when no step
        decreased f (with no damping to increase: usually f is at rounding
        level). ``info["n_products"]``: curvature products in total.

    Examples
    --------
    >>> import torch
    >>> from embedopt.optim import AutogradObjective
    >>> obj = AutogradObjective(lambda x: ((x - 1) ** 4).sum() + (x**2).sum())
    >>> res = newton_cg(obj, torch.zeros(3, dtype=torch.float64), tol=1e-10)
    >>> res.converged
    True
    """
    product = _curvature_product(objective, use, name)
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, _NONFINITE_HINT
    )
    x, f, g = start_gradient_run(objective, x0, monitor, stop_on)
    mu = float(damping)
    cg_options = dict(rtol=cg_rtol, max_iter=cg_max_iter)
    trials = _LS_TRIALS if line_search else 1
    products = 0
    for _ in monitor:
        pre = preconditioner(x, mu) if callable(preconditioner) else preconditioner
        sol = _damped_newton_direction(product, x, g, mu, pre, cg_options)
        products += sol.n_iter
        ls = armijo_backtracking(
            objective.value_and_grad, x, f, g, sol.x, c1=c1, max_trials=trials
        )
        accepted = ls.success or not line_search
        mu_used = mu
        if mu:
            full = accepted and ls.step == 1.0
            mu = _adapt_damping(mu, f - ls.value if full else None, g, sol.x)
        if accepted:
            x, f, g = ls.x, ls.value, ls.grad
        elif not mu:
            monitor.stop_reason = "line_search"
        if monitor.record(
            x,
            objective=f,
            grad_norm=norm(g),
            cg_iter=sol.n_iter,
            step=ls.step if accepted else 0.0,
            damping=mu_used,
        ):
            break
    return monitor.result(x, n_products=products)
