"""Extreme similarity learning: all-pairs two-tower training at O(m + n) cost."""

from .baselines import (
    OPTIMIZERS,
    STOCHASTIC_CONSTRAINTS,
    block_loss,
    gradient_descent,
    sampled_pairs_loss,
    stochastic,
)
from .distributed import DistributedAllPairsObjective, run_distributed, shard_bounds
from .estimators import TwoTowerModel
from .losses import LOSSES, AutogradLoss, LogisticLoss, SquareLoss, get_loss
from .problem import AllPairsObjective, dense_objective, popularity_weights
from .solvers import ALS_CONSTRAINTS, SOLVERS, als, gauss_newton, get_solver

__all__ = [
    "ALS_CONSTRAINTS",
    "LOSSES",
    "OPTIMIZERS",
    "SOLVERS",
    "STOCHASTIC_CONSTRAINTS",
    "AllPairsObjective",
    "AutogradLoss",
    "DistributedAllPairsObjective",
    "LogisticLoss",
    "SquareLoss",
    "TwoTowerModel",
    "als",
    "block_loss",
    "dense_objective",
    "gauss_newton",
    "get_loss",
    "get_solver",
    "gradient_descent",
    "popularity_weights",
    "run_distributed",
    "sampled_pairs_loss",
    "shard_bounds",
    "stochastic",
]
