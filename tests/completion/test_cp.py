"""Sparse CP-ALS (completion/cp.py) and TensorCompletion's CP model."""

import numpy as np
import pytest

import embedopt
from embedopt.completion import TensorCompletion
from embedopt.completion.cp import (
    _mode_patterns,
    als_step,
    cp_als,
    cp_grid,
    cp_objective,
    cp_predict,
    cp_ranks,
)
from embedopt.data import ObservedEntries


def _tiny(seed=0, shape=(4, 3, 5), rank=2, frac=0.6):
    rng = np.random.default_rng(seed)
    cells = np.stack(np.unravel_index(np.arange(np.prod(shape)), shape), 1)
    idx = cells[rng.random(len(cells)) < frac]
    factors = [rng.standard_normal((n, rank)) for n in shape]
    values = rng.standard_normal(len(idx))
    weight = rng.uniform(0.5, 2.0, len(idx))
    return idx, values, weight, factors


def test_cp_predict_matches_the_dense_tensor():
    _, _, _, factors = _tiny()
    dense = np.einsum("ir,jr,kr->ijk", *factors)
    cells = np.stack(np.unravel_index(np.arange(dense.size), dense.shape), 1)
    np.testing.assert_allclose(cp_predict(factors, cells), dense.ravel())


@pytest.mark.parametrize("d", [0, 1, 2])
def test_als_step_is_the_exact_minimizer_of_its_block(d):
    idx, values, weight, factors = _tiny(seed=d)
    ridge = 0.3
    expected = factors[d].copy()
    for i in range(factors[d].shape[0]):  # naive: lstsq of the stacked rows
        e = idx[:, d] == i
        K = np.ones((e.sum(), 2))
        for k, A in enumerate(factors):
            if k != d:
                K *= A[idx[e, k]]
        sw = np.sqrt(weight[e])[:, None]
        lhs = np.vstack([sw * K, np.sqrt(ridge) * np.eye(2)])
        rhs = np.concatenate([sw[:, 0] * values[e], np.zeros(2)])
        expected[i] = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    before = cp_objective(factors, idx, values, ridge, weight)
    als_step(factors, d, idx, values, ridge, weight)
    np.testing.assert_allclose(factors[d], expected, atol=1e-10)
    assert cp_objective(factors, idx, values, ridge, weight) <= before


def test_the_objective_never_increases_and_the_fit_recovers_a_cp_tensor():
    rng = np.random.default_rng(1)
    shape = (9, 8, 7, 4)
    truth = [rng.standard_normal((n, 3)) for n in shape]
    cells = np.stack(np.unravel_index(np.arange(np.prod(shape)), shape), 1)
    seen = rng.random(len(cells)) < 0.5
    values = cp_predict(truth, cells)
    res = cp_als(cells[seen], values[seen], shape, 3, ridge=1e-3, max_sweeps=200)
    obj = np.asarray(res.objectives)
    assert np.all(np.diff(obj) <= 1e-12 * obj[:-1])
    held = cp_predict(res.factors, cells[~seen])
    assert np.linalg.norm(held - values[~seen]) < 0.05 * np.linalg.norm(values)


def test_patterns_are_the_sorted_slices():
    idx, *_ = _tiny()
    order, crow = _mode_patterns(idx, (4, 3, 5))[1]
    assert np.all(np.diff(idx[order, 1]) >= 0)
    assert crow[-1] == len(idx)
    np.testing.assert_array_equal(np.diff(crow), np.bincount(idx[:, 1], minlength=3))


def test_cp_ranks_keep_fewer_parameters_than_entries():
    assert cp_ranks((10, 10, 10), 100) == []
    assert cp_ranks((10, 10, 10), 30 * 16) == [4, 8, 16]
    # and a sweep's work rank^2 |Omega| within CP_MAX_WORK
    assert cp_ranks((500, 500, 3), 126_000) == [4, 8, 16]


