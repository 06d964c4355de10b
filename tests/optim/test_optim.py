import logging
import math
import warnings

import numpy as np
import pytest
import torch

from embedopt._core import ConvergenceWarning, NumericalInstabilityError
from embedopt.optim import (
    History,
    IterationMonitor,
    NesterovRestart,
    NoMomentum,
    RelativeChange,
    lbfgs,
)


def test_history_backfills_equal_lengths():
    h = History()
    h.append(a=1.0)
    h.append(a=2.0, b=3.0)
    h.append(b=4.0)
    d = h.as_dict()
    assert {len(v) for v in d.values()} == {3}
    assert math.isnan(d["b"][0]) and math.isnan(d["a"][2])


def test_monitor_stops_on_tolerance():
    mon = IterationMonitor("demo", max_iter=100, tol=1e-3)
    for t in mon:
        if mon.record(objective=1.0 + 1.0 / 2**t):
            break
    res = mon.result(x="sol")
    assert res.stop_reason == "tol" and res.converged
    assert res.n_iter < 100
    assert set(res.history) >= {"iteration", "time", "objective"}
    assert np.all(np.diff(res.history["time"]) >= 0)


def test_monitor_max_iter_warns_and_names_knob():
    mon = IterationMonitor("demo", max_iter=3, tol=0.0, owner="MyModel")
    with pytest.warns(
        ConvergenceWarning, match="Increase 'max_iter' or 'tol' of MyModel"
    ):
        for t in mon:
            mon.record(objective=float(t))
    assert mon.result(None).stop_reason == "max_iter"


def test_monitor_callback_stops_and_sees_state():
    seen = []

    def cb(state):
        seen.append((state.iteration, state.objective, state.x))
        return state.iteration == 2

    mon = IterationMonitor("demo", max_iter=10, tol=0.0, callback=cb)
    for t in mon:
        if mon.record(x=t, objective=float(-t)):
            break
    assert mon.result(None).stop_reason == "callback"
    assert seen == [(1, -1.0, 1), (2, -2.0, 2)]


def test_monitor_nonfinite_objective_is_an_error():
    mon = IterationMonitor("demo", max_iter=10, tol=0.0, nonfinite_hint="step too big")
    with pytest.raises(NumericalInstabilityError, match="step too big"):
        for _ in mon:
            mon.record(objective=float("nan"))


def test_monitor_allow_stop_and_paused_time():
    mon = IterationMonitor("demo", max_iter=5, tol=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in mon:
            mon.record(objective=1.0, allow_stop=False)
            with mon.paused():
                pass
    # the tolerance held from iteration 2 on, but stopping was not allowed
    assert mon.tolerance_met()
    assert mon.result(None).stop_reason == "max_iter"


def test_monitor_verbose_logs(caplog):
    mon = IterationMonitor("demo", max_iter=2, tol=0.0, verbose=2)
    with caplog.at_level(logging.INFO, logger="embedopt"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for _ in mon:
                mon.record(objective=1.0, rank=3)
    assert any("rank=3" in r.getMessage() for r in caplog.records)


def test_relative_change():
    h = History()
    rule = RelativeChange(0.1)
    h.append(objective=10.0)
    assert not rule(h)
    h.append(objective=9.5)
    assert rule(h)


def test_nesterov_restart_schedule():
    mom = NesterovRestart()
    assert mom.theta == 0.0
    mom.update(False)
    mom.update(False)
    assert mom.theta == pytest.approx(2 / 5)  # c = 3: (c - 1) / (c + 2)
    mom.update(True)
    assert mom.theta == 0.0 and mom.n_restarts == 1
    assert NoMomentum().theta == 0.0


def test_lbfgs_quadratic():
    A = torch.tensor([[3.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    b = torch.tensor([1.0, -1.0], dtype=torch.float64)

    def fun(x):
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    res = lbfgs(fun, torch.zeros(2, dtype=torch.float64), tol=1e-12)
    assert torch.allclose(res.x, torch.linalg.solve(A, b), atol=1e-8)
    assert res.converged


def test_relative_change_to_the_first_value():
    # a geometric decay: 10 % per step relative to the previous value, but
    # soon a tiny change relative to where it started
    h = History()
    rel_prev = RelativeChange(1e-3)
    rel_first = RelativeChange(1e-3, relative_to="first")
    stops = []
    for t in range(80):
        h.append(objective=0.9**t)
        stops.append((rel_prev(h), rel_first(h)))
    assert not any(prev for prev, _ in stops)
    first = next(t for t, (_, s) in enumerate(stops) if s)
    # 0.9^(t-1) * 0.1 <= 1e-3 first holds at t = 45
    assert first == 45
