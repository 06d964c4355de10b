"""Matrix completion: AIS-Impute, Soft-Impute, APG, post-processing, lambda paths."""

from .centering import CENTERINGS, Centering
from .estimators import MatrixCompletion
from .losses import LOSSES, LogisticLoss, Loss, SquaredHingeLoss, SquareLoss, get_loss
from .path import PathResult, lambda_path
from .postprocess import postprocess
from .problem import CompletionProblem
from .solvers import (
    SOLVERS,
    SVT_METHODS,
    ais_impute,
    apg,
    proximal_completion,
    soft_impute,
)

__all__ = [
    "CENTERINGS",
    "LOSSES",
    "SOLVERS",
    "SVT_METHODS",
    "Centering",
    "CompletionProblem",
    "LogisticLoss",
    "Loss",
    "MatrixCompletion",
    "PathResult",
    "SquareLoss",
    "SquaredHingeLoss",
    "ais_impute",
    "apg",
    "get_loss",
    "lambda_path",
    "postprocess",
    "proximal_completion",
    "soft_impute",
]
