"""embedopt: fast, scalable optimization for embeddings and low-rank structure.

Subpackages
-----------
completion
    Matrix and tensor completion with AIS-Impute, its baselines, smooth
    losses, nonconvex regularizers and post-processing.
ordinal
    Ordinal embedding from triplet/quadruplet comparisons with SVRG-SBB and
    its baselines.
quantization
    Product-quantization indexes with rotation learning by Givens coordinate
    descent, OPQ and Cayley baselines, and end-to-end trainable PQ layers.
data
    Containers, splits, synthetic generators and dataset loaders.
linalg
    Sparse patterns, structured operators, singular value thresholding.
nn
    Towers (id embeddings, MLPs over side features), pair scores and
    retrieval losses shared by the two-tower models.
optim
    Solver results, progress, stopping rules, momentum, L-BFGS, step-size
    rules, SVRG / SGD / gradient descent for finite sums.
metrics
    Error metrics.
"""

from ._core import (
    ConvergenceWarning,
    DataValidationError,
    DeviceUnavailableError,
    EmbedoptError,
    InvalidParameterError,
    NotFittedError,
    NumericalInstabilityError,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "ConvergenceWarning",
    "DataValidationError",
    "DeviceUnavailableError",
    "EmbedoptError",
    "InvalidParameterError",
    "NotFittedError",
    "NumericalInstabilityError",
    "__version__",
]
