"""``TwoTowerModel(process_group=...)``: a 2-process fit on loopback (gloo) ends
where the one-process fit ends, with both processes holding the same model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from embedopt._core import InvalidParameterError
from embedopt.similarity import TwoTowerModel, run_distributed
from tests.conftest import fast_start_method

M_USERS, N_ITEMS = 13, 9


def _data():
    """Small implicit feedback with side features on both sides."""
    rng = np.random.default_rng(3)
    users = rng.integers(0, M_USERS, 60)
    items = rng.integers(0, N_ITEMS, 60)
    user_features = {
        "age": rng.normal(size=(M_USERS, 1)),
        "group": rng.integers(0, 3, M_USERS),
    }
    item_features = {"genre": rng.integers(0, 4, N_ITEMS)}
    return (users, items), user_features, item_features


def _fit(group, random_state=0, solver="auto"):
    pairs, uf, vf = _data()
    model = TwoTowerModel(
        3,
        hidden=5,
        max_iter=3,
        dtype="float64",
        solver=solver,
        random_state=random_state,
        process_group=group,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter = 3
        model.fit(pairs, user_features=uf, item_features=vf)
    return {
        "P": model.user_embeddings_,
        "Q": model.item_embeddings_,
        "objective": model.objective_,
        "solver": model.solver_,
        "n_iter": model.n_iter_,
        "recommend": model.recommend(np.arange(M_USERS), k=3)[0],
    }


def _worker():
    """Each of the 2 processes: the default fit, one with an unseeded
    random_state, and gradient descent."""
    return {
        "auto": _fit("default"),
        "unseeded": _fit("default", random_state=None),
        "gd": _fit("default", solver="gradient_descent"),
    }


@pytest.fixture(scope="module")
def fits():
    one = {"auto": _fit(None), "gd": _fit(None, solver="gradient_descent")}
    two = run_distributed(_worker, 2, threads=1, start_method=fast_start_method())
    return one, two


@pytest.mark.parametrize("solver", ["auto", "gd"])
def test_two_processes_end_where_one_ends(fits, solver):
    one, two = fits
    ref = one[solver]
    for res in (r[solver] for r in two):
        assert res["solver"] == ref["solver"]
        assert res["n_iter"] == ref["n_iter"]
        assert res["objective"] == pytest.approx(ref["objective"], rel=1e-8)
        scale = np.abs(ref["P"]).max()
        assert np.abs(res["P"] - ref["P"]).max() < 1e-6 * scale
        assert np.abs(res["Q"] - ref["Q"]).max() < 1e-6 * np.abs(ref["Q"]).max()


def test_auto_means_gauss_newton_on_a_group(fits):
    one, two = fits
    assert one["auto"]["solver"] == "gauss_newton"  # hybrid towers: ALS + GN
    assert all(res["auto"]["solver"] == "gauss_newton" for res in two)


@pytest.mark.parametrize("case", ["auto", "unseeded", "gd"])
def test_processes_hold_the_same_model(fits, case):
    _, (first, second) = fits
    a, b = first[case], second[case]
    assert np.array_equal(a["P"], b["P"])
    assert np.array_equal(a["Q"], b["Q"])
    assert np.array_equal(a["recommend"], b["recommend"])
    assert a["objective"] == b["objective"]


def test_process_group_without_torch_distributed_is_a_clear_error():
    pairs, _, _ = _data()
    with pytest.raises(InvalidParameterError, match="init_process_group"):
        TwoTowerModel(3, process_group="default").fit(pairs)


def _refuses_als():
    pairs, _, _ = _data()
    try:
        TwoTowerModel(3, solver="als", process_group="default").fit(pairs)
    except InvalidParameterError as exc:
        return str(exc)
    return None


def test_single_process_solvers_are_refused_on_a_group():
    messages = run_distributed(
        _refuses_als, 2, threads=1, start_method=fast_start_method()
    )
    assert all(m is not None and "one process only" in m for m in messages)


def test_bad_process_group_is_a_parameter_error():
    pairs, _, _ = _data()
    with pytest.raises(InvalidParameterError, match="process_group"):
        TwoTowerModel(3, process_group="everyone").fit(pairs)
