"""Product quantization with rotation learning by Givens coordinate descent.

The distortion objective (``problem``), the paper's alternating solvers with
Givens coordinate descent (``solvers``), the OPQ / Cayley / unconstrained
comparison methods (``baselines``), the :class:`ProductQuantizer` estimator
(``estimators``); k-means per subspace and ADC search (``codebooks``), the
rotation steps (``rotation_learners``), a differentiable PQ layer for
end-to-end training (``layers``, ``two_tower``) and faiss export
(``faiss_io``).
"""

from .baselines import cayley_descent, opq, unconstrained_descent
from .codebooks import adc_search, adc_tables, assign, decode, kmeans_plusplus, lloyd
from .estimators import ROTATIONS, ProductQuantizer
from .faiss_io import to_faiss
from .layers import CayleyRotation, ProductQuantizationLayer
from .problem import RotatedPQ
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
    SOLVERS,
    fit_product_quantizer,
    get_solver,
    givens_descent,
    rotated_pq,
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
    "SOLVERS",
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
    "get_solver",
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
