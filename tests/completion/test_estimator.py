import numpy as np
import pytest
import scipy.sparse as sp

from embedopt._core import DataValidationError, InvalidParameterError, NotFittedError
from embedopt.completion import MatrixCompletion
from embedopt.data import ObservedEntries, load_movielens, split_entries
from embedopt.metrics import rmse
from tests.conftest import random_entries, requires_dataset


@pytest.fixture(scope="module")
def fitted():
    entries, U, V = random_entries(m=60, n=40, rank=3, frac=0.5, noise=0.01)
    model = MatrixCompletion(center="none", random_state=0, dtype="float64")
    return model.fit(entries), entries, U, V


def test_fit_predict_recovers_low_rank(fitted):
    model, _entries, U, V = fitted
    truth = U @ V.T
    rows, cols = np.nonzero(np.ones_like(truth, dtype=bool))
    pred = model.predict(rows, cols)
    assert rmse(truth.ravel(), pred) < 0.1 * truth.std()
    assert model.rank_ == model.s_.shape[0] == model.U_.shape[1]
    assert model.path_ is not None and model.lam_ in model.path_["lambdas"]
    np.testing.assert_allclose(model.to_dense().ravel(), pred, atol=1e-8)


def test_predict_input_forms(fitted):
    model, entries, _, _ = fitted
    a = model.predict([0, 1], [2, 3])
    np.testing.assert_allclose(model.predict(np.array([[0, 2], [1, 3]])), a)
    np.testing.assert_allclose(model.predict(([0, 1], [2, 3])), a)
    np.testing.assert_allclose(
        model.predict(ObservedEntries(([0, 1], [2, 3]), [0.0, 0.0], entries.shape)), a
    )
    with pytest.raises(DataValidationError, match="out of range"):
        model.predict([60], [0])
    with pytest.raises(DataValidationError):
        model.predict(np.zeros((3, 3)))


def test_score_and_fit_forms(fitted):
    model, entries, _, _ = fitted
    assert model.score(entries) == pytest.approx(
        -rmse(entries.values, model.predict(entries.rows, entries.cols))
    )
    pos = np.stack([entries.rows, entries.cols], 1)
    m2 = MatrixCompletion(lam=1.0, center="both", random_state=0).fit(
        pos, entries.values, shape=entries.shape
    )
    assert m2.shape_ == entries.shape and m2.path_ is None
    dense = np.full(entries.shape, np.nan)
    dense[entries.rows, entries.cols] = entries.values
    m3 = MatrixCompletion(lam=1.0, random_state=0).fit(dense)
    m4 = MatrixCompletion(lam=1.0, random_state=0).fit(
        sp.csr_matrix(
            (entries.values, (entries.rows, entries.cols)), shape=entries.shape
        )
    )
    np.testing.assert_allclose(m3.predict([0], [0]), m4.predict([0], [0]), rtol=1e-5)


def test_binary_completion_scores_accuracy():
    rng = np.random.default_rng(0)
    S = np.sign(rng.standard_normal((50, 2)) @ rng.standard_normal((2, 40)))
    r, c = np.nonzero(rng.random((50, 40)) < 0.6)
    obs = ObservedEntries((r, c), S[r, c], (50, 40))
    tr, te = split_entries(obs, (0.8, 0.2), random_state=0)
    model = MatrixCompletion(loss="logistic", center="none", random_state=0).fit(tr)
    assert model.score(te) > 0.85
    assert set(np.unique(model.predict(te))) <= {-1.0, 1.0}
    with pytest.raises(InvalidParameterError, match="'center' parameter"):
        MatrixCompletion(loss="logistic", center="row").fit(tr)
    with pytest.raises(DataValidationError, match=r"\+/-1"):
        MatrixCompletion(loss="logistic", center="none").fit(
            obs.with_values(obs.values + 2)
        )


