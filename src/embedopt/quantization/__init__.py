"""Product quantization with rotation learning by Givens coordinate descent.

Kernels (k-means per subspace, ADC search), rotation steps (SVD Procrustes,
Givens coordinate descent GCD-R/G/S, Cayley, unconstrained), alternating solvers
for fixed embeddings, the :class:`ProductQuantizer` estimator, a differentiable
PQ layer for end-to-end training, and faiss export.
"""

from .codebooks import adc_search, adc_tables, assign, decode, kmeans_plusplus, lloyd
from .estimators import ROTATIONS, ProductQuantizer
from .faiss_io import to_faiss
from .layers import CayleyRotation, ProductQuantizationLayer
from .rotation_learners import (
    ROTATION_INITS,
    ROTATION_LEARNERS,
    CayleyLearner,
    GivensLearner,
    ProcrustesLearner,
    RotationLearner,
    RotationMethod,
    UnconstrainedLearner,
    eigenvalue_allocation,
    get_rotation_learner,
    initial_rotation,
    make_rotation_learner,
)
from .solvers import (
    KMEANS_INITS,
    RotatedPQ,
    cayley_descent,
    fit_product_quantizer,
    givens_descent,
    opq,
    rotated_pq,
    unconstrained_descent,
)
from .two_tower import (
    LAYER_ROTATION_OPTIMIZERS,
    TwoTowerNet,
    train_towers,
    train_two_tower_index,
)
from .two_tower_estimator import TwoTowerRetrieval

__all__ = [
    "KMEANS_INITS",
    "LAYER_ROTATION_OPTIMIZERS",
    "ROTATIONS",
    "ROTATION_INITS",
    "ROTATION_LEARNERS",
    "CayleyLearner",
    "CayleyRotation",
    "GivensLearner",
    "ProcrustesLearner",
    "ProductQuantizationLayer",
    "ProductQuantizer",
    "RotatedPQ",
    "RotationLearner",
    "RotationMethod",
    "TwoTowerNet",
    "TwoTowerRetrieval",
    "UnconstrainedLearner",
    "adc_search",
    "adc_tables",
    "assign",
    "cayley_descent",
    "decode",
    "eigenvalue_allocation",
    "fit_product_quantizer",
    "get_rotation_learner",
    "givens_descent",
    "initial_rotation",
    "kmeans_plusplus",
    "lloyd",
    "make_rotation_learner",
    "opq",
    "rotated_pq",
    "to_faiss",
    "train_towers",
    "train_two_tower_index",
    "unconstrained_descent",
]
