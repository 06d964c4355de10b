"""Linear algebra kernels: sparse patterns, structured operators, SVT, rotations."""

from .operators import DenseOperator, SparsePlusLowRank
from .rotations import (
    apply_givens,
    apply_givens_sequence,
    cayley,
    givens_directional_derivatives,
    givens_matrix,
    orthogonality_error,
    procrustes,
    reorthogonalize,
)
from .sparse import SparsePattern
from .svd import (
    approx_svt,
    exact_svt,
    orthonormalize,
    partial_svd,
    power_method,
    shrink,
    svt,
    thin_svd,
    warm_start_basis,
)

__all__ = [
    "DenseOperator",
    "SparsePattern",
    "SparsePlusLowRank",
    "apply_givens",
    "apply_givens_sequence",
    "approx_svt",
    "cayley",
    "exact_svt",
    "givens_directional_derivatives",
    "givens_matrix",
    "orthogonality_error",
    "orthonormalize",
    "partial_svd",
    "power_method",
    "procrustes",
    "reorthogonalize",
    "shrink",
    "svt",
    "thin_svd",
    "warm_start_basis",
]
