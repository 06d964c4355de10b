"""Ordinal embedding from triplet / quadruplet comparisons (L-BFGS, SVRG-SBB)."""

from .convex import GramProblem, embedding_from_gram, project_centered_psd, projected_gd
from .estimators import OrdinalEmbedding
from .losses import (
    LOSSES,
    CKLLoss,
    GNMDSLoss,
    OrdinalLoss,
    SOELoss,
    STELoss,
    TSTELoss,
    comparison_gradients,
    get_loss,
)
from .problem import OrdinalProblem
from .solvers import (
    SOLVERS,
    batch_gd,
    get_solver,
    lbfgs,
    resolve_solver,
    sgd,
    svrg,
    svrg_sbb,
    svrg_sbb_pl,
)

__all__ = [
    "LOSSES",
    "SOLVERS",
    "CKLLoss",
    "GNMDSLoss",
    "GramProblem",
    "OrdinalEmbedding",
    "OrdinalLoss",
    "OrdinalProblem",
    "SOELoss",
    "STELoss",
    "TSTELoss",
    "batch_gd",
    "comparison_gradients",
    "embedding_from_gram",
    "get_loss",
    "get_solver",
    "lbfgs",
    "project_centered_psd",
    "projected_gd",
    "resolve_solver",
    "sgd",
    "svrg",
    "svrg_sbb",
    "svrg_sbb_pl",
]
