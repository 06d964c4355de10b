"""The exact small-n reference: the same SDP on the dense n x n matrix, via CVXPY.

The paper compares its factor solvers with a general SDP solver (SQLP, its
Tables 2-3); here the general solver is CVXPY with SCS (first-order, splitting)
or Clarabel (interior point). It forms the n x n variable, so its memory is
``O(n^2)`` at least and each SCS iteration costs an ``O(n^3)`` eigen-
decomposition: a certificate for small instances, not a solver for large ones.

CVXPY is an optional dependency: ``pip install "embedopt[exact]"`` (or
``pip install cvxpy``); it is imported only when :func:`solve_exact` runs.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from .._core import (
    Interval,
    InvalidParameterError,
    Options,
    Registry,
    validated_params,
)
from ..optim import SolverResult
from .problem import CMVUProblem, NPKLProblem

__all__ = ["EXACT_SOLVERS", "solve_exact"]


def _scs_options(eps, max_iter, time_limit):
    out = {"eps_abs": eps, "eps_rel": eps}
    if max_iter is not None:
        out["max_iters"] = max_iter
    if time_limit is not None:
        out["time_limit_secs"] = time_limit
    return out


def _clarabel_options(eps, max_iter, time_limit):
    out = {"tol_gap_abs": eps, "tol_gap_rel": eps, "tol_feas": eps}
    if max_iter is not None:
        out["max_iter"] = max_iter
    if time_limit is not None:
        out["time_limit"] = time_limit
    return out


#: Conic solvers of :func:`solve_exact` by name: each entry maps
#: ``(eps, max_iter, time_limit)`` to that solver's CVXPY keyword options.
EXACT_SOLVERS = Registry(
    "exact solver",
    {"scs": _scs_options, "clarabel": _clarabel_options},
    owner="embedopt.sdp.solve_exact",
)

#: CVXPY's name and the pip package of each solver.
_CVXPY_NAMES = {"scs": ("SCS", "scs"), "clarabel": ("CLARABEL", "clarabel")}

_CONSTRAINTS = {
    "solver": [Options(EXACT_SOLVERS)],
    "eps": [Interval(float, 0, None, closed="neither")],
    "max_iter": [Interval(int, 1, None), None],
    "time_limit": [Interval(float, 0, None, closed="neither"), None],
    "verbose": ["boolean", Interval(int, 0, None)],
}


def _import_cvxpy():
    try:
        import cvxpy
    except ImportError as exc:
        raise ImportError(
            "solve_exact needs CVXPY, an optional dependency of embedopt: "
            'pip install "embedopt[exact]" (or pip install cvxpy).'
        ) from exc
    return cvxpy


def _npkl_objective(cp, problem: NPKLProblem, Z):
    """Eq. 13 on the symmetric variable Z: one gather per pair, the Laplacian's nnz."""
    i, j = problem.rows.cpu().numpy(), problem.cols.cpu().numpy()
    target = problem.target.double().cpu().numpy()
    # Omega holds the diagonal and each pair once, all with weight 1/2 (eq. 13)
    objective = 0.5 * cp.sum_squares(Z[i, j] - target)
    if problem.laplacian is not None:
        lap = problem.laplacian.to_sparse_coo().coalesce()
        rows, cols = lap.indices().cpu().numpy()
        values = problem.lam * lap.values().double().cpu().numpy()
        # tr(Z Lap) = sum over the nonzeros of Lap of Lap_ij Z_ij (both symmetric)
        objective = objective + values @ Z[rows, cols]
    return objective, []


def _cmvu_objective(cp, problem: CMVUProblem, Z):
    """Eq. 23 on the symmetric variable Z, with the centering ``sum(Z) = 0``.

    ``Z -> H Z H`` keeps every ``E_p^T Z E_p`` (``H E_p = E_p``) and
    ``tr(H Z H K)``, and keeps Z PSD: the constraint removes the free
    direction ``Z + a 1 1^T`` of eq. 23 without changing its optimum.
    """
    n = problem.n
    i, j = problem.rows.cpu().numpy(), problem.cols.cpu().numpy()
    d = problem.sqdist.double().cpu().numpy()
    dist = Z[i, i] + Z[j, j] - 2 * Z[i, j]
    objective = 0.5 * cp.sum_squares(dist - d)
    if problem.labels is None:  # K = I: tr(H Z H) = tr(Z) - sum(Z) / n
        dependence = cp.trace(Z) - cp.sum(Z) / n
    else:  # tr(H Z H Lb Lb^T) = tr(M^T Z M) with M = H Lb, n x c
        M = problem.labels.double().cpu().numpy()
        M = M - M.mean(0, keepdims=True)
        dependence = cp.trace(M.T @ Z @ M)
    return objective - problem.lam * dependence, [cp.sum(Z) == 0]


