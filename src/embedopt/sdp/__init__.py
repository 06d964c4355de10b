"""Low-rank semidefinite programs by bilinear factorization.

``min_{Z in S_+^n} f(Z)`` on factors: the biconvex surrogate
``f(X Y^T) + gamma/2 ||X - Y||_F^2`` solved by alternating accelerated
gradient descent (AAGD, Hu's Algorithm 1), the Burer-Monteiro baselines on
``f(V V^T)``, Frank-Wolfe under a trace bound (with Laue's local steps; it
chooses the rank), and nonparametric kernel learning (NPKL, eq. 13) as a
problem and an estimator, and colored maximum variance unfolding (CMVU,
eq. 23) likewise; :func:`solve_exact` is the dense CVXPY reference (optional
extra ``exact``) that certifies them on small instances.
"""

from .cmvu import CMVUProblem, knn_pairs, one_hot_labels
from .estimators import ColoredMVU, KernelLearning
from .frank_wolfe import FRANK_WOLFE_CONSTRAINTS, frank_wolfe
from .problems import (
    FactorGradient,
    FactorProblem,
    NPKLProblem,
    check_pairs,
    knn_laplacian,
    sample_pairs,
)
from .reference import EXACT_SOLVERS, solve_exact
from .solvers import (
    AAGD_CONSTRAINTS,
    BURER_MONTEIRO_CONSTRAINTS,
    SOLVERS,
    GammaEstimate,
    aagd,
    bm_agd,
    bm_lbfgs,
    burer_monteiro,
    estimate_gamma,
    initial_factors,
    quartic_step,
)

__all__ = [
    "AAGD_CONSTRAINTS",
    "BURER_MONTEIRO_CONSTRAINTS",
    "EXACT_SOLVERS",
    "FRANK_WOLFE_CONSTRAINTS",
    "SOLVERS",
    "CMVUProblem",
    "ColoredMVU",
    "FactorGradient",
    "FactorProblem",
    "GammaEstimate",
    "KernelLearning",
    "NPKLProblem",
    "aagd",
    "bm_agd",
    "bm_lbfgs",
    "burer_monteiro",
    "check_pairs",
    "estimate_gamma",
    "frank_wolfe",
    "initial_factors",
    "knn_laplacian",
    "knn_pairs",
    "one_hot_labels",
    "quartic_step",
    "sample_pairs",
    "solve_exact",
]
