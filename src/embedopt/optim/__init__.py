"""Solver machinery shared across method families.

Results and history, the callback protocol and progress reporting, stopping
rules, momentum schedules, an L-BFGS wrapper, step-size rules, and the
finite-sum solvers (SVRG with stabilized Barzilai-Borwein steps, SGD, batch
gradient descent).
"""

from .finite_sum import FiniteSum
from .gradient import gradient_descent, sgd
from .lbfgs import lbfgs
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
from .svrg import svrg

__all__ = [
    "MOMENTUM",
    "STEP_SIZES",
    "STOPPING_RULES",
    "BarzilaiBorwein",
    "ConstantStep",
    "FiniteSum",
    "History",
    "InverseDecay",
    "IterationMonitor",
    "IterationState",
    "NesterovRestart",
    "NoMomentum",
    "RelativeChange",
    "SolverResult",
    "StabilizedBB",
    "gradient_descent",
    "lbfgs",
    "probe_step",
    "sgd",
    "stabilized_bb_step",
    "svrg",
]
