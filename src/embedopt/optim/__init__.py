"""Solver machinery shared across method families.

Results and history, the callback protocol and progress reporting, stopping
rules, momentum schedules, an L-BFGS wrapper, and Givens coordinate descent on
rotations (pair-selection rules and a torch optimizer).
"""

from .givens import (
    PAIR_SELECTIONS,
    GivensOptimizer,
    GreedyMatching,
    GreedyOverlapping,
    PairSelection,
    RandomMatching,
    RandomOverlapping,
    SteepestMatching,
    get_pair_selection,
    givens_step,
)
from .lbfgs import lbfgs
from .momentum import MOMENTUM, NesterovRestart, NoMomentum
from .monitor import STOPPING_RULES, IterationMonitor, IterationState, RelativeChange
from .result import History, SolverResult

__all__ = [
    "MOMENTUM",
    "PAIR_SELECTIONS",
    "STOPPING_RULES",
    "GivensOptimizer",
    "GreedyMatching",
    "GreedyOverlapping",
    "History",
    "IterationMonitor",
    "IterationState",
    "NesterovRestart",
    "NoMomentum",
    "PairSelection",
    "RandomMatching",
    "RandomOverlapping",
    "RelativeChange",
    "SolverResult",
    "SteepestMatching",
    "get_pair_selection",
    "givens_step",
    "lbfgs",
]
