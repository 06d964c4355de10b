"""The comparison methods of the paper: Burer-Monteiro and Frank-Wolfe.

- :func:`bm_agd` (and :func:`burer_monteiro`, either Burer-Monteiro method by
  name): accelerated gradient on ``f(V V^T)`` (eq. 2) with the exact quartic
  line search of Burer & Choi (:func:`quartic_step`) for quadratic f, Armijo
  otherwise;
- :func:`frank_wolfe`: Frank-Wolfe with rank-one updates on
  ``{Z PSD, tr(Z) <= tau}`` (Jaggi, 2013), with Laue's local steps.

Same call shape as :mod:`embedopt.sdp.solvers` (problem, ``init``, the
shared run options, then the method's own); ``bm_agd`` joins
:data:`~embedopt.sdp.SOLVERS`.

Frank-Wolfe. The paper's FW baseline (Sec. 5) solves eq. 1 under a trace
bound: the linear minimization over the bounded PSD set is
``argmin_S <G, S> = tau v v^T`` with v the eigenvector of the smallest
eigenvalue of ``G = nabla f(Z)`` (or ``S = 0`` when that eigenvalue is
non-negative), so Z grows by one rank per iteration and stays a factor
``Z = V V^T``: ``V <- [sqrt(1 - alpha) V, sqrt(alpha tau) v]``. The step
alpha is the exact minimizer along ``S - Z`` for quadratic f (clipped to
[0, 1]) and ``2 / (k + 2)`` otherwise. The rank it reaches is the r that the
paper hands to the other solvers. Plain FW converges sublinearly and slowly
when the optimum lies inside the trace ball; Laue's hybrid (2012), the
paper's "accelerated FW", follows each FW step with local steps on the
factor: here ``local_steps`` Burer-Monteiro gradient steps with the exact
quartic line search (quadratic f) or Armijo, which never increase f, kept
inside the trace bound by rescaling.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import scipy.sparse.linalg as spla
import torch

from .._core import (
    DeviceLike,
    DtypeLike,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    check_param,
    fill_doc,
    validated_params,
)
from ..optim import (
    IterationMonitor,
    IterationState,
    SolverResult,
    accelerated_proximal_gradient,
    armijo_backtracking,
)
from .problem import FactorGradient, FactorProblem
from .solvers import (
    _BM_INIT_DOC,
    _BM_RETURNS_DOC,
    _COMMON,
    RUN_OPTIONS_DOC,
    SOLVERS,
    FactorInit,
    _bm_gradient,
    _dot,
    _sq,
    _start_run,
    bm_lbfgs,
)

__all__ = [
    "BURER_MONTEIRO_CONSTRAINTS",
    "FRANK_WOLFE_CONSTRAINTS",
    "bm_agd",
    "burer_monteiro",
    "frank_wolfe",
    "quartic_step",
]

#: Constraints of :func:`bm_agd`'s parameters.
BM_AGD_CONSTRAINTS = dict(_COMMON)

#: Constraints of :func:`burer_monteiro`'s parameters.
BURER_MONTEIRO_CONSTRAINTS = {
    **_COMMON,
    "method": [Options(["agd", "lbfgs"])],
    "history_size": [Interval(int, 1, None)],
}

#: Constraints of :func:`frank_wolfe`'s parameters.
FRANK_WOLFE_CONSTRAINTS = {
    **_COMMON,
    "trace_bound": [Interval(float, 0, None, closed="neither"), None],
    "rank_tol": [Interval(float, 0, None)],
    "local_steps": [Interval(int, 0, None)],
}


# -- Burer-Monteiro ----------------------------------------------------------------
def quartic_step(
    problem: FactorProblem,
    V: torch.Tensor,
    D: torch.Tensor,
    gradient: FactorGradient | None = None,
) -> float:
    """Exact minimizer ``t >= 0`` of ``f((V + t D)(V + t D)^T)`` for quadratic f.

    With ``Z_0 = V V^T``, ``E_1 = D V^T + V D^T`` and ``E_2 = D D^T``,
    ``phi(t) - phi(0) = a_1 t + (a_2 + q_1/2) t^2 + b t^3 + q_2/2 t^4`` where
    ``a_i = <G, E_i>``, ``q_i = q(E_i)`` and ``b`` the bilinear curvature of
    ``E_1, E_2`` (Burer & Choi, 2006); the minimizer is the best real root of
    the cubic ``phi'``. Costs one product with G and three curvatures of
    factors with at most 3r columns.

    Parameters
    ----------
    problem : FactorProblem
        With ``quadratic = True``.
    V, D : torch.Tensor, shape (n, r)
        The point and a descent direction.
    gradient : FactorGradient, optional
        The gradient at ``V V^T`` (computed when omitted).

    Returns
    -------
    float
        The step (0 when no positive step decreases f).
    """
    g = problem.gradient(V, V) if gradient is None else gradient
    a1 = _dot(D, g.matmul(V)) + _dot(V, g.matmul(D))
    a2 = _dot(D, g.matmul(D))
    q1 = problem.curvature(torch.cat([D, V], 1), torch.cat([V, D], 1))
    q2 = problem.curvature(D, D)
    q12 = problem.curvature(torch.cat([D, V, D], 1), torch.cat([V, D, D], 1))
    b = 0.5 * (q12 - q1 - q2)
    coef = [q2 / 2.0, b, a2 + q1 / 2.0, a1, 0.0]  # phi(t) - phi(0), highest first
    roots = np.roots(np.polyder(coef)) if any(coef[:-2]) else np.array([])
    cands = [0.0] + [
        r.real for r in roots if abs(r.imag) <= 1e-10 * (1 + abs(r)) and r.real > 0
    ]
    return min(cands, key=lambda s: np.polyval(coef, s))


class _BurerMonteiroStep:
    """The step of ``accelerated_proximal_gradient`` on ``f(V V^T)``.

    ``V+ = Y - t nabla f_BM(Y)`` from the extrapolated point ``Y``, with
    ``nabla f_BM(Y) = (G + G^T) Y`` (eq. 9) and t the exact quartic minimizer
    (quadratic f) or Armijo's step.
    """

    step_name = "Burer-Monteiro gradient step"

    def __init__(self, problem):
        self.problem = problem
        self.last_step = 1.0
        self.last_grad_norm = math.nan

    def smooth(self, V) -> float:
        return self.problem.value(V, V)

    def penalty(self, V, weight: float) -> float:
        return 0.0

    def step(self, V, V_prev, theta: float, weight: float):
        Y = V + theta * (V - V_prev)
        g = self.problem.gradient(Y, Y)
        grad = _bm_gradient(g, Y)
        self.last_grad_norm = math.sqrt(_sq(grad))
        if self.problem.quadratic:
            t = quartic_step(self.problem, Y, -grad, g)
            new = Y - t * grad
        else:
            ls = armijo_backtracking(
                self.smooth, Y, g.value, grad, -grad, step=min(2 * self.last_step, 1e12)
            )
            t, new = ls.step, ls.x
        self.last_step = t or self.last_step
        return new

    def describe(self, V, weight: float) -> dict:
        return {"step": self.last_step, "grad_norm": self.last_grad_norm}

    def solution(self, V):
        return V


@fill_doc(run_options=RUN_OPTIONS_DOC, bm_init=_BM_INIT_DOC, bm_returns=_BM_RETURNS_DOC)
@validated_params(BM_AGD_CONSTRAINTS, owner="bm_agd")
def bm_agd(
    problem: FactorProblem,
    init: FactorInit,
    *,
    max_iter: int = 1000,
    tol: float = 1e-7,
    random_state: RandomStateLike = None,
    device: DeviceLike = None,
    dtype: DtypeLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    target: float | None = None,
    time_limit: float | None = None,
    init_scale: float = 1.0,
) -> SolverResult:
    """Burer-Monteiro on ``f(V V^T)`` (eq. 2) with accelerated gradient.

    Nesterov momentum with function-value restart (through
    :func:`~embedopt.optim.accelerated_proximal_gradient`) with the exact
    line search of the quartic ``t -> f((V - t g)(V - t g)^T)`` for
    quadratic f (:func:`quartic_step`, Burer & Choi) and Armijo
    backtracking otherwise: the paper's AGD baseline. A callback's
    ``state.x`` is V.

    Parameters
    ----------
    problem : FactorProblem
    {bm_init}
    {run_options}

    {bm_returns}
    """
    V0, _, stopper = _start_run(
        problem,
        init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
        stop=(target, time_limit, callback),
    )
    result = accelerated_proximal_gradient(
        _BurerMonteiroStep(problem),
        V0,
        name="BM-AGD",
        max_iter=max_iter,
        tol=tol,
        verbose=verbose,
        callback=stopper,
        owner="bm_agd",
    )
    return stopper.finish(result)


SOLVERS.add("bm_agd", bm_agd)


@fill_doc(bm_init=_BM_INIT_DOC, bm_returns=_BM_RETURNS_DOC)
def burer_monteiro(
    problem: FactorProblem, init: FactorInit, *, method: str = "agd", **options
) -> SolverResult:
    """Burer-Monteiro on ``f(V V^T)`` (eq. 2), either method by name.

    - ``method="agd"``: :func:`bm_agd`, the paper's AGD baseline;
    - ``method="lbfgs"``: :func:`~embedopt.sdp.bm_lbfgs`, L-BFGS as in
      Burer & Monteiro.

    Parameters
    ----------
    problem : FactorProblem
    {bm_init}
    method : {"agd", "lbfgs"}
    **options
        The run options and the method's own, as the method takes them
        (``history_size``, L-BFGS's correction pairs, is ignored by
        ``"agd"``).

    {bm_returns}
    """
    check_param(
        "burer_monteiro", "method", method, BURER_MONTEIRO_CONSTRAINTS["method"]
    )
    if method == "agd":
        options.pop("history_size", None)
        return bm_agd(problem, init, **options)
    return bm_lbfgs(problem, init, **options)


# -- Frank-Wolfe -------------------------------------------------------------------


def _smallest_eigenpair(g, n: int, v0: np.ndarray | None, like: torch.Tensor):
    """Smallest eigenvalue and eigenvector of ``sym(G)`` by Lanczos (ARPACK)."""

    def matvec(x):
        w = torch.as_tensor(np.asarray(x).reshape(n, 1), dtype=like.dtype)
        w = w.to(like.device)
        out = g.matmul(w) if g.symmetric else 0.5 * (g.matmul(w) + g.rmatmul(w))
        return out.double().cpu().numpy().ravel()

    op = spla.LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    if n <= 3:  # ARPACK needs k < n - 1: tiny problems go dense
        dense = np.column_stack([matvec(e) for e in np.eye(n)])
        w, U = np.linalg.eigh(0.5 * (dense + dense.T))
        return float(w[0]), U[:, 0]
    w, U = spla.eigsh(op, k=1, which="SA", v0=v0, tol=1e-10, maxiter=10 * n)
    return float(w[0]), U[:, 0]


def _compress(V: torch.Tensor, rank_tol: float) -> torch.Tensor:
    """The same ``V V^T`` with the fewest columns: drop directions below rank_tol."""
    if V.shape[1] <= 1:
        return V
    w, Q = torch.linalg.eigh(V.T @ V)
    keep = w > rank_tol * max(float(w[-1]), 1e-300)
    if not bool(keep.any()):  # Z = 0: one zero column keeps the shapes valid
        return torch.zeros_like(V[:, :1])
    return (V @ Q[:, keep]).contiguous()


def _fw_step(problem, V: torch.Tensor, tau: float, v0, k: int):
    """One FW step from ``Z = V V^T``: the new factor, alpha, <G, S - Z>, lambda."""
    g = problem.gradient(V, V)
    lam, v_np = _smallest_eigenpair(g, problem.n, v0, V)
    v = torch.as_tensor(v_np, dtype=V.dtype, device=V.device).reshape(-1, 1)
    u = (math.sqrt(tau) if lam < 0 else 0.0) * v  # S = u u^T
    # <G, S - Z> = u^T G u - <G V, V>
    slope = float((u * g.matmul(u)).sum()) - float((g.matmul(V) * V).sum())
    if problem.quadratic:
        curv = problem.curvature(torch.cat([u, V], 1), torch.cat([u, -V], 1))
        alpha = 1.0 if curv <= 0 else min(max(-slope / curv, 0.0), 1.0)
    else:
        alpha = 2.0 / (k + 2.0)
    new = torch.cat([math.sqrt(1.0 - alpha) * V, math.sqrt(alpha) * u], 1)
    return new, alpha, slope, lam, v_np


def _local_steps(step: _BurerMonteiroStep, V: torch.Tensor, n_steps: int, tau: float):
    """Laue's local phase: descent steps on ``f(V V^T)``, inside ``tr <= tau``."""
    f = step.smooth(V)
    for _ in range(n_steps):
        new = step.step(V, V, 0.0, 0.0)
        trace = float((new * new).sum())
        if trace > tau:
            new = new * math.sqrt(tau / trace)
        f_new = step.smooth(new)
        if not f_new < f:  # the exact step never increases f; a rescaled one may
            break
        V, f = new, f_new
    return V


