"""The finite-sum problem protocol shared by the stochastic solvers.

``f(x) = (1/n) sum_i f_i(x)`` (Ma et al., eq. (9)) where ``x`` is a matrix
whose rows are parameters (e.g. an embedding, one row per object) and each
``f_i`` touches only a few rows. Solvers never look inside a problem; they
call the four members below, so one SVRG / SGD loop serves every family.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import torch

from .._core import DataWarning
from .monitor import IterationMonitor
from .step_sizes import (
    FIXED_STEP_SAFETY,
    STEP_SIZES,
    StabilizedBB,
    StepSizeRule,
    probe_step,
)

__all__ = [
    "FiniteSum",
    "auto_learning_rate",
    "clip_batch_size",
    "record_epoch",
    "start_finite_sum_run",
    "step_kernel",
]


@runtime_checkable
class FiniteSum(Protocol):
    """What :func:`~embedopt.optim.svrg` and :func:`~embedopt.optim.sgd` need.

    Attributes
    ----------
    n_samples : int
        n, the number of terms ``f_i``.

    Notes
    -----
    ``rows(batches)`` receives a (k, b) tensor of sample indices (k
    mini-batches of b samples) and returns a (k, b r) tensor: for each
    mini-batch, the rows its samples touch, r per sample, repeats allowed.
    ``row_gradients(Z, batch, weights)`` receives ``Z`` of shape
    (b r, S, p), the rows of ``rows`` (for one mini-batch) at S points, and
    returns ``sum_s weights[s] * grad_rows sum_{i in batch} f_i(Z[:, s])`` of
    shape (b r, p), to be scattered-added to those rows. Evaluating several
    points at once (S = 2 for SVRG's ``x_t`` and snapshot) halves the kernel
    launches of an inner step.

    A problem may also offer ``step_kernel(x) -> callable or None``: compiled
    inner steps for iterates like ``x`` (None where it has none, e.g. on a
    GPU). The solvers then draw the mini-batches as before and hand whole
    chunks of them to ``steps(x, batches, weights, snapshot=None,
    drift=None, t0=0, keep=None)``, which runs the steps of the torch loop
    (``row_gradients`` at ``x - t drift`` and at the snapshot, added to x)
    in place; see :func:`step_kernel`.
    """

    n_samples: int

    def value_and_grad(self, x: torch.Tensor) -> tuple[float, torch.Tensor]:
        """Mean objective ``f(x)`` and its gradient (same shape as x)."""
        ...

    def rows(self, batches: torch.Tensor) -> torch.Tensor:
        """Rows touched by each mini-batch, shape (k, b r)."""
        ...

    def row_gradients(
        self, Z: torch.Tensor, batch: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """Weighted sum over points of the batch's gradient rows, shape (b r, p)."""
        ...


def step_kernel(problem: FiniteSum, x: torch.Tensor) -> Callable | None:
    """The problem's compiled inner steps for iterates like ``x``, if it has any.

    Parameters
    ----------
    problem : FiniteSum
    x : torch.Tensor
        The iterate (its device and dtype decide).

    Returns
    -------
    callable or None
        ``steps(x, batches, weights, snapshot=None, drift=None, t0=0,
        keep=None)``: runs ``len(batches)`` inner steps on x in place. Step
        ``t = t0 + j`` evaluates the gradient rows of mini-batch
        ``batches[j]`` at ``x - t drift`` (x without a drift) and at the
        snapshot, adds ``weights[0]`` times the first plus ``weights[1]``
        times the second to those rows of x, and returns a copy of the
        caught-up iterate after the last step flagged in ``keep`` (None if
        none). None: the solver keeps its torch loop.
    """
    make = getattr(problem, "step_kernel", None)
    return None if make is None else make(x)


def auto_learning_rate(
    problem: FiniteSum,
    x: torch.Tensor,
    g: torch.Tensor,
    epsilon: float = 0.0,
    *,
    adaptive: bool,
    safety: float = FIXED_STEP_SAFETY,
) -> float:
    """``learning_rate="auto"`` of a finite-sum solver, from one gradient call.

    The local curvature along ``-g`` for an adaptive rule (which corrects it
    after the first epoch); for a fixed step, a secant over a trial step as
    long as x, divided by ``safety`` (see
    ``FIXED_STEP_SAFETY`` of :mod:`embedopt.optim.step_sizes`).

    Parameters
    ----------
    problem : FiniteSum
    x, g : torch.Tensor
        The starting point and the full gradient there.
    epsilon : float
        SBB stabilization (see :func:`~embedopt.optim.probe_step`).
    adaptive : bool
        Whether the step-size rule adapts (SBB, BB).
    safety : float
        Divides a fixed step (1 where a safeguard backtracks instead).

    Returns
    -------
    float
    """
    grad = lambda z: problem.value_and_grad(z)[1]  # noqa: E731
    if adaptive:
        return probe_step(grad, x, g, epsilon)
    return probe_step(grad, x, g, epsilon, relative=1.0) / safety


def start_finite_sum_run(
    problem: FiniteSum,
    x0: torch.Tensor,
    monitor: IterationMonitor,
    step_size: str | StepSizeRule,
    learning_rate: float | str,
    epsilon: float,
    *,
    safety: float = FIXED_STEP_SAFETY,
) -> tuple[torch.Tensor, float, torch.Tensor, int, StepSizeRule]:
    """Start a full-gradient solver: its clock, the first gradient, its step rule.

    What :func:`~embedopt.optim.svrg` and
    :func:`~embedopt.optim.gradient_descent` do before their first epoch; the
    first full gradient and the probe of ``learning_rate="auto"`` (see
    :func:`auto_learning_rate`, with ``safety``) count as solver time.

    Parameters
    ----------
    problem : FiniteSum
    x0 : torch.Tensor
    monitor : IterationMonitor
        Not started.
    step_size : str or step-size rule
        A name of :data:`~embedopt.optim.STEP_SIZES` or a rule object (used
        as it is).
    learning_rate : float or "auto"
    epsilon : float
    safety : float

    Returns
    -------
    x : torch.Tensor
        A copy of ``x0``.
    f : float
    g : torch.Tensor
        Value and full gradient at x.
    evals : int
        Gradient calls so far (n, or 2 n with the probe).
    rule : step-size rule
    """
    n = int(problem.n_samples)
    monitor.start()
    x = x0.detach().clone()
    f, g = problem.value_and_grad(x)
    evals = n
    if learning_rate == "auto":
        adaptive = isinstance(step_size, StabilizedBB) or step_size in ("sbb", "bb")
        learning_rate = auto_learning_rate(
            problem, x, g, epsilon, adaptive=adaptive, safety=safety
        )
        evals += n
    if isinstance(step_size, str):
        rule = STEP_SIZES[step_size](learning_rate=learning_rate, epsilon=epsilon)
        return x, f, g, evals, rule
    return x, f, g, evals, step_size


def record_epoch(
    monitor: IterationMonitor,
    x: torch.Tensor,
    f: float,
    g: torch.Tensor,
    alpha: float,
    evals: int,
    n: int,
    evaluate: Callable[[torch.Tensor], Mapping[str, Any]] | None = None,
) -> bool:
    """Record one epoch of a finite-sum solver in the shared history columns.

    Columns: objective, step_size, grad_evals (cumulative gradient calls),
    passes (grad_evals / n), grad_norm, and whatever ``evaluate(x)`` returns
    (computed off the clock). Returns True when the solver must stop.
    """
    extra = {}
    if evaluate is not None:
        with monitor.paused():
            extra = dict(evaluate(x))
    return monitor.record(
        x,
        objective=f,
        step_size=alpha,
        grad_evals=evals,
        passes=evals / n,
        grad_norm=float(g.double().norm()),
        **extra,
    )


def clip_batch_size(batch_size: int, per_epoch: int, name: str) -> int:
    """The mini-batch size, at most the samples drawn per epoch.

    The stochastic solvers move by ``alpha b / m`` per inner step (b the batch
    size, m the samples per epoch) so that an epoch moves by about one step
    ``alpha``. With ``b > m`` the only inner step of the epoch would be
    ``b / m`` times that (the single-triplet and ``batch_size=10**6`` runs of
    issue 14 diverged this way), so b is clipped to m with a warning.

    Parameters
    ----------
    batch_size : int
    per_epoch : int
        Samples drawn per epoch (m; n by default).
    name : str
        The solver, for the warning.

    Returns
    -------
    int
        A Python int (a NumPy one, e.g. ``np.uint8(2)``, would overflow in the
        step arithmetic of the solvers).

    Warns
    -----
    DataWarning
        When ``batch_size`` is clipped (the data are fewer than it assumes).
    """
    batch_size, per_epoch = int(batch_size), int(per_epoch)
    if batch_size <= per_epoch:
        return batch_size
    warnings.warn(
        f"{name}: batch_size={batch_size} exceeds the {per_epoch} samples drawn "
        f"per epoch (update_frequency, default: all of them); using "
        f"batch_size={per_epoch}, one full-batch step per epoch.",
        DataWarning,
        stacklevel=3,
    )
    return per_epoch
