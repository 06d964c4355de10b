"""Linear algebra kernels: sparse patterns, structured operators, SVT, rotations,
conjugate gradient, PSD projections, and arithmetic on points (tensors or
tuples of tensors, in :mod:`embedopt.linalg.points`)."""

from . import points
from .cg import CGResult, cg
from .diagonal import hutchinson_diagonal
from .distributed import Communicator, sharded_orthonormalize
from .normal_equations import (
    psd_solve,
    sparse_normal_equations,
    sparse_normal_equations_cg,
)
from .operators import DenseOperator, MatrixOperator, SparsePlusLowRank
from .psd import embedding_from_gram, project_centered_psd, project_psd
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
from .sparse import SparsePattern, csr_tensor
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
from .topk import top_k_inner_products

__all__ = [
    "CGResult",
    "Communicator",
    "DenseOperator",
    "MatrixOperator",
    "SparsePattern",
    "SparsePlusLowRank",
    "apply_givens",
    "apply_givens_sequence",
    "approx_svt",
    "cayley",
    "cg",
    "csr_tensor",
    "embedding_from_gram",
    "exact_svt",
    "givens_directional_derivatives",
    "givens_matrix",
    "hutchinson_diagonal",
    "orthogonality_error",
    "orthonormalize",
    "partial_svd",
    "points",
    "power_method",
    "procrustes",
    "project_centered_psd",
    "project_psd",
    "psd_solve",
    "reorthogonalize",
    "sharded_orthonormalize",
    "shrink",
    "sparse_normal_equations",
    "sparse_normal_equations_cg",
    "svt",
    "thin_svd",
    "top_k_inner_products",
    "warm_start_basis",
]