def test_not_fitted_and_bad_params():
    with pytest.raises(NotFittedError):
        MatrixCompletion().predict([0], [0])
    entries, _, _ = random_entries()
    with pytest.raises(
        InvalidParameterError,
        match=r"The 'lam' parameter of MatrixCompletion must be a float "
        r"in \(0, inf\) or a str among \{'auto'\}\. Got -1\.0\.",
    ):
        MatrixCompletion(lam=-1.0).fit(entries)
    with pytest.raises(InvalidParameterError, match="'solver'"):
        MatrixCompletion(solver="als").fit(entries)
    with pytest.raises(DataValidationError, match="duplicate"):
        MatrixCompletion().fit(([0, 0], [1, 1], [1.0, 2.0]))
    with pytest.raises(DataValidationError, match="empty"):
        MatrixCompletion().fit(np.full((3, 3), np.nan))


def test_refit_uses_all_entries():
    entries, _, _ = random_entries(m=40, n=30, frac=0.6)
    a = MatrixCompletion(refit=True, random_state=0).fit(entries)
    b = MatrixCompletion(refit=False, random_state=0).fit(entries)
    assert a.lam_ == b.lam_
    assert a.score(entries) >= b.score(entries) - 1e-6


@requires_dataset("movielens-100k")
def test_movielens_100k_beats_a_baseline():
    ml = load_movielens("100k")
    tr, te = split_entries(ml.entries, (0.8, 0.2), random_state=0)
    model = MatrixCompletion(random_state=0).fit(tr)
    assert -model.score(te) < 0.95  # global-mean baseline is ~1.12


def test_default_centering_follows_the_loss():
    # +/-1 labels cannot be centered: the default must not make the user say so.
    from embedopt.data import make_low_rank_matrix

    prob = make_low_rank_matrix(40, rank=2, random_state=0)
    idx = prob.observed.indices
    labels = np.where(prob.observed.values >= 0, 1.0, -1.0)
    data = (idx[:, 0], idx[:, 1], labels)
    model = MatrixCompletion(loss="logistic", random_state=0, n_lambdas=4).fit(data)
    assert model.centering_.center == "none" and model.score(data) > 0.9
    assert model.centering_selection_ is None


def _offset_matrix(offsets: bool, seed=0):
    """A rank-2 matrix observed at 60 %, plus real row / column offsets or not."""
    from embedopt.data import make_low_rank_matrix

    prob = make_low_rank_matrix(
        60, 50, rank=2, noise_std=0.05, n_observed=1800, random_state=seed
    )
    e = prob.observed
    if offsets:
        rng = np.random.default_rng(seed)
        a, b = rng.normal(3, 1.5, 60), rng.normal(0, 1.5, 50)
        e = e.with_values(e.values + a[e.rows] + b[e.cols])
    return e


def test_default_centering_is_chosen_from_the_data():
    # Real offsets are removed; on a zero-mean low-rank matrix fitted offsets
    # are noise and the default leaves the values alone (issue 13).
    for offsets, expected in ((True, "both"), (False, "none")):
        for lam in ("auto", 1.0):
            model = MatrixCompletion(lam=lam, random_state=0).fit(
                _offset_matrix(offsets)
            )
            assert model.center_ == expected == model.centering_.center
            sel = model.centering_selection_
            assert sel.center == expected and set(sel.mse) == {"none", "global", "both"}
            assert (sel.z["both"] > 2) == (expected == "both")


def test_default_centering_with_too_few_entries_to_test_the_offsets():
    # A fixed lam needs no validation split; with a handful of entries there
    # is nothing to hold out, and the default must still fit (it did before
    # the centering was chosen from the data).
    rows, cols = np.arange(5), np.arange(5)[::-1]
    vals = np.arange(5, dtype=float) + 1
    for n in (1, 3, 5):
        model = MatrixCompletion(lam=1.0, random_state=0).fit(
            (rows[:n], cols[:n], vals[:n])
        )
        assert model.center_ == "both" and model.centering_selection_ is None
    model = MatrixCompletion(random_state=0).fit((rows, cols, vals))
    assert np.isfinite(model.predict(rows, cols)).all()


