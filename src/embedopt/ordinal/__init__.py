"""Ordinal embedding from triplet / quadruplet comparisons (L-BFGS, SVRG-SBB)."""

from ..linalg import embedding_from_gram, project_centered_psd
from .baselines import batch_gd, projected_gd, sgd, svrg
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
from .problem import GramProblem, OrdinalProblem
from .solvers import (
    SOLVERS,
    get_solver,
    lbfgs,
    lbfgs_threads,
    resolve_lam,
    resolve_n_init,
    resolve_solver,
    solver_defaults,
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
    "lbfgs_threads",
    "project_centered_psd",
    "projected_gd",
    "resolve_lam",
    "resolve_n_init",
    "resolve_solver",
    "sgd",
    "solver_defaults",
    "svrg",
    "svrg_sbb",
    "svrg_sbb_pl",
]
