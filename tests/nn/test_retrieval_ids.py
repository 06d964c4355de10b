"""RetrievalMixin on the user's own ids: decoding and ``unknown=``, once for
both two-tower models."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.quantization import TwoTowerRetrieval
from embedopt.similarity import TwoTowerModel

_RNG = np.random.default_rng(0)
_U, _I = _RNG.integers(0, 10, 80), _RNG.integers(0, 8, 80)
_KEEP = np.unique(_U * 8 + _I, return_index=True)[1]
_U, _I = _U[_KEEP], _I[_KEEP]
_USERS = np.array([f"user-{k}" for k in range(10)])
_ITEMS = np.array([f"sku{k:02d}" for k in range(8)])

MODELS = {
    "TwoTowerModel": lambda **kw: TwoTowerModel(
        3, max_iter=3, tol=0.0, random_state=0, **kw
    ),
    "TwoTowerRetrieval": lambda **kw: TwoTowerRetrieval(
        4,
        hidden=4,
        n_subquantizers=2,
        n_centroids=4,
        batch_size=16,
        warmup_steps=4,
        n_steps=4,
        warm_start_samples=32,
        warm_start_iter=2,
        log_every=2,
        device="cpu",
        random_state=0,
        **kw,
    ),
}


@pytest.fixture(params=list(MODELS), scope="module")
def fitted(request):
    make = MODELS[request.param]
    return make().fit((_USERS[_U], _ITEMS[_I])), make


def test_recommend_returns_the_users_item_ids(fitted):
    model, _ = fitted
    ids, scores = model.recommend(["user-3", "user-10"[:6]], 3)
    assert ids.dtype.kind == "U" and set(ids.ravel()) <= set(_ITEMS) | {""}
    assert (ids == "").sum() == np.isinf(scores).sum()  # pads
    seen = set(_ITEMS[_I[_USERS[_U] == "user-3"]])
    assert not seen & set(ids[0])  # training pairs excluded, in ids
    similar, _ = model.similar_items(["sku02"], 2)
    assert "sku02" not in similar[0]


def test_unknown_users_get_the_popularity_ranking_or_nan(fitted):
    model, _ = fitted
    with pytest.raises(DataValidationError, match=r"'nobody'.*unknown="):
        model.recommend(["nobody"], 3)
    model.set_params(unknown="fallback")
    counts = np.bincount(_I, minlength=8).astype(float)
    order = np.argsort(-counts, kind="stable")[:3]
    ids, scores = model.recommend(["nobody", "user-1"], 3)
    assert ids[0].tolist() == _ITEMS[order].tolist()  # nothing excluded
    np.testing.assert_array_equal(scores[0], counts[order])
    # the known user's row is the one the default policy gives
    model.set_params(unknown="raise")
    np.testing.assert_array_equal(model.recommend(["user-1"], 3)[0][0], ids[1])
    model.set_params(unknown="nan")
    ids, scores = model.recommend(["nobody"], 3)
    assert np.isnan(scores).all() and (ids == "").all()
    model.set_params(unknown="raise")


def test_predict_falls_back_to_the_mean_embedding(fitted):
    model, _ = fitted
    model.set_params(unknown="fallback")
    mean_user = model._user_vectors(np.arange(10)).double().mean(0)
    item = model._item_vectors(np.array([model.item_ids_.tolist().index("sku01")]))
    out = model.predict(["nobody", "user-2"], ["sku01", "sku01"])
    assert out[0] == pytest.approx(float(mean_user @ item[0].double()), rel=1e-5)
    model.set_params(unknown="nan")
    assert np.isnan(model.predict(["nobody"], ["sku01"])).all()
    model.set_params(unknown="raise")


def test_evaluate_reads_held_out_pairs_in_ids(fitted):
    model, _ = fitted
    out = model.evaluate((_USERS[_U[:10]], _ITEMS[_I[:10]]), 3, exclude_seen=False)
    assert 0 <= out["precision@3"] <= 1
    with pytest.raises(DataValidationError, match="unseen at fit"):
        model.evaluate((np.array(["nobody"]), np.array(["sku01"])))
    model.set_params(unknown="fallback")
    # two unknown users are two queries, ranked by popularity
    out = model.evaluate(
        (np.array(["a", "b", "a"]), np.array(["sku01", "sku02", "zzz"])), 3
    )
    assert out["n_users"] == 2
    model.set_params(unknown="raise")


def test_positions_beyond_the_fitted_users_follow_the_policy():
    model = MODELS["TwoTowerModel"]().fit((_U, _I))
    assert model.user_ids_ is None
    with pytest.raises(DataValidationError, match=r"must lie in \[0, 10\)"):
        model.recommend([10], 2)
    model.set_params(unknown="fallback")
    ids, _ = model.recommend([10], 2)
    counts = np.bincount(_I, minlength=8)
    assert ids[0].tolist() == np.argsort(-counts, kind="stable")[:2].tolist()
    with pytest.raises(DataValidationError, match="must lie in"):
        model.recommend([-1], 2)


def test_side_features_of_mapped_ids_have_one_row_per_id():
    with pytest.raises(DataValidationError, match="one row per distinct user id"):
        TwoTowerModel(3, max_iter=2).fit(
            (_USERS[_U], _I), user_features={"g": np.arange(12) % 3}
        )


def test_a_frame_of_pairs_takes_two_columns():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"u": _USERS[_U], "i": _ITEMS[_I]})
    for make in MODELS.values():
        with pytest.raises(DataValidationError, match="sample_weight"):
            make().fit(df.assign(w=1.0))
        with pytest.raises(DataValidationError, match=r"\(user, item\); got 1"):
            make().fit(df[["u"]])
