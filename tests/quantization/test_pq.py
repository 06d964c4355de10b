import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.quantization import (
    KMEANS_INITS,
    ROTATION_INITS,
    ROTATIONS,
    SOLVERS,
    GivensLearner,
    ProcrustesLearner,
    ProductQuantizer,
    adc_search,
    assign,
    eigenvalue_allocation,
    fit_product_quantizer,
    get_rotation_learner,
    get_solver,
    givens_descent,
    initial_rotation,
    kmeans_plusplus,
    lloyd,
    make_rotation_learner,
    opq,
    rotated_pq,
    unconstrained_descent,
)
from embedopt.quantization.codebooks import decode

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


def _data(m=600, n=8, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    lam = np.exp(-np.arange(n) / 2.0)
    return ((rng.standard_normal((m, n)) * np.sqrt(lam)) @ Q.T).astype(np.float32)


def test_assign_matches_brute_force():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(50, 3, 4, generator=g)
    C = torch.randn(3, 7, 4, generator=g)
    codes, err = assign(X, C, chunk_size=13)
    d = ((X[:, :, None, :] - C[None]) ** 2).sum(-1)  # (m, M, K)
    torch.testing.assert_close(codes, d.argmin(-1))
    torch.testing.assert_close(err, d.min(-1).values, atol=1e-5, rtol=1e-5)


def test_lloyd_decreases_and_repairs_empty_clusters():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(200, 2, 3, generator=g)
    C = kmeans_plusplus(X, 8, g)
    C[0, :4] = 100.0  # four far-away centroids of subspace 0 get no points
    _, _, e0, _ = lloyd(X, C, 0)
    cb, codes, e1, n_empty = lloyd(X, C, 3)
    assert n_empty >= 4
    assert e1.sum() < e0.sum()
    counts = torch.bincount(codes[:, 0], minlength=8)
    assert bool((counts > 0).all())
    torch.testing.assert_close(
        decode(codes, cb).reshape(200, 2, 3)[:, 1, :], cb[1][codes[:, 1]]
    )


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_adc_search_matches_brute_force_on_reconstructions(metric):
    g = torch.Generator().manual_seed(2)
    M, K, ds = 4, 16, 3
    C = torch.randn(M, K, ds, generator=g, dtype=torch.float64)
    # Distinct codes, so that no two database items tie.
    flat = torch.randperm(K**M, generator=g)[:300]
    codes = torch.stack([(flat // K**m) % K for m in range(M)], 1)
    Q = torch.randn(9, M * ds, generator=g, dtype=torch.float64)
    Xh = decode(codes, C)
    if metric == "l2":
        full = torch.cdist(Q, Xh) ** 2
        ref = torch.topk(full, 10, largest=False)
    else:
        full = Q @ Xh.T
        ref = torch.topk(full, 10, largest=True)
    s, i = adc_search(
        Q, codes.to(torch.uint8), C, 10, metric=metric, query_batch=4, db_batch=37
    )
    torch.testing.assert_close(s, ref.values)
    torch.testing.assert_close(i, ref.indices)


def test_estimator_encode_decode_search_vs_brute_force():
    X = _data()
    pq = ProductQuantizer(4, 16, rotation="opq", max_iter=3, random_state=0).fit(X)
    codes = pq.encode(X)
    assert codes.dtype == np.uint8 and codes.shape == (600, 4)
    rec = pq.decode(codes)
    # Decoding = concatenated centroids rotated back: T(X) = phi(X R) R^T.
    R, C = pq.rotation_, pq.codebooks_
    manual = np.concatenate([C[m][codes[:, m]] for m in range(4)], 1) @ R.T
    np.testing.assert_allclose(rec, manual, atol=1e-5)
    assert pq.distortion(X) == pytest.approx(((X - rec) ** 2).sum(1).mean(), rel=1e-5)
    assert pq.distortion(X) == pytest.approx(pq.distortion_, rel=1e-4)
    d, ids = pq.search(X[:7], codes, k=5)
    brute = ((X[:7, None, :] - rec[None]) ** 2).sum(-1)
    # Vectors with identical codes tie exactly and the order among ties is
    # arbitrary, so check that the k returned ids are distinct and achieve the
    # brute-force top-k scores (which pins the ranking wherever there is no tie).
    rows = np.arange(7)[:, None]
    np.testing.assert_allclose(d, np.sort(brute, 1)[:, :5], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(brute[rows, ids], d, rtol=1e-4, atol=1e-4)
    assert all(len(set(r)) == 5 for r in ids)
    s, ids_ip = pq.search(X[:7], codes, k=5, metric="ip")
    ip = X[:7] @ rec.T
    np.testing.assert_allclose(s, -np.sort(-ip, 1)[:, :5], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ip[rows, ids_ip], s, rtol=1e-4, atol=1e-4)
    assert all(len(set(r)) == 5 for r in ids_ip)


def test_uint16_codes_for_large_codebooks():
    X = _data(m=600, n=4)
    pq = ProductQuantizer(1, 300, rotation="none", max_iter=1, random_state=0)
    pq.set_params(init_kmeans_iter=1, kmeans_iter=1, refine_iter=0).fit(X)
    assert pq.encode(X[:5]).dtype == np.uint16


def test_rotation_learning_beats_plain_pq_and_rotations_stay_orthogonal():
    X = _data(m=800)
    kw = dict(max_iter=8, random_state=0, device="cpu")
    kw.update(n_subquantizers=4, n_centroids=16)
    plain = rotated_pq(X, **kw)
    o = opq(X, **kw)
    gg = givens_descent(X, selection="greedy", **kw)
    assert o.history["objective"][-1] < plain.history["objective"][-1]
    assert gg.history["objective"][-1] < plain.history["objective"][-1]
    for res in (o, gg):
        R = res.x.rotation.double()
        torch.testing.assert_close(
            R.T @ R, torch.eye(8, dtype=torch.float64), atol=1e-5, rtol=0
        )
    assert torch.linalg.det(gg.x.rotation.double()).item() == pytest.approx(
        1.0, abs=1e-5
    )
    assert np.all(gg.history["orthogonality_error"] < 1e-5)


def test_drifted_rotation_is_reorthogonalized_by_the_solver():
    # A float32 rotation that drifted by 1e-4 (what ~10^6 roundings would do)
    # comes back below the 1e-6 re-orthogonalization threshold after one step.
    X = _data(m=400)
    rng = np.random.default_rng(1)
    R0 = np.linalg.qr(rng.standard_normal((8, 8)))[0]
    R0 = (R0 * (1 + 1e-4 * rng.standard_normal((8, 8)))).astype(np.float32)
    res = givens_descent(
        X,
        R0,
        max_iter=2,
        random_state=0,
        n_subquantizers=4,
        n_centroids=16,
        selection="greedy",
    )
    assert np.all(res.history["orthogonality_error"] < 1e-6)


def test_eigenvalue_allocation_balances_products():
    X = torch.as_tensor(_data(m=2000))
    R = eigenvalue_allocation(X, 4)
    torch.testing.assert_close(R.T @ R, torch.eye(8), atol=1e-5, rtol=0)
    Z = (X - X.mean(0)) @ R
    var = Z.var(0).reshape(4, 2).prod(1)
    assert float(var.max() / var.min()) < 20.0  # raw eigenvalues span e^3.5


def test_validation_distortion_is_recorded():
    X = _data(m=500)
    res = givens_descent(
        X,
        max_iter=2,
        random_state=0,
        n_subquantizers=2,
        n_centroids=8,
        validation=_data(m=100, seed=1),
    )
    assert res.history["val_distortion"].shape == (2,)
    assert np.isfinite(res.history["val_distortion"]).all()


@pytest.mark.parametrize(
    ("kwargs", "X", "err", "match"),
    [
        (dict(n_subquantizers=3), _data(), InvalidParameterError, "divides the dim"),
        (dict(n_centroids=700), _data(), DataValidationError, "exceeds the 600"),
        (dict(), np.full((10, 8), np.nan), DataValidationError, "NaN"),
        (dict(), np.array([["a"] * 8] * 10), DataValidationError, "dtype"),
        (dict(), np.zeros(8), DataValidationError, "2-D"),
        (dict(), np.zeros((0, 8)), DataValidationError, "empty"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, X, err, match):
    params = dict(n_subquantizers=4, n_centroids=16, max_iter=1, random_state=0)
    params.update(kwargs)
    with pytest.raises(err, match=match):
        ProductQuantizer(**params).fit(X)


def test_bad_input_after_fit():
    X = _data()
    pq = ProductQuantizer(4, 16, max_iter=1, random_state=0).fit(X)
    with pytest.raises(DataValidationError, match="fitted on 8"):
        pq.encode(np.zeros((3, 6), np.float32))
    with pytest.raises(DataValidationError, match=r"\[0, 16\)"):
        pq.decode(np.full((2, 4), 99))
    with pytest.raises(DataValidationError, match="integers"):
        pq.decode(np.zeros((2, 4), np.float32))
    # k and metric are the method's parameters, not data
    with pytest.raises(InvalidParameterError, match="'k' parameter"):
        pq.search(X[:2], pq.encode(X), k=0)
    with pytest.raises(InvalidParameterError, match="'metric' parameter"):
        pq.search(X[:2], pq.encode(X), k=1, metric="cosine")
    with pytest.raises(DataValidationError, match="NaN"):
        pq.search(np.full((1, 8), np.nan), pq.encode(X), k=1)


@pytest.mark.slow
def test_adc_search_over_a_million_codes_matches_brute_force():
    """Issue 4: 10^6 database vectors search in blocks (no N x nq x M tensor)."""
    g = torch.Generator().manual_seed(3)
    M, K, ds, N = 8, 256, 8, 1_000_000
    C = torch.randn(M, K, ds, generator=g)
    codes = torch.randint(0, K, (N, M), generator=g).to(torch.uint8)
    Q = torch.randn(4, M * ds, generator=g)
    s, _ = adc_search(Q, codes, C, 10, metric="ip")
    best = torch.full((4, 10), -float("inf"))
    for a in range(0, N, 100_000):
        sc = Q @ decode(codes[a : a + 100_000].long(), C).T
        best = torch.topk(torch.cat([best, sc], 1), 10, dim=1).values
    torch.testing.assert_close(s, best, rtol=1e-4, atol=1e-4)


def test_registries_accept_every_spelling_and_name_the_valid_ones():
    assert get_rotation_learner("GIVENS") is GivensLearner
    assert "gcd-g" in ROTATIONS and "GCD_G" in ROTATIONS
    assert KMEANS_INITS["k-means++"] is kmeans_plusplus
    assert ROTATION_INITS["eigenvalue"] is eigenvalue_allocation
    with pytest.raises(InvalidParameterError, match="'procrustes', 'givens'"):
        get_rotation_learner("svd")
    with pytest.raises(InvalidParameterError, match="Valid names: 'identity'"):
        initial_rotation("pca", torch.zeros(4, 8), 4)


def test_make_rotation_learner_passes_its_settings_on():
    g = torch.Generator()
    learner = make_rotation_learner(
        "gcd-s", n_steps=2, learning_rate=0.05, step_rule="exact", generator=g
    )
    assert isinstance(learner, GivensLearner)
    assert (learner.n_steps, learner.learning_rate, learner.step_rule) == (
        2,
        0.05,
        "exact",
    )
    assert learner.selection.name == "steepest" and learner.generator is g
    assert make_rotation_learner("none") is None
    free = make_rotation_learner("unconstrained", n_steps=3, penalty=0.5)
    assert (free.n_steps, free.penalty, free.orthogonal) == (3, 0.5, False)
    assert isinstance(make_rotation_learner("opq"), ProcrustesLearner)


@pytest.mark.parametrize("rotation", ["gcd_g", "unconstrained"])
def test_estimator_is_fit_product_quantizer(rotation):
    X = _data(m=300)
    kw = dict(max_iter=3, refine_iter=2, random_state=0, device="cpu")
    pq = ProductQuantizer(4, 16, rotation=rotation.replace("_", "-"), **kw).fit(X)
    res = fit_product_quantizer(
        X, n_subquantizers=4, n_centroids=16, rotation=rotation, **kw
    )
    np.testing.assert_array_equal(pq.rotation_, res.x.rotation.numpy())
    np.testing.assert_array_equal(pq.codebooks_, res.x.codebooks.numpy())
    assert pq.distortion_ == res.info["distortion"]
    np.testing.assert_array_equal(pq.encode(X), res.info["codes"].numpy())
    assert pq.distortion_ == pytest.approx(pq.distortion(X), rel=1e-5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda X: givens_descent(X, n_subquantizers=4, learning_rate=-1.0),
            "The 'learning_rate' parameter of givens_descent must be",
        ),
        (
            lambda X: givens_descent(X, n_subquantizers=4, step_rule="newton"),
            "The 'step_rule' parameter of givens_descent must be",
        ),
        (
            lambda X: unconstrained_descent(X, n_subquantizers=4, penalty=-1.0),
            "The 'penalty' parameter of unconstrained_descent must be",
        ),
        (
            lambda X: rotated_pq(X, n_subquantizers=4, kmeans_init="kmeans"),
            "The 'kmeans_init' parameter of rotated_pq must be",
        ),
        (
            lambda X: fit_product_quantizer(X, n_subquantizers=4, rotation="svd"),
            "The 'rotation' parameter of fit_product_quantizer must be",
        ),
        (
            lambda X: opq(X, n_subquantizers=3, n_centroids=16),
            r"The 'n_subquantizers' parameter of opq must be an int that divides",
        ),
    ],
)
def test_solvers_reject_bad_parameters_with_one_message_shape(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call(_data(m=100))


def test_data_whose_squared_distances_overflow_is_refused():
    from embedopt._core import DataValidationError

    X = (np.random.default_rng(0).standard_normal((200, 8)) * 1e30).astype("float32")
    with pytest.raises(DataValidationError, match="overflow float32"):
        ProductQuantizer(2, 16, random_state=0).fit(X)


def test_fit_stores_the_solver_that_ran_and_its_final_objective():
    X = _data(m=300)
    pq = ProductQuantizer(4, 16, rotation="GCD-G", max_iter=2, random_state=0).fit(X)
    assert pq.solver_ == "gcd_g"
    assert pq.objective_ == pq.distortion_
    assert pq.n_iter_ == len(pq.history_["objective"]) == 2
    assert pq.stop_reason_
    none = ProductQuantizer(4, 16, rotation="none", max_iter=1, random_state=0)
    assert none.fit(X).solver_ == "none"


def test_solvers_share_one_call_shape_and_registry():
    X = _data(m=300)
    kw = dict(max_iter=2, random_state=0, n_subquantizers=4, n_centroids=16)
    for name in SOLVERS:
        res = get_solver(name)(X, "random", **kw)
        assert res.x.rotation.shape == (8, 8)
        assert res.n_iter == 2
    assert get_solver("givens-descent") is givens_descent
    assert SOLVERS["opq"] is opq


def test_scikit_learn_clone():
    from sklearn.base import clone

    pq = ProductQuantizer(max_iter=2, random_state=0, rotation_init=np.eye(16))
    c = clone(pq)
    assert c.get_params().keys() == pq.get_params().keys()
    np.testing.assert_array_equal(c.rotation_init, pq.rotation_init)


@pytest.mark.skipif(
    not hasattr(ProductQuantizer(), "__sklearn_tags__"),
    reason="_core.BaseEstimator has no __sklearn_tags__ yet (scikit-learn >= 1.6)",
)
def test_scikit_learn_cross_val_score_and_pipeline():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X = _data(m=1000, n=16)
    pq = ProductQuantizer(max_iter=2, random_state=0)
    # score is the negative distortion: one float, higher is better.
    scores = cross_val_score(pq, X, cv=2)
    assert scores.shape == (2,) and np.all(scores < 0)
    pipe = Pipeline([("scale", StandardScaler()), ("pq", clone(pq))]).fit(X)
    Xs = pipe[0].transform(X)
    assert pipe.score(X) == pytest.approx(-pipe[-1].distortion(Xs))
    np.testing.assert_array_equal(pipe.transform(X), pipe[-1].transform(Xs))
