"""SVRG with stabilized Barzilai-Borwein steps (Ma et al., Algorithms 1 and 2).

One epoch (outer iteration ``s``) of :func:`svrg`::

    g     = grad f(x~)                                  (full gradient, n calls)
    alpha = rule.step(s, x~ - x~_prev, g - g_prev)      (e.g. SBB, eq. (17) times m)
    x_0   = x~
    for t = 0 .. T-1                                    (T = ceil(m / b))
        I_t = b samples drawn uniformly with replacement
        u_t = (1/b) sum_{i in I_t} (grad f_i(x_t) - grad f_i(x~)) + g
        x_{t+1} = x_t - h u_t                           (h = b alpha / m = b eta_s)
    x~ = x_T

Budget: ``n + 2 b T`` gradient calls per epoch (``n + 2m`` as in the paper).

Lazy inner steps
----------------
``grad f_i`` touches only the rows of a few objects, but ``h g`` is dense, so
applying ``u_t`` literally costs O(n p) per step. Because ``g`` and ``h`` are
constant within an epoch, ``x_t = y_t - t h g`` where ``y_0 = x~`` and ``y``
receives only the sparse part, ``y_{t+1} = y_t - h (1/b) sum_i (grad f_i(x_t)
- grad f_i(x~))``. An inner step therefore reads the rows R of its batch
caught up, ``x_t[R] = y_t[R] - t h g[R]``, and writes to those rows of y:
O(b p) work. At the end of the epoch every row is caught up at once,
``x~ = y_T - T h g``. This is the same sequence of iterates as the dense
update (exactly, in exact arithmetic; ``lazy=False`` runs the dense update,
and the tests compare both).

Compiled inner steps
--------------------
A problem that offers ``step_kernel`` (see
:func:`~embedopt.optim.finite_sum.step_kernel`; the ordinal problems do, on
a CPU, with numba) gets the lazy inner steps of each chunk of drawn
mini-batches run in compiled code. The mini-batches are still drawn here,
with the run's generator, so a seeded run goes through the same samples and
the same iterates (to rounding) as the torch loop, which stays for the
other problems, for CUDA and for ``lazy=False``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import torch

from .._core import (
    PROGRESS_CONSTRAINTS,
    InstanceOf,
    Interval,
    Options,
    RandomStateLike,
    resolve_random_state,
    validated_params,
)
from .finite_sum import (
    FiniteSum,
    clip_batch_size,
    record_epoch,
    start_finite_sum_run,
    step_kernel,
)
from .monitor import IterationState, solver_monitor
from .result import SolverResult
from .step_sizes import STEP_SIZES, StepSizeRule

__all__ = ["SVRG_CONSTRAINTS", "svrg"]

_CHUNK = 1 << 20  # sampled indices drawn at once (bounds the memory)

#: Constraints of :func:`svrg`'s parameters (callers may check them early).
SVRG_CONSTRAINTS = {
    "step_size": [
        Options(STEP_SIZES),
        InstanceOf(tuple(STEP_SIZES.values()), "a step-size rule object"),
    ],
    "learning_rate": [Interval(float, 0, None, closed="neither"), Options(["auto"])],
    "epsilon": [Interval(float, 0, None)],
    "batch_size": [Interval(int, 1, None)],
    "update_frequency": [Interval(int, 1, None), None],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "output": [Options(["last", "random"])],
    "module_epochs": [Interval(int, 1, None), None],
    "lazy": ["boolean"],
    **PROGRESS_CONSTRAINTS,
    "evaluate": ["callable", None],
}


class _Reservoir:
    """Uniform choice of one inner iterate among all seen so far (Algorithm 1's
    ``x_out``), keeping one copy: the c-th iterate replaces the kept one with
    probability 1/c, so O(log c) copies are made in expectation."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.count = 0
        self.x = None

    def plan(self, steps: int) -> np.ndarray:
        """Which of the next ``steps`` iterates to keep (decided in advance)."""
        c = self.count + np.arange(1, steps + 1)
        self.count += steps
        return self.rng.random(steps) * c < 1.0

    def reset(self) -> None:
        self.count = 0
        self.x = None


