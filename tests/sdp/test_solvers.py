"""AAGD and the Burer-Monteiro baselines against a dense PSD reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from embedopt._core import ConvergenceWarning, InvalidParameterError
from embedopt.sdp import (
    SOLVERS,
    aagd,
    burer_monteiro,
    estimate_gamma,
    initial_factors,
)
from tests.sdp._common import reference_optimum, tiny_npkl

N, PAIRS = 12, 6


@pytest.fixture(scope="module")
def fstar():
    return reference_optimum()


def test_gamma_estimate_meets_theorem_1_on_npkl():
    prob = tiny_npkl(N, PAIRS)
    X, Y = initial_factors(prob, 4, random_state=0)
    for rule in ("auto", "eq17"):
        est = estimate_gamma(prob, X, Y, rule=rule)
        assert est.sigma == 0.0  # r < n: sigma_min(Y Y^T) = 0 (eq. 19-20)
        assert est.lipschitz >= prob.lipschitz == 1.0
        assert est.gamma > (est.lipschitz - est.sigma) / 4 >= 0.25


def test_gamma_uses_the_gradient_norm():
    prob = tiny_npkl(N, PAIRS)
    X, Y = initial_factors(prob, 4, random_state=0)
    g = prob.gradient(X, Y)
    est = estimate_gamma(prob, X, Y, g)
    norm, _ = g.spectral_norm(torch.ones(N, 1, dtype=torch.float64), n_iter=100)
    assert est.lipschitz == pytest.approx(1 + 2 * norm, rel=0.05)
    with pytest.raises(InvalidParameterError, match="'rule'"):
        estimate_gamma(prob, X, Y, rule="huge")


def test_aagd_reaches_the_dense_optimum_and_x_meets_y(fstar):
    prob = tiny_npkl(N, PAIRS)
    res = aagd(prob, 6, max_iter=3000, tol=1e-13, random_state=0)
    assert res.stop_reason == "tol"
    V = res.x
    assert V.shape == (N, 6)
    assert prob.value(V, V) == pytest.approx(fstar, rel=1e-6)
    gap = res.history["gap"]
    assert gap[-1] < 1e-4 * gap[0]
    assert len(gap) == res.n_iter  # ||X - Y|| recorded every iteration
    assert set(res.history) >= {"objective", "surrogate", "gamma", "step_x", "step_y"}


@pytest.mark.parametrize("method", ["agd", "lbfgs"])
def test_burer_monteiro_reaches_the_dense_optimum(method, fstar):
    prob = tiny_npkl(N, PAIRS)
    res = burer_monteiro(
        prob, 6, method=method, max_iter=2000, tol=1e-13, random_state=0
    )
    V = res.x
    assert prob.value(V, V) == pytest.approx(fstar, rel=1e-6)


def test_bm_agd_with_exact_steps_never_increases_after_restarts():
    prob = tiny_npkl(N, PAIRS)
    res = burer_monteiro(prob, 4, max_iter=50, tol=1e-10, random_state=0)
    obj = res.history["objective"]
    restarted = res.history["restart"].astype(bool)
    # an increase only ever happens at a restart
    assert np.all((np.diff(obj) <= 1e-12 * abs(obj[:-1])) | restarted[1:])


@pytest.mark.parametrize("name", list(SOLVERS))
def test_target_and_time_limit_stop_every_solver(name, fstar):
    prob = tiny_npkl(N, PAIRS)
    solver = SOLVERS.get(name)
    res = solver(prob, 4, max_iter=5000, tol=0.0, target=fstar * 1.01, random_state=0)
    assert res.stop_reason == "target"
    assert res.history["objective"][-1] <= fstar * 1.01
    res = solver(prob, 4, max_iter=1000, tol=0.0, time_limit=1e-9, random_state=0)
    assert res.stop_reason == "time_limit"
    assert res.n_iter == 1


def test_solvers_share_the_start_and_are_seeded():
    prob = tiny_npkl(N, PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = aagd(prob, 3, max_iter=5, random_state=3)
        b = aagd(prob, 3, max_iter=5, random_state=3)
    torch.testing.assert_close(a.x, b.x, rtol=0, atol=0)
    X0, Y0 = initial_factors(prob, 3, random_state=3)
    torch.testing.assert_close(X0, Y0)


def test_fixed_gamma_and_given_start():
    prob = tiny_npkl(N, PAIRS)
    X0 = torch.randn(
        N, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    res = aagd(prob, (X0, X0.clone()), gamma=3.0, max_iter=2000, tol=1e-10)
    assert np.all(res.history["gamma"] == 3.0)
    assert res.stop_reason == "tol"


def test_aagd_backtracks_on_a_non_quadratic_problem():
    prob = tiny_npkl(N, PAIRS)

    class Smooth:  # f(Z) = npkl(Z) + ||diag Z||^4 / 16: not quadratic
        # curvature of the quartic term near the solution: about 9
        n, quadratic, lipschitz, strong_convexity = N, False, 10.0, 0.0

        def value(self, X, Y):
            return prob.value(X, Y) + float(((X * Y).sum(1) ** 2).sum()) ** 2 / 16

        def gradient(self, X, Y):
            from embedopt.sdp import FactorGradient

            g = prob.gradient(X, Y)
            d = (X * Y).sum(1)
            c = 0.25 * float((d**2).sum())
            return FactorGradient(
                self.value(X, Y), lambda W: g.matmul(W) + c * d[:, None] * W
            )

    res = aagd(Smooth(), 4, max_iter=3000, tol=1e-12, random_state=0)
    assert res.stop_reason == "tol"
    assert res.history["gap"][-1] < 1e-4
    assert np.all(np.isfinite(res.history["step_x"]))
    bm = burer_monteiro(Smooth(), 4, max_iter=3000, tol=1e-12, random_state=0)
    assert bm.history["objective"][-1] == pytest.approx(
        res.history["objective"][-1], rel=1e-6
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_iter": 0}, "'max_iter' parameter of aagd"),
        ({"gamma": -1.0}, "'gamma' parameter of aagd"),
        ({"gamma": "big"}, "'gamma' parameter of aagd"),
        ({"tol": -1.0}, "'tol' parameter of aagd"),
    ],
)
def test_bad_solver_parameters(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        aagd(tiny_npkl(N, PAIRS), 2, **kwargs)


@pytest.mark.parametrize("r", [0, N + 1])
def test_rank_out_of_range(r):
    with pytest.raises(InvalidParameterError, match=r"in \[1, 12\]"):
        aagd(tiny_npkl(N, PAIRS), r)
    with pytest.raises(InvalidParameterError, match="'method'"):
        burer_monteiro(tiny_npkl(N, PAIRS), 2, method="newton")
    assert math.isfinite(N)


class _Generic:
    """The NPKL problem without its pair interface: aagd's generic path."""

    def __init__(self, prob):
        self.prob, self.n = prob, prob.n
        self.quadratic, self.lipschitz, self.strong_convexity = True, 1.0, 0.0

    def value(self, X, Y):
        return self.prob.value(X, Y)

    def gradient(self, X, Y):
        return self.prob.gradient(X, Y)

    def curvature(self, U, V):
        return self.prob.curvature(U, V)


