"""The completion solver registry and fit_path (the estimators' one call)."""

import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError, resolve_random_state
from embedopt.completion import (
    SOLVERS,
    CompletionProblem,
    ais_impute,
    ais_impute_exact,
    fit_path,
    get_solver,
    lambda_path,
    method_options,
    postprocess,
    proximal_completion,
    soft_impute,
)
from embedopt.data import ObservedEntries, make_low_rank_matrix, split_entries


@pytest.fixture(scope="module")
def data():
    prob = make_low_rank_matrix(60, rank=2, noise_std=0.05, random_state=0)
    return split_entries(prob.observed, (0.8, 0.2), random_state=0)


def test_registry_maps_names_to_public_functions():
    assert list(SOLVERS) == ["ais_impute", "ais_impute_exact", "soft_impute", "apg"]
    assert get_solver("Soft-Impute") is soft_impute
    with pytest.raises(InvalidParameterError, match="Valid names: 'ais_impute'"):
        get_solver("softimpute")


def test_method_options_are_the_solver_configurations(data):
    assert method_options("apg") == {
        "svt": "dense",
        "momentum": "nesterov_restart",
        "name": "APG",
    }
    tr, _ = data
    a = soft_impute(tr, lam=2.0, random_state=0)
    b = proximal_completion(
        CompletionProblem(tr), lam=2.0, **method_options("soft_impute"), random_state=0
    )
    np.testing.assert_array_equal(a.history["objective"], b.history["objective"])


def test_ais_impute_exact_is_the_exact_svt_variant(data):
    tr, _ = data
    a = ais_impute_exact(tr, lam=2.0, random_state=0)
    b = ais_impute(tr, lam=2.0, exact_svt=True, random_state=0)
    np.testing.assert_array_equal(a.history["objective"], b.history["objective"])


def test_fit_path_fixed_lambda_is_one_solve_then_postprocessing(data):
    tr, _ = data
    prob = CompletionProblem(tr, dtype="float64")
    fit = fit_path(prob, lam=2.0, random_state=0)
    assert fit.path is None and fit.lam == 2.0
    pp = postprocess(prob, *fit.result.x)
    for a, b in zip(fit.factors, pp, strict=True):
        torch.testing.assert_close(a, b)
    raw = fit_path(prob, lam=2.0, postprocess=False, random_state=0)
    assert raw.factors is raw.result.x


def test_fit_path_auto_selects_on_validation_and_refits(data):
    tr, va = data
    prob = CompletionProblem(tr, validation=va, dtype="float64")
    both = ObservedEntries(
        np.concatenate([tr.indices, va.indices]),
        np.concatenate([tr.values, va.values]),
        tr.shape,
    )
    full = CompletionProblem(both, dtype="float64")
    fit = fit_path(prob, n_lambdas=5, refit_problem=full, random_state=0)
    # fit_path gives the path the first child of its random state.
    ref = lambda_path(prob, n_lambdas=5, random_state=resolve_random_state(0).spawn())
    assert fit.lam == fit.path.best_lambda
    assert fit.path.lambdas.size >= 2
    np.testing.assert_array_equal(fit.path.lambdas, ref.lambdas)
    if fit.refined:
        # The selected refinement is refined again on the full problem (it
        # then fits the validation entries too).
        U, s, V = fit.factors
        assert full.loss.total(full.predict((U, s, V)), full.y) < full.loss.total(
            full.predict(fit.path.best_factors), full.y
        )
    else:
        # The refit solves the full problem: its history has no validation column.
        assert "val_rmse" not in fit.result.history
    plain = fit_path(
        prob, n_lambdas=5, refit_problem=full, random_state=0, postprocess=True
    )
    assert not plain.refined and "val_rmse" not in plain.result.history
    with pytest.raises(InvalidParameterError, match="'lam' parameter of fit_path"):
        fit_path(prob, lam=-1.0)


def test_exact_svd_baselines_refuse_power_method_options(data):
    from embedopt.completion import apg

    tr, _ = data
    for solver in (soft_impute, apg):
        with pytest.raises(InvalidParameterError, match="no 'power_iters' parameter"):
            solver(tr, lam=2.0, power_iters=2)


def test_named_solvers_refuse_the_options_their_name_fixes(data):
    # Before: TypeError "multiple values for keyword argument 'momentum'".
    from embedopt.completion import ais_impute_exact, apg

    tr, _ = data
    calls = [
        (soft_impute, {"momentum": "none"}, "'momentum'"),
        (apg, {"svt": "exact"}, "'svt'"),
        (ais_impute_exact, {"exact_svt": True}, "'exact_svt'"),
    ]
    for solver, option, name in calls:
        with pytest.raises(InvalidParameterError, match=f"got {name}: the solver"):
            solver(tr, lam=2.0, **option)


def test_path_functions_check_the_options_they_pass_on(data):
    tr, va = data
    with pytest.raises(InvalidParameterError, match="'max_iter' parameter of lambda"):
        lambda_path(tr, va, max_iter=0)
    with pytest.raises(InvalidParameterError, match="unexpected option 'max_iters'"):
        lambda_path(tr, va, max_iters=10)
    prob = CompletionProblem(tr)
    with pytest.raises(InvalidParameterError, match="'tol' parameter of fit_path"):
        fit_path(prob, lam=1.0, tol=-1.0)


def test_nonconvex_solvers_check_their_inner_options(data):
    from embedopt.completion import dc_completion, irnn

    tr, _ = data
    with pytest.raises(InvalidParameterError, match="unexpected option 'max_iters'"):
        dc_completion(tr, lam=1.0, max_iters=3)
    with pytest.raises(InvalidParameterError, match="'tol' parameter of irnn"):
        irnn(tr, lam=1.0, tol=-1.0)