@validated_params(_CONSTRAINTS, owner="solve_exact")
def solve_exact(
    problem: NPKLProblem | CMVUProblem,
    *,
    max_iter: int | None = None,
    verbose: bool | int = False,
    solver: str = "scs",
    eps: float = 1e-8,
    time_limit: float | None = None,
) -> SolverResult:
    """Solve ``min_{Z PSD} f(Z)`` on the dense n x n matrix with CVXPY.

    The exact reference of the paper's SQLP row, for certifying the factor
    solvers on small instances: the same objective (NPKL, eq. 13, or CMVU,
    eq. 23, read from ``problem``) over the PSD cone, handed to a conic
    solver. Its solution Z is projected onto the PSD cone (the conic solver
    satisfies the cone constraint only to its tolerance) and returned as a
    factor, so that ``objective`` is f at a PSD matrix, evaluated by the
    problem's own oracle like every other solver of :mod:`embedopt.sdp`.

    Cost: memory ``O(n^2)`` (SCS) to ``O(n^4)`` (Clarabel's KKT system),
    and SCS spends an ``O(n^3)`` eigendecomposition per iteration: minutes
    where the factor solvers take a fraction of a second
    (benchmarks/sdp/certify_digits.py re-measures both).

    Parameters
    ----------
    problem : NPKLProblem or CMVUProblem
    max_iter : int, optional
        Iteration limit of the solver (its own default when None).
    verbose : bool
        Print the solver's log (CVXPY's ``verbose``).
    solver : {"scs", "clarabel"}
        Conic solver (any spelling: ``"SCS"`` finds ``"scs"``).
    eps : float
        The solver's tolerances: SCS's ``eps_abs`` and ``eps_rel``,
        Clarabel's gap and feasibility tolerances.
    time_limit : float, optional
        Seconds after which the solver stops with its current iterate
        (status ``"optimal_inaccurate"`` or ``"user_limit"``).

    Returns
    -------
    SolverResult
        ``x``: a factor V (n x k, k the number of positive eigenvalues of
        the solver's Z) with ``V V^T`` the PSD projection of Z; ``history``:
        one row (``iteration``: the solver's iterations, ``time``: its solve
        time, ``objective``: ``f(V V^T)``); ``stop_reason``: ``"tol"`` when
        CVXPY reports ``"optimal"``, else CVXPY's status. ``elapsed``: wall
        seconds including CVXPY's compilation. ``info``: ``Z`` (the
        solver's n x n matrix, NumPy), ``status``, ``solver_objective``
        (the solver's value of f), ``solve_time``, ``setup_time``,
        ``solver`` (CVXPY's name).

    Raises
    ------
    ImportError
        If CVXPY, or the chosen solver's package, is not installed.
    InvalidParameterError
        If ``problem`` is neither an NPKL nor a CMVU problem, or a parameter
        is invalid.
    RuntimeError
        If the solver returns no iterate at all (e.g. a time limit before its
        first iteration).
    """
    build = _objective_builder(problem)
    key = EXACT_SOLVERS.resolve_name(solver)
    cp = _import_cvxpy()
    name, package = _CVXPY_NAMES[key]
    if name not in cp.installed_solvers():
        raise ImportError(
            f"solve_exact(solver={solver!r}) needs the {name} solver: "
            f"pip install {package}."
        )
    options = EXACT_SOLVERS.get(key)(eps, max_iter, time_limit)
    start = time.perf_counter()
    Z = cp.Variable((problem.n, problem.n), PSD=True)
    objective, constraints = build(cp, problem, Z)
    program = cp.Problem(cp.Minimize(objective), constraints)
    program.solve(solver=name, verbose=bool(verbose), **options)
    elapsed = time.perf_counter() - start
    if Z.value is None:
        raise RuntimeError(
            f"{name} returned no solution (status {program.status!r}); raise "
            "'time_limit' or 'max_iter', or try the other solver."
        )
    return _exact_result(problem, program, Z.value, elapsed, name)


def _objective_builder(problem):
    """The CVXPY objective writer of ``problem``'s type (NPKL or CMVU)."""
    if isinstance(problem, NPKLProblem):
        return _npkl_objective
    if isinstance(problem, CMVUProblem):
        return _cmvu_objective
    raise InvalidParameterError(
        "The 'problem' parameter of solve_exact must be an NPKLProblem or a "
        f"CMVUProblem (the SDPs it can write in CVXPY). Got "
        f"{type(problem).__name__}."
    )


def _exact_result(problem, program, Z, elapsed: float, name: str) -> SolverResult:
    """The :class:`SolverResult` of :func:`solve_exact` from CVXPY's solution Z."""
    Zv = np.asarray(Z, dtype=np.float64)
    w, U = np.linalg.eigh(0.5 * (Zv + Zv.T))
    keep = w > 0
    if not keep.any():  # Z = 0: one zero column keeps the factor's shape valid
        keep[-1], w[-1] = True, 0.0
    V = torch.as_tensor(U[:, keep] * np.sqrt(w[keep]), dtype=problem.dtype)
    V = V.to(problem.device)
    stats = program.solver_stats
    n_iter = int(stats.num_iters or 0)
    solve_time = float(stats.solve_time or elapsed)
    history = {
        "iteration": np.array([n_iter]),
        "time": np.array([solve_time]),
        "objective": np.array([problem.value(V, V)]),
    }
    status = program.status
    return SolverResult(
        x=V,
        n_iter=n_iter,
        stop_reason="tol" if status == "optimal" else status,
        history=history,
        elapsed=elapsed,
        info={
            "Z": Zv,
            "status": status,
            "solver_objective": float(program.value),
            "solve_time": solve_time,
            "setup_time": float(stats.setup_time or 0.0),
            "solver": name,
        },
    )
