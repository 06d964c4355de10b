"""Fixed-budget minibatch training and the monitor's budget mode."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from embedopt import ConvergenceWarning, InvalidParameterError
from embedopt._core import NumericalInstabilityError
from embedopt.optim import IterationMonitor, minibatch_train, random_batches
from tests._tolerance import assert_close, sum_tolerance


def test_budget_monitor_runs_exactly_max_iter_without_warning():
    # A constant objective meets any tolerance at iteration 2; the budget
    # mode must ignore that and never warn at max_iter.
    mon = IterationMonitor("demo", 7, 1e-3, budget=True)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in mon:
            seen.append(t)
            mon.record(objective=1.0)
    res = mon.result(x=None)
    assert seen == list(range(1, 8))
    assert res.n_iter == 7 and res.stop_reason == "max_iter"
    assert len(res.history["objective"]) == 7


def test_default_monitor_still_stops_on_tolerance_and_warns():
    mon = IterationMonitor("demo", 7, 1e-3)
    for _ in mon:
        mon.record(objective=1.0)
    assert mon.iteration == 2 and mon.stop_reason == "tol"
    mon = IterationMonitor("demo", 3, 0.0)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        for t in mon:
            mon.record(objective=1.0 / t)


def test_budget_monitor_callback_can_stop_early():
    mon = IterationMonitor(
        "demo", 10, 0.0, budget=True, callback=lambda s: s.iteration == 3
    )
    for _ in mon:
        mon.record(objective=1.0)
    assert mon.iteration == 3 and mon.stop_reason == "callback"


def _regression(seed=0, n=64):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g)
    y = X @ torch.tensor([1.0, -2.0, 0.5]) + 0.01 * torch.randn(n, generator=g)
    return X, y


def test_minibatch_train_converges_with_one_row_per_window():
    X, y = _regression()
    w = torch.nn.Parameter(torch.zeros(3))
    sampler = random_batches(64, 8, generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minibatch_train(
            lambda b: ((X[b] @ w - y[b]) ** 2).mean(),
            sampler,
            torch.optim.SGD([w], lr=0.1),
            n_steps=300,
            log_every=25,
            model=w,
            name="lsq",
        )
    assert res.n_iter == 12 and res.stop_reason == "n_steps"
    assert res.info["n_steps"] == 300 and res.x is w
    h = res.history
    assert list(h) == ["iteration", "time", "objective"]
    assert np.all(np.diff(h["time"]) >= 0)
    assert h["objective"][-1] < 1e-2 * h["objective"][0]
    torch.testing.assert_close(
        w.detach(), torch.tensor([1.0, -2.0, 0.5]), atol=0.05, rtol=0
    )


def test_minibatch_history_is_the_mean_of_each_window_including_the_last():
    # lr = 0 keeps the model fixed, so replaying the sampler gives each loss.
    X, y = _regression()
    w = torch.nn.Parameter(torch.tensor([0.3, 0.1, -0.2]))

    def step(b):
        r = X[b] @ w - y[b]
        return {"objective": (r**2).mean(), "mae": r.abs().mean()}

    res = minibatch_train(
        step,
        random_batches(64, 4, generator=torch.Generator().manual_seed(5)),
        torch.optim.SGD([w], lr=0.0),
        n_steps=25,
        log_every=10,
    )
    replay = random_batches(64, 4, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        losses = [float(step(replay())["objective"]) for _ in range(25)]
    expected = [np.mean(losses[0:10]), np.mean(losses[10:20]), np.mean(losses[20:])]
    # the same float32 losses, averaged over 10 steps in another order
    atol = sum_tolerance(torch.float32, 10, max(expected))
    assert_close(res.history["objective"], expected, atol)
    assert res.history["mae"].shape == (3,)
    assert res.n_iter == 3


def test_minibatch_steps_every_optimizer_in_order():
    a = torch.nn.Parameter(torch.ones(2))
    b = torch.nn.Parameter(torch.ones(2))
    order = []

    class Spy(torch.optim.SGD):
        def step(self, closure=None):
            order.append(self.tag)
            return super().step(closure)

    oa, ob = Spy([a], lr=0.1), Spy([b], lr=0.1)
    oa.tag, ob.tag = "a", "b"
    minibatch_train(
        lambda _: (a**2).sum() + (b**2).sum(),
        lambda: None,
        [oa, ob],
        n_steps=3,
        log_every=2,
    )
    assert order == ["a", "b"] * 3
    assert torch.all(a < 1) and torch.all(b < 1)


def test_minibatch_callback_stop_and_nonfinite_and_bad_budget():
    w = torch.nn.Parameter(torch.zeros(1))
    res = minibatch_train(
        lambda _: (w - 1).pow(2).sum(),
        lambda: None,
        torch.optim.SGD([w], lr=0.1),
        n_steps=100,
        log_every=10,
        callback=lambda s: s.iteration == 2,
    )
    assert res.stop_reason == "callback" and res.n_iter == 2
    assert res.info["n_steps"] == 20
    with pytest.raises(NumericalInstabilityError, match="lower the learning rate"):
        minibatch_train(
            lambda _: w.sum() * float("nan"),
            lambda: None,
            torch.optim.SGD([w], lr=0.1),
            n_steps=5,
        )
    with pytest.raises(InvalidParameterError, match="'n_steps' parameter of demo"):
        minibatch_train(
            lambda _: w.sum(),
            lambda: None,
            torch.optim.SGD([w]),
            n_steps=0,
            name="demo",
        )


def test_random_batches_are_seeded_and_in_range():
    a = random_batches(10, 7, generator=torch.Generator().manual_seed(3))
    b = random_batches(10, 7, generator=torch.Generator().manual_seed(3))
    xs, ys = [a() for _ in range(5)], [b() for _ in range(5)]
    for x, y in zip(xs, ys, strict=True):
        assert torch.equal(x, y) and x.dtype == torch.int64 and x.shape == (7,)
        assert int(x.min()) >= 0 and int(x.max()) < 10
    assert not torch.equal(xs[0], xs[1])
    with pytest.raises(InvalidParameterError, match="'batch_size' parameter"):
        random_batches(10, 0)


@pytest.mark.bitwise_rerun
def test_same_seed_same_training():
    X, y = _regression()

    def run():
        w = torch.nn.Parameter(torch.zeros(3))
        res = minibatch_train(
            lambda b: ((X[b] @ w - y[b]) ** 2).mean(),
            random_batches(64, 8, generator=torch.Generator().manual_seed(9)),
            torch.optim.Adam([w], lr=0.05),
            n_steps=40,
            log_every=10,
        )
        return w.detach(), res.history["objective"]

    (w1, h1), (w2, h2) = run(), run()
    assert torch.equal(w1, w2)
    np.testing.assert_array_equal(h1, h2)