def test_default_centering_is_never_worse_than_none():
    from embedopt.data import split_entries

    for seed in range(3):
        for offsets in (True, False):
            tr, te = split_entries(
                _offset_matrix(offsets, seed), (0.8, 0.2), random_state=0
            )
            auto = MatrixCompletion(random_state=0).fit(tr)
            none = MatrixCompletion(center="none", random_state=0).fit(tr)
            assert -auto.score(te) <= -none.score(te) * 1.02


# -- sizes that cannot fit, stray indices, infinite lambda (issue 14) ----------------
def _entries_with_row(big):
    rng = np.random.default_rng(0)
    lin = np.unique(rng.integers(0, 50 * 50, 300))
    rows, cols = lin // 50, lin % 50
    rows[-1] = big
    return rows, cols, rng.normal(size=rows.size)


@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")  # the stray index
def test_an_index_of_2_to_the_40_is_refused_naming_the_size():
    with pytest.raises(DataValidationError) as exc:
        MatrixCompletion(1.0).fit(_entries_with_row(2**40))
    text = str(exc.value)
    assert "1099511627777 x 50 matrix" in text and "TiB" in text
    assert "shape=" in text and "np.unique" in text


def test_a_shape_larger_than_memory_is_refused_before_any_work(monkeypatch):
    from embedopt._core import memory

    monkeypatch.setattr(memory, "device_memory", lambda device: 16 * 2**30)
    rows, cols, vals = _entries_with_row(3)
    with pytest.raises(DataValidationError, match=r"2147483648 x 50 matrix.*128\.0"):
        MatrixCompletion(1.0).fit((rows, cols, vals), shape=(2**31, 50))


def test_a_stray_index_warns_about_the_inferred_shape():
    from embedopt import DataWarning

    model = MatrixCompletion(1.0, max_iter=2, random_state=0, device="cpu")
    with pytest.warns(DataWarning, match="inferred size is 10001,"):
        model.fit(_entries_with_row(10_000))
    assert model.shape_ == (10_001, 50)


@pytest.mark.parametrize("lam", [np.inf, float("inf")])
def test_infinite_lambda_is_refused_at_the_parameter_check(lam):
    with pytest.raises(InvalidParameterError, match=r"'lam' parameter.*Got inf"):
        MatrixCompletion(lam).fit(_entries_with_row(3))


def test_a_lambda_beyond_float32_shrinks_everything_to_zero():
    # the threshold 1e300 does not fit in float32: torch refused to convert it
    model = MatrixCompletion(1e300, max_iter=3, random_state=0, device="cpu")
    model.fit(_entries_with_row(3))
    assert model.rank_ == 0


def test_fitted_attributes_name_the_solver_and_its_objective(fitted):
    model, entries, _, _ = fitted
    assert model.solver_ == "ais_impute"
    assert model.objective_ == pytest.approx(model.history_["objective"][-1])
    assert model.n_iter_ == len(model.history_["objective"])
    auto = MatrixCompletion(lam=1.0, solver="auto", random_state=0).fit(entries)
    same = MatrixCompletion(lam=1.0, random_state=0).fit(entries)
    assert auto.solver_ == "ais_impute"
    np.testing.assert_array_equal(auto.s_, same.s_)
    spelled = MatrixCompletion(lam=1.0, solver="Soft-Impute", random_state=0)
    assert spelled.fit(entries).solver_ == "soft_impute"


def test_sklearn_model_selection_on_positions_and_values():
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import Pipeline

    entries, _, _ = random_entries(m=24, n=18, rank=2, frac=0.6)
    X, y = entries.indices, entries.values
    model = MatrixCompletion(lam=0.5, random_state=0, max_iter=50)
    # shape= reaches fit through params, so every fold predicts inside it.
    scores = cross_val_score(
        clone(model),
        X,
        y,
        cv=KFold(3, shuffle=True, random_state=0),
        params={"shape": entries.shape},
    )
    assert scores.shape == (3,) and np.all(scores < 0)
    pipe = Pipeline([("complete", clone(model))]).fit(
        X, y, complete__shape=entries.shape
    )
    assert pipe.score(X, y) == pytest.approx(
        model.fit(X, y, shape=entries.shape).score(X, y)
    )
