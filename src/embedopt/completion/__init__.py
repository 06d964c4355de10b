"""Matrix completion: AIS-Impute, Soft-Impute, APG, post-processing, lambda paths."""

from .baselines import ais_impute_exact, apg, soft_impute
from .centering import (
    CENTERINGS,
    Centering,
    CenteringSelection,
    select_centering,
)
from .distributed import DistributedCompletionProblem, row_shards
from .estimators import MatrixCompletion, TensorCompletion
from .losses import LOSSES, LogisticLoss, Loss, SquaredHingeLoss, SquareLoss, get_loss
from .nonconvex import dc_completion, irnn
from .path import CompletionFit, PathResult, fit_path, lambda_path
from .postprocess import postprocess
from .problem import CompletionProblem
from .proximal import (
    check_solver_options,
    default_mode_weights,
    proximal_completion,
)
from .regularizers import (
    REGULARIZERS,
    CappedL1,
    LogSumPenalty,
    MinimaxConcavePenalty,
    NuclearNorm,
    Regularizer,
    TruncatedNuclearNorm,
    get_regularizer,
    spectral_prox,
)
from .solvers import SOLVERS, ais_impute, get_solver, method_options, resolve_solver
from .svt import SVT_METHODS

__all__ = [
    "CENTERINGS",
    "LOSSES",
    "REGULARIZERS",
    "SOLVERS",
    "SVT_METHODS",
    "CappedL1",
    "Centering",
    "CenteringSelection",
    "CompletionFit",
    "CompletionProblem",
    "DistributedCompletionProblem",
    "LogSumPenalty",
    "LogisticLoss",
    "Loss",
    "MatrixCompletion",
    "MinimaxConcavePenalty",
    "NuclearNorm",
    "PathResult",
    "Regularizer",
    "SquareLoss",
    "SquaredHingeLoss",
    "TensorCompletion",
    "TruncatedNuclearNorm",
    "ais_impute",
    "ais_impute_exact",
    "apg",
    "check_solver_options",
    "dc_completion",
    "default_mode_weights",
    "fit_path",
    "get_loss",
    "get_regularizer",
    "get_solver",
    "irnn",
    "lambda_path",
    "method_options",
    "postprocess",
    "proximal_completion",
    "resolve_solver",
    "row_shards",
    "select_centering",
    "soft_impute",
    "spectral_prox",
]
