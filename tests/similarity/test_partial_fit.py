"""TwoTowerModel.partial_fit (fold-in, refit="all") and recommend_for_features."""

import warnings

import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError, InvalidParameterError, NotFittedError
from embedopt.similarity import AllPairsObjective, TwoTowerModel
from embedopt.similarity.problem import dense_objective

M, N, K = 30, 20, 3


def _pairs(seed=0, n_pairs=250):
    rng = np.random.default_rng(seed)
    return rng.integers(0, M, n_pairs), rng.integers(0, N, n_pairs)


def _model(**kw):
    kw = {"max_iter": 4, "random_state": 0, "dtype": "float64", **kw}
    return TwoTowerModel(K, **kw)


def _quiet(fn, *args, **kw):
    """Call fn with the short fits' ConvergenceWarnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def test_new_user_row_is_the_dense_least_squares_solution():
    u, i = _pairs()
    model = _quiet(_model(omega=0.3, lam=2.0).fit, (u, i))
    Q = model.item_embeddings_.copy()
    P_old = model.user_embeddings_.copy()
    new_items = np.array([1, 4, 7, 11])
    model.partial_fit((np.full(4, M), new_items))
    p = model.user_embeddings_[M]
    # naive: min_p sum_j c_j (t_j - p q_j)^2 + lam ||p||^2 over all n items,
    # observed: (1 - p q)^2 per pair; unobserved: omega (0 - p q)^2
    counts = np.bincount(new_items, minlength=N)
    c = np.where(counts > 0, counts, 0.3)
    t = (counts > 0).astype(float)
    A = (Q.T * c) @ Q + 2.0 * np.eye(K)
    b = Q.T @ (c * t)
    np.testing.assert_allclose(p, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(model.user_embeddings_[:M], P_old)  # known rows fixed
    np.testing.assert_array_equal(model.item_embeddings_, Q)


@pytest.mark.parametrize(
    "new",
    [
        (np.array([M, M, M + 1, 2]), np.array([0, 3, 5, 6])),
        (np.array([2, 5, 9]), np.array([N, N, N + 1])),
    ],
)
def test_folded_rows_zero_the_gradient_of_the_full_objective(new):
    # new users only, or new items only: then the rows decouple exactly
    u, i = _pairs(1)
    model = _quiet(_model(imputed="all", imputation=0.1).fit, (u, i))
    model.partial_fit(new)
    t = model._training
    objective = AllPairsObjective(
        model.user_tower_,
        model.item_tower_,
        (t["users"], t["items"]),
        **{**model._objective_options(_inter(model), *model.shape_)},
    )
    x = [p.detach().clone().requires_grad_(True) for p in objective.initial_point()]
    dense_objective(objective, x).backward()
    assert x[0].grad[:M].abs().max() > 1e-6  # the known rows were not re-solved
    new_rows = torch.cat([x[0].grad[M:].ravel(), x[1].grad[N:].ravel()])
    assert new_rows.numel() > 0 and new_rows.abs().max() < 1e-9


def _inter(model):
    from embedopt.data import Interactions

    t = model._training
    return Interactions(t["users"], t["items"], model.shape_)


def test_string_ids_stay_sorted_and_known_rows_keep_their_embeddings():
    pd = pytest.importorskip("pandas")
    u, i = _pairs(2)
    frame = pd.DataFrame(
        {"user": [f"u{x:02d}" for x in u], "item": [f"i{x}" for x in i]}
    )
    model = _quiet(_model().fit, frame)
    before = dict(zip(model.user_ids_, model.user_embeddings_, strict=True))
    rec = model.recommend(["u05"], k=4)
    model.partial_fit(
        pd.DataFrame({"user": ["a", "u05", "zz"], "item": ["i3", "i_new", "i3"]})
    )
    assert list(model.user_ids_) == sorted(model.user_ids_)
    assert list(model.item_ids_) == sorted(model.item_ids_)
    assert "a" in model.user_ids_ and "i_new" in model.item_ids_
    for uid, row in zip(model.user_ids_, model.user_embeddings_, strict=True):
        if uid in before:
            np.testing.assert_array_equal(row, before[uid])
    ids, _ = model.recommend(["u05"], k=4, items=[*rec[0][0], "i3"])
    assert "i_new" not in ids  # not a candidate
    seen, _ = model.recommend(["a"], k=N)
    assert "i3" not in seen[0]  # the new pair is excluded from now on


def test_refit_all_warm_starts_below_the_fold_in_objective():
    u, i = _pairs(3)
    model = _quiet(_model(max_iter=30).fit, (u, i))
    model.partial_fit((np.array([M, M, 4]), np.array([2, 6, 9])))
    folded = AllPairsObjective(
        model.user_tower_,
        model.item_tower_,
        _inter(model),
        **model._objective_options(_inter(model), *model.shape_),
    ).value(
        tuple(
            p.detach()
            for t in (model.user_tower_, model.item_tower_)
            for p in t.parameters()
        )
    )
    again = _quiet(_model(max_iter=30).fit, (u, i))
    again.partial_fit((np.array([M, M, 4]), np.array([2, 6, 9])), refit="all")
    assert again.objective_ <= folded + 1e-9
    assert again.shape_ == (M + 1, N)
    assert len(again._training["users"]) == len(u) + 3


def test_feature_towers_place_new_users_by_their_features():
    u, i = _pairs(4)
    rng = np.random.default_rng(0)
    features = {"g": rng.integers(0, 3, M), "d": rng.normal(size=(M, 2))}
    model = _quiet(_model(max_iter=2).fit, (u, i), user_features=features)
    new = {"g": np.array([2, 0]), "d": np.array([[0.5, -1.0], [0.0, 0.0]])}
    cold_ids, cold_scores = model.recommend_for_features(new, k=5)
    model.partial_fit((np.array([M, M + 1]), np.array([1, 2])), user_features=new)
    ids, scores = model.recommend([M, M + 1], k=5, exclude_seen=False)
    np.testing.assert_array_equal(ids, cold_ids)
    np.testing.assert_allclose(scores, cold_scores, rtol=1e-10)
    assert model.user_tower_.n_ids == M + 2


def test_recommend_for_features_candidates_and_k_beyond_the_catalogue():
    u, i = _pairs(5)
    features = {"g": np.arange(M) % 4}
    model = _quiet(
        _model(max_iter=2, user_tower="mlp").fit, (u, i), user_features=features
    )
    ids, scores = model.recommend_for_features({"g": [1]}, k=50, items=[3, 5, 5])
    assert ids.shape == (1, 2) and set(ids[0]) == {3, 5}
    assert np.all(np.diff(scores[0]) <= 0)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            lambda m: m.partial_fit((np.array([], int), np.array([], int))),
            DataValidationError,
        ),
        (
            lambda m: m.partial_fit((np.array([1, 2]), np.array([1]))),
            DataValidationError,
        ),
        (lambda m: m.partial_fit((np.array([-1]), np.array([1]))), DataValidationError),
        (
            lambda m: m.partial_fit((np.array([1.5]), np.array([1]))),
            DataValidationError,
        ),
        (
            lambda m: m.partial_fit((np.array([M]), np.array([1])), refit="some"),
            InvalidParameterError,
        ),
        (
            lambda m: m.partial_fit(
                (np.array([M]), np.array([1])), user_features={"g": [1]}
            ),
            InvalidParameterError,
        ),
        (lambda m: m.recommend_for_features({"g": [1]}), InvalidParameterError),
    ],
)
def test_partial_fit_refuses_bad_input(call, error):
    u, i = _pairs(6)
    model = _quiet(_model(max_iter=2).fit, (u, i))
    with pytest.raises(error):
        call(model)


def test_partial_fit_before_fit_is_fit():
    # scikit-learn's convention, shared by every partial_fit of the library
    u, i = _pairs(7)
    a = _model().partial_fit((u, i))
    b = _model().fit((u, i))
    np.testing.assert_array_equal(a.user_embeddings_, b.user_embeddings_)
    with pytest.raises(NotFittedError):
        _model().recommend_for_features({"g": [0]})


def test_feature_rows_columns_and_categories_are_checked():
    u, i = _pairs(7)
    features = {"g": np.arange(M) % 3}
    model = _quiet(_model(max_iter=2).fit, (u, i), user_features=features)
    new_pairs = (np.array([M, M + 1]), np.array([0, 1]))
    with pytest.raises(DataValidationError, match="new user"):
        model.partial_fit(new_pairs)  # features missing
    with pytest.raises(DataValidationError, match="rows"):
        model.partial_fit(new_pairs, user_features={"g": [0, 1, 2]})
    with pytest.raises(DataValidationError, match="code"):
        model.partial_fit(new_pairs, user_features={"g": [0, 7]})
    with pytest.raises(DataValidationError, match="categorical"):
        model.recommend_for_features({"g": [0], "h": [1]})
    with pytest.raises(DataValidationError, match="no rows"):
        model.recommend_for_features({"g": []})
    assert model.shape_ == (M, N)  # nothing was changed by the refusals


def test_ids_model_refuses_positions_and_other_kinds():
    pd = pytest.importorskip("pandas")
    u, i = _pairs(8)
    model = _quiet(
        _model(max_iter=2).fit, pd.DataFrame({"u": u, "i": [f"i{x}" for x in i]})
    )
    import scipy.sparse as sp

    with pytest.raises(DataValidationError, match="ids"):
        model.partial_fit(sp.csr_matrix(np.ones((2, 2))))
    with pytest.raises(DataValidationError, match="same kind"):
        model.partial_fit(pd.DataFrame({"u": [1], "i": [3]}))


def test_logistic_loss_needs_refit_all_for_new_embedding_rows():
    u, i = _pairs(9)
    model = _quiet(_model(max_iter=2, loss="logistic").fit, (u, i))
    with pytest.raises(InvalidParameterError, match="refit='all'"):
        model.partial_fit((np.array([M]), np.array([0])))
    _quiet(model.partial_fit, (np.array([M]), np.array([0])), refit="all")
    assert model.shape_ == (M + 1, N)


def test_partial_fit_after_save_and_load(tmp_path):
    from embedopt import load

    u, i = _pairs(10)
    model = _quiet(_model(max_iter=2).fit, (u, i))
    model.save(tmp_path / "m.zip")
    loaded = load(tmp_path / "m.zip")
    for m in (model, loaded):
        m.partial_fit((np.array([M, 3]), np.array([0, 4])))
    np.testing.assert_array_equal(model.user_embeddings_, loaded.user_embeddings_)
    np.testing.assert_array_equal(
        model.recommend([M, 3], k=5)[0], loaded.recommend([M, 3], k=5)[0]
    )
