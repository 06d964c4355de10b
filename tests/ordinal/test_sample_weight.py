"""Weighted comparisons (``sample_weight``) in every ordinal objective and solver.

The weighted objective is ``(1 / sum w) sum_q w_q ell_q``: checked against
autograd of that naive sum for every loss and both full passes, against the
data set with each comparison repeated w_q times (integer weights) or left
out (weight 0), and for the unbiasedness of the sampled gradients.
"""

import warnings

import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError
from embedopt.data import Comparisons, make_planted_embedding
from embedopt.ordinal import (
    LOSSES,
    GramProblem,
    OrdinalEmbedding,
    OrdinalProblem,
    comparison_gradients,
    get_loss,
    svrg_sbb,
)

SOLVER_NAMES = ["lbfgs", "svrg_sbb", "svrg_sbb_pl", "svrg", "sgd", "gd", "cvx"]


def _data(seed=0, m=60, n=10, p=2, quad=False):
    g = np.random.default_rng(seed)
    X = torch.as_tensor(g.normal(size=(n, p)))
    Q = np.array([g.choice(n, size=4 if quad else 3, replace=False) for _ in range(m)])
    return X, Comparisons(Q, n_objects=n)


def _naive(loss, X, comps, w):
    """``(1 / sum w) sum_q w_q ell_q`` and its gradient by autograd."""
    Xr = X.clone().requires_grad_(True)
    Q = torch.as_tensor(comps.as_quadruplets())
    values, _ = comparison_gradients(loss, Xr[Q])
    w = torch.as_tensor(w, dtype=X.dtype)
    f = (w * values).sum() / w.sum()
    f.backward()
    return float(f.detach()), Xr.grad


def _problem(comps, name, w=None, dense=None, dtype="float64"):
    prob = OrdinalProblem(comps, get_loss(name, 2), dtype=dtype, sample_weight=w)
    if dense is not None:
        prob.dense = dense
    return prob


