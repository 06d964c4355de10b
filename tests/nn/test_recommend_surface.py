"""The one recommend surface (issue 23, item 3): ``recommend`` with ``items``
and ``filter_items``, ``similar_items``, ``similar_users``, checked against
the naive computation, on MatrixCompletion and both two-tower models."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from embedopt import DataValidationError
from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.nn import RetrievalMixin
from embedopt.quantization import TwoTowerRetrieval
from embedopt.similarity import TwoTowerModel
from tests._tolerance import assert_close, inner_product_tolerance, score_tolerance
from tests.conftest import random_entries
from tests.nn.test_retrieval import _RETRIEVAL, _pairs


@pytest.fixture(scope="module")
def mc():
    entries, _, _ = random_entries(m=24, n=18, rank=2, frac=0.5)
    # center="both": item offsets that change the ranking
    model = MatrixCompletion(
        n_lambdas=4, max_iter=60, center="both", dtype="float64", random_state=0
    ).fit(entries)
    return model, entries


@pytest.fixture(scope="module", params=["similarity", "retrieval"])
def towers(request):
    X = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if request.param == "similarity":
            return TwoTowerModel(4, max_iter=3, random_state=0).fit(X)
        return TwoTowerRetrieval(random_state=0, **_RETRIEVAL).fit(X)


def _naive_top(dense, seen, k):
    """Top-k of each row of a dense score matrix with the seen cells masked."""
    s = np.where(seen, -np.inf, dense)
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(s, order, 1)


def test_matrix_completion_recommends_by_the_completed_matrix(mc):
    model, e = mc
    assert isinstance(model, RetrievalMixin)
    dense = model.to_dense()
    seen = np.zeros(model.shape_, bool)
    seen[e.rows, e.cols] = True
    ids, scores = model.recommend(np.arange(24), 4)
    want_ids, want_scores = _naive_top(dense, seen, 4)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-10)
    # the scores are predicted ratings, the user's offset included
    pred = model.predict(np.repeat(np.arange(24), 4), ids.ravel()).reshape(ids.shape)
    np.testing.assert_allclose(scores, pred, rtol=1e-10)
    # the item offsets change the ranking (they are not a constant per row)
    assert np.ptp(model.centering_.col_offset_) > 0
    ids, _ = model.recommend(np.arange(24), 4, exclude_seen=False)
    np.testing.assert_array_equal(ids, _naive_top(dense, ~seen & seen, 4)[0])


def test_matrix_completion_float32_scores_match_predict():
    e, _, _ = random_entries(m=20, n=15, rank=2, frac=0.5)
    model = MatrixCompletion(lam=0.5, center="both", random_state=0).fit(e)
    ids, scores = model.recommend(np.arange(20), 3)
    pred = model.predict(np.repeat(np.arange(20), 3), ids.ravel()).reshape(ids.shape)
    np.testing.assert_allclose(scores, pred, rtol=1e-5, atol=1e-5)


def test_similar_items_and_users_are_cosines_of_the_completed_matrix(mc):
    model, _ = mc
    # the low-rank part of the completed matrix, without the offsets
    low = model.U_ @ np.diag(model.s_) @ model.V_.T
    for method, profiles in (
        (model.similar_items, low.T),
        (model.similar_users, low),
    ):
        unit = profiles / np.linalg.norm(profiles, axis=1, keepdims=True)
        cos = unit @ unit.T
        np.fill_diagonal(cos, -np.inf)
        ids, scores = method(np.arange(profiles.shape[0]), 3)
        order = np.argsort(-cos, axis=1, kind="stable")[:, :3]
        np.testing.assert_array_equal(ids, order)
        np.testing.assert_allclose(
            scores, np.take_along_axis(cos, order, 1), rtol=1e-8, atol=1e-10
        )
        assert (ids != np.arange(profiles.shape[0])[:, None]).all()


def test_matrix_completion_unknown_users(mc):
    model, e = mc
    with pytest.raises(DataValidationError, match=r"must lie in \[0, 24\)"):
        model.recommend([24], 3)
    model.set_params(unknown="nan")
    ids, scores = model.recommend([24, 0], 3)
    assert (ids[0] == -1).all() and np.isnan(scores[0]).all()
    np.testing.assert_array_equal(ids[1], model.recommend([0], 3)[0][0])
    model.set_params(unknown="fallback")
    ids, scores = model.recommend([24], 3, items=[0, 1, 2, 3, 4])
    # what predict gives a user without data: the mean plus the item offsets
    pred = model.predict([24] * 5, np.arange(5))
    np.testing.assert_array_equal(ids[0], np.argsort(-pred, kind="stable")[:3])
    np.testing.assert_allclose(scores[0], np.sort(pred)[::-1][:3])
    # similar_*: an unknown id gets the ids with the most training entries
    counts = np.bincount(e.rows, minlength=24)
    ids, _ = model.similar_users([24], 2)
    np.testing.assert_array_equal(ids[0], np.argsort(-counts, kind="stable")[:2])
    model.set_params(unknown="raise")


def test_matrix_completion_seen_pairs_skip_weight_zero_and_survive_save(mc, tmp_path):
    from embedopt import load

    model, e = mc
    w = np.ones(e.nnz)
    w[0] = 0.0
    weighted = MatrixCompletion(lam=0.5, max_iter=30, random_state=0).fit(
        e, sample_weight=w
    )
    seen = weighted._seen_pairs()
    assert seen.nnz == e.nnz - 1 and seen[e.rows[0], e.cols[0]] == 0
    model.save(tmp_path / "mc.embedopt")
    again = load(tmp_path / "mc.embedopt")
    for a, b in zip(
        model.recommend(np.arange(24), 5),
        again.recommend(np.arange(24), 5),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_matrix_completion_evaluate_reads_rated_entries(mc):
    model, e = mc
    out = model.evaluate((e.rows, e.cols, e.values), 3, exclude_seen=False)
    assert out["n_users"] == len(np.unique(e.rows)) and 0 <= out["precision@3"] <= 1
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"u": e.rows, "i": e.cols, "r": e.values})
    assert model.evaluate(frame, 3, exclude_seen=False) == out


def test_filters_pad_like_seen_items_and_items_cap_the_columns(towers):
    model = towers
    m, n = model.shape_
    full, full_scores = model.recommend(np.arange(m), n)
    banned = [0, 5, 7]
    atol = score_tolerance(model)
    ids, scores = model.recommend(np.arange(m), n, filter_items=banned)
    assert ids.shape == (m, n) and not np.isin(ids, banned).any()
    for q in range(m):  # the same ranking with the banned items left out
        keep = ~np.isin(full[q], banned)
        got = ids[q][ids[q] >= 0]  # (PQ codes tie: the same set and scores)
        assert sorted(got) == sorted(full[q][keep & (full[q] >= 0)])
        assert_close(  # a block of queries vs one: another product kernel
            scores[q][ids[q] >= 0], full_scores[q][keep & (full[q] >= 0)], atol
        )
    assert (ids == -1).sum() == (full == -1).sum() + np.isin(full, banned).sum()
    # a filter that removes every candidate: rows of pads, k columns
    ids, scores = model.recommend([0, 1], 4, filter_items=np.arange(n))
    assert ids.shape == (2, 4) and (ids == -1).all() and np.isneginf(scores).all()
    ids, _ = model.recommend([0], 10, items=[1, 4, 7], filter_items=[4])
    assert ids.shape == (1, 3) and set(ids[0]) <= {1, 7, -1}
    # k larger than the catalogue: n columns
    assert model.recommend([0], n + 10, exclude_seen=False)[0].shape == (1, n)


def test_unknown_filter_items_follow_the_policy(towers):
    model = towers
    n = model.shape_[1]
    with pytest.raises(DataValidationError, match="filter_items"):
        model.recommend([0], 3, filter_items=[n])
    model.set_params(unknown="nan")
    np.testing.assert_array_equal(
        model.recommend([0], 3, filter_items=[n, 0])[0],
        model.recommend([0], 3, filter_items=[0])[0],
    )
    with pytest.raises(DataValidationError, match="at least one known item"):
        model.recommend([0], 3, items=[n])
    model.set_params(unknown="raise")


def test_empty_histories_pad(towers):
    model = towers
    m, n = model.shape_
    seen = model._seen_pairs()
    ids, scores = model.recommend(np.arange(m), n)
    pads = (ids == -1).sum(1)
    np.testing.assert_array_equal(pads, np.diff(seen.indptr))
    assert np.array_equal(np.isneginf(scores), ids == -1)


def test_similar_users_of_the_towers_are_inner_products(towers):
    model = towers
    m = model.shape_[0]
    V = model._user_vectors(np.arange(m))  # float32: the model's products
    s = (V.double() @ V.double().T).numpy()
    np.fill_diagonal(s, -np.inf)
    ids, scores = model.similar_users(np.arange(m), 3)
    assert_close(scores, -np.sort(-s, axis=1)[:, :3], inner_product_tolerance(V, V))
    assert (ids != np.arange(m)[:, None]).all()
    assert model.similar_users([0], m + 5)[0].shape == (1, m)


def test_recommend_uses_the_stored_codes_of_the_retrieval_index():
    model = TwoTowerRetrieval(random_state=0, **_RETRIEVAL).fit(_pairs())
    assert torch.equal(model._item_codes.long(), model.item_codes())
    before = model.recommend(np.arange(20), 4)
    del model._item_codes  # a model saved before the codes were kept
    after = model.recommend(np.arange(20), 4)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_retrieval_scores_are_the_adc_estimates_with_seen_items_masked():
    # recommend scores decoded codes with a matrix product: the same numbers
    # as the lookup-table ADC search over every item, seen cells removed
    X = _pairs()
    model = TwoTowerRetrieval(random_state=0, **_RETRIEVAL).fit(X)
    users = np.arange(model.shape_[0])
    n = model.shape_[1]
    with torch.no_grad():
        adc, ids = model.net_.index.search(
            model._user_vectors(users), model._item_codes, n
        )
    dense = np.full((len(users), n), -np.inf)
    np.put_along_axis(dense, ids.numpy(), adc.double().numpy(), 1)
    seen = model._seen_pairs().toarray() > 0
    got_ids, got_scores = model.recommend(users, 5)
    _, want_scores = _naive_top(dense, seen, 5)
    atol = score_tolerance(model)  # a matrix product vs lookup tables
    assert_close(got_scores, want_scores, atol)
    # each returned item is unseen and carries its ADC score
    rows = np.arange(len(users))[:, None]
    assert not seen[rows, got_ids].any()
    assert_close(dense[rows, got_ids], got_scores, atol)


def test_tensor_completion_has_no_recommend():
    assert not hasattr(TensorCompletion, "recommend")
    assert "no ``recommend``" in TensorCompletion.__doc__


def test_matrix_completion_ranks_by_the_decision_values_of_a_sign_model():
    e, _, _ = random_entries(m=20, n=15, rank=2, frac=0.5)
    signs = (e.rows, e.cols, np.where(e.values >= 0, 1.0, -1.0))
    # offsets fitted inside the loss (LossCentering) are part of the scores
    model = MatrixCompletion(
        lam=0.5, loss="logistic", center="both", dtype="float64", random_state=0
    ).fit(signs)
    ids, scores = model.recommend(np.arange(20), 3)
    value = model.decision_function(np.repeat(np.arange(20), 3), ids.ravel())
    np.testing.assert_allclose(scores, value.reshape(ids.shape), rtol=1e-10)