def test_tracked_pair_values_match_a_fresh_computation():
    from embedopt.sdp.solvers import _PairAAGDState

    prob = tiny_npkl(N, PAIRS)
    X, Y = initial_factors(prob, 4, random_state=0)
    state = _PairAAGDState(prob, X, Y, "auto")
    for _ in range(state.refresh - 1):  # the longest run between recomputations
        state.iterate(prob, "auto")
    tracked = state.S.clone()
    state.recompute()
    torch.testing.assert_close(tracked, state.S, rtol=0, atol=1e-12)
    B = [state.Y, state.dY]
    fresh = torch.stack(
        [
            torch.stack([prob.pair_values(A, Bb) for Bb in B], 1)
            for A in (state.X, state.dX)
        ],
        1,
    )
    torch.testing.assert_close(tracked, fresh, rtol=0, atol=1e-12)


def test_fast_aagd_takes_the_generic_steps():
    # with a fixed gamma both paths compute the same iterates (to rounding;
    # 20 iterations: later, near the optimum, the exact step is a ratio of
    # rounding-level quantities)
    prob = tiny_npkl(N, PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fast = aagd(prob, 4, gamma=2.0, max_iter=20, tol=0.0, random_state=1)
        slow = aagd(_Generic(prob), 4, gamma=2.0, max_iter=20, tol=0.0, random_state=1)
    torch.testing.assert_close(fast.x, slow.x, rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(fast.info["X"], slow.info["X"], rtol=1e-9, atol=1e-11)
    for key in ("objective", "surrogate", "gap", "step_x", "step_y", "restart"):
        np.testing.assert_allclose(
            fast.history[key], slow.history[key], rtol=1e-9, atol=1e-12
        )


def test_fast_aagd_records_the_surrogate_and_gap_of_its_iterate():
    prob = tiny_npkl(N, PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = aagd(prob, 4, max_iter=25, tol=0.0, random_state=2)
    X, Y, gamma = res.info["X"], res.x, res.history["gamma"][-1]
    gap = float((X - Y).norm())
    assert res.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    F = prob.value(X, Y) + 0.5 * gamma * gap**2
    assert res.history["surrogate"][-1] == pytest.approx(F, rel=1e-12)
    assert res.history["objective"][-1] == pytest.approx(prob.value(Y, Y), rel=1e-14)
