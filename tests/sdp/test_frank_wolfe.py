"""Frank-Wolfe (plain and Laue's hybrid) against the dense PSD reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from embedopt._core import ConvergenceWarning, InvalidParameterError
from embedopt.sdp import frank_wolfe
from tests.sdp._common import dense_objective, reference_optimum, tiny_npkl


@pytest.fixture(scope="module")
def fstar():
    return reference_optimum()


def test_trace_bound_holds_at_the_optimum():
    prob = tiny_npkl()
    res = frank_wolfe(prob, max_iter=200, tol=1e-12)
    V = res.x
    assert float((V * V).sum()) <= prob.trace_bound
    # the bound of the docstring: n + sqrt(n (n + |M|)), here with |M| = 6
    assert prob.trace_bound == pytest.approx(12 + np.sqrt(12 * 18))


def test_hybrid_reaches_the_dense_optimum_and_chooses_the_rank(fstar):
    prob = tiny_npkl()
    res = frank_wolfe(prob, max_iter=200, tol=1e-12)
    V = res.x
    assert prob.value(V, V) == pytest.approx(fstar, rel=1e-6)
    assert res.history["rank"][-1] == V.shape[1] < prob.n
    # the rank FW chose is the numerical rank of its Z
    eig = torch.linalg.eigvalsh(V.T @ V)
    assert eig[0] > 1e-8 * eig[-1]


def test_plain_frank_wolfe_decreases_and_its_gap_bounds_the_error(fstar):
    prob = tiny_npkl()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = frank_wolfe(prob, local_steps=0, max_iter=60, tol=0.0)
    obj, gap = res.history["objective"], res.history["gap"]
    assert np.all(np.diff(obj) <= 1e-12 * np.abs(obj[:-1]))  # exact line search
    # the gap <G, Z_k - S_k> is computed before step k: f(Z_{k+1}) - f* <= gap_k
    assert np.all(obj - fstar <= gap + 1e-10)
    f = dense_objective(prob)
    assert float(f(res.x @ res.x.T)) == pytest.approx(obj[-1], rel=1e-12)


def test_frank_wolfe_target_and_parameters(fstar):
    prob = tiny_npkl()
    res = frank_wolfe(prob, max_iter=500, tol=0.0, target=fstar * 1.001)
    assert res.stop_reason == "target"
    with pytest.raises(InvalidParameterError, match="'local_steps'"):
        frank_wolfe(prob, local_steps=-1)

    class NoBound:
        n, quadratic, lipschitz, strong_convexity = 12, True, 1.0, 0.0

    with pytest.raises(InvalidParameterError, match="trace_bound"):
        frank_wolfe(NoBound())