def _inner_loop(
    problem: FiniteSum,
    snap: torch.Tensor,
    g: torch.Tensor,
    h: float,
    batch_size: int,
    steps: int,
    generator: torch.Generator,
    lazy: bool,
    keep: np.ndarray | None,
    reservoir: _Reservoir | None,
) -> torch.Tensor:
    n, b = problem.n_samples, batch_size
    sG = g * h
    # Weights of the two points in row_gradients: -(h/b) grad at x_t, +(h/b)
    # at the snapshot, i.e. the sparse part of -h u_t.
    w = torch.tensor([-h / b, h / b], dtype=snap.dtype, device=snap.device)
    x = snap.clone()
    kernel = step_kernel(problem, x) if lazy else None
    per_chunk = max(1, _CHUNK // b)
    t = 0
    for start in range(0, steps, per_chunk):
        k = min(per_chunk, steps - start)
        batches = torch.randint(0, n, (k, b), generator=generator, device=snap.device)
        if kernel is not None:  # the same steps on the same batches, compiled
            flags = None if keep is None else keep[start : start + k]
            kept = kernel(x, batches, w, snapshot=snap, drift=sG, t0=t, keep=flags)
            if kept is not None:
                reservoir.x = kept
            t += k
            continue
        rows = problem.rows(batches)
        for j in range(k):
            R = rows[j]
            cur = x.index_select(0, R)
            if lazy and t:
                cur.sub_(sG.index_select(0, R), alpha=t)  # catch the rows up
            Z = torch.stack((cur, snap.index_select(0, R)), 1)
            x.index_add_(0, R, problem.row_gradients(Z, batches[j], w))
            if not lazy:
                x.sub_(sG)  # the dense term of u_t, O(n p)
            t += 1
            if keep is not None and keep[t - 1]:
                reservoir.x = x - t * sG if lazy else x.clone()
    if lazy:
        x.sub_(sG, alpha=steps)  # catch every row up
    return x


#: What a non-finite objective of SVRG most likely means.
_NONFINITE_HINT = (
    "the step size is too large (use epsilon > 0 with SBB, or a smaller learning_rate)"
)


@validated_params(SVRG_CONSTRAINTS)
def svrg(
    problem: FiniteSum,
    x0: torch.Tensor,
    *,
    step_size: str | StepSizeRule = "sbb",
    learning_rate: float | Literal["auto"] = "auto",
    epsilon: float = 0.0,
    batch_size: int = 1,
    update_frequency: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    output: str = "last",
    module_epochs: int | None = None,
    lazy: bool = True,
    evaluate: Callable[[torch.Tensor], Mapping[str, Any]] | None = None,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "SVRG-SBB",
    owner: str | None = None,
) -> SolverResult:
    """Mini-batch SVRG with a pluggable step-size rule (Algorithms 1 and 2).

    Parameters
    ----------
    problem : FiniteSum
        The objective ``(1/n) sum_i f_i``.
    x0 : torch.Tensor
        Starting point ``x~^0``; its device and dtype are used throughout.
    step_size : {"sbb", "bb", "constant", "inverse_decay"} or rule object
        ``"sbb"`` is SVRG-SBB (``epsilon = 0``: SVRG-SBB_0), ``"constant"``
        plain SVRG (Johnson & Zhang), ``"bb"`` SVRG-BB (Tan et al.). See
        :mod:`embedopt.optim.step_sizes` for the unit of the steps.
    learning_rate : float or "auto"
        alpha_0: the step of the first epoch (the only one for
        ``"constant"``), as a full-gradient step on the mean objective.
        ``"auto"`` measures it with :func:`~embedopt.optim.probe_step` (one
        more full gradient, counted in the budget): the local curvature for
        the adaptive rules, a secant over a trial step as long as x0 divided
        by :data:`~embedopt.optim.step_sizes.FIXED_STEP_SAFETY` for the
        fixed ones.
    epsilon : float
        SBB stabilization epsilon >= 0.
    batch_size : int
        b, samples per inner step (drawn with replacement); at most m (a
        larger b is clipped to m with a warning, see
        :func:`~embedopt.optim.finite_sum.clip_batch_size`).
    update_frequency : int, optional
        m, samples drawn per epoch (``ceil(m / b)`` inner steps); default n.
    max_iter : int
        Number of epochs S (K S with ``module_epochs``).
    tol : float
        Stop when the relative change of the objective at the snapshots falls
        below ``tol`` (0 never stops).
    output : {"last", "random"}
        Return the last snapshot, or an inner iterate drawn uniformly from all
        of them (Algorithm 1's ``x_out``, what Theorems 1-2 are about).
    module_epochs : int, optional
        Algorithm 2 (PL variant): every ``module_epochs`` epochs a module
        ends, and the next starts from the module's uniformly drawn inner
        iterate instead of the last one. The SBB step then continues from the
        snapshots (``learning_rate`` is used in the very first epoch only).
    lazy : bool
        O(b p) inner steps (see the module docstring); False applies the dense
        update literally (O(n p) per step; for testing).
    evaluate : callable, optional
        ``evaluate(x) -> dict`` of extra history values (e.g. a held-out
        error), called after each epoch off the clock.
    random_state : None, int or numpy Generator
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool``, once per epoch; True stops.
    name : str
        Solver name in history, progress bars and warnings.
    owner : str, optional
        Who owns ``max_iter`` / ``tol`` (named in the ConvergenceWarning).

    Returns
    -------
    SolverResult
        ``x`` the solution; ``history`` with, per epoch: iteration, time,
        objective (at the snapshot), step_size (alpha_s), grad_evals
        (cumulative gradient calls), passes (grad_evals / n), grad_norm and the
        ``evaluate`` values.
    """
    rs = resolve_random_state(random_state, name)
    generator = rs.torch(x0.device)
    n = int(problem.n_samples)
    m = int(update_frequency or n)
    batch_size = clip_batch_size(batch_size, m, name)
    steps = math.ceil(m / batch_size)
    monitor = solver_monitor(
        name, max_iter, tol, verbose, callback, owner, _NONFINITE_HINT
    )
    x, f, g, evals, rule = start_finite_sum_run(
        problem, x0, monitor, step_size, learning_rate, epsilon
    )
    want_random = output == "random" or module_epochs is not None
    reservoir = _Reservoir(rs.numpy) if want_random else None
    prev_x = prev_g = None
    for s in monitor:
        dx = None if prev_x is None else x - prev_x
        dy = None if prev_g is None else g - prev_g
        alpha = rule.step(s - 1, dx, dy)
        h = alpha * batch_size / m
        keep = reservoir.plan(steps) if reservoir is not None else None
        x_last = _inner_loop(
            problem, x, g, h, batch_size, steps, generator, lazy, keep, reservoir
        )
        evals += 2 * batch_size * steps
        prev_x, prev_g = x, g
        x = x_last
        if module_epochs is not None and s % module_epochs == 0:
            x = reservoir.x  # Algorithm 2: the module's output starts the next
            reservoir.reset()
        f, g = problem.value_and_grad(x)
        evals += n
        if record_epoch(monitor, x, f, g, alpha, evals, n, evaluate):
            break
    if output == "random" and reservoir.x is not None:
        x = reservoir.x
    return monitor.result(x, batch_size=batch_size, update_frequency=m, epsilon=epsilon)
