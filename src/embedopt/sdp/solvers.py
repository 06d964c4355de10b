"""The solvers of ``min_{Z in S_+^n} f(Z)`` on low-rank factors, and their policy.

- :func:`aagd`: the paper's method (Algorithm 1), alternating accelerated
  gradient steps on X then Y of the biconvex surrogate (eq. 3)
  ``F(X, Y; gamma) = f(X Y^T) + gamma/2 ||X - Y||_F^2``;
- :func:`bm_lbfgs`: Burer-Monteiro on ``f(V V^T)`` (eq. 2) with L-BFGS, what
  ``solver="auto"`` runs on the CPU (:func:`resolve_solver`).

The comparison methods of the paper (Burer-Monteiro with accelerated
gradient, Frank-Wolfe) are in :mod:`embedopt.sdp.baselines`; every one of
them is in the one registry :data:`SOLVERS` (:func:`get_solver`).

One call shape: ``solver(problem, init, *, max_iter, tol, random_state,
device, dtype, verbose, callback, <the method's own>)``. Every solver takes a
:class:`~embedopt.sdp.FactorProblem`, the same starting factor (``init``; an
int r draws it, :func:`initial_factors`), the same stopping rules (relative
objective change ``tol``, ``max_iter``, and the family's ``target``
objective and ``time_limit``) and records ``objective = f(Z)`` at the
factor it returns, so that runs are compared on one scale. They return the
factor, never Z.

The policy of the estimators lives here too, in named functions:
:func:`resolve_solver` (what ``solver="auto"`` runs), :func:`default_tol`
(``tol=None``) and :func:`select_lam` (``lam="auto"`` of
:class:`~embedopt.sdp.KernelLearning`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._core import (
    PROGRESS_CONSTRAINTS,
    DeviceLike,
    DtypeLike,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    Registry,
    fill_doc,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
    validated_params,
)
from ..optim import (
    IterationMonitor,
    IterationState,
    SolverResult,
    armijo_backtracking,
    lbfgs,
)
from .gamma import (
    _COLD_POWER_ITER,
    _WARM_POWER_ITER,
    GammaEstimate,
    _gamma_from_norm,
    _generic_start,
    _settle,
    estimate_gamma,
)
from .problem import CMVUProblem, FactorProblem, NPKLProblem

__all__ = [
    "AAGD_CONSTRAINTS",
    "BM_LBFGS_CONSTRAINTS",
    "SOLVERS",
    "aagd",
    "bm_lbfgs",
    "default_tol",
    "get_solver",
    "initial_factors",
    "resolve_solver",
    "select_lam",
]

#: A start of the factor solvers (:func:`initial_factors`): the rank r, one
#: (n, r) factor, or a pair of them.
FactorInit = (
    int
    | ArrayLike
    | torch.Tensor
    | tuple[ArrayLike | torch.Tensor, ArrayLike | torch.Tensor]
)


#: Solvers by name: ``SOLVERS.get(name)(problem, init, **options)``; the
#: baselines (:mod:`embedopt.sdp.baselines`) add theirs.
SOLVERS = Registry("solver", owner="embedopt.sdp")

#: Constraints of the options every solver of the family takes.
_COMMON = {
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "random_state": ["random_state"],
    "device": ["device", None],
    "dtype": ["dtype", None],
    **PROGRESS_CONSTRAINTS,
    "target": [Interval(float, None, None), None],
    "time_limit": [Interval(float, 0, None, closed="neither"), None],
    "init_scale": [Interval(float, 0, None, closed="neither")],
}

#: The Parameters block of the options every solver of the family takes
#: (``{run_options}`` in a docstring), after ``problem`` and ``init``.
RUN_OPTIONS_DOC = """\
max_iter : int
    Iterations (for AAGD, one X and one Y step each).
tol : float
    Relative change of the objective that stops.
random_state, device, dtype
    Of the random start (:func:`~embedopt.sdp.initial_factors`); float64 by
    default.
verbose : int
callback : callable, optional
    ``callback(state) -> bool | None`` per iteration; True stops.
