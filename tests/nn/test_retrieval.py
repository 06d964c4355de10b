"""The retrieval surface both two-tower models share (nn.RetrievalMixin)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone

from embedopt import DataValidationError, InvalidParameterError
from embedopt.nn import TOWERS, RetrievalMixin, build_tower, ranking_metrics
from embedopt.quantization import TwoTowerRetrieval
from embedopt.similarity import TwoTowerModel
from tests._tolerance import assert_close, score_tolerance


def _pairs():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 20, 200)
    items = (users % 4) * 3 + rng.integers(0, 3, 200)
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    return pairs[:, 0], pairs[:, 1]


_RETRIEVAL = dict(
    n_components=8,
    hidden=8,
    n_subquantizers=2,
    n_centroids=4,
    batch_size=16,
    warmup_steps=6,
    n_steps=7,
    warm_start_samples=32,
    warm_start_iter=2,
    log_every=3,
    device="cpu",
)


@pytest.fixture(scope="module", params=["similarity", "retrieval"])
def model(request):
    X = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if request.param == "similarity":
            return TwoTowerModel(4, max_iter=3, random_state=0).fit(X)
        return TwoTowerRetrieval(random_state=0, **_RETRIEVAL).fit(X)


def test_both_models_share_the_surface(model):
    assert isinstance(model, RetrievalMixin)
    u, i = _pairs()
    ids, scores = model.recommend(np.arange(20), 5)
    assert ids.shape == scores.shape == (20, 5) and ids.dtype == np.int64
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # by decreasing score
    for q in range(20):  # exclude_seen=True by default
        assert not set(ids[q]) & set(i[u == q].tolist())
    again, _ = model.recommend(np.arange(20), 5, exclude_seen=False)
    assert any(set(again[q]) & set(i[u == q].tolist()) for q in range(20))
    sim, sim_scores = model.similar_items([0, 5], k=3)
    assert sim.shape == sim_scores.shape == (2, 3)
    assert 0 not in sim[0] and 5 not in sim[1]
    metrics = model.evaluate(_pairs(), 5, exclude_seen=False)
    assert set(metrics) == {"precision@5", "recall@5", "ndcg@5", "map@5", "n_users"}


def test_items_restricts_the_candidates(model):
    candidates = np.array([1, 4, 7, 10])
    ids, scores = model.recommend(
        np.arange(20), 3, exclude_seen=False, items=[7, 1, 4, 10, 4]
    )
    assert np.isin(ids, candidates).all()
    # the same items, in the same order, as a full ranking restricted to them
    full, full_scores = model.recommend(np.arange(20), 12, exclude_seen=False)
    for q in range(20):
        keep = np.isin(full[q], candidates)
        assert_close(scores[q], full_scores[q][keep][:3], score_tolerance(model))
    ids, _ = model.recommend([0], 10, items=[1, 4])  # k capped at the candidates
    assert ids.shape == (1, 2)
    with pytest.raises(DataValidationError, match="items"):
        model.recommend([0], 3, items=[99])


def test_score_is_one_float_and_predict_scores_pairs(model):
    X = _pairs()
    s = model.score(X)
    assert isinstance(s, float) and 0.0 <= s <= 1.0
    k = getattr(model, "eval_k", 10)
    assert s == model.evaluate(X, k)[f"precision@{k}"]
    p = model.predict([0, 1, 2], [3, 4, 5])
    assert p.shape == (3,) and np.isfinite(p).all()
    with pytest.raises(DataValidationError, match="same length"):
        model.predict([0, 1], [0])
    with pytest.raises(InvalidParameterError, match="'k' parameter"):
        model.recommend([0], 0)


def test_clone_keeps_the_parameters(model):
    c = clone(model)
    assert c.get_params() == model.get_params() and not hasattr(c, "shape_")


def test_ranking_metrics_names():
    out = ranking_metrics(np.array([[0, 1]]), [np.array([1])], 2)
    assert out == {
        "precision@2": 0.5,
        "recall@2": 1.0,
        "ndcg@2": pytest.approx(1 / np.log2(3)),
        "map@2": 0.5,
    }


def test_hybrid_has_one_meaning():
    from embedopt.data import as_side_features
    from embedopt.nn import EmbeddingTower, MLPTower, SumTower

    assert list(TOWERS) == ["embedding", "mlp", "hybrid"]
    feats = as_side_features({"g": np.arange(6) % 2}, 6, "item")
    tower = build_tower("hybrid", 6, 3, feats, hidden=4, generator=torch.Generator())
    assert isinstance(tower, SumTower)
    assert [type(t) for t in tower.towers] == [EmbeddingTower, MLPTower]
    with pytest.raises(InvalidParameterError, match="needs side features"):
        build_tower("mlp", 6, 3)


def test_a_callback_ends_the_whole_similarity_fit_in_its_warm_start():
    from embedopt.data import as_side_features  # noqa: F401

    X = _pairs()
    features = {"g": np.arange(12) % 3}
    seen = []
    model = TwoTowerModel(
        4, max_iter=5, random_state=0, callback=lambda s: seen.append(s.solver) or True
    ).fit(X, item_features=features)
    assert seen == ["ALS"]  # the warm start's first iteration, then nothing
    assert model.stop_reason_ == "callback" and model.solver_ == "als"
    assert model.n_iter_ == 1 and np.isfinite(model.objective_)
    assert model.recommend([0], 3)[0].shape == (1, 3)


def test_a_callback_ends_the_whole_retrieval_fit_in_its_warm_up():
    names = []
    model = TwoTowerRetrieval(
        random_state=0, callback=lambda s: names.append(s.solver) or True, **_RETRIEVAL
    ).fit(_pairs())
    assert names == ["two_tower[warm-up]"]
    assert model.stop_reason_ == "callback" and model.n_iter_ == 1
    assert model.recommend([0], 3)[0].shape == (1, 3)  # the OPQ warm start's index


def test_retrieval_fitted_attributes():
    model = TwoTowerRetrieval(rotation="gcd-g", random_state=0, **_RETRIEVAL).fit(
        _pairs()
    )
    assert model.solver_ == "gcd_g" and np.isfinite(model.objective_)
    assert model.stop_reason_ == "n_steps"
    with pytest.raises(InvalidParameterError, match="'rotation' parameter"):
        TwoTowerRetrieval(rotation="opq", **_RETRIEVAL).fit(_pairs())
