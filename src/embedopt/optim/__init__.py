"""Solver machinery shared across method families.

Results and history, the callback protocol and progress reporting, stopping
rules, momentum schedules, an L-BFGS wrapper, step-size rules, the
finite-sum solvers (SVRG with stabilized Barzilai-Borwein steps, SGD, batch
gradient descent), Givens coordinate descent on rotations (pair-selection
rules and a torch optimizer), and the second-order pieces: the smooth
objective protocol, Armijo backtracking and truncated Newton-CG.
"""

from .accelerated import (
    CONTINUATIONS,
    CompositeProblem,
    FixedWeight,
    GeometricContinuation,
    ProximalProblem,
    accelerated_proximal_gradient,
)
from .descent import ARMIJO_GD_CONSTRAINTS, armijo_gradient_descent
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
from .lbfgs import LBFGS_CONSTRAINTS, lbfgs
from .line_search import LineSearchResult, armijo_backtracking
from .minibatch import minibatch_train, random_batches
from .momentum import MOMENTUM, NesterovRestart, NoMomentum
from .monitor import STOPPING_RULES, IterationMonitor, IterationState, RelativeChange
from .newton import NEWTON_CG_CONSTRAINTS, newton_cg
from .objective import (
    AutogradObjective,
    FunctionObjective,
    GaussNewtonObjective,
    HessianObjective,
    Objective,
)
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
    "ARMIJO_GD_CONSTRAINTS",
    "CONTINUATIONS",
    "GD_CONSTRAINTS",
    "LBFGS_CONSTRAINTS",
    "MOMENTUM",
    "NEWTON_CG_CONSTRAINTS",
    "PAIR_SELECTIONS",
    "SGD_CONSTRAINTS",
    "STEP_SIZES",
    "STOPPING_RULES",
    "SVRG_CONSTRAINTS",
    "AutogradObjective",
    "BarzilaiBorwein",
    "CompositeProblem",
    "ConstantStep",
    "FiniteSum",
    "FixedWeight",
    "FunctionObjective",
    "GaussNewtonObjective",
    "GeometricContinuation",
    "GivensOptimizer",
    "GreedyMatching",
    "GreedyOverlapping",
    "HessianObjective",
    "History",
    "InverseDecay",
    "IterationMonitor",
    "IterationState",
    "LineSearchResult",
    "NesterovRestart",
    "NoMomentum",
    "Objective",
    "PairSelection",
    "ProximalProblem",
    "RandomMatching",
    "RandomOverlapping",
    "RelativeChange",
    "SolverResult",
    "StabilizedBB",
    "SteepestMatching",
    "accelerated_proximal_gradient",
    "armijo_backtracking",
    "armijo_gradient_descent",
    "get_pair_selection",
    "givens_step",
    "gradient_descent",
    "lbfgs",
    "minibatch_train",
    "newton_cg",
    "probe_step",
    "random_batches",
    "sgd",
    "stabilized_bb_step",
    "svrg",
]
