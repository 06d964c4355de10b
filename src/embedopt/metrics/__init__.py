"""Evaluation metrics."""

from .clustering import nearest_neighbor_accuracy, rand_index
from .embedding import procrustes_align, procrustes_distance, triplet_error
from .label_retrieval import (
    label_precision_at_k,
    label_recall_at_k,
    mean_average_precision,
    retrieval_scores,
)
from .regression import accuracy, mae, nmse, nmse_lowrank, rmse
from .retrieval import (
    average_precision_at_k,
    ndcg_at_k,
    precision_at_k,
    quantization_distortion,
    recall_at_k,
)

__all__ = [
    "accuracy",
    "average_precision_at_k",
    "label_precision_at_k",
    "label_recall_at_k",
    "mae",
    "mean_average_precision",
    "ndcg_at_k",
    "nearest_neighbor_accuracy",
    "nmse",
    "nmse_lowrank",
    "precision_at_k",
    "procrustes_align",
    "procrustes_distance",
    "quantization_distortion",
    "rand_index",
    "recall_at_k",
    "retrieval_scores",
    "rmse",
    "triplet_error",
]
