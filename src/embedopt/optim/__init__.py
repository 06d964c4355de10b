"""Solver machinery shared across method families.

Results and history, the callback protocol and progress reporting, stopping
rules, momentum schedules and an L-BFGS wrapper.
"""

from .lbfgs import lbfgs
from .momentum import MOMENTUM, NesterovRestart, NoMomentum
from .monitor import STOPPING_RULES, IterationMonitor, IterationState, RelativeChange
from .result import History, SolverResult

__all__ = [
    "MOMENTUM",
    "STOPPING_RULES",
    "History",
    "IterationMonitor",
    "IterationState",
    "NesterovRestart",
    "NoMomentum",
    "RelativeChange",
    "SolverResult",
    "lbfgs",
]
