"""Extreme similarity learning: all-pairs two-tower training at O(m + n) cost."""

from .baselines import (
    ALS_CONSTRAINTS,
    OPTIMIZERS,
    STOCHASTIC_CONSTRAINTS,
    als,
    block_loss,
    sampled_pairs_loss,
    stochastic,
)
from .estimators import TwoTowerModel
from .losses import LOSSES, AutogradLoss, LogisticLoss, SquareLoss, get_loss
from .objective import AllPairsObjective, popularity_weights
from .solvers import SOLVERS, gauss_newton, get_solver, gradient_descent

__all__ = [
    "ALS_CONSTRAINTS",
    "LOSSES",
    "OPTIMIZERS",
    "SOLVERS",
    "STOCHASTIC_CONSTRAINTS",
    "AllPairsObjective",
    "AutogradLoss",
    "LogisticLoss",
    "SquareLoss",
    "TwoTowerModel",
    "als",
    "block_loss",
    "gauss_newton",
    "get_loss",
    "get_solver",
    "gradient_descent",
    "popularity_weights",
    "sampled_pairs_loss",
    "stochastic",
]