target : float, optional
    Stop once the objective is at most ``target`` (the paper stops every
    solver at Frank-Wolfe's final objective).
time_limit : float, optional
    Stop after this many solver seconds.
init_scale : float
    Row norm of the random start (:func:`~embedopt.sdp.initial_factors`)."""

#: The ``init`` of the Burer-Monteiro solvers (``{bm_init}``), which take one
#: factor V.
_BM_INIT_DOC = """\
init : int, array-like (n, r) or pair
    The rank r or the starting factor (of a pair, the first)."""

#: The Returns of the Burer-Monteiro solvers (``{bm_returns}``).
_BM_RETURNS_DOC = """\
Returns
-------
SolverResult
    ``x``: V, the factor of ``Z = V V^T``; history ``objective``
    (``f(V V^T)``) and ``step``/``grad_norm``."""

#: Constraints of :func:`aagd`'s parameters.
AAGD_CONSTRAINTS = {
    **_COMMON,
    "gamma": [Options(["auto", "eq17"]), Interval(float, 0, None, closed="neither")],
}

#: Constraints of :func:`bm_lbfgs`'s parameters.
BM_LBFGS_CONSTRAINTS = {**_COMMON, "history_size": [Interval(int, 1, None)]}


def get_solver(name: str) -> Callable[..., SolverResult]:
    """The solver registered as ``name`` in :data:`SOLVERS` (any spelling).

    Parameters
    ----------
    name : str
        ``"aagd"``, ``"bm_lbfgs"``, ``"bm_agd"`` (``"BM-AGD"`` finds it).

    Returns
    -------
    callable
        ``solver(problem, init, **options) -> SolverResult``.

    Raises
    ------
    InvalidParameterError
        An unknown name (the message lists the valid ones).
    """
    return SOLVERS.get(name)


# -- shared pieces -----------------------------------------------------------------
def initial_factors(
    problem: FactorProblem,
    init: FactorInit,
    *,
    init_scale: float = 1.0,
    random_state: RandomStateLike = None,
    device: DeviceLike = None,
    dtype: DtypeLike = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The starting factors ``(X_0, Y_0)`` of every solver.

    Parameters
    ----------
    problem : FactorProblem
    init : int, array-like of shape (n, r), or pair of them
        An int r draws ``X_0 = Y_0`` with i.i.d. ``N(0, init_scale^2 / r)``
        entries (rows of norm about ``init_scale``, the scale of a kernel
        with unit diagonal); one matrix gives ``X_0 = Y_0``; a pair gives
        both.
    init_scale : float
    random_state : None, int, numpy Generator or RandomState
    device : torch.device or str, optional
        Default: the problem's ``device`` (CPU when it has none).
    dtype : torch.dtype or str, optional
        Default: the problem's ``dtype``, else float64.

    Returns
    -------
    X0, Y0 : torch.Tensor, shape (n, r)

    Raises
    ------
    InvalidParameterError
        If r < 1 or r > n, or a given factor has the wrong number of rows.
    """
    device = resolve_device(device or getattr(problem, "device", "cpu"))
    dtype = resolve_dtype(dtype or getattr(problem, "dtype", torch.float64))
    n = problem.n
    if isinstance(init, (int, np.integer)) and not isinstance(init, bool):
        r = int(init)
        if not 1 <= r <= n:
            raise InvalidParameterError(
                f"The rank r of the factors must be an int in [1, {n}] (n = {n}). "
                f"Got {r}."
            )
        gen = resolve_random_state(random_state).torch(device)
        X0 = torch.randn(n, r, generator=gen, device=device, dtype=dtype)
        X0 *= init_scale / math.sqrt(r)
        return X0, X0.clone()
    pair = init if isinstance(init, tuple) else (init, init)
    out = []
    for F in pair:
        F = torch.as_tensor(np.asarray(F) if not torch.is_tensor(F) else F)
        F = F.to(device=device, dtype=dtype).clone()
        if F.ndim != 2 or F.shape[0] != n or not 1 <= F.shape[1] <= n:
            raise InvalidParameterError(
                f"A starting factor must have shape (n, r) with n = {n} and r in "
                f"[1, {n}]. Got {tuple(F.shape)}."
            )
        out.append(F)
    return out[0], out[1]


def _start_run(problem, init, *, init_scale, random_state, device, dtype, stop: tuple):
    """The starting factors ``(X_0, Y_0)`` (:func:`initial_factors`) and the
    stopping rules of a run: ``stop = (target, time_limit, callback)``, the
    target and time-limit rules wrapping the user's callback (:class:`_Stopper`).
    """
    X0, Y0 = initial_factors(
        problem,
        init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
    )
    return X0, Y0, _Stopper(*stop)


class _Stopper:
    """The target-objective and time-limit rules, as a callback around the user's.

    The relative-change rule is the monitor's own (``tol``); these two are
    tested on the recorded objective and solver time, and name themselves
    in ``stop_reason``.
    """

    def __init__(self, target, time_limit, callback):
        self.target, self.time_limit, self.callback = target, time_limit, callback
        self.reason = None

    def __call__(self, state) -> bool:
        if self.target is not None and state.objective <= self.target:
            self.reason = "target"
        elif self.time_limit is not None and state.elapsed >= self.time_limit:
            self.reason = "time_limit"
        user = self.callback(state) if self.callback is not None else None
        if user and self.reason is None:
            self.reason = "callback"
        return self.reason is not None

    def finish(self, result: SolverResult) -> SolverResult:
        if self.reason is not None:
            result.stop_reason = self.reason
        return result


def _sq(A: torch.Tensor) -> float:
    return float((A * A).sum(dtype=torch.float64))


def _dot(A: torch.Tensor, B: torch.Tensor) -> float:
    return float((A * B).sum(dtype=torch.float64))


# -- AAGD (Algorithm 1) ---------------------------------------------------------------
class _Block:
    """One block (X or Y) of Algorithm 1: iterate, previous iterate, last step."""

    def __init__(self, A: torch.Tensor):
        self.cur, self.prev, self.step = A, A.clone(), 1.0
        self.vector = None  # power-iteration warm start of eq. 17


def _half_step(problem, block: _Block, other: torch.Tensor, omega, gamma_rule, first):
    """Steps 4-6 (``first``: the X-block) or 7-9 of Algorithm 1.

    Returns the surrogate value at the new iterate and the gamma used.
    """
    A_hat = block.cur + omega * (block.cur - block.prev)  # step 5 / 8

    def pair(A):
        return (A, other) if first else (other, A)

    g = problem.gradient(*pair(A_hat))
    grad_f = g.matmul(other) if first else g.rmatmul(other)  # G Y or G^T X (eq. 29)
    if isinstance(gamma_rule, float):
        est = GammaEstimate(gamma_rule, math.nan, math.nan)
    else:  # steps 4 / 7: eq. 17-21 at the current point
        est = estimate_gamma(
            problem, *pair(A_hat), g, rule=gamma_rule, vector=block.vector
        )
        block.vector = est.vector
    gamma = est.gamma
    D = grad_f + gamma * (A_hat - other)  # nabla F (eq. 3)
    dd = _sq(D)
    F_hat = g.value + 0.5 * gamma * _sq(A_hat - other)
    if dd == 0.0:
        new, F_new, tau = A_hat, F_hat, 0.0
    elif problem.quadratic:
        # Proposition 2, eq. 22: tau = ||d||^2 / d^T A d,
        # with d^T A d = q(d B^T) + gamma ||d||^2
        curv = problem.curvature(*pair(D)) + gamma * dd
        tau = dd / curv
        new = A_hat - tau * D
        F_new = F_hat - 0.5 * dd * tau  # exact value of the quadratic at its minimizer
    else:

        def surrogate(A):
            return problem.value(*pair(A)) + 0.5 * gamma * _sq(A - other)

        ls = armijo_backtracking(
            surrogate, A_hat, F_hat, D, -D, step=min(2.0 * block.step, 1e12)
        )
        new, F_new, tau = ls.x, ls.value, ls.step
        if not ls.success:  # no decrease found (rounding level): stay
            new, F_new, tau = A_hat, F_hat, 0.0
    block.prev, block.cur, block.step = block.cur, new, tau or block.step
    return F_new, gamma, tau


class _Momentum:
    """Algorithm 1's iteration around the two half-steps of a subclass.

    The momentum schedule (eq. 12) with the function-value restart; a
    subclass computes the half-steps (``_half_steps``), drops its
    extrapolation after a restart (``_after``) and names its ``factors``.
    """

    def __init__(self):
        self.t_prev, self.F_prev = 1.0, math.inf

    def iterate(self, problem, rule) -> dict:
        """Steps 3-9 of Algorithm 1; the history values of the iteration."""
        t = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * self.t_prev**2))  # step 3, eq. 12
        omega = (self.t_prev - 1.0) / t
        F_new, gamma, tau_x, tau_y, gap = self._half_steps(problem, rule, omega)
        restart = F_new > self.F_prev
        self.t_prev = 1.0 if restart else t
        self.F_prev = F_new
        self._after(restart)
        Y = self.factors[1]
        return {
            "objective": problem.value(Y, Y),  # f at the returned factor
            "surrogate": F_new,
            "gap": gap,  # ||X_k - Y_k||_F, Figure 2
            "gamma": gamma,
            "step_x": tau_x,
            "step_y": tau_y,
            "restart": float(restart),
        }


