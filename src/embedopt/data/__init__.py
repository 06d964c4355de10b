"""Data containers, splits, synthetic generators and dataset loaders."""

from ._paths import get_data_home
from .comparisons import (
    Comparisons,
    ComparisonWarning,
    as_comparisons,
    split_comparisons,
)
from .entries import ObservedEntries, as_observed_entries
from .images import load_test_image
from .movielens import MovieLensRatings, load_movielens
from .ordinal import (
    PlantedEmbedding,
    flip_comparisons,
    make_all_triplets,
    make_class_triplets,
    make_planted_embedding,
    make_random_triplets,
)
from .ordinal_datasets import (
    DistanceData,
    LabelledData,
    MusicTriplets,
    load_digits,
    load_eurodist,
    load_music_triplets,
)
from .splits import kfold_entries, split_entries
from .synthetic import (
    LowRankProblem,
    LowRankTensorProblem,
    make_low_rank_matrix,
    make_low_rank_tensor,
    sample_positions,
)

__all__ = [
    "ComparisonWarning",
    "Comparisons",
    "DistanceData",
    "LabelledData",
    "LowRankProblem",
    "LowRankTensorProblem",
    "MovieLensRatings",
    "MusicTriplets",
    "ObservedEntries",
    "PlantedEmbedding",
    "as_comparisons",
    "as_observed_entries",
    "flip_comparisons",
    "get_data_home",
    "kfold_entries",
    "load_digits",
    "load_eurodist",
    "load_movielens",
    "load_music_triplets",
    "load_test_image",
    "make_all_triplets",
    "make_class_triplets",
    "make_low_rank_matrix",
    "make_low_rank_tensor",
    "make_planted_embedding",
    "make_random_triplets",
    "sample_positions",
    "split_comparisons",
    "split_entries",
]
