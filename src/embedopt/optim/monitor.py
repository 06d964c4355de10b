"""The outer-iteration loop machinery shared by every solver.

:class:`IterationMonitor` owns what is not specific to one algorithm: timing,
the convergence history, the tqdm progress bar (``verbose=1``), per-iteration
logging (``verbose=2``), the callback protocol, the stopping rule, the
non-finite-objective check and the :class:`ConvergenceWarning` at ``max_iter``.

Callback protocol: ``callback(state) -> bool | None`` is called once per outer
iteration with an :class:`IterationState`; returning True stops the solver.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from .._core import ConvergenceWarning, NumericalInstabilityError, get_logger
from .._core.log import ensure_verbose_handler
from ..linalg.points import Point
from .objective import Objective
from .result import History, SolverResult

__all__ = [
    "STOPPING_RULES",
    "IterationMonitor",
    "IterationState",
    "RelativeChange",
    "solver_monitor",
    "start_gradient_run",
]


@dataclass
class IterationState:
    """What a callback sees after each outer iteration.

    Attributes
    ----------
    solver : str
        Solver name.
    iteration : int
        1-based iteration number.
    elapsed : float
        Solver seconds so far (monitoring and callbacks excluded).
    objective : float
        Objective value after this iteration.
    values : dict
        Everything recorded in the history for this iteration.
    x : object
        The current iterate, in the solver's own representation.
    """

    solver: str
    iteration: int
    elapsed: float
    objective: float
    values: dict = field(default_factory=dict)
    x: Any = None


class RelativeChange:
    """Stop when the relative change of a history column falls below ``tol``.

    ``|f_t - f_{t-1}| <= tol * max(|f_ref|, 1e-30)`` with ``f_ref = f_{t-1}``
    (``relative_to="previous"``) or the first recorded value
    (``relative_to="first"``). The second suits objectives that decay to 0
    geometrically (a separable hinge loss): relative to the current value
    their change never gets small, relative to where they started it does.

    Parameters
    ----------
    tol : float
        Relative tolerance; 0 never stops.
    key : str
        History column to watch.
    relative_to : {"previous", "first"}
    """

    def __init__(
        self,
        tol: float,
        key: str = "objective",
        relative_to: Literal["previous", "first"] = "previous",
    ):
        self.tol = tol
        self.key = key
        self.relative_to = relative_to

    def __call__(self, history: History) -> bool:
        if self.tol <= 0 or len(history) < 2 or self.key not in history:
            return False
        col = history.column(self.key)
        prev, cur = col[-2], col[-1]
        ref = col[0] if self.relative_to == "first" else prev
        if not (math.isfinite(prev) and math.isfinite(cur) and math.isfinite(ref)):
            return False
        return abs(cur - prev) <= self.tol * max(abs(ref), 1e-30)


#: Stopping rules by name: ``rule = STOPPING_RULES[name](tol)``.
STOPPING_RULES: dict[str, Callable[[float], Callable[[History], bool]]] = {
    "relative_objective": lambda tol: RelativeChange(tol, "objective"),
}


class IterationMonitor:
    """Bookkeeping for a solver's outer loop.

    Parameters
    ----------
    solver : str
        Name shown in progress bars, logs and warnings.
    max_iter : int
        Iteration budget.
    tol : float
        Tolerance of the stopping rule.
    stopping : callable, optional
        ``stopping(history) -> bool``; default :class:`RelativeChange` on the
        objective.
    verbose : int
        0 silent, 1 tqdm progress bar, 2 also one log record per iteration.
    callback : callable, optional
        ``callback(state) -> bool | None``; True stops the solver.
    owner : str, optional
        Who owns ``max_iter``/``tol`` (named in the ConvergenceWarning).
    nonfinite_hint : str
        Likely cause named when the objective becomes NaN or infinite.
    budget : bool
        Fixed-budget mode: run exactly ``max_iter`` iterations (unless the
        callback stops), never stop on the tolerance and never warn at
        ``max_iter``, which is then the plan rather than a failure to converge
        (minibatch training for a set number of steps).

    Examples
    --------
    >>> mon = IterationMonitor("demo", max_iter=10, tol=1e-3)
    >>> for t in mon:
    ...     if mon.record(objective=1.0 / t):
    ...         break
    >>> res = mon.result(x=None)
    """

    def __init__(
        self,
        solver: str,
        max_iter: int,
        tol: float,
        *,
        stopping: Callable[[History], bool] | None = None,
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
        owner: str | None = None,
        nonfinite_hint: str = "the step size may be too large or the data badly scaled",
        budget: bool = False,
    ):
        self.solver = solver
        self.max_iter = int(max_iter)
        self.tol = tol
        self.stopping = stopping if stopping is not None else RelativeChange(tol)
        self.verbose = int(verbose or 0)
        self.callback = callback
        self.owner = owner or solver
        self.nonfinite_hint = nonfinite_hint
        self.budget = bool(budget)
        self.history = History()
        self.iteration = 0
        self.stop_reason: str | None = None
        self._excluded = 0.0
        self._start = None
        self._bar = None
        self._logger = get_logger("optim")

    # -- loop -------------------------------------------------------------------
    def __iter__(self) -> Iterator[int]:
        self.start()
        try:
            for t in range(1, self.max_iter + 1):
                yield t
                if self.stop_reason is not None:
                    return
        finally:
            self.close()

    def start(self) -> None:
        """Start the clock (idempotent) and open the progress bar."""
        if self._start is not None:
            return
        self._start = time.perf_counter()
        if self.verbose >= 2:
            ensure_verbose_handler(self._logger)
        if self.verbose >= 1:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.max_iter, desc=self.solver, leave=False)

    def close(self) -> None:
        """Close the progress bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def elapsed(self) -> float:
        """Solver seconds so far, excluding :meth:`paused` sections."""
        if self._start is None:
            return 0.0
        return time.perf_counter() - self._start - self._excluded

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Exclude the enclosed work (monitoring-only metrics) from the clock."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._excluded += time.perf_counter() - t0

    def instability(self, detail: str) -> NumericalInstabilityError:
        """An error for a numerical breakdown detected by the solver itself.

        Parameters
        ----------
        detail : str
            What broke (e.g. "the SVD received non-finite values").

        Returns
        -------
        NumericalInstabilityError
            To be raised by the caller; names the likely cause.
        """
        self.close()
        return NumericalInstabilityError(
            f"{self.solver}: {detail} at iteration {self.iteration + 1}; "
            f"{self.nonfinite_hint}."
        )

    def tolerance_met(self) -> bool:
        """Whether the stopping rule holds on the history recorded so far."""
        return bool(self.stopping(self.history))

    # -- per iteration ----------------------------------------------------------
    def record(self, x: Any = None, *, allow_stop: bool = True, **values: Any) -> bool:
        """Record one outer iteration; return True when the solver must stop.

        Parameters
        ----------
        x : object, optional
            The current iterate, passed to the callback.
        allow_stop : bool
            False prevents the tolerance test from stopping at this iteration
            (e.g. while a continuation is still decreasing the penalty).
        **values
            History values; ``objective`` is required.

        Returns
        -------
        bool

        Raises
        ------
        NumericalInstabilityError
            If the objective is NaN or infinite.
        """
        self.start()
        self.iteration += 1
        elapsed = self.elapsed()
        objective = float(values.get("objective", math.nan))
        if not math.isfinite(objective):
            self.close()
            raise NumericalInstabilityError(
                f"{self.solver}: the objective became {objective} at iteration "
                f"{self.iteration}; {self.nonfinite_hint}."
            )
        self.history.append(iteration=self.iteration, time=elapsed, **values)
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix(objective=f"{objective:.6g}", refresh=False)
        if self.verbose >= 2:
            shown = ", ".join(f"{k}={_short(v)}" for k, v in values.items())
            self._logger.info(
                "%s iter %d (%.3fs): %s", self.solver, self.iteration, elapsed, shown
            )
        if allow_stop and not self.budget and self.stopping(self.history):
            self.stop_reason = "tol"
        if self.callback is not None:
            state = IterationState(
                self.solver, self.iteration, elapsed, objective, dict(values), x
            )
            with self.paused():
                if self.callback(state):
                    self.stop_reason = self.stop_reason or "callback"
        if self.stop_reason is None and self.iteration >= self.max_iter:
            self.stop_reason = "max_iter"
            if not self.budget:
                warnings.warn(
                    f"{self.solver} did not converge within max_iter={self.max_iter} "
                    f"iterations (tol={self.tol:g}). Increase 'max_iter' or 'tol' of "
                    f"{self.owner}.",
                    ConvergenceWarning,
                    stacklevel=3,
                )
        return self.stop_reason is not None

    def result(self, x: Any, **info: Any) -> SolverResult:
        """Build the :class:`SolverResult` of the run.

        Parameters
        ----------
        x : object
            The solution.
        **info
            Extra solver-specific outputs.

        Returns
        -------
        SolverResult
        """
        self.close()
        return SolverResult(
            x=x,
            n_iter=self.iteration,
            stop_reason=self.stop_reason or "max_iter",
            history=self.history.as_dict(),
            elapsed=self.elapsed(),
            info=info,
        )


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def solver_monitor(
    name: str,
    max_iter: int,
    tol: float,
    verbose: int,
    callback: Callable[[IterationState], bool | None] | None,
    owner: str | None,
    nonfinite_hint: str,
    stopping: Callable[[History], bool] | None = None,
    budget: bool = False,
) -> IterationMonitor:
    """The monitor of a solver, from the parameters every solver takes.

    Every solver loop has ``name``, ``max_iter``, ``tol``, ``verbose``,
    ``callback`` and ``owner`` parameters that mean the same thing; each
    adds only the hint its non-finite error gives and, optionally, its
    stopping rule.

    Parameters
    ----------
    name, max_iter, tol, verbose, callback, owner
        The solver's parameters of those names (``owner`` None: ``name``).
    nonfinite_hint : str
        The likely cause a NaN or inf objective reports.
    stopping : callable, optional
        Stopping rule; default :class:`RelativeChange` of ``tol``.
    budget : bool
        Run exactly ``max_iter`` iterations (see :class:`IterationMonitor`).

    Returns
    -------
    IterationMonitor
        Not started.
    """
    return IterationMonitor(
        name,
        max_iter,
        tol,
        stopping=stopping,
        verbose=verbose,
        callback=callback,
        owner=owner,
        nonfinite_hint=nonfinite_hint,
        budget=budget,
    )


