"""Linear algebra kernels: sparse patterns, structured operators, SVT."""

from .operators import DenseOperator, SparsePlusLowRank
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
    "approx_svt",
    "exact_svt",
    "orthonormalize",
    "partial_svd",
    "power_method",
    "shrink",
    "svt",
    "thin_svd",
    "warm_start_basis",
]