class _AAGDState(_Momentum):
    """The iterates of Algorithm 1 (any f: :func:`_half_step`)."""

    def __init__(self, X: torch.Tensor, Y: torch.Tensor):
        super().__init__()
        self.x, self.y = _Block(X), _Block(Y)

    @property
    def factors(self):
        return self.x.cur, self.y.cur

    def _half_steps(self, problem, rule, omega):
        """Steps 4-9: ``(F_new, gamma, tau_x, tau_y, gap)``."""
        _, _, tau_x = _half_step(problem, self.x, self.y.cur, omega, rule, True)
        F_new, gamma, tau_y = _half_step(
            problem, self.y, self.x.cur, omega, rule, False
        )
        return F_new, gamma, tau_x, tau_y, math.sqrt(_sq(self.x.cur - self.y.cur))

    def _after(self, restart: bool) -> None:
        if restart:  # no extrapolation from the step that went up
            self.x.prev, self.y.prev = self.x.cur, self.y.cur


_PAIR_INTERFACE = ("pair_values", "cross_pair_values", "pair_gradient", "pair_target")


def _has_pair_interface(problem) -> bool:
    """Whether f is ``1/2 ||s(Z) - T||^2 + <C, Z>`` with bilinear pair values.

    Such a problem (:class:`~embedopt.sdp.NPKLProblem`) gives ``s(U, V)``
    (``pair_values``), several of them against one factor in one pass
    (``cross_pair_values``), the targets T (``pair_target``) and the gradient
    ``G = nabla f`` for given residuals as one sparse matrix
    (``pair_gradient``); :func:`aagd` then runs :class:`_PairAAGDState`.
    """
    return bool(getattr(problem, "quadratic", False)) and all(
        hasattr(problem, name) for name in _PAIR_INTERFACE
    )


