"""Backtracking line search with the Armijo sufficient-decrease test.

Given a point ``x``, its value ``f = f(x)``, gradient ``g`` and a direction
``d``, try ``t = t_0, t_0 rho, t_0 rho^2, ...`` and accept the first trial
point ``x_t = P(x + t d)`` (P a projection, the identity by default) with

    f(x_t) <= f + c1 <g, x_t - x> + slack |f|       and f(x_t) finite

(Nocedal & Wright, Algorithm 3.1; ``<g, x_t - x> = t <g, d>`` without a
projection, the projected-gradient form of Bertsekas otherwise). ``slack``
tolerates rounding-level increases near a stationary point, where the
decrease ``c1 t <g, d>`` falls below the rounding of ``f`` itself.
``c1 = 0`` accepts any step that does not increase the objective: the
safeguard of :func:`~embedopt.optim.gradient_descent`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .._core import Interval, validated_params
from ..linalg.points import Point, axpy, inner

__all__ = ["LineSearchResult", "armijo_backtracking"]

_CONSTRAINTS = {
    "step": [Interval(float, 0, None, closed="neither")],
    "c1": [Interval(float, 0, 1, closed="left")],
    "shrink": [Interval(float, 0, 1, closed="neither")],
    "max_trials": [Interval(int, 1, None)],
    "slack": [Interval(float, 0, None)],
    "project": ["callable", None],
}


@dataclass
class LineSearchResult:
    """Outcome of a line search.

    Attributes
    ----------
    step : float
        The accepted step t (on failure: the last one tried).
    x : Point
        The trial point ``P(x + t d)`` at that step.
    value : float
        ``f`` there.
    grad : Point or None
        The gradient there, when ``fun`` returns it (else None).
    n_evals : int
        Number of calls of ``fun`` (trial points evaluated).
    success : bool
        Whether the sufficient-decrease test held. On failure the fields
        describe the last trial, which the caller may use or discard.
    """

    step: float
    x: Point
    value: float
    grad: Point | None
    n_evals: int
    success: bool


@validated_params(_CONSTRAINTS, owner="armijo_backtracking")
def armijo_backtracking(
    fun: Callable,
    x: Point,
    value: float,
    grad: Point,
    direction: Point,
    *,
    step: float = 1.0,
    c1: float = 1e-4,
    shrink: float = 0.5,
    max_trials: int = 40,
    slack: float = 0.0,
    project: Callable | None = None,
) -> LineSearchResult:
    """Armijo backtracking from ``x`` along ``direction``.

    Parameters
    ----------
    fun : callable
        ``fun(x)`` returning the objective value (float or 0-d tensor), or a
        pair ``(value, gradient)``; with a pair the gradient at the accepted
        point comes back in the result, saving a call when the solver needs
        it next.
    x : Point
        Current point (a tensor or a tuple of tensors).
    value : float
        ``f(x)``.
    grad : Point
        ``nabla f(x)``.
    direction : Point
        Search direction d, normally a descent direction (``<g, d> < 0``).
    step : float
        First trial step t_0.
    c1 : float
        Sufficient-decrease constant in [0, 1).
    shrink : float
        Factor rho in (0, 1) applied to t after each rejected trial.
    max_trials : int
        Trial points at most (including the first).
    slack : float
        Relative tolerance on an increase, ``slack |f(x)|``.
    project : callable, optional
        ``project(z) -> z``, applied to every trial point.

    Returns
    -------
    LineSearchResult

    Examples
    --------
    >>> import torch
    >>> f = lambda z: float((z**2).sum())
    >>> x = torch.tensor([1.0]); g = 2 * x
    >>> armijo_backtracking(f, x, f(x), g, -g).step
    0.5
    """
    value = float(value)
    # Without a projection the predicted decrease is linear in t.
    slope = inner(grad, direction) if c1 and project is None else 0.0
    t = float(step)
    for trial in range(1, max_trials + 1):
        x_t = axpy(t, direction, x)
        if project is not None:
            x_t = project(x_t)
        out = fun(x_t)
        f_t, g_t = out if isinstance(out, tuple) else (out, None)
        f_t = float(f_t)
        bound = value + slack * abs(value)
        if c1:
            moved = t * slope if project is None else inner(grad, axpy(-1.0, x, x_t))
            bound += c1 * moved
        if math.isfinite(f_t) and f_t <= bound:
            return LineSearchResult(t, x_t, f_t, g_t, trial, True)
        if trial < max_trials:
            t *= shrink
    return LineSearchResult(t, x_t, f_t, g_t, max_trials, False)
