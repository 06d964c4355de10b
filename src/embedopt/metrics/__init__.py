"""Evaluation metrics."""

from .regression import accuracy, mae, nmse, nmse_lowrank, rmse
from .retrieval import precision_at_k, quantization_distortion, recall_at_k

__all__ = [
    "accuracy",
    "mae",
    "nmse",
    "nmse_lowrank",
    "precision_at_k",
    "quantization_distortion",
    "recall_at_k",
    "rmse",
]
