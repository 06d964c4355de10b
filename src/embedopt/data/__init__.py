"""Data containers, splits, synthetic generators and dataset loaders."""

from ._paths import get_data_home
from .entries import ObservedEntries, as_observed_entries
from .movielens import MovieLensRatings, load_movielens
from .movielens_features import (
    GENRES_1M,
    MovieLensSideFeatures,
    load_movielens_side_features,
)
from .splits import kfold_entries, split_entries
from .synthetic import LowRankProblem, make_low_rank_matrix, sample_positions
from .vectors import (
    SIFT1M,
    load_glove,
    load_sift1m,
    make_correlated_gaussian,
    read_fvecs,
    read_ivecs,
)

__all__ = [
    "GENRES_1M",
    "SIFT1M",
    "LowRankProblem",
    "MovieLensRatings",
    "MovieLensSideFeatures",
    "ObservedEntries",
    "as_observed_entries",
    "get_data_home",
    "kfold_entries",
    "load_glove",
    "load_movielens",
    "load_movielens_side_features",
    "load_sift1m",
    "make_correlated_gaussian",
    "make_low_rank_matrix",
    "read_fvecs",
    "read_ivecs",
    "sample_positions",
    "split_entries",
]
