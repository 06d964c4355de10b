"""Data containers, splits, synthetic generators and dataset loaders."""

from ._paths import get_data_home
from .entries import ObservedEntries, as_observed_entries
from .images import load_test_image
from .movielens import MovieLensRatings, load_movielens
from .splits import kfold_entries, split_entries
from .synthetic import (
    LowRankProblem,
    LowRankTensorProblem,
    make_low_rank_matrix,
    make_low_rank_tensor,
    sample_positions,
)

__all__ = [
    "LowRankProblem",
    "LowRankTensorProblem",
    "MovieLensRatings",
    "ObservedEntries",
    "as_observed_entries",
    "get_data_home",
    "kfold_entries",
    "load_movielens",
    "load_test_image",
    "make_low_rank_matrix",
    "make_low_rank_tensor",
    "sample_positions",
    "split_entries",
]
