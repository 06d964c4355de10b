"""OrdinalEmbedding: input forms, predictions, and every bad input of issue 3."""

import numpy as np
import pytest

from embedopt._core import (
    ConvergenceWarning,
    DataValidationError,
    InvalidParameterError,
    NotFittedError,
)
from embedopt.data import ComparisonWarning, make_planted_embedding
from embedopt.metrics import triplet_error
from embedopt.ordinal import OrdinalEmbedding

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


@pytest.fixture(scope="module")
def prob():
    return make_planted_embedding(30, 2, n_train=2000, n_test=600, random_state=0)


def _model(**kw):
    return OrdinalEmbedding(2, **{"random_state": 0, "max_iter": 10, **kw})


def test_fit_predict_score_transform(prob):
    m = _model().fit(prob.train, validation=prob.test)
    assert m.embedding_.shape == (30, 2) and m.n_objects_ == 30
    assert m.score(prob.test) == pytest.approx(
        1 - triplet_error(m.embedding_, prob.test)
    )
    assert m.score(prob.test) > 0.9
    assert np.all(m.predict(prob.test.indices) == 1) == (m.score(prob.test) == 1.0)
    flipped = prob.test.indices[:, [0, 2, 1]]
    np.testing.assert_array_equal(m.predict(flipped), -m.predict(prob.test.indices))
    np.testing.assert_array_equal(m.transform([3, 1]), m.embedding_[[3, 1]])
    assert "val_error" in m.history_ and m.n_iter_ == len(m.history_["iteration"])


def test_triplets_with_responses_equal_oriented_triplets(prob):
    T = prob.train.indices
    rng = np.random.default_rng(0)
    y = rng.choice([-1, 1], size=len(T))
    asked = np.where((y == 1)[:, None], T, T[:, [0, 2, 1]])
    a = _model().fit(asked, y).embedding_
    b = _model().fit(T).embedding_
    np.testing.assert_allclose(a, b)
    m = _model().fit(T)
    assert m.score(asked, y) == pytest.approx(m.score(T))


def test_quadruplets_and_fit_transform():
    P = np.random.default_rng(0).normal(size=(20, 2))
    rng = np.random.default_rng(1)
    Q = np.array([rng.choice(20, 4, replace=False) for _ in range(3000)])
    d = lambda a, b: ((P[a] - P[b]) ** 2).sum(1)  # noqa: E731
    y = np.where(d(Q[:, 0], Q[:, 1]) < d(Q[:, 2], Q[:, 3]), 1, -1)
    m = _model(max_iter=20)
    X = m.fit_transform(Q, y)
    assert X.shape == (20, 2) and m.score(Q, y) > 0.9


def test_n_objects_keeps_unseen_objects():
    m = _model().fit([[0, 1, 2], [1, 2, 0], [2, 0, 1]], n_objects=5)
    assert m.embedding_.shape == (5, 2)


@pytest.mark.parametrize(
    ("X", "kwargs", "match"),
    [
        ([[0, 1, 7]], {"n_objects": 5}, "out of range"),
        ([[0, -1, 2]], {}, "negative"),
        ([[0, 1.5, 2]], {}, "integers"),
        ([[0, 1]], {}, "shape"),
        (np.zeros((4, 5), dtype=int), {}, "shape"),
        (np.zeros((0, 3), dtype=int), {}, "empty"),
        ("triplets.csv", {}, "cannot read"),
    ],
)
def test_bad_comparisons_rejected_before_work(X, kwargs, match):
    m = _model()
    with pytest.raises(DataValidationError, match=match):
        m.fit(X, **kwargs)
    assert not hasattr(m, "embedding_")


def test_repeated_index_dropped_with_a_counting_warning():
    X = [[0, 1, 2], [1, 1, 2], [2, 0, 1], [0, 1, 0], [3, 2, 1]]
    with pytest.warns(ComparisonWarning, match="Dropped 2 of 5"):
        _model().fit(X)


