"""The CVXPY reference (the paper's SQLP row) and the factor solvers agree."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from embedopt._core import InvalidParameterError
from embedopt.sdp import aagd, bm_lbfgs, solve_exact
from tests.sdp._common import reference_optimum, tiny_npkl
from tests.sdp.test_cmvu import _tiny as tiny_cmvu


def _cvxpy_solver(name):
    cp = pytest.importorskip("cvxpy")
    if name.upper() not in cp.installed_solvers():
        pytest.skip(f"CVXPY's {name.upper()} solver is not installed")
    return name


@pytest.mark.parametrize("name", ["scs", "clarabel"])
def test_aagd_matches_the_cvxpy_optimum_on_npkl(name):
    solver = _cvxpy_solver(name)
    prob = tiny_npkl()
    exact = solve_exact(prob, solver=solver, eps=1e-9)
    assert exact.stop_reason == "tol"
    fstar = exact.history["objective"][0]
    # the CVXPY optimum is the dense projected-gradient one
    assert fstar == pytest.approx(reference_optimum(), rel=1e-7)
    res = aagd(prob, 6, max_iter=3000, tol=1e-13, random_state=0)
    assert res.history["objective"][-1] == pytest.approx(fstar, rel=1e-6)
    # the factor reproduces the solver's Z up to its PSD projection
    V = exact.x.numpy()
    np.testing.assert_allclose(V @ V.T, exact.info["Z"], atol=1e-6)
    assert exact.info["solver_objective"] == pytest.approx(fstar, rel=1e-6)


@pytest.mark.parametrize("labels", [True, False], ids=["colored", "mvu"])
def test_burer_monteiro_and_aagd_match_the_cvxpy_optimum_on_cmvu(labels):
    solver = _cvxpy_solver("clarabel")
    prob = tiny_cmvu(labels, n=15)
    exact = solve_exact(prob, solver=solver, eps=1e-9)
    assert exact.stop_reason == "tol"
    fstar = exact.history["objective"][0]
    # r = 5 exceeds the rank of Z* (at most 4 here): the factor problems are exact
    bm = bm_lbfgs(prob, 5, max_iter=3000, tol=1e-14, random_state=0)
    assert bm.history["objective"][-1] == pytest.approx(fstar, rel=1e-7)
    # AAGD to a target (its relative change stalls near 1e-9 before it gets there)
    res = aagd(prob, 5, max_iter=2000, tol=0.0, target=fstar + 1e-7 * abs(fstar))
    assert res.stop_reason == "target"


def test_time_limit_and_iteration_limit_reach_the_solver():
    solver = _cvxpy_solver("scs")
    prob = tiny_npkl()
    with pytest.warns(UserWarning, match="inaccurate"):  # CVXPY says so itself
        res = solve_exact(prob, solver=solver, eps=1e-12, max_iter=5)
    assert res.n_iter == 5
    assert res.stop_reason != "tol"
    assert res.history["objective"][0] > reference_optimum()


def test_without_cvxpy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # import cvxpy -> ImportError
    with pytest.raises(ImportError, match=r"embedopt\[exact\].*pip install cvxpy"):
        solve_exact(tiny_npkl())


def test_bad_arguments_are_refused_before_any_work():
    with pytest.raises(InvalidParameterError, match="NPKLProblem or a CMVUProblem"):
        solve_exact(object())
    with pytest.raises(InvalidParameterError, match="'solver' parameter"):
        solve_exact(tiny_npkl(), solver="mosek")
    with pytest.raises(InvalidParameterError, match="'eps' parameter"):
        solve_exact(tiny_npkl(), eps=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidParameterError, match="'time_limit' parameter"):
            solve_exact(tiny_npkl(), time_limit=-1.0)
