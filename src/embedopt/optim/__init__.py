"""Solver machinery shared across method families.

Results and history, the callback protocol and progress reporting, stopping
rules, momentum schedules, an L-BFGS wrapper, step-size rules, the
finite-sum solvers (SVRG with stabilized Barzilai-Borwein steps, SGD, batch
gradient descent), and Givens coordinate descent on rotations
(pair-selection rules and a torch optimizer).
"""

from .finite_sum import FiniteSum
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
from .gradient import GD_CONSTRAINTS, SGD_CONSTRAINTS, gradient_descent, sgd
from .lbfgs import lbfgs
from .minibatch import minibatch_train, random_batches
from .momentum import MOMENTUM, NesterovRestart, NoMomentum
from .monitor import STOPPING_RULES, IterationMonitor, IterationState, RelativeChange
from .result import History, SolverResult
from .step_sizes import (
    STEP_SIZES,
    BarzilaiBorwein,
    ConstantStep,
    InverseDecay,
    StabilizedBB,
    probe_step,
    stabilized_bb_step,
)
from .svrg import SVRG_CONSTRAINTS, svrg

__all__ = [
    "GD_CONSTRAINTS",
    "MOMENTUM",
    "PAIR_SELECTIONS",
    "SGD_CONSTRAINTS",
    "STEP_SIZES",
    "STOPPING_RULES",
    "SVRG_CONSTRAINTS",
    "BarzilaiBorwein",
    "ConstantStep",
    "FiniteSum",
    "GivensOptimizer",
    "GreedyMatching",
    "GreedyOverlapping",
    "History",
    "InverseDecay",
    "IterationMonitor",
    "IterationState",
    "NesterovRestart",
    "NoMomentum",
    "PairSelection",
    "RandomMatching",
    "RandomOverlapping",
    "RelativeChange",
    "SolverResult",
    "StabilizedBB",
    "SteepestMatching",
    "get_pair_selection",
    "givens_step",
    "gradient_descent",
    "lbfgs",
    "minibatch_train",
    "probe_step",
    "random_batches",
    "sgd",
    "stabilized_bb_step",
    "svrg",
]