def start_gradient_run(
    objective: Objective,
    x0: Point,
    monitor: IterationMonitor,
    stop_on: str = "grad_norm",
) -> tuple[Point, float, Point]:
    """Start a smooth solver: its stopping rule, clock, and the value and
    gradient at x0.

    The second-order and line-search solvers (:func:`~embedopt.optim.newton_cg`,
    :func:`~embedopt.optim.armijo_gradient_descent`) share one stopping rule,
    ``||grad f(x)|| <= tol ||grad f(x0)||`` on the ``grad_norm`` column
    (``stop_on="grad_norm"``), or the relative objective change of one
    iteration below ``tol`` (``stop_on="objective"``, :class:`RelativeChange`,
    the monitor's default), and the same first evaluation.

    Parameters
    ----------
    objective : Objective
    x0 : Point
    monitor : IterationMonitor
        From :func:`solver_monitor`, not started; gets its stopping rule here.
    stop_on : {"grad_norm", "objective"}

    Returns
    -------
    x : Point
        A copy of ``x0``.
    value : float
    grad : Point
    """
    from ..linalg.points import clone, norm

    ref = {}
    if stop_on != "objective":
        # the rule needs ||grad f(x0)||, known only after the first evaluation
        monitor.stopping = lambda h: h.last("grad_norm") <= monitor.tol * ref["g0"]
    monitor.start()
    x = clone(x0)
    f, g = objective.value_and_grad(x)
    ref["g0"] = norm(g)
    return x, float(f), g
