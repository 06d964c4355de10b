"""The penalty parameter gamma of AAGD (eq. 17-21, Theorem 1).

:func:`estimate_gamma` returns ``gamma_k > (L_k - sigma_k)_+ / 4`` before
each half-step of :func:`~embedopt.sdp.aagd`, from a power-iteration
estimate of ``||nabla f(X Y^T)||_2``; :class:`GammaEstimate` holds it with
its ingredients.
"""

from __future__ import annotations

import torch

from .._core import Options, check_param
from .problem import FactorGradient, FactorProblem

__all__ = ["GammaEstimate", "estimate_gamma"]

#: (fewest, most) power iterations of the ``||G||_2`` estimate from a cold
#: start and from the previous half-step's vector (AAGD's fused estimate in
#: :mod:`embedopt.sdp.solvers` follows the same counts).
_COLD_POWER_ITER = (5, 20)
_WARM_POWER_ITER = (1, 10)


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

    def __init__(
        self,
        gamma: float,
        lipschitz: float,
        sigma: float,
        vector: torch.Tensor | None = None,
    ):
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
    problem: FactorProblem,
    X: torch.Tensor,
    Y: torch.Tensor,
    gradient: FactorGradient | None = None,
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
      always (the L = 1, sigma = 0 of Sec. 4.1.2 gives ``gamma > 1/4``);
      ``M/4`` alone is not enough (a fixed gamma below about
      ``||G*||_2 / 2`` lets ``X - Y`` diverge).
    - ``rule="eq17"``: ``16 (M ||X||_2^2 + ||G||_2)``, the estimate of eq. 17
      (Srinadh et al.; the squared norm keeps it homogeneous in the scale of
      X), which bounds the smoothness of ``f(V V^T)`` everywhere on the
      level set. Safe, but much slower on NPKL (its gamma is larger).

    ``||G||_2`` is estimated by power iterations on the gradient operator
    (single columns: ``O(|Omega| + nnz(Lap))`` each), continued until the
    estimate changes by less than ``power_tol`` (relative): at least five
    and at most 20 from a cold start, at least one and at most ten when
    warm-started with the ``vector`` of the previous half-step. A power
    iteration only ever under-estimates ``||G||_2``, and a gamma below
    ``lambda_max(G) / 2`` gives the surrogate negative curvature along
    ``X - Y`` (to second order, ``F(V + E, V - E) - F(V, V) = 2 gamma
    ||E||^2 - <G, E E^T>`` for symmetric G). Where ``||G||`` grows quickly
    along the run (CMVU), a single warm iteration lags behind, ``X - Y``
    grows and the surrogate increases; iterating to a ``power_tol`` change
    removes both, and on NPKL it mostly stops after two iterations
    (benchmarks/sdp/README.md, "Implementation choices").

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
    check_param("estimate_gamma", "rule", rule, [Options(["auto", "eq17"])])
    if gradient is None:
        gradient = problem.gradient(X, Y)
    if vector is None:
        vector = _generic_start(X)
        min_iter, max_iter = _COLD_POWER_ITER
    else:
        min_iter, max_iter = _WARM_POWER_ITER
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
