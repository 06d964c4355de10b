"""One accelerated proximal-gradient loop for every composite problem.

``min_x F_w(x) = f(x) + w r(x)`` with ``f`` smooth and ``r`` a regularizer
whose weight ``w`` may follow a continuation schedule. The loop owns what
the accelerated methods of the papers share and nothing else:

- the momentum schedule (a swappable object from :data:`MOMENTUM`, e.g.
  Nesterov with function-value restart, AIS-Impute Algorithm 3 steps 1, 4,
  9-10),
- the restart test ``F_{w_t}(x_{t+1}) > F_{w_t}(x_t)``,
- the continuation of the weight (a swappable schedule object, e.g.
  :class:`GeometricContinuation`, ``w_t = (w_hat - w) nu^(t-1) + w``), ended
  early once the iterates have settled,
- the bookkeeping of :class:`~embedopt.optim.IterationMonitor` (history,
  callback, stopping rule, progress, ConvergenceWarning).

What a step *is* belongs to the problem (:class:`ProximalProblem`): a
proximal-gradient step from the extrapolated point (matrix completion: an
approximate SVT of a sparse-plus-low-rank matrix), two alternating block
steps (AAGD on ``(X, Y)``), or a plain gradient step on a factor
(Burer-Monteiro, ``r = 0``). Iterates may be tensors, tuples of tensors or
any object the problem understands. :class:`CompositeProblem` adapts a
smooth function and a proximal operator on tensors or tuples of tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch

from .._core import Registry
from ..linalg.points import axpy, norm
from .momentum import MOMENTUM, NesterovRestart, NoMomentum
from .monitor import IterationState, solver_monitor
from .result import SolverResult

__all__ = [
    "CONTINUATIONS",
    "CompositeProblem",
    "FixedWeight",
    "GeometricContinuation",
    "ProximalProblem",
    "accelerated_proximal_gradient",
]


# -- continuation schedules -------------------------------------------------------
class GeometricContinuation:
    """``w_t = (w_hat - w) nu^(t-1) + w`` until the iterates settle.

    The weight decays geometrically from ``start`` (w_hat) to ``target`` (w);
    :meth:`end` stops the decay early (the loop calls it when the stopping
    rule holds before ``w_t`` has reached ``w``: continuing would only
    re-solve at a wrong weight).

    Parameters
    ----------
    target : float
        The weight w of the problem to solve.
    start : float, optional
        w_hat; None or a value <= ``target`` means no continuation.
    decay : float
        nu in (0, 1).

    Attributes
    ----------
    active : bool
        Whether the weight is still decaying.
    at_target : int
        Iterations run at the target weight so far.
    """

    name = "geometric"

    def __init__(self, target: float, start: float | None = None, decay: float = 0.85):
        self.target = float(target)
        self.start = self.target if start is None else float(start)
        self.decay = float(decay)
        self.active = self.start > self.target
        self.at_target = 0

    def advance(self, t: int) -> float:
        """The weight of iteration ``t`` (1-based)."""
        if self.active:
            return (self.start - self.target) * self.decay ** (t - 1) + self.target
        self.at_target += 1
        return self.target

    def end(self) -> None:
        """Stop the continuation: every later iteration uses the target weight."""
        self.active = False


class FixedWeight(GeometricContinuation):
    """No continuation: ``w_t = w`` from the first iteration."""

    name = "none"

    def __init__(self, target: float, start: float | None = None, decay: float = 0.85):
        super().__init__(target, None, decay)


#: Continuation schedules by name: ``CONTINUATIONS.get(name)(target, start, decay)``.
CONTINUATIONS = Registry(
    "continuation schedule",
    {"geometric": GeometricContinuation, "none": FixedWeight},
    owner="embedopt.optim",
)


# -- the problem protocol ---------------------------------------------------------
@runtime_checkable
class ProximalProblem(Protocol):
    """What :func:`accelerated_proximal_gradient` needs from a problem.

    ``step`` raises :class:`torch.linalg.LinAlgError` on a numerical
    breakdown (reported as a :class:`~embedopt.NumericalInstabilityError`).
    Optional members, looked up with defaults: ``truncated`` (bool: the last
    step was deliberately inexact, e.g. a capped SVT basis; the loop never
    stops while it is True), ``refine()`` (called when the iterates settle
    while truncated), ``monitor_values(solution) -> dict`` (extra history
    values computed off the clock, e.g. a validation error) and
    ``step_name`` (named in errors).
    """

    def smooth(self, x: Any) -> float:
        """The smooth part f(x)."""

    def penalty(self, x: Any, weight: float) -> float:
        """The weighted regularizer ``weight * r(x)``."""

    def step(self, x: Any, x_prev: Any, theta: float, weight: float) -> Any:
        """The (proximal) step from ``x + theta (x - x_prev)`` at ``weight``."""

    def describe(self, x: Any, weight: float) -> dict:
        """History values of a new iterate (rank, step size...)."""

    def solution(self, x: Any) -> Any:
        """The iterate in the form returned to callers and callbacks."""


def accelerated_proximal_gradient(
    problem: ProximalProblem,
    x0: Any,
    *,
    weight: float = 0.0,
    momentum: str | NesterovRestart | NoMomentum = "nesterov_restart",
    continuation: GeometricContinuation | None = None,
    max_iter: int = 500,
    tol: float = 1e-4,
    name: str = "APG",
    owner: str | None = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    nonfinite_hint: str = "the step size may be too large or the data badly scaled",
) -> SolverResult:
    """Accelerated proximal gradient with restart and continuation.

    Iteration t: ``w_t`` from the continuation; ``theta_t`` from the
    momentum; ``x_{t+1} = problem.step(x_t, x_{t-1}, theta_t, w_t)``; the
    momentum restarts when ``F_{w_t}(x_{t+1}) > F_{w_t}(x_t)``. The stopping
    rule (relative change of ``F_w`` at the target weight) is tested once two
    iterations have run at the target weight and the step was not truncated;
    when it holds while the continuation is still decaying, the continuation
    ends instead.

    Parameters
    ----------
    problem : ProximalProblem
    x0 : object
        The starting iterate ``x_0 = x_{-1}``.
    weight : float
        Target weight w of the regularizer (ignored when ``continuation`` is
        given: its target is used).
    momentum : str or momentum object
        A name of :data:`~embedopt.optim.MOMENTUM` (``"nesterov_restart"``,
        ``"none"``) or an object with ``theta``, ``update(increased)`` and
        ``n_restarts``.
    continuation : GeometricContinuation, optional
        Weight schedule; default none (``w_t = w``).
    max_iter, tol : int, float
        Iteration budget and relative objective change that stops.
    name, owner : str
        Solver name (progress, warnings) and who owns ``max_iter``/``tol``.
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool | None``, ``state.x`` is
        ``problem.solution(x)``.
    nonfinite_hint : str
        Likely cause named when the objective becomes NaN or infinite.

    Returns
    -------
    SolverResult
        ``x = problem.solution(x_T)``; history columns ``objective``
        (``F_w``), the problem's :meth:`~ProximalProblem.describe` values,
        ``theta``, ``restart`` and its monitor values; ``info`` holds
        ``n_restarts`` and ``smooth`` (f at the solution).
    """
    mom = MOMENTUM.get(momentum)() if isinstance(momentum, str) else momentum
    schedule = continuation if continuation is not None else FixedWeight(weight)
    step_name = getattr(problem, "step_name", "proximal step")
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, nonfinite_hint
    )
    prev = cur = x0
    f_cur = problem.smooth(cur)
    for t in monitor:
        w_t = schedule.advance(t)
        theta = mom.theta
        try:
            new = problem.step(cur, prev, theta, w_t)
        except torch.linalg.LinAlgError as exc:
            raise monitor.instability(f"the {step_name} failed ({exc})") from exc
        f_new = problem.smooth(new)
        # Restart test on F at the current weight w_t.
        increased = f_new + problem.penalty(new, w_t) > f_cur + problem.penalty(
            cur, w_t
        )
        mom.update(increased)
        prev, cur, f_cur = cur, new, f_new
        record = {
            "objective": f_new + problem.penalty(new, schedule.target),
            **problem.describe(new, w_t),
            "theta": theta,
            "restart": float(increased),
        }
        solution = problem.solution(new)
        extra = getattr(problem, "monitor_values", None)
        if extra is not None:
            with monitor.paused():
                record.update(extra(solution))
        truncated = bool(getattr(problem, "truncated", False))
        allow_stop = schedule.at_target >= 2 and not truncated
        if monitor.record(solution, allow_stop=allow_stop, **record):
            break
        if truncated:
            if monitor.tolerance_met():
                problem.refine()
            continue
        if schedule.active and monitor.tolerance_met():
            schedule.end()
    return monitor.result(
        problem.solution(cur), n_restarts=mom.n_restarts, smooth=f_cur
    )


# -- a generic composite problem over tensors or tuples of tensors ----------------
class CompositeProblem:
    """``f(x) + w r(x)`` over a tensor or a tuple of tensors, fixed step ``mu``.

    The step is ``x+ = prox_{mu w r}(y - mu grad f(y))`` at the extrapolated
    point ``y = x + theta (x - x_prev)``, blockwise for tuples. With no
    ``prox`` (``r = 0``) it is the accelerated gradient method, e.g. the
    Burer-Monteiro baseline on a factor ``V`` of ``f(V V^T)``.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``; the gradient has the structure of x.
    step_size : float
        mu, at most ``1 / L`` for the usual guarantees.
    prox : callable, optional
        ``prox(v, t) -> argmin_z t r(z) + ||z - v||^2 / 2`` on the same
        structure (identity when omitted).
    regularizer : callable, optional
        ``regularizer(x) -> r(x)`` (0 when omitted).
    """

    step_name = "proximal step"

    def __init__(
        self,
        fun: Callable[[Any], tuple[Any, Any]],
        step_size: float,
        *,
        prox: Callable[[Any, float], Any] | None = None,
        regularizer: Callable[[Any], float] | None = None,
    ):
        self.fun = fun
        self.step_size = float(step_size)
        self.prox = prox
        self.regularizer = regularizer
        self._last_grad_norm = float("nan")

    def smooth(self, x: Any) -> float:
        """f(x)."""
        return float(self.fun(x)[0])

    def penalty(self, x: Any, weight: float) -> float:
        """``weight * r(x)``."""
        if self.regularizer is None or weight == 0:
            return 0.0
        return weight * float(self.regularizer(x))

    def step(self, x: Any, x_prev: Any, theta: float, weight: float) -> Any:
        """One proximal-gradient step from the extrapolated point."""
        y = axpy(theta, axpy(-1.0, x_prev, x), x)  # x + theta (x - x_prev)
        _, g = self.fun(y)
        self._last_grad_norm = norm(g)
        mu = self.step_size
        v = axpy(-mu, g, y)
        return v if self.prox is None else self.prox(v, mu * weight)

    def describe(self, x: Any, weight: float) -> dict:
        """Weight and gradient norm at the extrapolated point."""
        return {"weight": weight, "grad_norm": self._last_grad_norm}

    def solution(self, x: Any) -> Any:
        """The iterate itself."""
        return x