class _PairAAGDState(_Momentum):
    """Algorithm 1 for ``f(Z) = 1/2 ||s(Z) - T||^2 + <C, Z>``, one pass per half-step.

    The same iterates as :class:`_AAGDState` (to rounding), computed with
    fewer passes over the pairs Omega. The pair values ``s(A, B)`` are
    bilinear and each half-step moves one factor along a known direction,
    ``A_k = A_{k-1} + omega dA_{k-1} - tau D``, so the solver tracks the four
    vectors ``S[:, a, b] = s(A_a, B_b)`` for ``A = (X, dX)`` and
    ``B = (Y, dY)`` (dX the last move of X): the residual at the
    extrapolated point (step 5 / 8) is ``S[:, 0, 0] + omega S[:, 1, 0] - T``
    without a pass, and one gather of ``[D, B, dB]`` (``cross_pair_values``)
    gives both the curvature ``q(D B^T) = ||s(D, B)||^2`` of the exact step
    (eq. 22) and the update of S. Per half-step: that gather and one sparse
    product ``G [B, v]``, which gives the gradient ``G B`` and one power
    iteration on G for the gamma estimate (eq. 17) together. The surrogate
    value for the restart test is ``<A_hat, G B> - ||r||^2 / 2 - <r, T>``
    (+ the penalty), free from the same product (``<A, S(r) B> = sum_p
    r_p s_p(A, B)``); only the objective ``f(Y_k Y_k^T)`` of the stopping
    rule costs its own pass. S is recomputed exactly every ``refresh``
    iterations (a restart zeroes its momentum columns exactly), so rounding
    cannot accumulate (after ``refresh - 1`` iterations tracked and fresh
    values agree to 1e-12 in float64; test
    ``test_tracked_pair_values_match_a_fresh_computation``).

    The gamma estimate (steps 4, 7) is that of :func:`estimate_gamma` with
    one change in when its power iteration stops: warm-started, the first
    iteration is the one fused into ``G [B, v]``, and it stops there when the
    estimate is within ``power_tol`` of the previous estimate of the same
    block (G has hardly moved); otherwise it continues on the current G
    until two successive estimates agree to ``power_tol`` (at most ten in
    all), as :func:`estimate_gamma` does. A power iteration only
    under-estimates ``||G||_2``, as before.
    """

    refresh = 32

    def __init__(self, problem, X, Y, rule, power_tol: float = 1e-2):
        super().__init__()
        self.problem, self.rule, self.power_tol = problem, rule, power_tol
        self.X, self.Y = X, Y
        self.dX, self.dY = torch.zeros_like(X), torch.zeros_like(Y)
        self.vector = [None, None]  # power-iteration vector per block
        self.norm = [None, None]  # its last ||G||_2 estimate
        self.k = 0
        self.G = None  # the gradient matrix, rebuilt in place every half-step
        self.recompute()

    def recompute(self):
        """``S[:, a, b] = s(A_a, B_b)`` from scratch (two passes)."""
        p = self.problem
        B = [self.Y, self.dY]
        self.S = torch.stack(
            [p.cross_pair_values(self.X, B), p.cross_pair_values(self.dX, B)], 1
        )

    def _power(self, G, GB_v, block: int, n_cols: int):
        """The ``||G||_2`` estimate after the fused product (see the class doc)."""
        tiny = torch.finfo(GB_v.dtype).tiny

        def step(v):
            w = G @ v
            est = float(w.norm())
            return est, w / max(est, tiny)

        Gv = GB_v[:, n_cols:]  # the fused first iteration
        est = float(Gv.norm())
        v = Gv / max(est, tiny)
        prev = self.norm[block]
        # the fused product was the first iteration; _settle runs at least one
        if prev is None:  # cold start: as many as estimate_gamma's
            fewest, most = _COLD_POWER_ITER
            for _ in range(fewest - 2):
                est, v = step(v)
            est, v = _settle(step, est, v, most - fewest + 1, self.power_tol)
        elif abs(est - prev) > self.power_tol * est:  # warm: at most as many
            est, v = _settle(step, est, v, _WARM_POWER_ITER[1] - 1, self.power_tol)
        self.vector[block], self.norm[block] = v, est
        return est

    def _gradient_and_gamma(self, G, A, A_hat, B, block: int, first: bool):
        """``G B`` and the gamma of steps 4 / 7: one sparse product ``G [B, v]``
        gives the gradient and the first power iteration of the estimate."""
        if isinstance(self.rule, float):
            return G @ B, self.rule
        r = B.shape[1]
        v = self.vector[block]
        if v is None:
            v = _generic_start(A)
        GBv = G @ torch.cat([B, v], 1)
        g_norm = self._power(G, GBv, block, r)
        pair = (A_hat, B) if first else (B, A_hat)
        gamma = _gamma_from_norm(self.problem, *pair, g_norm, self.rule).gamma
        return GBv[:, :r], gamma

    def _half_step(self, first: bool, omega: float):
        """Steps 4-6 (``first``) or 7-9 of Algorithm 1 on the tracked values."""
        p = self.problem
        if first:
            A, dA, B, dB, S = self.X, self.dX, self.Y, self.dY, self.S
        else:
            A, dA, B, dB = self.Y, self.dY, self.X, self.dX
            S = self.S.transpose(1, 2)  # a view: S[:, a, b] = s(Y_a, X_b)
        block = 0 if first else 1
        A_hat = torch.add(A, dA, alpha=omega) if omega else A  # step 5 / 8
        s_hat = torch.add(S[:, 0, 0], S[:, 1, 0], alpha=omega)  # s(A_hat, B)
        resid = s_hat - p.pair_target
        # G in place: the previous half-step's matrix is no longer needed
        G = self.G = p.pair_gradient(resid, out=self.G)
        GB, gamma = self._gradient_and_gamma(G, A, A_hat, B, block, first)
        diff = A_hat - B
        D = torch.add(GB, diff, alpha=gamma)  # nabla F (eq. 3)
        c = p.cross_pair_values(D, [B, dB])  # s(D, B), s(D, dB)
        # sums in float64 whatever the dtype (no-op conversions in float64)
        c0, Dv, diffv = c[:, 0].double(), D.view(-1).double(), diff.view(-1).double()
        scalars = [Dv.dot(Dv), c0.dot(c0)]
        if not first:  # the surrogate and the gap, after the Y-step only
            r64 = resid.double()
            scalars += [
                A_hat.reshape(-1).double().dot(GB.reshape(-1).double()),
                r64.dot(r64),
                r64.dot(p.pair_target.double()),
                diffv.dot(diffv),
                diffv.dot(Dv),
            ]
        values = torch.stack(scalars).tolist()  # one synchronization
        dd, curv = values[:2]
        # eq. 22: d^T A d = q(D B^T) + gamma ||D||^2
        tau = dd / (curv + gamma * dd) if dd > 0 else 0.0
        new = torch.add(A_hat, D, alpha=-tau) if tau else A_hat
        # S rows of (A, dA) -> (A_new, dA_new): dA_new = omega dA - tau D
        move = S[:, 1]
        move.mul_(omega).add_(c, alpha=-tau)
        S[:, 0] += move
        dA_new = new - A
        if first:
            self.X, self.dX = new, dA_new
        else:
            self.Y, self.dY = new, dA_new
        if first:
            return math.nan, gamma, tau, math.nan
        lin, rr, rt, pen, dD = values[2:]
        # f(A_hat B^T) = <A_hat, G B> - ||r||^2 / 2 - <r, T>; F at the new point
        # is the quadratic's value at its minimizer along -D
        F_new = lin - 0.5 * rr - rt + 0.5 * gamma * pen - 0.5 * dd * tau
        gap2 = max(pen - 2.0 * tau * dD + tau * tau * dd, 0.0)  # ||A_new - B||^2
        return F_new, gamma, tau, gap2

    def _half_steps(self, problem, rule, omega):
        """Steps 4-9: ``(F_new, gamma, tau_x, tau_y, gap)``."""
        _, _, tau_x, _ = self._half_step(True, omega)
        F_new, gamma, tau_y, gap2 = self._half_step(False, omega)
        return F_new, gamma, tau_x, tau_y, math.sqrt(gap2)

    def _after(self, restart: bool) -> None:
        self.k += 1
        if restart:  # no extrapolation from the step that went up
            self.dX.zero_()
            self.dY.zero_()
            self.S[:, 1].zero_()
            self.S[:, :, 1].zero_()
        if self.k % self.refresh == 0:
            self.recompute()

    @property
    def factors(self):
        return self.X, self.Y