def test_cp_als_refuses_an_empty_fit_and_a_rank_below_one():
    with pytest.raises(embedopt.DataValidationError, match="observed entries"):
        cp_als(np.zeros((0, 3), dtype=np.int64), np.zeros(0), (2, 2, 2), 2)
    with pytest.raises(embedopt.InvalidParameterError, match="rank must be"):
        cp_als(np.zeros((1, 3), dtype=np.int64), np.ones(1), (2, 2, 2), 0)


def test_the_grid_is_one_cp_als_per_rank_and_ridge():
    rng = np.random.default_rng(3)
    shape = (9, 8, 7)
    idx = np.array(np.unravel_index(rng.choice(504, 300, replace=False), shape)).T
    values = rng.standard_normal(300)
    w = rng.uniform(0.5, 1.5, 300)
    grid = cp_grid(idx, values, shape, [2, 3], (0.5, 2.0), weight=w)
    assert [(r, a) for r, a, _ in grid] == [(2, 0.5), (2, 2.0), (3, 0.5), (3, 2.0)]
    for r, a, res in grid:
        alone = cp_als(idx, values, shape, r, weight=w, ridge=a)
        assert res.n_sweeps == alone.n_sweeps and res.objectives == alone.objectives
        for A, B in zip(res.factors, alone.factors, strict=True):
            np.testing.assert_array_equal(A, B)


@pytest.fixture(scope="module")
def cp_tensor():
    """A 4-way CP rank-3 tensor, 40 % observed: the CP model must win."""
    rng = np.random.default_rng(0)
    shape = (14, 13, 4, 5)
    truth = [rng.standard_normal((n, 3)) for n in shape]
    cells = np.stack(np.unravel_index(np.arange(np.prod(shape)), shape), 1)
    seen = rng.random(len(cells)) < 0.4
    values = cp_predict(truth, cells) + 0.01 * rng.standard_normal(len(cells))
    train = ObservedEntries(cells[seen], values[seen], shape)
    model = TensorCompletion(random_state=0, max_iter=50).fit(train)
    return model, cells[~seen], values[~seen], train


def test_tensor_completion_keeps_the_cp_model_where_it_validates_better(cp_tensor):
    model, cells, values, _ = cp_tensor
    assert model.model_ == "cp" and model.cp_rank_ in model.model_selection_["cp_ranks"]
    sel = model.model_selection_
    assert min(sel["cp"]) < sel["latent"]
    assert len(sel["cp"]) == len(sel["cp_ranks"]) == len(sel["cp_ridges"])
    pred = model.predict(cells)
    assert np.linalg.norm(pred - values) < 0.1 * np.linalg.norm(values)
    raw = cp_predict(model.cp_factors_, cells)
    expected = model.centering_.inverse_transform(tuple(cells.T), raw)
    np.testing.assert_allclose(pred, expected)
    assert model.score(cells, values) == pytest.approx(
        -np.sqrt(np.mean((pred - values) ** 2))
    )
    assert model.history_ is not None and len(model.ranks_) == 4


def test_a_cp_model_saves_loads_and_takes_new_entries(cp_tensor, tmp_path):
    model, cells, _, _ = cp_tensor
    model.save(tmp_path / "cp.embedopt")
    loaded = embedopt.load(tmp_path / "cp.embedopt")
    assert loaded.model_ == "cp"
    np.testing.assert_array_equal(loaded.predict(cells), model.predict(cells))
    # a new index of mode 3 (beyond shape_) refits the CP factors, warm
    new = np.array([[0, 0, 0, 5], [1, 2, 3, 5], [3, 1, 0, 5]])
    loaded.partial_fit(new, np.array([1.0, -1.0, 0.5]), refit="all")
    assert loaded.shape_ == (14, 13, 4, 6) and loaded.model_ == "cp"
    assert loaded.cp_factors_[3].shape == (6, loaded.cp_rank_)
    assert np.isfinite(loaded.predict(cells)).all()


def test_without_postprocess_auto_the_model_stays_latent(cp_tensor):
    _, _, _, train = cp_tensor
    model = TensorCompletion(postprocess=True, n_lambdas=4, max_iter=20)
    model.fit(train)
    assert model.model_ == "latent" and model.cp_factors_ is None
