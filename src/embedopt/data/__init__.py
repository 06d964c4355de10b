"""Data containers, splits, synthetic generators and dataset loaders."""

from ._paths import get_data_home
from .comparisons import (
    Comparisons,
    ComparisonWarning,
    as_comparisons,
    as_quadruplets,
    split_comparisons,
)
from .entries import ObservedEntries, as_observed_entries
from .frames import UNKNOWN_POLICIES
from .ids import IdMap
from .images import load_test_image
from .interactions import (
    Interactions,
    InteractionsLike,
    SideFeatures,
    as_interactions,
    as_side_features,
)
from .libsvm import load_libsvm
from .movielens import MovieLensRatings, load_movielens
from .movielens_features import (
    GENRES_1M,
    MovieLensSideFeatures,
    load_movielens_side_features,
)
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
from .signed import SignedNetwork, load_bitcoin_alpha
from .splits import kfold_entries, split_by_user, split_entries
from .synthetic import (
    RATINGS_SHAPES,
    LowRankProblem,
    LowRankTensorProblem,
    SyntheticRatings,
    make_low_rank_matrix,
    make_low_rank_tensor,
    make_ratings,
    sample_positions,
)
from .tensors import STACKS, load_image_tensor, load_movielens_tensor
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
    "RATINGS_SHAPES",
    "SIFT1M",
    "STACKS",
    "UNKNOWN_POLICIES",
    "ComparisonWarning",
    "Comparisons",
    "DistanceData",
    "IdMap",
    "Interactions",
    "InteractionsLike",
    "LabelledData",
    "LowRankProblem",
    "LowRankTensorProblem",
    "MovieLensRatings",
    "MovieLensSideFeatures",
    "MusicTriplets",
    "ObservedEntries",
    "PlantedEmbedding",
    "SideFeatures",
    "SignedNetwork",
    "SyntheticRatings",
    "as_comparisons",
    "as_interactions",
    "as_observed_entries",
    "as_quadruplets",
    "as_side_features",
    "flip_comparisons",
    "get_data_home",
    "kfold_entries",
    "load_bitcoin_alpha",
    "load_digits",
    "load_eurodist",
    "load_glove",
    "load_image_tensor",
    "load_libsvm",
    "load_movielens",
    "load_movielens_side_features",
    "load_movielens_tensor",
    "load_music_triplets",
    "load_sift1m",
    "load_test_image",
    "make_all_triplets",
    "make_class_triplets",
    "make_correlated_gaussian",
    "make_low_rank_matrix",
    "make_low_rank_tensor",
    "make_planted_embedding",
    "make_random_triplets",
    "make_ratings",
    "read_fvecs",
    "read_ivecs",
    "sample_positions",
    "split_by_user",
    "split_comparisons",
    "split_entries",
]