@fill_doc(run_options=RUN_OPTIONS_DOC)
@validated_params(AAGD_CONSTRAINTS, owner="aagd")
def aagd(
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
    gamma: float | Literal["auto", "eq17"] = "auto",
) -> SolverResult:
    """Alternating accelerated gradient descent (AAGD, Algorithm 1).

    Minimizes the biconvex surrogate (eq. 3)
    ``F(X, Y; gamma) = f(X Y^T) + gamma/2 ||X - Y||_F^2`` by one accelerated
    gradient step on X (steps 5-6), then one on Y (steps 8-9), per
    iteration, with the weights of eq. 12
    ``t_k = (1 + sqrt(1 + 4 t_{k-1}^2)) / 2``, ``omega_k = (t_{k-1} - 1) / t_k``.
    Before each half-step gamma is re-estimated (steps 4 and 7) so that
    ``gamma_k > (L_k - sigma_k)_+ / 4`` (eq. 17-21, :func:`estimate_gamma`).
    For quadratic f the step sizes are the exact minimizers along the
    gradient (Proposition 2, eq. 22); otherwise Armijo backtracking from
    twice the previous step. As a safeguard the paper does not need for its
    convex blocks, the momentum restarts (``t_k = 1``) when the surrogate
    increases over an iteration (O'Donoghue & Candes).

    For a problem with bilinear pair values (``pair_values``,
    ``cross_pair_values``, ``pair_gradient``, ``pair_target``: NPKL) the
    iteration is computed by :class:`_PairAAGDState`: the same steps, with
    the pair values of the extrapolated points tracked instead of recomputed
    and the gradient and one power iteration of the gamma estimate fused
    into one sparse product (one gather over Omega and one sparse product per
    half-step, plus one pass for ``f(Y_k Y_k^T)``; benchmarks/sdp/README.md,
    "Implementation choices", compares it with the generic path). Other
    problems take the generic path (one gradient, one curvature and the
    power iterations per half-step).

    Parameters
    ----------
    problem : FactorProblem
    init : int, array-like (n, r) or pair
        The rank r, or the starting factor(s); see :func:`initial_factors`.
    {run_options}
    gamma : {"auto", "eq17"} or float
        Rule of :func:`estimate_gamma`, or a fixed positive penalty.

    Returns
    -------
    SolverResult
        ``x``: ``Y_k``, the factor of ``Z = Y_k Y_k^T`` (step 11); the
        objective is ``f(Y_k Y_k^T)`` and a callback's ``state.x`` the pair
        ``(X_k, Y_k)``. History:
        ``objective`` (``f(Y_k Y_k^T)``), ``surrogate`` (``F(X_k, Y_k;
        gamma_k)``), ``gap`` (``||X_k - Y_k||_F``, Figure 2), ``gamma``,
        ``step_x``, ``step_y``, ``restart``. ``info``: ``X`` (the other
        factor), ``gamma``.
    """
    X, Y, stopper = _start_run(
        problem,
        init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
        stop=(target, time_limit, callback),
    )
    rule = gamma if isinstance(gamma, str) else float(gamma)
    monitor = IterationMonitor(
        "AAGD",
        max_iter,
        tol,
        verbose=verbose,
        callback=stopper,
        owner="aagd",
        nonfinite_hint="check the scaling of f or pass a fixed 'gamma'",
    )
    fast = _has_pair_interface(problem)
    state = _PairAAGDState(problem, X, Y, rule) if fast else _AAGDState(X, Y)
    for _ in monitor:
        record = state.iterate(problem, rule)
        if monitor.record(state.factors, **record):
            break
    X, Y = state.factors
    result = monitor.result(Y, X=X, gamma=record["gamma"])
    return stopper.finish(result)


