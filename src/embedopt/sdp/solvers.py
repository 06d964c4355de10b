"""Solvers of ``min_{Z in S_+^n} f(Z)`` on low-rank factors.

- :func:`aagd`: the paper's method (Algorithm 1), alternating accelerated
  gradient steps on X then Y of the biconvex surrogate (eq. 3)
  ``F(X, Y; gamma) = f(X Y^T) + gamma/2 ||X - Y||_F^2``;
- :func:`burer_monteiro`: the baselines on ``f(V V^T)`` (eq. 2), accelerated
  gradient with the exact quartic line search of Burer & Choi (``"agd"``) or
  L-BFGS (``"lbfgs"``).

Every solver takes a :class:`~embedopt.sdp.FactorProblem`, the same
starting factor (an int r draws it), the same stopping rules (relative
objective change ``tol``, a ``target`` objective, ``max_iter``,
``time_limit``) and records ``objective = f(Z)`` at the factor it returns,
so that runs are compared on one scale. They return the factor, never Z.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._core import (
    Interval,
    InvalidParameterError,
    Options,
    Registry,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
    validated_params,
)
from ..optim import (
    IterationMonitor,
    SolverResult,
    accelerated_proximal_gradient,
    armijo_backtracking,
    lbfgs,
)

__all__ = [
    "AAGD_CONSTRAINTS",
    "BURER_MONTEIRO_CONSTRAINTS",
    "SOLVERS",
    "GammaEstimate",
    "aagd",
    "bm_agd",
    "bm_lbfgs",
    "burer_monteiro",
    "estimate_gamma",
    "initial_factors",
    "quartic_step",
]

#: Solvers by name: ``SOLVERS.get(name)(problem, init, **options)``.
SOLVERS = Registry("solver", owner="embedopt.sdp")

_COMMON = {
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "target": [Interval(float, None, None), None],
    "time_limit": [Interval(float, 0, None, closed="neither"), None],
    "init_scale": [Interval(float, 0, None, closed="neither")],
    "random_state": ["random_state"],
    "device": ["device", None],
    "dtype": ["dtype", None],
    "verbose": [Interval(int, 0, None), "boolean"],
    "callback": ["callable", None],
}


#: Constraints of :func:`burer_monteiro`'s parameters.
BURER_MONTEIRO_CONSTRAINTS = {
    **_COMMON,
    "method": [Options(["agd", "lbfgs"])],
    "history_size": [Interval(int, 1, None)],
}

#: Constraints of :func:`aagd`'s parameters.
AAGD_CONSTRAINTS = {
    **_COMMON,
    "gamma": [Options(["auto", "eq17"]), Interval(float, 0, None, closed="neither")],
}


# -- shared pieces -----------------------------------------------------------------
def initial_factors(
    problem, init, *, init_scale=1.0, random_state=None, device=None, dtype=None
):
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


# -- the penalty parameter (eq. 17-21) ------------------------------------------------
class GammaEstimate:
    """The penalty ``gamma_k`` of one half-step with its ingredients.

    Attributes
    ----------
    gamma : float
        ``(1 + margin) (L_k - sigma_k)_+ / 4`` (eq. 21), at least ``floor``.
    lipschitz : float
        ``L_k`` (eq. 17 or the problem's constant).
    sigma : float
        ``sigma_k = min(sigma_1^k, sigma_2^k)`` (eq. 18-20).
    vector : torch.Tensor or None
        Power-iteration vector, to warm-start the next ``||G||_2`` estimate.
    """

    def __init__(self, gamma, lipschitz, sigma, vector=None):
        self.gamma, self.lipschitz, self.sigma, self.vector = (
            gamma,
            lipschitz,
            sigma,
            vector,
        )


def _sigma_min_gram(A: torch.Tensor) -> float:
    """``sigma_hat_min(A A^T)`` of eq. 19-20: 0 unless A (n x r) has r >= n."""
    n, r = A.shape
    if r < n:
        return 0.0
    return max(float(torch.linalg.eigvalsh(A.T @ A)[0]), 0.0)


def estimate_gamma(
    problem,
    X: torch.Tensor,
    Y: torch.Tensor,
    gradient=None,
    *,
    rule: str = "auto",
    margin: float = 0.01,
    floor: float = 1e-8,
    vector: torch.Tensor | None = None,
    power_tol: float = 1e-2,
) -> GammaEstimate:
    """Penalty parameter with ``gamma > (L - sigma)_+ / 4`` (eq. 21, Theorem 1).

    ``sigma_k = M_sigma min(sigma_min(X X^T), sigma_min(Y Y^T))`` (eq. 18-20)
    with ``M_sigma = problem.strong_convexity`` (the ``sigma_min(P P^T)`` of
    eq. 18); it is 0 whenever r < n or f is not strongly convex. With
    ``M = problem.lipschitz`` (1 for NPKL) and ``G = nabla f(X Y^T)``,
    ``L_k`` is:

    - ``rule="auto"``: ``M + 2 ||G||_2``. The Hessian of ``f(V V^T)`` is
      ``2 <G, E E^T> + q(E V^T + V E^T)``; its first term is the (possibly
      negative) curvature along ``X - Y`` that the penalty has to dominate,
      and M the curvature of f itself, so ``gamma >= (1 + margin) M / 4``
      always (the L = 1, sigma = 0 of Sec. 4.1.2 gives ``gamma > 1/4``).
      Measured on small NPKL instances: a fixed gamma below about
      ``||G*||_2 / 2`` lets ``X - Y`` diverge; ``M/4`` alone is not enough.
    - ``rule="eq17"``: ``16 (M ||X||_2^2 + ||G||_2)``, the estimate of eq. 17
      (Srinadh et al.; the squared norm keeps it homogeneous in the scale of
      X), which bounds the smoothness of ``f(V V^T)`` everywhere on the
      level set. Safe, but about ten times slower on NPKL.

    ``||G||_2`` is estimated by power iterations on the gradient operator
    (single columns: ``O(|Omega| + nnz(Lap))`` each), continued until the
    estimate changes by less than ``power_tol`` (relative): at least five
    and at most 20 from a cold start, at least one and at most ten when
    warm-started with the ``vector`` of the previous half-step. A power
    iteration only ever under-estimates ``||G||_2``, and a gamma below
    ``lambda_max(G) / 2`` gives the surrogate negative curvature along
    ``X - Y`` (to second order, ``F(V + E, V - E) - F(V, V) = 2 gamma
    ||E||^2 - <G, E E^T>`` for symmetric G). Where ``||G||`` grows quickly
    along the run (CMVU: 30-fold on the digits), a single warm iteration
    lagged behind, ``||X - Y||`` grew to hundreds and the surrogate
    increased in 34 of 1,000 iterations; iterating to a 1 % change removed
    both (0.47 -> 0.92 of the rank-2 optimum after 1,000 iterations). On
    NPKL it mostly stops after two iterations (a1a: 286 instead of 282
    iterations).

    Parameters
    ----------
    problem : FactorProblem
    X, Y : torch.Tensor, shape (n, r)
        The current factors.
    gradient : FactorGradient, optional
        The gradient at ``X Y^T`` (computed when omitted).
    rule : {"auto", "eq17"}
    margin : float
        Relative margin above the bound (the inequality is strict).
    floor : float
        Smallest gamma returned (when the bound is 0).
    vector : torch.Tensor, optional
        Warm start of the power iteration.
    power_tol : float
        Relative change of the ``||G||_2`` estimate that ends the power
        iteration.

    Returns
    -------
    GammaEstimate
    """
    if rule not in ("auto", "eq17"):
        raise InvalidParameterError(
            f"The 'rule' parameter of estimate_gamma must be a str among "
            f"{{'auto', 'eq17'}}. Got {rule!r}."
        )
    if gradient is None:
        gradient = problem.gradient(X, Y)
    if vector is None:
        vector = _generic_start(X)
        min_iter, max_iter = 5, 20
    else:
        min_iter, max_iter = 1, 10
    g_norm, vector = _power_norm(gradient, vector, min_iter, max_iter, power_tol)
    return _gamma_from_norm(problem, X, Y, g_norm, rule, margin, floor, vector)


def _gamma_from_norm(
    problem, X, Y, g_norm: float, rule: str, margin=0.01, floor=1e-8, vector=None
) -> GammaEstimate:
    """Eq. 17-21 given the estimate ``||G||_2`` (see :func:`estimate_gamma`)."""
    sigma = float(getattr(problem, "strong_convexity", 0.0))
    if sigma > 0:
        sigma *= min(_sigma_min_gram(X), _sigma_min_gram(Y))
    M = float(problem.lipschitz)
    if rule == "auto":
        L = M + 2.0 * g_norm
    else:
        x_norm = float(torch.linalg.matrix_norm(X, ord=2))
        L = 16.0 * (M * x_norm**2 + g_norm)
    gamma = max((1.0 + margin) * max(L - sigma, 0.0) / 4.0, floor)
    return GammaEstimate(gamma, L, sigma, vector)


def _generic_start(X: torch.Tensor) -> torch.Tensor:
    """The cold start of the power iteration on G (n x n), a unit column.

    A fixed generic vector (not the all-ones vector, which a gradient with
    G 1 = 0, e.g. CMVU's, annihilates); seeded, so runs stay reproducible.
    """
    g = torch.Generator(device="cpu").manual_seed(0)
    v = torch.randn(X.shape[0], 1, generator=g, dtype=X.dtype).to(X.device)
    return v / v.norm()


def _power_norm(gradient, vector, min_iter: int, max_iter: int, tol: float):
    """``||G||_2`` by power iterations until the estimate settles."""
    est, vector = gradient.spectral_norm(vector, min_iter)
    return _settle(
        lambda v: gradient.spectral_norm(v, 1), est, vector, max_iter - min_iter, tol
    )


def _settle(step, est: float, vector, at_most: int, tol: float):
    """Further power iterations ``step(v) -> (estimate, v)`` until two
    successive estimates agree to ``tol`` (relative), ``at_most`` of them."""
    for _ in range(at_most):
        new, vector = step(vector)
        settled = abs(new - est) <= tol * new
        est = new
        if settled:
            break
    return est, vector


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


class _AAGDState:
    """The iterates of Algorithm 1 and its momentum schedule (eq. 12)."""

    def __init__(self, X: torch.Tensor, Y: torch.Tensor):
        self.x, self.y = _Block(X), _Block(Y)
        self.t_prev, self.F_prev = 1.0, math.inf

    @property
    def factors(self):
        return self.x.cur, self.y.cur

    def iterate(self, problem, rule) -> dict:
        """Steps 3-9 of Algorithm 1; the history values of the iteration."""
        t = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * self.t_prev**2))  # step 3, eq. 12
        omega = (self.t_prev - 1.0) / t
        _, _, tau_x = _half_step(problem, self.x, self.y.cur, omega, rule, True)
        F_new, gamma, tau_y = _half_step(
            problem, self.y, self.x.cur, omega, rule, False
        )
        restart = F_new > self.F_prev
        self.t_prev = 1.0 if restart else t
        if restart:  # no extrapolation from the step that went up
            self.x.prev, self.y.prev = self.x.cur, self.y.cur
        self.F_prev = F_new
        Y = self.y.cur
        return {
            "objective": problem.value(Y, Y),  # f at the returned factor
            "surrogate": F_new,
            "gap": math.sqrt(_sq(self.x.cur - Y)),  # Figure 2
            "gamma": gamma,
            "step_x": tau_x,
            "step_y": tau_y,
            "restart": float(restart),
        }


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


class _PairAAGDState:
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
        self.problem, self.rule, self.power_tol = problem, rule, power_tol
        self.X, self.Y = X, Y
        self.dX, self.dY = torch.zeros_like(X), torch.zeros_like(Y)
        self.t_prev, self.F_prev = 1.0, math.inf
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
        if prev is None:  # cold start: 5 to 20 iterations, as estimate_gamma
            for _ in range(3):
                est, v = step(v)
            est, v = _settle(step, est, v, 16, self.power_tol)
        elif abs(est - prev) > self.power_tol * est:  # warm: at most 10
            est, v = _settle(step, est, v, 9, self.power_tol)
        self.vector[block], self.norm[block] = v, est
        return est

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
        r = B.shape[1]
        if isinstance(self.rule, float):
            GB = G @ B
            gamma = self.rule
        else:
            v = self.vector[block]
            if v is None:
                v = _generic_start(A)
            GBv = G @ torch.cat([B, v], 1)
            GB = GBv[:, :r]
            g_norm = self._power(G, GBv, block, r)
            pair = (A_hat, B) if first else (B, A_hat)
            gamma = _gamma_from_norm(p, *pair, g_norm, self.rule).gamma
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

    def iterate(self, problem, rule) -> dict:
        """Steps 3-9 of Algorithm 1; the history values of the iteration."""
        t = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * self.t_prev**2))  # step 3, eq. 12
        omega = (self.t_prev - 1.0) / t
        _, _, tau_x, _ = self._half_step(True, omega)
        F_new, gamma, tau_y, gap2 = self._half_step(False, omega)
        restart = F_new > self.F_prev
        self.t_prev = 1.0 if restart else t
        self.F_prev = F_new
        self.k += 1
        if restart:  # no extrapolation from the step that went up
            self.dX.zero_()
            self.dY.zero_()
            self.S[:, 1].zero_()
            self.S[:, :, 1].zero_()
        if self.k % self.refresh == 0:
            self.recompute()
        Y = self.Y
        return {
            "objective": problem.value(Y, Y),  # f at the returned factor
            "surrogate": F_new,
            "gap": math.sqrt(gap2),  # Figure 2
            "gamma": gamma,
            "step_x": tau_x,
            "step_y": tau_y,
            "restart": float(restart),
        }

    @property
    def factors(self):
        return self.X, self.Y


@validated_params(AAGD_CONSTRAINTS, owner="aagd")
def aagd(
    problem,
    init,
    *,
    max_iter: int = 1000,
    tol: float = 1e-7,
    gamma="auto",
    target: float | None = None,
    time_limit: float | None = None,
    init_scale: float = 1.0,
    random_state=None,
    device=None,
    dtype=None,
    verbose: int = 0,
    callback=None,
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
    half-step, plus one pass for ``f(Y_k Y_k^T)``; measured 1.4x faster per
    iteration than the generic path on the digits, n = 1,797). Other
    problems take the generic path (one gradient, one curvature and the
    power iterations per half-step).

    Parameters
    ----------
    problem : FactorProblem
    init : int, array-like (n, r) or pair
        The rank r, or the starting factor(s); see :func:`initial_factors`.
    max_iter : int
        Outer iterations (one X and one Y step each).
    tol : float
        Relative change of the objective that stops.
    gamma : {"auto", "eq17"} or float
        Rule of :func:`estimate_gamma`, or a fixed positive penalty.
    target : float, optional
        Stop once ``f(Y_k Y_k^T) <= target`` (the paper stops every solver
        at Frank-Wolfe's final objective).
    time_limit : float, optional
        Stop after this many solver seconds.
    init_scale, random_state, device, dtype
        Of the random start (:func:`initial_factors`); float64 by default.
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool | None`` per iteration; ``state.x`` is the
        pair ``(X_k, Y_k)``.

    Returns
    -------
    SolverResult
        ``x``: ``Y_k``, the factor of ``Z = Y_k Y_k^T`` (step 11). History:
        ``objective`` (``f(Y_k Y_k^T)``), ``surrogate`` (``F(X_k, Y_k;
        gamma_k)``), ``gap`` (``||X_k - Y_k||_F``, Figure 2), ``gamma``,
        ``step_x``, ``step_y``, ``restart``. ``info``: ``X`` (the other
        factor), ``gamma``.
    """
    X, Y = initial_factors(
        problem,
        init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
    )
    rule = gamma if isinstance(gamma, str) else float(gamma)
    stopper = _Stopper(target, time_limit, callback)
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


# -- Burer-Monteiro baselines ------------------------------------------------------
def quartic_step(problem, V: torch.Tensor, D: torch.Tensor, gradient=None) -> float:
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


def _bm_gradient(g, V: torch.Tensor) -> torch.Tensor:
    """``nabla f(V V^T) = (G + G^T) V`` (eq. 9), one product when G is symmetric."""
    return 2.0 * g.matmul(V) if g.symmetric else g.matmul(V) + g.rmatmul(V)


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


@validated_params(BURER_MONTEIRO_CONSTRAINTS, owner="burer_monteiro")
def burer_monteiro(
    problem,
    init,
    *,
    method: str = "agd",
    max_iter: int = 1000,
    tol: float = 1e-7,
    target: float | None = None,
    time_limit: float | None = None,
    history_size: int = 10,
    init_scale: float = 1.0,
    random_state=None,
    device=None,
    dtype=None,
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """Burer-Monteiro baselines on ``f(V V^T)`` (eq. 2).

    - ``method="agd"``: accelerated gradient (Nesterov momentum with
      function-value restart, through
      :func:`~embedopt.optim.accelerated_proximal_gradient`) with the exact
      line search of the quartic ``t -> f((V - t g)(V - t g)^T)`` for
      quadratic f (:func:`quartic_step`, Burer & Choi) and Armijo
      backtracking otherwise: the paper's AGD baseline;
    - ``method="lbfgs"``: L-BFGS (:func:`~embedopt.optim.lbfgs`, SciPy's
      L-BFGS-B on the flattened factor), as in Burer & Monteiro.

    Parameters
    ----------
    problem : FactorProblem
    init : int, array-like (n, r) or pair
        The rank r or the starting factor (of a pair, the first).
    method : {"agd", "lbfgs"}
    max_iter, tol, target, time_limit
        As in :func:`aagd` (``tol`` is also L-BFGS-B's ``gtol``/``ftol``).
    history_size : int
        L-BFGS correction pairs.
    init_scale, random_state, device, dtype, verbose, callback
        As in :func:`aagd`; ``state.x`` is V.

    Returns
    -------
    SolverResult
        ``x``: V, the factor of ``Z = V V^T``; history ``objective``
        (``f(V V^T)``) and ``step``/``grad_norm``.
    """
    V0, _ = initial_factors(
        problem,
        init,
        init_scale=init_scale,
        random_state=random_state,
        device=device,
        dtype=dtype,
    )
    stopper = _Stopper(target, time_limit, callback)
    # What the loops of both methods take.
    run = dict(
        max_iter=max_iter,
        tol=tol,
        verbose=verbose,
        callback=stopper,
        owner="burer_monteiro",
    )
    if method == "agd":
        result = accelerated_proximal_gradient(
            _BurerMonteiroStep(problem), V0, name="BM-AGD", **run
        )
    else:

        def fun(V):
            g = problem.gradient(V, V)
            return g.value, _bm_gradient(g, V)

        result = lbfgs(fun, V0, history_size=history_size, name="BM-L-BFGS", **run)
    return stopper.finish(result)


def _burer_monteiro_method(method: str, name: str):
    """The registry entry ``name``: :func:`burer_monteiro` with a fixed method."""

    def solve(problem, init, **options) -> SolverResult:
        return burer_monteiro(problem, init, method=method, **options)

    solve.__name__ = solve.__qualname__ = name
    solve.__doc__ = f"""{name}: :func:`burer_monteiro` with ``method="{method}"``.

    Parameters
    ----------
    problem : FactorProblem
    init : int or array-like
    **options
        Of :func:`burer_monteiro`.

    Returns
    -------
    SolverResult
    """
    return solve


bm_agd = _burer_monteiro_method("agd", "bm_agd")
bm_lbfgs = _burer_monteiro_method("lbfgs", "bm_lbfgs")
SOLVERS.add("bm_agd", bm_agd)
SOLVERS.add("bm_lbfgs", bm_lbfgs)
