"""Plain first-order baselines for finite sums: SGD and batch gradient descent.

Both use the step-size rules of :mod:`embedopt.optim.step_sizes` (unit: a
full-gradient step on the mean objective) and report the same budget column
as :func:`~embedopt.optim.svrg` (``grad_evals``, ``passes``), so that all
methods can be compared per gradient call (Ma et al., Sec. 5.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import torch

from .._core import (
    PROGRESS_CONSTRAINTS,
    Interval,
    Options,
    RandomStateLike,
    resolve_random_state,
    validated_params,
)
from .finite_sum import (
    FiniteSum,
    auto_learning_rate,
    clip_batch_size,
    record_epoch,
    start_finite_sum_run,
    step_kernel,
)
from .line_search import armijo_backtracking
from .monitor import IterationState, solver_monitor
from .result import SolverResult
from .step_sizes import STEP_SIZES

__all__ = ["GD_CONSTRAINTS", "SGD_CONSTRAINTS", "gradient_descent", "sgd"]

_CHUNK = 1 << 20
_MAX_HALVINGS = 40  # trials of a fixed step that increases the objective

_COMMON = {
    "learning_rate": [Interval(float, 0, None, closed="neither"), Options(["auto"])],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    **PROGRESS_CONSTRAINTS,
    "evaluate": ["callable", None],
}

#: Constraints of :func:`sgd`'s parameters (callers may check them early).
SGD_CONSTRAINTS = {
    **_COMMON,
    "decay": [Interval(float, 0, None)],
    "batch_size": [Interval(int, 1, None)],
    "samples_per_epoch": [Interval(int, 1, None), None],
}
#: Constraints of :func:`gradient_descent`'s parameters.
GD_CONSTRAINTS = {
    **_COMMON,
    "step_size": [Options(STEP_SIZES)],
    "epsilon": [Interval(float, 0, None)],
    "steps_per_iteration": [Interval(int, 1, None)],
    "project": ["callable", None],
    "safeguard": ["boolean"],
}


#: What a non-finite objective of SGD or GD most likely means.
_NONFINITE_HINT = "the step size is too large (lower learning_rate)"


@validated_params(SGD_CONSTRAINTS)
def sgd(
    problem: FiniteSum,
    x0: torch.Tensor,
    *,
    learning_rate: float | Literal["auto"] = "auto",
    decay: float = 1.0,
    batch_size: int = 1,
    samples_per_epoch: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    evaluate: Callable[[torch.Tensor], Mapping[str, Any]] | None = None,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "SGD",
    owner: str | None = None,
) -> SolverResult:
    """Mini-batch SGD with a decaying step ``alpha_k = alpha_0 / (1 + decay k)``.

    Each inner step draws b samples with replacement and moves by
    ``alpha_k b / n`` along their mean gradient; epoch k has
    ``samples_per_epoch / b`` steps. Only the touched rows change (O(b p)).
    The objective in the history is evaluated off the clock and off the
    budget (SGD itself never needs it).

    Parameters
    ----------
    problem : FiniteSum
    x0 : torch.Tensor
    learning_rate : float or "auto"
        alpha_0; ``"auto"`` probes the curvature at x0 with a secant as long
        as x0, divided by ``FIXED_STEP_SAFETY`` (two gradient calls counted).
    decay : float
        >= 0; 0 keeps the step constant.
    batch_size : int
        At most ``samples_per_epoch`` (a larger one is clipped with a
        warning).
    samples_per_epoch : int, optional
        Gradient calls per epoch (default n); pass ``n + 2 m`` to match an
        SVRG epoch.
    max_iter, tol : int, float
        Epochs, and the relative objective change that stops the run.
    evaluate : callable, optional
        ``evaluate(x) -> dict`` of extra history values, off the clock.
    random_state : None, int or numpy Generator
    verbose : int
    callback : callable, optional
    name : str
    owner : str, optional

    Returns
    -------
    SolverResult
        History columns as :func:`~embedopt.optim.svrg`.
    """
    rs = resolve_random_state(random_state, name)
    generator = rs.torch(x0.device)
    n = int(problem.n_samples)
    per_epoch = int(samples_per_epoch or n)
    batch_size = clip_batch_size(batch_size, per_epoch, name)
    steps = max(1, per_epoch // batch_size)
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, _NONFINITE_HINT
    )
    monitor.start()  # the probe counts as solver time
    x = x0.detach().clone()
    evals = 0
    if learning_rate == "auto":
        _, g = problem.value_and_grad(x)
        learning_rate = auto_learning_rate(problem, x, g, adaptive=False)
        evals += 2 * n
    rule = STEP_SIZES["inverse_decay"](learning_rate=learning_rate, decay=decay)
    per_chunk = max(1, _CHUNK // batch_size)
    kernel = step_kernel(problem, x)
    for k in monitor:
        alpha = rule.step(k - 1)
        w = torch.tensor([-alpha / n], dtype=x.dtype, device=x.device)
        for start in range(0, steps, per_chunk):
            kk = min(per_chunk, steps - start)
            batches = torch.randint(
                0, n, (kk, batch_size), generator=generator, device=x.device
            )
            if kernel is not None:  # the same steps, compiled
                kernel(x, batches, w)
                continue
            rows = problem.rows(batches)
            for j in range(kk):
                R = rows[j]
                Z = x.index_select(0, R).unsqueeze(1)
                x.index_add_(0, R, problem.row_gradients(Z, batches[j], w))
        evals += steps * batch_size
        with monitor.paused():  # SGD itself never needs f or the full gradient
            f, g = problem.value_and_grad(x)
        if record_epoch(monitor, x, f, g, alpha, evals, n, evaluate):
            break
    return monitor.result(x, batch_size=batch_size)


@validated_params(GD_CONSTRAINTS)
def gradient_descent(
    problem: FiniteSum,
    x0: torch.Tensor,
    *,
    learning_rate: float | Literal["auto"] = "auto",
    step_size: str = "constant",
    epsilon: float = 0.0,
    steps_per_iteration: int = 1,
    project: Callable[[torch.Tensor], torch.Tensor] | None = None,
    safeguard: bool = True,
    max_iter: int = 100,
    tol: float = 1e-4,
    evaluate: Callable[[torch.Tensor], Mapping[str, Any]] | None = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "GD",
    owner: str | None = None,
) -> SolverResult:
    """Batch (projected) gradient descent ``x <- P(x - alpha grad f(x))``.

    Parameters
    ----------
    problem : FiniteSum
    x0 : torch.Tensor
    learning_rate : float or "auto"
        alpha (the first one for adaptive rules); ``"auto"`` probes the
        curvature at x0 (one gradient call, counted): locally for adaptive
        rules, by a secant as long as x0 for a fixed step.
    step_size : {"constant", "sbb", "bb", "inverse_decay"}
        ``"constant"`` is the paper's batch baseline; ``"sbb"`` gives
        stabilized-BB gradient descent.
    epsilon : float
        For ``"sbb"``.
    steps_per_iteration : int
        Gradient steps per recorded iteration (3 matches an SVRG epoch with
        m = n in gradient calls).
    project : callable, optional
        ``project(x) -> x``, the projection P onto the feasible set (identity
        when omitted); ``x0`` should be feasible.
    safeguard : bool
        With a fixed step, halve it (for the rest of the run) whenever a step
        would make the objective non-finite or increase it (Armijo
        backtracking with ``c1 = 0``, see
        :func:`~embedopt.optim.armijo_backtracking`); each rejected trial
        costs a gradient call, counted. A well-chosen step never triggers
        it; without it a too-large step ends the run with
        :class:`~embedopt.NumericalInstabilityError`.
    max_iter, tol, evaluate, verbose, callback, name, owner
        As in :func:`sgd`.

    Returns
    -------
    SolverResult
        History columns as :func:`~embedopt.optim.svrg`.
    """
    n = int(problem.n_samples)
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, _NONFINITE_HINT
    )
    # A fixed step is probed without the safety factor (the safeguard backtracks).
    x, f, g, evals, rule = start_finite_sum_run(
        problem, x0, monitor, step_size, learning_rate, epsilon, safety=1.0
    )
    # The safeguard is Armijo backtracking with c1 = 0: accept a finite value
    # that does not increase beyond rounding (100 eps relative).
    trials = _MAX_HALVINGS if safeguard and step_size == "constant" else 1
    slack = 100 * torch.finfo(x.dtype).eps
    prev_x = prev_g = None
    step = 0
    for _ in monitor:
        for _ in range(steps_per_iteration):
            dx = None if prev_x is None else x - prev_x
            dy = None if prev_g is None else g - prev_g
            alpha = rule.step(step, dx, dy)
            ls = armijo_backtracking(
                problem.value_and_grad,
                x,
                f,
                g,
                -g,
                step=alpha,
                c1=0.0,
                max_trials=trials,
                slack=slack,
                project=project,
            )
            evals += n * ls.n_evals
            if trials > 1 and (ls.step != alpha or not ls.success):
                # Halve for the rest of the run; after max_trials failures the
                # last trial is kept and the step still halves once more.
                alpha = rule.learning_rate = ls.step * (1 if ls.success else 0.5)
            prev_x, prev_g = x, g
            x, f, g = ls.x, ls.value, ls.grad
            step += 1
        if record_epoch(monitor, x, f, g, alpha, evals, n, evaluate):
            break
    return monitor.result(x)
