"""Extreme similarity learning: all-pairs two-tower training at O(m + n) cost."""

from .losses import LOSSES, AutogradLoss, LogisticLoss, SquareLoss, get_loss
from .objective import AllPairsObjective, popularity_weights

__all__ = [
    "LOSSES",
    "AllPairsObjective",
    "AutogradLoss",
    "LogisticLoss",
    "SquareLoss",
    "get_loss",
    "popularity_weights",
]
