"""Minibatch training for a fixed number of steps, through the shared monitor.

:func:`minibatch_train` is the loop of every stochastic first-order training
of a torch model in the library (the two-tower retrieval model of
:mod:`embedopt.quantization`, the stochastic baselines of similarity
learning): draw a batch, evaluate the loss, back-propagate, step one or more
torch optimizers. The step budget is the plan, so the
:class:`~.monitor.IterationMonitor` runs in its fixed-budget mode: one
history row per ``log_every`` steps (window means of every loss term), no
tolerance stop and no :class:`~embedopt.ConvergenceWarning`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from .._core import Interval, validate_params
from .monitor import IterationMonitor, IterationState
from .result import SolverResult

__all__ = ["minibatch_train", "random_batches"]


def random_batches(
    n: int,
    batch_size: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> Callable[[], torch.Tensor]:
    """A sampler of uniform minibatches of row indices, drawn with replacement.

    Parameters
    ----------
    n : int
        Number of rows to sample from.
    batch_size : int
        Indices per batch.
    generator : torch.Generator, optional
        Source of the draws (on CPU, or on ``device``); None uses torch's
        default generator (not reproducible).
    device : torch.device or str, optional
        Where the batches are moved (default: where they are drawn).

    Returns
    -------
    callable
        ``sampler() -> torch.Tensor`` of int64, shape (batch_size,).
    """
    validate_params(
        "random_batches",
        dict(n=n, batch_size=batch_size),
        {"n": [Interval(int, 1, None)], "batch_size": [Interval(int, 1, None)]},
    )
    where = generator.device if generator is not None else None

    def sample() -> torch.Tensor:
        b = torch.randint(0, n, (batch_size,), generator=generator, device=where)
        return b if device is None else b.to(device)

    return sample


def minibatch_train(
    step: Callable[[Any], torch.Tensor | Mapping[str, torch.Tensor]],
    sampler: Callable[[], Any],
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer],
    *,
    n_steps: int,
    log_every: int = 100,
    model: Any = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "minibatch",
    nonfinite_hint: str = "lower the learning rate",
    monitor: IterationMonitor | None = None,
    report: Callable[[dict[str, float], int], Mapping[str, Any]] | None = None,
    point: Callable[[], Any] | None = None,
) -> SolverResult:
    """Run ``n_steps`` minibatch steps of one or more torch optimizers.

    Each step draws ``batch = sampler()``, evaluates ``step(batch)``, zeroes
    the gradients of every optimizer, back-propagates the objective and steps
    the optimizers in the order given.

    Parameters
    ----------
    step : callable
        ``step(batch)`` returns the scalar loss to minimize, or a dict of
        scalar tensors whose ``"objective"`` entry is minimized and whose
        other entries (loss terms) are only recorded.
    sampler : callable
        ``sampler()`` returns the next batch (e.g. :func:`random_batches`).
    optimizers : torch.optim.Optimizer or sequence of them
        Stepped after each backward pass (e.g. Adam on the network and a
        :class:`~.givens.GivensOptimizer` on a rotation).
    n_steps : int
        Minibatch steps (the budget).
    log_every : int
        Steps per history row, i.e. per iteration of the monitor (its
        callback, progress bar and log line).
    model : object, optional
        What the callback sees as ``state.x`` and the result holds as ``x``
        (usually the ``torch.nn.Module`` being trained).
    verbose : int
        0 silent, 1 progress bar, 2 also one log record per history row.
    callback : callable, optional
        ``callback(state) -> bool | None`` after each history row; True stops.
    name : str
        Solver name in progress bars, logs and errors.
    nonfinite_hint : str
        Likely cause named when the loss becomes NaN or infinite.
    monitor : IterationMonitor, optional
        The loop's monitor, for a loop that stops on its own rule (e.g. a
        tolerance on the exact gradient): it bounds the history rows and
        owns the verbosity, callback and stopping. Default: a fixed-budget
        monitor of ``ceil(n_steps / log_every)`` rows.
    report : callable, optional
        ``report(means, steps_done) -> dict`` turns a window's means of the
        terms of ``step`` into the values of its history row; called with
        the clock paused (for evaluations the method itself does not use,
        such as the exact objective). Default: the means.
    point : callable, optional
        ``point()`` returns what the callback sees as ``state.x`` and the
        result holds as ``x``; default ``model``.

    Returns
    -------
    SolverResult
        ``x`` is ``model``; ``n_iter`` the number of history rows;
        ``stop_reason`` is ``"n_steps"`` (budget spent) or ``"callback"``
        (or what ``monitor`` says);
        ``history`` has ``iteration``, ``time``, ``objective`` and every other
        term returned by ``step``, each the mean over the row's window of
        steps; ``info["n_steps"]`` the steps taken.

    Raises
    ------
    NumericalInstabilityError
        If a window's mean objective is NaN or infinite.

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.zeros(3))
    >>> X, y = torch.randn(100, 3), torch.randn(100)
    >>> res = minibatch_train(
    ...     lambda b: ((X[b] @ w - y[b]) ** 2).mean(),
    ...     random_batches(100, 10, generator=torch.Generator().manual_seed(0)),
    ...     torch.optim.SGD([w], lr=0.1),
    ...     n_steps=50,
    ...     log_every=10,
    ... )
    >>> res.n_iter, res.stop_reason
    (5, 'n_steps')
    """
    validate_params(
        name,
        dict(n_steps=n_steps, log_every=log_every),
        {"n_steps": [Interval(int, 1, None)], "log_every": [Interval(int, 1, None)]},
    )
    opts = (
        [optimizers]
        if isinstance(optimizers, torch.optim.Optimizer)
        else list(optimizers)
    )
    own_monitor = monitor is None
    if own_monitor:
        monitor = IterationMonitor(
            name,
            max(1, math.ceil(n_steps / log_every)),
            0.0,
            verbose=verbose,
            callback=callback,
            nonfinite_hint=nonfinite_hint,
            budget=True,
        )
    current = point if point is not None else (lambda: model)
    done = 0
    for _ in monitor:
        if done >= n_steps:
            break
        # Window sums in float64, in step order (the history is their mean);
        # read once per window, so queued device work stays on the clock.
        sums: dict[str, torch.Tensor] = {}
        k = 0
        while k < log_every and done < n_steps:
            out = step(sampler())
            terms = out if isinstance(out, Mapping) else {"objective": out}
            for opt in opts:
                opt.zero_grad(set_to_none=True)
            terms["objective"].backward()
            for opt in opts:
                opt.step()
            for key, value in terms.items():
                v = value.detach().to(torch.float64)
                sums[key] = sums[key] + v if key in sums else v
            k += 1
            done += 1
        means = {key: float(s) / k for key, s in sums.items()}
        if report is not None:
            with monitor.paused():
                means = dict(report(means, done))
        if monitor.record(current(), **means):
            break
    res = monitor.result(current(), n_steps=done)
    if own_monitor and res.stop_reason == "max_iter":
        res.stop_reason = "n_steps"
    return res
