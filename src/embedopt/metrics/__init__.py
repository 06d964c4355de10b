"""Evaluation metrics."""

from .regression import accuracy, mae, nmse, nmse_lowrank, rmse

__all__ = ["accuracy", "mae", "nmse", "nmse_lowrank", "rmse"]
