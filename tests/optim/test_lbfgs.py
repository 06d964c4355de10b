"""lbfgs through the monitor: history per iteration, callback, factors, errors."""

import logging
import math

import numpy as np
import pytest
import torch

from embedopt._core import ConvergenceWarning, NumericalInstabilityError
from embedopt.optim import lbfgs

D = torch.float64


def _rosenbrock(x):
    a, b = x[:-1], x[1:]
    f = ((1 - a) ** 2).sum() + 100 * ((b - a**2) ** 2).sum()
    g = torch.zeros_like(x)
    g[:-1] = -2 * (1 - a) - 400 * a * (b - a**2)
    g[1:] += 200 * (b - a**2)
    return f, g


def test_one_history_row_per_iteration():
    x0 = torch.tensor([-1.2, 1.0, -0.5, 0.8], dtype=D)
    res = lbfgs(_rosenbrock, x0, max_iter=500, tol=1e-10)
    assert res.converged
    torch.testing.assert_close(res.x, torch.ones(4, dtype=D), atol=1e-5, rtol=0)
    h = res.history
    assert set(h) == {"iteration", "time", "objective", "grad_norm"}
    assert len(h["iteration"]) == res.n_iter and res.n_iter > 10
    np.testing.assert_array_equal(h["iteration"], np.arange(1, res.n_iter + 1))
    assert np.all(np.diff(h["time"]) >= 0)
    assert np.all(np.diff(h["objective"]) <= 0)  # L-BFGS-B's line search decreases f
    assert h["grad_norm"][-1] < 1e-4 and res.info["n_fev"] >= res.n_iter
    # the recorded values are those at the iterates
    assert h["objective"][-1] == pytest.approx(float(_rosenbrock(res.x)[0]), abs=1e-14)


def test_callback_stops_and_sees_the_iterate():
    seen = []

    def callback(state):
        seen.append(state.x.clone())
        return state.iteration == 3

    x0 = torch.tensor([-1.2, 1.0], dtype=D)
    res = lbfgs(_rosenbrock, x0, callback=callback)
    assert res.stop_reason == "callback" and res.n_iter == 3 and len(seen) == 3
    torch.testing.assert_close(res.x, seen[-1])


def test_max_iter_warns_like_every_monitored_solver():
    x0 = torch.tensor([-1.2, 1.0], dtype=D)
    with pytest.warns(
        ConvergenceWarning, match="Increase 'max_iter' or 'tol' of Refit"
    ):
        res = lbfgs(_rosenbrock, x0, max_iter=4, owner="Refit")
    assert res.stop_reason == "max_iter" and res.n_iter == 4


def test_tuple_of_factors_burer_monteiro_style():
    # min ||X Y^T - M||^2 / 2 + (||X||^2 + ||Y||^2) / 20 over the factor pair.
    g = torch.Generator().manual_seed(0)
    M = torch.randn(6, 2, dtype=D, generator=g) @ torch.randn(
        2, 5, dtype=D, generator=g
    )

    def fun(p):
        X, Y = p
        R = X @ Y.T - M
        f = 0.5 * (R**2).sum() + 0.05 * ((X**2).sum() + (Y**2).sum())
        return f, (R @ Y + 0.1 * X, R.T @ X + 0.1 * Y)

    x0 = (
        torch.randn(6, 2, dtype=D, generator=g),
        torch.randn(5, 2, dtype=D, generator=g),
    )
    res = lbfgs(fun, x0, max_iter=300, tol=1e-12)
    assert isinstance(res.x, tuple) and [t.shape for t in res.x] == [(6, 2), (5, 2)]
    _, (gX, gY) = fun(res.x)
    assert float(torch.cat([gX.reshape(-1), gY.reshape(-1)]).abs().max()) < 1e-6
    assert float(fun(res.x)[0]) < 0.5 * float(fun(x0)[0])


def test_float32_and_verbose_logs(caplog):
    A = torch.tensor([[3.0, 1.0], [1.0, 2.0]])
    b = torch.tensor([1.0, -1.0])
    with caplog.at_level(logging.INFO, logger="embedopt"):
        res = lbfgs(
            lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b), torch.zeros(2), verbose=2
        )
    assert res.x.dtype == torch.float32
    torch.testing.assert_close(res.x, torch.linalg.solve(A, b), atol=1e-4, rtol=0)
    assert any("L-BFGS iter 1" in r.getMessage() for r in caplog.records)


def test_non_finite_objective_is_an_error():
    with pytest.raises(NumericalInstabilityError, match="objective is nan at x0"):
        lbfgs(lambda x: (torch.tensor(math.nan), x), torch.ones(2, dtype=D))

    def overflow(x):  # finite at x0, NaN once the iterate leaves [-2, 2]
        f = (x**2).sum() - 10 * x.sum()
        return (f if bool((x.abs() < 2).all()) else torch.tensor(math.nan)), 2 * x - 10

    with pytest.raises(NumericalInstabilityError, match="L-BFGS"):
        lbfgs(overflow, torch.zeros(2, dtype=D))


def _geometric(x):
    # f = sum exp(-x): decays to 0 without a minimizer, like a separable
    # hinge or logistic loss
    e = torch.exp(-x)
    return e.sum(), -e


def test_stopping_rules_on_an_objective_that_decays_to_zero():
    x0 = torch.zeros(3, dtype=D)
    # relative to the current value the change stays at 50 % per iteration
    with pytest.warns(ConvergenceWarning, match="max_iter=60"):
        res = lbfgs(_geometric, x0, max_iter=60, tol=1e-4, stop="relative_objective")
    assert res.stop_reason == "max_iter"
    # relative to the first value it soon gets small
    res = lbfgs(_geometric, x0, max_iter=60, tol=1e-4, stop="initial_objective")
    f = res.history["objective"]
    assert res.stop_reason == "tol" and res.n_iter < 60
    assert abs(f[-1] - f[-2]) <= 1e-4 * f[0] < abs(f[-2] - f[-3])
    # SciPy's own test: the largest gradient entry (here = f / 3) below tol
    res = lbfgs(_geometric, x0, max_iter=60, tol=1e-4, stop="scipy")
    assert res.stop_reason == "tol" and res.history["objective"][-1] < 3e-4


def test_evaluate_adds_history_columns_off_the_clock():
    x0 = torch.tensor([-1.2, 1.0], dtype=D)
    seen = []

    def evaluate(x):
        seen.append(x.clone())
        return {"x0": float(x[0])}

    res = lbfgs(_rosenbrock, x0, max_iter=200, tol=1e-10, evaluate=evaluate)
    h = res.history
    assert len(h["x0"]) == len(h["iteration"]) == len(seen)
    assert h["x0"][-1] == pytest.approx(float(res.x[0]))