SOLVERS.add("aagd", aagd)


# -- Burer-Monteiro with L-BFGS --------------------------------------------------------
def _bm_gradient(g, V: torch.Tensor) -> torch.Tensor:
    """``nabla f(V V^T) = (G + G^T) V`` (eq. 9), one product when G is symmetric."""
    return 2.0 * g.matmul(V) if g.symmetric else g.matmul(V) + g.rmatmul(V)


@fill_doc(run_options=RUN_OPTIONS_DOC, bm_init=_BM_INIT_DOC, bm_returns=_BM_RETURNS_DOC)
@validated_params(BM_LBFGS_CONSTRAINTS, owner="bm_lbfgs")
def bm_lbfgs(
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
    history_size: int = 10,
) -> SolverResult:
    """Burer-Monteiro on ``f(V V^T)`` (eq. 2) with L-BFGS.

    :func:`~embedopt.optim.lbfgs` (SciPy's L-BFGS-B on the flattened factor)
    on ``V -> f(V V^T)`` with the gradient ``(G + G^T) V`` (eq. 9), as in
    Burer & Monteiro; the paper's BM-L-BFGS baseline, and what
    ``solver="auto"`` runs on the CPU (:func:`resolve_solver`). ``tol`` is
    also L-BFGS-B's ``gtol`` and ``ftol``; a callback's ``state.x`` is V.

    Parameters
    ----------
    problem : FactorProblem
    {bm_init}
    {run_options}
    history_size : int
        L-BFGS correction pairs.

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

    def fun(V):
        g = problem.gradient(V, V)
        return g.value, _bm_gradient(g, V)

    result = lbfgs(
        fun,
        V0,
        history_size=history_size,
        name="BM-L-BFGS",
        max_iter=max_iter,
        tol=tol,
        verbose=verbose,
        callback=stopper,
        owner="bm_lbfgs",
    )
    return stopper.finish(result)


SOLVERS.add("bm_lbfgs", bm_lbfgs)


# -- policy: what the estimators run -----------------------------------------------
#: What ``solver="auto"`` runs, by problem and device type (a device type not
#: listed takes the ``"cpu"`` entry; a problem not listed, NPKL's rule). The
#: measurements behind it: benchmarks/sdp/README.md, "Estimator defaults".
AUTO_SOLVERS = {
    NPKLProblem: {"cpu": "bm_lbfgs", "cuda": "aagd"},
    CMVUProblem: {"cpu": "bm_lbfgs", "cuda": "bm_lbfgs"},
}


def resolve_solver(
    solver: str, problem: type | FactorProblem, device: DeviceLike
) -> str:
    """The registry name of the solver a fit runs: the rule of ``solver="auto"``.

    A name of :data:`SOLVERS` (any spelling) resolves to itself. ``"auto"``
    runs BM-L-BFGS on the CPU for both problems (faster than AAGD with the
    estimators' defaults, and closer to the optimum), AAGD on CUDA for NPKL
    (it runs wholly on the device, L-BFGS-B goes through SciPy on the CPU),
    and BM-L-BFGS on CUDA for CMVU, where AAGD lacks iterations, not speed
    (benchmarks/sdp/estimator_defaults.py re-measures it).

    Parameters
    ----------
    solver : str
        ``"auto"`` or a name of :data:`SOLVERS`.
    problem : type or FactorProblem
        :class:`~embedopt.sdp.NPKLProblem` or :class:`~embedopt.sdp.CMVUProblem`
        (the class or an instance).
    device : torch.device or str
        The fit's device.

    Returns
    -------
    str
    """
    if solver != "auto":
        return SOLVERS.resolve_name(solver)
    kind = problem if isinstance(problem, type) else type(problem)
    by_device = AUTO_SOLVERS.get(kind, AUTO_SOLVERS[NPKLProblem])
    return by_device.get(torch.device(device).type, by_device["cpu"])


#: ``tol`` when left at None, per resolved solver. AAGD and BM-AGD stop on the
#: relative change of f; BM-L-BFGS on SciPy's tests (``ftol``, the decrease
#: relative to ``max(|f|, 1)``, and ``gtol``), which at 1e-7 sometimes fired on
#: one short step above AAGD's objective; 1e-8 costs little more time
#: (benchmarks/sdp/README.md, "Estimator defaults").
_DEFAULT_TOL = {"aagd": 1e-7, "bm_agd": 1e-7, "bm_lbfgs": 1e-8}


def default_tol(solver: str) -> float:
    """The ``tol`` an estimator passes to ``solver`` when its own is None.

    1e-7, and 1e-8 for ``"bm_lbfgs"``, whose SciPy stopping tests at 1e-7
    sometimes stop on one short step above AAGD's objective.

    Parameters
    ----------
    solver : str
        A resolved name of :data:`SOLVERS`.

    Returns
    -------
    float
    """
    return _DEFAULT_TOL.get(SOLVERS.resolve_name(solver), 1e-7)


#: ``lam="auto"`` of KernelLearning: the lambdas tried (decreasing, each
#: solve warm-started from the previous one), the share of each kind of pair
#: held out, the fewest held-out pairs of a kind it needs, and the lambda
#: used below that.
LAM_GRID = (1.0, 0.1, 0.01, 0.001)
_HELD_OUT_SHARE = 0.2
_MIN_HELD_OUT = 5
_FALLBACK_LAM = 1.0


def _hold_out(pairs: np.ndarray, rng: np.random.Generator):
    """(kept, held out): a random ``_HELD_OUT_SHARE`` of the pairs held out."""
    order = rng.permutation(len(pairs))
    cut = len(pairs) - round(_HELD_OUT_SHARE * len(pairs))
    return pairs[np.sort(order[:cut])], pairs[np.sort(order[cut:])]


def _held_out_error(held_out: NPKLProblem, V: torch.Tensor) -> float:
    """Mean squared error of ``K_ij = <v_i, v_j>`` against ``T_ij`` (1 for a
    must-link, 0 for a cannot-link) over the pairs of ``held_out`` (its
    diagonal entries, which come after them, left out)."""
    m = held_out.n_pairs
    residual = held_out.pair_values(V, V)[:m] - held_out.pair_target[:m]
    return float(residual.double().square().mean())


def select_lam(
    solve: Callable[[NPKLProblem, torch.Tensor | None], SolverResult],
    n: int,
    must_link: np.ndarray,
    cannot_link: np.ndarray,
    laplacian: sp.spmatrix | sp.sparray | None,
    *,
    rng: np.random.Generator,
    device: torch.device,
    dtype: torch.dtype,
) -> tuple[float, torch.Tensor | None, dict | None]:
    """``lam="auto"`` of :class:`~embedopt.sdp.KernelLearning`: held-out lambda.

    20 % of the must-links and of the cannot-links are held out; eq. 13 is
    solved on the rest for each lambda of :data:`LAM_GRID` (decreasing, each
    solve warm-started from the one before); the path stops at the first
    lambda whose held-out error (the mean squared error of ``K_ij`` against
    its target, 1 / 0) is not lower than the best so far, and the best
    lambda is returned with its factor (the warm start of the refit on all
    pairs). With fewer than 5 held-out pairs of a kind, lambda = 1 and no
    path.

    Parameters
    ----------
    solve : callable
        ``solve(problem, init) -> SolverResult``: the fit's solver with its
        options (``init`` None: a random start of the fit's rank).
    n : int
    must_link, cannot_link : numpy.ndarray of int, shape (m, 2)
        Checked pairs (:func:`~embedopt.sdp.check_pairs`).
    laplacian : scipy.sparse matrix, shape (n, n)
    rng : numpy.random.Generator
        Draws the held-out pairs.
    device : torch.device
    dtype : torch.dtype

    Returns
    -------
    lam : float
    init : torch.Tensor or None
        The factor of the chosen lambda on the training pairs.
    path : dict or None
        ``lambdas`` tried and their ``heldout_error``.
    """
    held = [_hold_out(pairs, rng) for pairs in (must_link, cannot_link)]
    if min(len(val) for _, val in held) < _MIN_HELD_OUT:
        return _FALLBACK_LAM, None, None
    (ml_fit, ml_val), (cl_fit, cl_val) = held
    held_out = NPKLProblem(n, ml_val, cl_val, lam=0.0, device=device, dtype=dtype)
    lambdas, errors, best, init = [], [], None, None
    # One training problem per lambda: lambda is part of its fused sparse
    # pattern (G = S + lam Lap); building it is O(|Omega| + nnz(Lap)),
    # small next to a solve.
    for lam in LAM_GRID:
        problem = NPKLProblem(
            n, ml_fit, cl_fit, laplacian, lam=lam, device=device, dtype=dtype
        )
        V = solve(problem, init).x
        init = V
        error = _held_out_error(held_out, V)
        lambdas.append(lam)
        errors.append(error)
        if best is not None and error >= best[0]:
            break
        best = (error, lam, V)
    path = {"lambdas": np.asarray(lambdas), "heldout_error": np.asarray(errors)}
    return best[1], best[2], path