def test_n_components_below_one_and_bad_names():
    for bad, match in [
        ({"n_components": 0}, "The 'n_components' parameter of OrdinalEmbedding"),
        ({"loss": "hinge"}, "The 'loss' parameter of OrdinalEmbedding"),
        ({"solver": "adam"}, "The 'solver' parameter of OrdinalEmbedding"),
        ({"epsilon": -1.0}, "The 'epsilon' parameter"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            OrdinalEmbedding(**{"n_components": 2, **bad}).fit([[0, 1, 2]])


def test_bad_responses_and_queries(prob):
    with pytest.raises(DataValidationError, match="one \\+/-1 response"):
        _model().fit(prob.train.indices, np.ones(3))
    with pytest.raises(DataValidationError, match="not \\+1 or -1"):
        _model().fit(prob.train.indices, np.zeros(len(prob.train)))
    m = _model().fit(prob.train)
    with pytest.raises(DataValidationError, match="outside"):
        m.predict([[0, 1, 99]])
    with pytest.raises(DataValidationError, match="object indices"):
        m.transform([40])
    with pytest.raises(DataValidationError, match="init must have shape"):
        _model().fit(prob.train, init=np.zeros((3, 2)))
    with pytest.raises(NotFittedError):
        OrdinalEmbedding().predict([[0, 1, 2]])


@pytest.mark.parametrize("loss", ["ste", "tste", "gnmds", "ckl", "soe"])
def test_every_loss_fits(loss, prob):
    # the default solver (L-BFGS here) to its own tolerance; max_iter=10
    # would be 10 L-BFGS iterations, a much smaller budget than 10 epochs
    m = _model(loss=loss, max_iter=None).fit(prob.train)
    assert np.isfinite(m.embedding_).all() and m.score(prob.test) > 0.75


def test_loss_parameters_reach_the_loss(prob):
    m = _model(loss="ckl", mu=0.3).fit(prob.train)
    assert m.loss_.mu == 0.3
    assert _model(loss="tste").fit(prob.train).loss_.alpha == 1.0
    assert _model(loss="tste", alpha=4.0).fit(prob.train).loss_.alpha == 4.0
    assert _model(loss="soe", margin=0.2).fit(prob.train).loss_.margin == 0.2


# -- sizes, degenerate starts, batches (issue 14) ----------------------------------
@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")  # the stray index
def test_an_index_of_2_to_the_40_is_refused_naming_the_size(prob):
    T = np.r_[prob.train.indices[:-1], [[0, 1, 2**40]]]
    with pytest.raises(DataValidationError, match="1099511627777 objects in 2 dim"):
        _model().fit(T)


def test_n_objects_larger_than_memory_is_refused(prob, monkeypatch):
    from embedopt._core import memory

    monkeypatch.setattr(memory, "device_memory", lambda device: 16 * 2**30)
    with pytest.raises(DataValidationError, match=r"2147483648 objects.*GiB"):
        _model().fit(prob.train, n_objects=2**31)


def test_a_stray_index_warns(prob):
    from embedopt import DataWarning

    T = np.r_[prob.train.indices[:-1], [[0, 1, 20_000]]]
    with pytest.warns(DataWarning, match="inferred size is 20001,"):
        m = _model(max_iter=1).fit(T)
    assert m.n_objects_ == 20_001


@pytest.mark.parametrize("init", [np.zeros((30, 2)), np.ones((30, 2))])
def test_an_init_with_all_rows_equal_is_refused(prob, init):
    with pytest.raises(DataValidationError, match=r"rows equal.*saddle.*init=None"):
        _model().fit(prob.train, init=init)
    for solver in ("sgd", "gd", "svrg_sbb_pl"):
        with pytest.raises(DataValidationError, match="saddle"):
            _model(solver=solver).fit(prob.train, init=init)


def test_the_convex_solver_starts_from_zero(prob):
    m = _model(solver="cvx", max_iter=5).fit(prob.train, init=np.zeros((30, 2)))
    assert m.score(prob.test) > 0.7


def test_a_batch_larger_than_the_epoch_is_clipped_with_a_warning(prob):
    # On this small problem SVRG-SBB's epoch samples all 2000 comparisons
    # (|Q| / 4 only above AUTO_LBFGS_MAX_COMPARISONS).
    with pytest.warns(UserWarning, match="batch_size=1000000 exceeds the 2000 "):
        m = _model(solver="svrg_sbb", batch_size=10**6).fit(prob.train)
    assert np.isfinite(m.embedding_).all() and m.score(prob.test) > 0.9


def test_svrg_sbb_on_a_small_problem_keeps_the_papers_epoch(prob):
    # Quarter epochs made the SBB steps overshoot on small problems (the
    # objective grew by orders of magnitude while the error still fell).
    m = _model(solver="svrg_sbb", max_iter=30).fit(prob.train)
    f = m.history_["objective"]
    assert f[-1] < f[0]


@pytest.mark.parametrize("solver", ["svrg_sbb", "svrg_sbb_pl", "svrg", "sgd", "gd"])
def test_a_single_triplet_is_fitted_without_warnings(solver):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the default b is capped quietly
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = _model(solver=solver).fit([[0, 1, 2]])
    E = m.embedding_
    assert np.isfinite(E).all()
    assert ((E[0] - E[1]) ** 2).sum() < ((E[0] - E[2]) ** 2).sum()


def test_lam_auto_is_a_standard_normal_prior_for_the_likelihood_losses():
    prob = make_planted_embedding(20, 2, n_train=500, n_test=100, random_state=0)
    n_q = len(prob.train)
    for loss, expected in [
        ("ste", 1 / (2 * n_q)),
        ("ckl", 1 / (2 * n_q)),
        ("tste", 0.0),
        ("gnmds", 0.0),
        ("soe", 0.0),
    ]:
        m = OrdinalEmbedding(2, loss=loss, random_state=0).fit(prob.train)
        assert m.solver_ == "lbfgs" and m.lam_ == pytest.approx(expected)
    # an explicit weight is used as given, and changes the fit
    m0 = OrdinalEmbedding(2, lam=0.0, random_state=0).fit(prob.train)
    m1 = OrdinalEmbedding(2, lam=0.01, random_state=0).fit(prob.train)
    assert m0.lam_ == 0.0 and m1.lam_ == 0.01
    assert np.linalg.norm(m1.embedding_) < np.linalg.norm(m0.embedding_)
    # the stochastic solvers have no ridge: auto is 0 there, a weight an error
    m = OrdinalEmbedding(2, solver="svrg_sbb", max_iter=2, random_state=0)
    assert m.fit(prob.train).lam_ == 0.0
    with pytest.raises(InvalidParameterError, match=r"lam=0\.01 needs solver"):
        OrdinalEmbedding(2, solver="svrg_sbb", lam=0.01).fit(prob.train)


def test_n_init_keeps_the_start_with_the_lowest_objective(monkeypatch):
    from embedopt.ordinal import estimators as est

    prob = make_planted_embedding(20, 2, n_train=500, n_test=100, random_state=0)
    runs = []
    real_get = est.SOLVERS.get

    def counting_get(name):
        solve = real_get(name)

        def run(*args, **kwargs):
            runs.append(solve(*args, **kwargs))
            return runs[-1]

        return run

    monkeypatch.setattr(est.SOLVERS, "get", counting_get)

    def starts(**params):
        runs.clear()
        m = OrdinalEmbedding(random_state=0, **params).fit(prob.train)
        return len(runs), m

    # "auto": three starts for SOE in the plane, one otherwise
    assert starts(n_components=2, loss="soe")[0] == 3
    assert starts(n_components=3, loss="soe")[0] == 1
    assert starts(n_components=2, loss="ste")[0] == 1
    n, m = starts(n_components=2, loss="gnmds", n_init=4)
    finals = [r.history["objective"][-1] for r in runs]
    assert n == 4 and len(set(finals)) > 1  # the starts differ
    assert m.history_["objective"][-1] == min(finals)
    # reproducible: the same seed gives the same kept embedding
    again = starts(n_components=2, loss="gnmds", n_init=4)[1]
    np.testing.assert_array_equal(m.embedding_, again.embedding_)
    # an init leaves nothing to restart
    init = np.zeros((20, 2)) + np.arange(40).reshape(20, 2) / 40
    assert starts(n_components=2, loss="soe")[0] == 3
    runs.clear()
    OrdinalEmbedding(2, loss="soe", random_state=0).fit(prob.train, init=init)
    assert len(runs) == 1
    with pytest.raises(InvalidParameterError, match="init"):
        OrdinalEmbedding(2, loss="soe", n_init=3).fit(prob.train, init=init)