@pytest.mark.parametrize("quad", [False, True], ids=["triplets", "quadruplets"])
@pytest.mark.parametrize("dense", [True, False], ids=["distance_matrix", "incidence"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_weighted_objective_and_gradient_match_autograd(name, dense, quad):
    X, comps = _data(seed=1, quad=quad)
    w = np.random.default_rng(2).uniform(0.0, 3.0, len(comps))
    w[[4, 9]] = 0.0
    prob = _problem(comps, name, w, dense)
    f, g = prob.value_and_grad(X)
    f_ref, g_ref = _naive(prob.loss, X, comps, w)
    assert f == pytest.approx(f_ref, rel=1e-12)
    torch.testing.assert_close(g, g_ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_weighted_gram_objective_matches_autograd(name):
    X, comps = _data(seed=3, n=8, p=3)
    w = np.random.default_rng(4).uniform(0.0, 2.0, len(comps))
    gram = GramProblem(_problem(comps, name, w), lam=0.3)
    G = X @ X.T
    f, g = gram.value_and_grad(G)

    def objective(G):
        # d_ij = g_ii + g_jj - g_ij - g_ji: the gradient of eq. (44)
        diag = torch.diagonal(G)
        Q = torch.as_tensor(comps.as_quadruplets())
        i, j, l, k = Q.unbind(1)
        d_near = diag[i] + diag[j] - G[i, j] - G[j, i]
        d_far = diag[l] + diag[k] - G[l, k] - G[k, l]
        wt = torch.as_tensor(w)
        mean = (wt * gram.loss.value(d_near, d_far)).sum() / wt.sum()
        return mean + 0.3 * torch.trace(G)

    Gr = G.clone().requires_grad_(True)
    ref = objective(Gr)
    ref.backward()
    assert f == pytest.approx(float(ref.detach()), rel=1e-12)
    torch.testing.assert_close(g, Gr.grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_weighted_row_gradients_match_the_weighted_terms(name):
    X, comps = _data(seed=5)
    w = np.random.default_rng(6).uniform(0.5, 2.0, len(comps))
    prob = _problem(comps, name, w)
    scaled = w * len(w) / w.sum()  # the finite sum's terms: mean-one weights
    batch = torch.tensor([3, 7, 7, 11])
    R = prob.rows(batch[None])[0]
    Y = X + 0.1
    Z = torch.stack((X[R], Y[R]), 1)
    got = prob.row_gradients(Z, batch, torch.tensor([0.7, -1.3], dtype=X.dtype))
    Q = prob.quadruplets[batch]
    _, gx = comparison_gradients(prob.loss, X[Q])
    _, gy = comparison_gradients(prob.loss, Y[Q])
    wq = torch.as_tensor(scaled)[batch].view(-1, 1, 1)
    torch.testing.assert_close(got, (wq * (0.7 * gx - 1.3 * gy)).reshape(-1, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_mean_of_sampled_gradients_is_the_full_weighted_gradient(name, dtype):
    # SVRG / SGD draw comparisons uniformly; each term carries its weight.
    X, comps = _data(seed=7, quad=True)
    X = X.to(getattr(torch, dtype))
    w = np.random.default_rng(8).uniform(0.0, 5.0, len(comps))
    prob = _problem(comps, name, w, dtype=dtype)
    m = prob.n_samples
    one = torch.ones(1, dtype=X.dtype)
    mean = torch.zeros_like(X)
    for q in range(m):  # every single-comparison sample, in turn
        batch = torch.tensor([q])
        R = prob.rows(batch[None])[0]
        mean.index_add_(0, R, prob.row_gradients(X[R].unsqueeze(1), batch, one))
    _, g = prob.value_and_grad(X)
    tol = 1e-5 if dtype == "float32" else 1e-12
    torch.testing.assert_close(mean / m, g, rtol=tol, atol=tol)


@pytest.mark.parametrize("quad", [False, True], ids=["triplets", "quadruplets"])
@pytest.mark.parametrize("dense", [True, False], ids=["distance_matrix", "incidence"])
@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.bitwise_rerun
def test_weights_all_one_are_bit_identical(name, dense, quad):
    X, comps = _data(seed=9, quad=quad)
    X = X.float()
    plain = _problem(comps, name, None, dense, "float32")
    ones = _problem(comps, name, np.ones(len(comps)), dense, "float32")
    assert ones.sample_weight is not None  # the weighted path, not a shortcut
    f0, g0 = plain.value_and_grad(X)
    f1, g1 = ones.value_and_grad(X)
    assert f0 == f1 and torch.equal(g0, g1)
    batch = torch.tensor([0, 5, 5, 2])
    R = plain.rows(batch[None])[0]
    Z = torch.stack((X[R], X[R] + 0.5), 1)
    w = torch.tensor([0.3, -0.3])
    assert torch.equal(
        plain.row_gradients(Z, batch, w), ones.row_gradients(Z, batch, w)
    )
    G = X @ X.T
    r0, h0 = GramProblem(plain, 0.1).value_and_grad(G)
    r1, h1 = GramProblem(ones, 0.1).value_and_grad(G)
    assert r0 == r1 and torch.equal(h0, h1)


@pytest.mark.parametrize("dense", [True, False], ids=["distance_matrix", "incidence"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_integer_weight_is_the_comparison_repeated(name, dense):
    X, comps = _data(seed=10)
    k = np.random.default_rng(11).integers(0, 4, len(comps))
    k[0] = 1  # at least one positive
    repeated = comps.subset(np.repeat(np.arange(len(comps)), k))
    f_w, g_w = _problem(comps, name, k, dense).value_and_grad(X)
    f_r, g_r = _problem(repeated, name, None, dense).value_and_grad(X)
    assert f_w == pytest.approx(f_r, rel=1e-12)
    torch.testing.assert_close(g_w, g_r, rtol=1e-10, atol=1e-13)
    G = X @ X.T
    r_w, h_w = GramProblem(_problem(comps, name, k), 0.1).value_and_grad(G)
    r_r, h_r = GramProblem(_problem(repeated, name), 0.1).value_and_grad(G)
    assert r_w == pytest.approx(r_r, rel=1e-12)
    torch.testing.assert_close(h_w, h_r, rtol=1e-10, atol=1e-13)


def test_weights_are_relative():
    X, comps = _data(seed=12)
    w = np.random.default_rng(13).uniform(0.1, 1.0, len(comps))
    f1, g1 = _problem(comps, "ste", w).value_and_grad(X)
    f2, g2 = _problem(comps, "ste", 37.5 * w).value_and_grad(X)
    assert f1 == pytest.approx(f2, rel=1e-13)
    torch.testing.assert_close(g1, g2, rtol=1e-12, atol=1e-15)
    # weights near the float64 limit do not overflow their sum
    f3, g3 = _problem(comps, "ste", 1e307 * w).value_and_grad(X)
    assert f1 == pytest.approx(f3, rel=1e-13)
    torch.testing.assert_close(g1, g3, rtol=1e-12, atol=1e-15)


def test_zero_weight_removes_the_comparison_from_the_problem():
    X, comps = _data(seed=14)
    w = np.ones(len(comps))
    w[::3] = 0.0
    weighted = _problem(comps, "tste", w)
    removed = _problem(comps.subset(w > 0), "tste")
    assert weighted.n_samples == removed.n_samples
    assert torch.equal(weighted.quadruplets, removed.quadruplets)
    f_w, g_w = weighted.value_and_grad(X)
    f_r, g_r = removed.value_and_grad(X)
    assert f_w == f_r and torch.equal(g_w, g_r)


# -- the solvers and the estimator ----------------------------------------------------
@pytest.fixture(scope="module")
def planted():
    return make_planted_embedding(30, 2, n_train=600, n_test=300, random_state=0)


def _fit(solver, comps, **fit_params):
    model = OrdinalEmbedding(2, solver=solver, max_iter=4, random_state=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short runs
        return model.fit(comps, **fit_params)


@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_every_solver_honours_the_weights(solver, planted):
    train = planted.train
    w = np.ones(len(train))
    w[1::2] = 0.0
    plain = _fit(solver, train)
    ones = _fit(solver, train, sample_weight=np.ones(len(train)))
    assert np.array_equal(plain.embedding_, ones.embedding_)
    assert plain.lam_ == ones.lam_
    half = _fit(solver, train, sample_weight=w)
    kept = _fit(solver, train.subset(w > 0), n_objects=train.n_objects)
    assert np.array_equal(half.embedding_, kept.embedding_)
    assert half.lam_ == kept.lam_


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_lbfgs_fit_with_integer_weights_is_the_fit_with_repeats(planted):
    train = planted.train.subset(np.arange(200))
    k = np.random.default_rng(1).integers(1, 4, len(train))
    repeated = train.subset(np.repeat(np.arange(len(train)), k))

    def fit(comps, **kw):
        model = OrdinalEmbedding(2, solver="lbfgs", max_iter=30, random_state=0)
        return model.fit(comps, n_objects=train.n_objects, **kw)

    a, b = fit(train, sample_weight=k), fit(repeated)
    assert a.lam_ == pytest.approx(b.lam_, rel=1e-15)  # 1 / (2 sum w)
    np.testing.assert_allclose(a.embedding_, b.embedding_, rtol=1e-6, atol=1e-8)


def test_heavy_comparison_wins_a_contradiction():
    # (0, 1, 2) says d(0, 1) < d(0, 2); (0, 2, 1) the opposite, ten times lighter
    comps = [[0, 1, 2], [0, 2, 1], [1, 2, 3], [3, 0, 2]]
    for w, want in (([10.0, 1.0, 1.0, 1.0], 1), ([1.0, 10.0, 1.0, 1.0], -1)):
        model = OrdinalEmbedding(2, solver="lbfgs", random_state=0, n_init=1)
        model.fit(comps, sample_weight=w)
        assert model.predict([[0, 1, 2]])[0] == want


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_weights_follow_degenerate_and_reoriented_comparisons(planted):
    Q = planted.train.indices[:50]
    y = np.where(np.arange(50) % 2, 1, -1)
    asked = np.where(y[:, None] == 1, Q, Q[:, [0, 2, 1]])  # as asked, answers y
    bad = np.array([[4, 4, 5], [6, 7, 7]])  # degenerate: dropped with a warning
    X = np.vstack((asked[:20], bad, asked[20:]))
    yy = np.concatenate((y[:20], [1, 1], y[20:]))
    w = np.random.default_rng(0).uniform(0.5, 2.0, 52)
    model = OrdinalEmbedding(2, solver="lbfgs", max_iter=20, random_state=0)
    with pytest.warns(UserWarning, match="repeat an index"):
        a = model.fit(X, yy, sample_weight=w, n_objects=30).embedding_
    w_kept = np.delete(w, [20, 21])
    b = model.fit(Q, sample_weight=w_kept, n_objects=30).embedding_
    assert np.array_equal(a, b)
    # the same alignment in score, and the weighted accuracy itself
    right = model.predict(Q) == 1
    with pytest.warns(UserWarning, match="repeat an index"):
        got = model.score(X, yy, sample_weight=w)
    assert got == pytest.approx(np.sum(w_kept * right) / np.sum(w_kept), rel=1e-14)
    assert model.score(Q, sample_weight=np.ones(50)) == model.score(Q)


@pytest.mark.parametrize(
    "weights, match",
    [
        (-np.ones(40), "negative, NaN or infinite"),
        (np.r_[np.ones(39), np.nan], "first: comparison 39"),
        (np.r_[np.inf, np.ones(39)], "negative, NaN or infinite"),
        (np.ones(39), r"shape \(40,\); got shape \(39,\)"),
        (np.ones((40, 1)), "one weight per comparison"),
        (2.0, "one weight per comparison"),
        (np.array(["1"] * 40), "real numbers"),
        (np.zeros(40), "sample_weight is 0 for every comparison"),
        ([[1.0, 2.0], [3.0]], "could not be read"),
    ],
    ids=["negative", "nan", "inf", "short", "2d", "scalar", "text", "zeros", "ragged"],
)
def test_bad_weights_raise_data_validation_error(weights, match, planted):
    train = planted.train.subset(np.arange(40))
    with pytest.raises(DataValidationError, match=match):
        OrdinalEmbedding(2, max_iter=2).fit(train, sample_weight=weights)
    with pytest.raises(DataValidationError, match=match):
        svrg_sbb(train, 2, max_iter=2, sample_weight=weights)
    fitted = _fit("lbfgs", train)
    with pytest.raises(DataValidationError, match=match):
        fitted.score(train, sample_weight=weights)
