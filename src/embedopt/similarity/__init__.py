"""Extreme similarity learning: all-pairs two-tower training at O(m + n) cost."""

from .estimators import TwoTowerModel
from .losses import LOSSES, AutogradLoss, LogisticLoss, SquareLoss, get_loss
from .objective import AllPairsObjective, popularity_weights
from .solvers import SOLVERS, gauss_newton, get_solver, gradient_descent

__all__ = [
    "LOSSES",
    "SOLVERS",
    "AllPairsObjective",
    "AutogradLoss",
    "LogisticLoss",
    "SquareLoss",
    "TwoTowerModel",
    "gauss_newton",
    "get_loss",
    "get_solver",
    "gradient_descent",
    "popularity_weights",
]
