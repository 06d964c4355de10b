"""embedopt: fast, scalable optimization for embeddings and low-rank structure.

Subpackages
-----------
completion
    Matrix and tensor completion with AIS-Impute, its baselines, smooth
    losses, nonconvex regularizers and post-processing.
ordinal
    Ordinal embedding from triplet/quadruplet comparisons with SVRG-SBB and
    its baselines.
sdp
    Low-rank semidefinite programs on factors: AAGD on the biconvex
    surrogate f(X Y^T) + gamma/2 ||X - Y||^2, Burer-Monteiro baselines, and
    nonparametric kernel learning (NPKL) from pairwise constraints.
quantization
    Product-quantization indexes with rotation learning by Givens coordinate
    descent, OPQ and Cayley baselines, and end-to-end trainable PQ layers.
data
    Containers, splits, synthetic generators and dataset loaders.
linalg
    Sparse patterns, structured operators, singular value thresholding,
    conjugate gradient, PSD projections, point (tuple-of-tensor) arithmetic.
nn
    Towers (id embeddings, MLPs over side features), pair scores and
    retrieval losses shared by the two-tower models.
optim
    Solver results, progress, stopping rules; the accelerated proximal
    gradient loop (momentum, restart, continuation); line search,
    Newton-CG, L-BFGS; SVRG / SGD / gradient descent for finite sums;
    minibatch training.
metrics
    Error metrics.
"""

# Before anything imports torch: see _openmp (spinning OpenMP threads stall
# every parallel region when another process holds a core).
from ._openmp import prefer_passive_wait as _prefer_passive_wait

_prefer_passive_wait()

# The exception and warning classes every package raises, at the top level.
from ._core import exceptions as _exceptions  # noqa: E402
from ._core.exceptions import *  # noqa: E402, F403

__version__ = "0.1.0.dev0"

from ._load import load  # noqa: E402

__all__ = [*_exceptions.__all__, "__version__", "load"]