@fill_doc(run_options=RUN_OPTIONS_DOC)
@validated_params(FRANK_WOLFE_CONSTRAINTS, owner="frank_wolfe")
def frank_wolfe(
    problem: FactorProblem,
    init: FactorInit | None = None,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state: RandomStateLike = None,
    device: DeviceLike = None,
    dtype: DtypeLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    target: float | None = None,
    time_limit: float | None = None,
    init_scale: float = 1.0,
    trace_bound: float | None = None,
    local_steps: int = 10,
    rank_tol: float = 1e-12,
) -> SolverResult:
    """Frank-Wolfe on ``min f(Z)`` over ``{Z PSD, tr(Z) <= trace_bound}``.

    Iteration k: ``G = nabla f(V V^T)``; ``(lambda, v)`` the smallest
    eigenpair of ``sym(G)`` (Lanczos on the gradient operator, one product
    of G with a vector per step); ``S = trace_bound v v^T`` if
    ``lambda < 0`` else 0; ``Z <- Z + alpha (S - Z)`` with alpha exact for
    quadratic f (``-<G, S - Z> / q(S - Z)`` clipped to [0, 1], the curvature
    of the factors ``[sqrt(tau) v, V] [sqrt(tau) v, -V]^T``), else
    ``2 / (k + 2)``. The factor is re-compressed to its numerical rank
    every iteration. The duality gap ``<G, Z - S> >= f(Z) - f*`` is
    recorded. The paper stops FW at a relative objective change of 1e-6
    (``tol``).

    Parameters
    ----------
    problem : FactorProblem
    init : None, int or array-like (n, r)
        None starts from ``Z = 0``; otherwise a starting factor as in
        :func:`~embedopt.sdp.initial_factors` (rescaled into the trace
        bound when needed).
    {run_options}
    trace_bound : float, optional
        tau; the unconstrained SDP is solved when ``tau >= tr(Z*)``. Default
        the problem's ``trace_bound`` (:attr:`NPKLProblem.trace_bound
        <embedopt.sdp.NPKLProblem.trace_bound>`).
    local_steps : int
        Burer-Monteiro steps on the factor after each FW step (Laue's
        hybrid); 0 is plain FW.
    rank_tol : float
        Relative eigenvalue of ``V^T V`` below which a direction is dropped.

    Returns
    -------
    SolverResult
        ``x``: V with ``Z = V V^T`` (its columns: the rank FW chose).
        History: ``objective``, ``gap`` (duality gap), ``rank``, ``step``,
        ``eigenvalue``.
    """
    if trace_bound is None:
        trace_bound = getattr(problem, "trace_bound", None)
        if trace_bound is None:
            raise InvalidParameterError(
                "frank_wolfe needs 'trace_bound': this problem has no "
                "trace_bound attribute to default to."
            )
    tau = float(trace_bound)
    V, _, stopper = _start_run(
        problem,
        1 if init is None else init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
        stop=(target, time_limit, callback),
    )
    if init is None:
        V = torch.zeros_like(V)
    trace = float((V * V).sum())
    if trace > tau:
        V = V * math.sqrt(tau / trace)
    monitor = IterationMonitor(
        "Frank-Wolfe",
        max_iter,
        tol,
        verbose=verbose,
        callback=stopper,
        owner="frank_wolfe",
    )
    local = _BurerMonteiroStep(problem)
    v0 = None
    for k in monitor:
        V, alpha, slope, lam, v0 = _fw_step(problem, V, tau, v0, k)
        V = _compress(V, rank_tol)
        V = _local_steps(local, V, local_steps, tau)
        record = {
            "objective": problem.value(V, V),
            "gap": -slope,  # <G, Z - S> >= f(Z) - f*
            "rank": V.shape[1],
            "step": alpha,
            "eigenvalue": lam,
        }
        if monitor.record(V, **record):
            break
    return stopper.finish(monitor.result(V))
