"""Evaluation metrics."""

from .embedding import procrustes_align, procrustes_distance, triplet_error
from .regression import accuracy, mae, nmse, nmse_lowrank, rmse
from .retrieval import (
    mean_average_precision,
    precision_at_k,
    recall_at_k,
    retrieval_scores,
)

__all__ = [
    "accuracy",
    "mae",
    "mean_average_precision",
    "nmse",
    "nmse_lowrank",
    "precision_at_k",
    "procrustes_align",
    "procrustes_distance",
    "recall_at_k",
    "retrieval_scores",
    "rmse",
    "triplet_error",
]
