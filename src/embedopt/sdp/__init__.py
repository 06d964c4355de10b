"""Low-rank semidefinite programs by bilinear factorization.

``min_{Z in S_+^n} f(Z)`` on factors: the biconvex surrogate
``f(X Y^T) + gamma/2 ||X - Y||_F^2`` solved by alternating accelerated
gradient descent (AAGD, Hu's Algorithm 1), the Burer-Monteiro baselines on
``f(V V^T)``, Frank-Wolfe under a trace bound (with Laue's local steps; it
chooses the rank), and nonparametric kernel learning (NPKL, eq. 13) as a
problem and an estimator, and colored maximum variance unfolding (CMVU,
eq. 23) likewise; :func:`solve_exact` is the dense CVXPY reference (optional
extra ``exact``) that certifies them on small instances.

Modules: ``problem`` (the problems), ``graphs`` (their kNN graphs),
``solvers`` (AAGD, BM-L-BFGS, the registry and the estimators' policy),
``gamma`` (AAGD's penalty estimate), ``baselines`` (BM-AGD, Frank-Wolfe),
``reference`` (the CVXPY reference), ``estimators``.
"""

from .baselines import (
    BURER_MONTEIRO_CONSTRAINTS,
    FRANK_WOLFE_CONSTRAINTS,
    bm_agd,
    burer_monteiro,
    frank_wolfe,
    quartic_step,
)
from .estimators import ColoredMVU, KernelLearning, kernel_kmeans
from .gamma import GammaEstimate, estimate_gamma
from .graphs import knn_laplacian, knn_pairs
from .problem import (
    CMVUProblem,
    FactorGradient,
    FactorProblem,
    NPKLProblem,
    check_pairs,
    one_hot_labels,
    sample_pairs,
)
from .reference import EXACT_SOLVERS, solve_exact
from .solvers import (
    AAGD_CONSTRAINTS,
    BM_LBFGS_CONSTRAINTS,
    SOLVERS,
    aagd,
    bm_lbfgs,
    default_tol,
    get_solver,
    initial_factors,
    resolve_solver,
    select_lam,
)

__all__ = [
    "AAGD_CONSTRAINTS",
    "BM_LBFGS_CONSTRAINTS",
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
    "default_tol",
    "estimate_gamma",
    "frank_wolfe",
    "get_solver",
    "initial_factors",
    "kernel_kmeans",
    "knn_laplacian",
    "knn_pairs",
    "one_hot_labels",
    "quartic_step",
    "resolve_solver",
    "sample_pairs",
    "select_lam",
    "solve_exact",
]
