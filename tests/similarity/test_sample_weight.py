"""Confidence weights of the observed pairs (``sample_weight``): the weighted
O(m + n) value, gradient and Gauss-Newton product against the naive sums and
autograd, ALS's weighted row solves against dense weighted least squares, every
solver honouring the weights, weights of 1 being no weights bit for bit, and
bad weights refused."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from embedopt._core import ConvergenceWarning, DataValidationError
from embedopt.linalg.points import flatten
from embedopt.nn import EmbeddingTower
from embedopt.similarity import (
    AllPairsObjective,
    TwoTowerModel,
    als,
    dense_objective,
    gauss_newton,
    gradient_descent,
    sampled_pairs_loss,
    stochastic,
)
from embedopt.similarity.solvers import _ALS

from ._common import K, M, N, embed, make, problem, towers

CONFIGS = list(
    itertools.product(["mlp", "table"], ["square", "logistic"], ["unobserved", "all"])
)


def _rel(a, b) -> float:
    a, b = flatten(a), flatten(b)
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _weights(obj) -> torch.Tensor:
    """The confidences as an m x n matrix (0 off the observed pairs)."""
    W = torch.zeros(obj.shape, dtype=torch.float64)
    pat = obj.pattern
    W[pat.row_indices(), pat.col_indices()] = obj.sample_weight
    return W


def _random_weights(prob) -> np.ndarray:
    """make's ``sample_weight="random"``, in the order of the pairs."""
    return np.random.default_rng(100).random(len(prob["pairs"][0])) * 3


def _naive_terms(prob, w, P, Q, *, loss, omega, imputed, imputation, lam):
    """The objective summed pair by pair over all m n pairs (no library code
    but the loss formula): the O(mn) definition."""
    r, c, y = prob["pairs"]
    keys = list(zip(r.tolist(), c.tolist(), strict=True))
    weights = dict(zip(keys, w.tolist(), strict=True))
    labels = dict(zip(keys, y.tolist(), strict=True))
    Pt, Qt = (
        imputation
        if isinstance(imputation, tuple)
        else (np.full((M, 1), imputation), np.ones((N, 1)))
    )
    total = 0.0
    for i, j in itertools.product(range(M), range(N)):
        s = float(P[i] @ Q[j])
        imputed_term = 0.5 * omega * prob["a"][i] * prob["b"][j]
        imputed_term *= (float(Pt[i] @ Qt[j]) - s) ** 2
        if (i, j) in labels:
            yij = labels[(i, j)]
            if loss == "square":
                lij = 0.5 * (yij - s) ** 2
            else:
                lij = float(np.logaddexp(0.0, -yij * s))
            total += weights[(i, j)] * lij
            total += imputed_term if imputed == "all" else 0.0
        else:
            total += imputed_term
    return total


def _naive_gn(obj, prob, x, v, *, loss, omega, lam, imputed, imputation):
    """(J^T D J + lam I) v with D_ij = w_ij l'' on O plus the imputed weights."""

    def yhat(*params):
        P, Q = embed(obj, params)
        return P @ Q.T

    Yh, Jv = torch.func.jvp(yhat, tuple(x), tuple(v))
    mask = torch.as_tensor(prob["mask"])
    if loss == "square":
        d2 = torch.ones_like(Yh)
    else:
        r, c, y = prob["pairs"]
        Y = torch.zeros_like(Yh)
        Y[r, c] = torch.as_tensor(y, dtype=Yh.dtype)
        s = torch.sigmoid(Y * Yh)
        d2 = s * (1 - s)
    d2 = _weights(obj) * d2
    A = omega * torch.as_tensor(np.outer(prob["a"], prob["b"]), dtype=Yh.dtype)
    D = torch.where(mask, d2, A) if imputed == "unobserved" else d2 * mask + A
    _, pullback = torch.func.vjp(yhat, *x)
    return tuple(a + lam * b for a, b in zip(pullback(D * Jv), v, strict=True))


# -- the weighted objective --------------------------------------------------------
@pytest.mark.parametrize("kind,loss,imputed", CONFIGS)
def test_weighted_oracles_match_naive_sum_and_autograd(kind, loss, imputed):
    obj, prob, ref = make(kind, loss, imputed, sample_weight="random")
    x = obj.initial_point()
    P, Q = (t.detach().numpy() for t in embed(obj, x))
    reg = 0.5 * ref["lam"] * sum(float((p**2).sum()) for p in x)
    naive = _naive_terms(prob, _random_weights(prob), P, Q, **ref) + reg
    # the O(m + n) value against the pair-by-pair sum and the dense reference
    f_dense = float(dense_objective(obj, x))
    assert f_dense == pytest.approx(naive, rel=1e-12)
    f, g = obj.value_and_grad(x)
    assert obj.value(x) == pytest.approx(naive, rel=1e-12)
    assert f == pytest.approx(naive, rel=1e-12)
    # the gradient against autograd through the dense objective
    xs = [p.clone().requires_grad_(True) for p in x]
    assert _rel(g, torch.autograd.grad(dense_objective(obj, xs), xs)) < 1e-10
    # the Gauss-Newton product against the dense J^T D J v
    gen = torch.Generator().manual_seed(1)
    v = tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in x)
    assert _rel(obj.gnvp(x, v), _naive_gn(obj, prob, x, v, **ref)) < 1e-10


def test_weights_change_the_objective_and_follow_the_input_order():
    plain, prob, _ = make("table")
    weighted, _, _ = make("table", sample_weight="random")
    x = plain.initial_point()
    assert weighted.value(x) != pytest.approx(plain.value(x))
    # the same pairs shuffled, with their weights shuffled alike
    r, c, y = prob["pairs"]
    w = _random_weights(prob)
    perm = np.random.default_rng(5).permutation(len(r))
    ut, it = towers("table")
    shuffled = AllPairsObjective(
        ut,
        it,
        (r[perm], c[perm], y[perm]),
        omega=0.7,
        lam=0.1,
        user_weights=prob["a"],
        item_weights=prob["b"],
        imputation=prob["tilde"],
        sample_weight=w[perm],
    )
    f, g = shuffled.value_and_grad(x)
    f_ref, g_ref = weighted.value_and_grad(x)
    assert f == pytest.approx(f_ref, rel=1e-14)
    assert _rel(g, g_ref) < 1e-14


def test_zero_weight_with_imputed_all_is_dropping_the_pair():
    # With imputed="all" a pair of weight 0 keeps only its imputed term: the
    # objective is that of the data without it.
    _, prob, _ = make("table", imputed="all")
    r, c, y = prob["pairs"]
    w = np.ones(len(r))
    w[::3] = 0.0
    keep = w > 0
    kwargs = dict(
        omega=0.7,
        lam=0.1,
        imputed="all",
        user_weights=prob["a"],
        item_weights=prob["b"],
        imputation=prob["tilde"],
    )
    zeroed = AllPairsObjective(*towers("table"), (r, c, y), sample_weight=w, **kwargs)
    dropped = AllPairsObjective(*towers("table"), (r[keep], c[keep], y[keep]), **kwargs)
    x = zeroed.initial_point()
    f, g = zeroed.value_and_grad(x)
    f_ref, g_ref = dropped.value_and_grad(x)
    assert f == pytest.approx(f_ref, rel=1e-13)
    assert _rel(g, g_ref) < 1e-12


@pytest.mark.parametrize(
    "loss,imputed", [("square", "unobserved"), ("logistic", "all")]
)
def test_unit_weights_are_no_weights_bit_for_bit(loss, imputed):
    plain, prob, _ = make("mlp", loss, imputed)
    ones, _, _ = make(
        "mlp", loss, imputed, sample_weight=np.ones(len(prob["pairs"][0]))
    )
    x = plain.initial_point()
    v = tuple(torch.ones_like(p) for p in x)
    assert plain.value(x) == ones.value(x)
    f, g = plain.value_and_grad(x)
    f1, g1 = ones.value_and_grad(x)
    assert f == f1 and torch.equal(flatten(g), flatten(g1))
    assert torch.equal(flatten(plain.gnvp(x, v)), flatten(ones.gnvp(x, v)))
    users, items = np.arange(M).repeat(N), np.tile(np.arange(N), M)
    assert torch.equal(
        sampled_pairs_loss(plain, x, users, items),
        sampled_pairs_loss(ones, x, users, items),
    )


# -- ALS ------------------------------------------------------------------------------
def _dense_row_solutions(obj, prob, F, s: int, imputed: str, lam: float, omega: float):
    """Each row of side s by dense weighted least squares over all m n pairs:
    ``min_p sum_j D_ij (T_ij - p^T f_j)^2 + lam |p|^2`` with the per-pair
    weights D and targets T of the objective written out."""
    r, c, y = prob["pairs"]
    Pt, Qt = prob["tilde"]
    A = omega * np.outer(prob["a"], prob["b"])  # imputed weights
    Yt = Pt @ Qt.T  # imputed labels
    W = _weights(obj).numpy()
    Y = np.zeros((M, N))
    Y[r, c] = y
    mask = prob["mask"]
    # sum of two squares per pair, as one: D = w + a, D T = w y + a yt
    A_pair = np.where(mask & (imputed == "unobserved"), 0.0, A)
    D = np.where(mask, W, 0.0) + A_pair
    DT = np.where(mask, W * Y, 0.0) + A_pair * Yt
    if s == 1:
        D, DT = D.T, DT.T
    F = F.numpy()
    rows = [
        np.linalg.solve(F.T @ (d[:, None] * F) + lam * np.eye(K), F.T @ dt)
        for d, dt in zip(D, DT, strict=True)
    ]
    return torch.as_tensor(np.stack(rows))


@pytest.mark.parametrize("imputed", ["unobserved", "all"])
def test_als_weighted_row_solves_are_dense_weighted_least_squares(imputed):
    lam, omega = 0.1, 0.7
    obj, prob, _ = make(
        "table", imputed=imputed, lam=lam, omega=omega, sample_weight="random"
    )
    solver = _ALS(obj, "ALS")
    x = list(obj.initial_point())
    for s in (0, 1):
        F = x[1 - s].clone()
        solver.half_step(x, s, None)
        ref = _dense_row_solutions(obj, prob, F, s, imputed, lam, omega)
        assert _rel(x[s], ref) < 1e-11
        # ... which is the stationarity condition of the weighted objective
        _, g = obj.value_and_grad(tuple(x))
        assert float(g[s].abs().max()) < 1e-11


def test_als_with_confidence_is_ials():
    # Hu et al.'s iALS with per-pair confidence c = 1 + alpha r: preference 1
    # on the observed pairs, confidence 1 elsewhere; sample_weight = c,
    # omega = 1, lam = lambda_iALS.
    alpha, lam_ials = 2.0, 0.3
    prob = problem(0)
    r, c, _ = prob["pairs"]
    ratings = np.random.default_rng(3).integers(1, 6, len(r)).astype(float)
    obj = AllPairsObjective(
        *towers("table"),
        (r, c),
        omega=1.0,
        lam=lam_ials,
        imputation=0.0,
        sample_weight=1.0 + alpha * ratings,
    )
    x = list(obj.initial_point())
    _ALS(obj, "ALS").half_step(x, 0, None)
    Q = x[1]
    pref = torch.as_tensor(prob["mask"], dtype=torch.float64)
    conf = torch.ones(M, N, dtype=torch.float64)
    conf[r, c] = torch.as_tensor(1.0 + alpha * ratings)
    eye = torch.eye(K, dtype=torch.float64)
    P_ref = torch.stack(
        [
            torch.linalg.solve(
                Q.T @ (conf[u, :, None] * Q) + lam_ials * eye,
                Q.T @ (conf[u] * pref[u]),
            )
            for u in range(M)
        ]
    )
    assert _rel(x[0], P_ref) < 1e-12


# -- every solver honours the weights ------------------------------------------------
SOLVER_RUNS = {
    "als": lambda o: als(o, o.initial_point(), max_iter=2, tol=0),
    "als_cg": lambda o: als(o, o.initial_point(), max_iter=2, tol=0, cg_steps=2),
    "gauss_newton": lambda o: gauss_newton(
        o, o.initial_point(), max_iter=2, random_state=0
    ),
    "gradient_descent": lambda o: gradient_descent(o, o.initial_point(), max_iter=2),
    "adam": lambda o: stochastic(o, o.initial_point(), max_iter=2, random_state=0),
}


@pytest.mark.parametrize("name", list(SOLVER_RUNS))
def test_solvers_honour_weights_and_unit_weights_change_nothing(name):
    n_pairs = len(problem(0)["pairs"][0])
    runs = {}
    for key, w in (("none", None), ("ones", np.ones(n_pairs)), ("random", "random")):
        obj, _, _ = make("table", sample_weight=w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs[key] = (obj, SOLVER_RUNS[name](obj))
    (_, none), (_, ones), (weighted, rand) = runs.values()
    assert torch.equal(flatten(none.x), flatten(ones.x))
    assert not torch.equal(flatten(none.x), flatten(rand.x))
    # each recorded objective is the weighted one (the naive reference)
    assert rand.history["objective"][-1] == pytest.approx(
        float(dense_objective(weighted, rand.x)), rel=1e-12
    )
    assert rand.history["objective"][-1] < rand.info.get(
        "initial_objective", weighted.value(weighted.initial_point())
    )


def test_stochastic_estimate_of_the_weighted_objective_is_exact():
    obj, _, _ = make("mlp", "logistic", sample_weight="random")
    x = obj.initial_point()
    users, items = np.arange(M).repeat(N), np.tile(np.arange(N), M)
    xs = tuple(p.clone().requires_grad_(True) for p in x)
    est = sampled_pairs_loss(obj, xs, users, items)
    assert float(est.detach()) == pytest.approx(obj.value(x), rel=1e-13)
    assert _rel(torch.autograd.grad(est, xs), obj.value_and_grad(x)[1]) < 1e-12


# -- the estimator -----------------------------------------------------------------
def _pairs(seed=0, n=120):
    rng = np.random.default_rng(seed)
    keys = rng.choice(30 * 20, n, replace=False)
    return keys // 20, keys % 20, rng.integers(1, 6, n).astype(float)


@pytest.mark.parametrize("solver", ["auto", "gauss_newton"])
@pytest.mark.bitwise_rerun
def test_estimator_unit_weights_bit_identical_and_weights_matter(solver):
    users, items, ratings = _pairs()
    kw = dict(max_iter=3, random_state=0, solver=solver)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = TwoTowerModel(4, **kw).fit((users, items))
        b = TwoTowerModel(4, **kw).fit((users, items), sample_weight=np.ones(120))
        c = TwoTowerModel(4, **kw).fit((users, items), sample_weight=1 + ratings)
    assert np.array_equal(a.user_embeddings_, b.user_embeddings_)
    assert np.array_equal(a.item_embeddings_, b.item_embeddings_)
    assert a.objective_ == b.objective_
    assert not np.allclose(a.user_embeddings_, c.user_embeddings_)


def test_estimator_sparse_weights_follow_the_pairs_of_a_sparse_matrix():
    users, items, ratings = _pairs()
    X = sp.csr_matrix((np.ones(120), (users, items)), shape=(30, 20))
    W = sp.coo_matrix((1 + ratings, (users, items)), shape=(30, 20))
    kw = dict(max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        from_tuple = TwoTowerModel(4, **kw).fit(
            (users, items), sample_weight=1 + ratings
        )
        from_sparse = TwoTowerModel(4, **kw).fit(X, sample_weight=W)
        order = np.lexsort((items, users))  # row-major: the order of a sparse X
        from_array = TwoTowerModel(4, **kw).fit(X, sample_weight=(1 + ratings)[order])
    for model in (from_sparse, from_array):
        assert np.allclose(
            model.user_embeddings_, from_tuple.user_embeddings_, rtol=1e-5, atol=1e-6
        )
    with pytest.raises(DataValidationError, match="same entries"):
        TwoTowerModel(4, **kw).fit(X, sample_weight=W.tocsr()[:, :19])
    with pytest.raises(DataValidationError, match="sparse X"):
        TwoTowerModel(4, **kw).fit((users, items), sample_weight=W)
    fewer = W.tocsr()
    fewer[users[0], items[0]] = 0
    fewer.eliminate_zeros()
    with pytest.raises(DataValidationError, match="same entries"):
        TwoTowerModel(4, **kw).fit(X, sample_weight=fewer)


BAD_WEIGHTS = {
    "wrong length": (np.ones(119), "120 real numbers"),
    "two-dimensional": (np.ones((120, 1)), "120 real numbers"),
    "strings": (np.array(["1"] * 120), "real numbers"),
    "negative": (np.r_[np.ones(119), -1.0], "pair 119 has -1.0"),
    "NaN": (np.r_[np.nan, np.ones(119)], "pair 0 has nan"),
    "inf": (np.r_[np.ones(119), np.inf], "finite"),
    "all zero": (np.zeros(120), "0 for every pair"),
}


@pytest.mark.parametrize("case", list(BAD_WEIGHTS))
def test_bad_weights_are_refused(case):
    users, items, _ = _pairs()
    w, message = BAD_WEIGHTS[case]
    with pytest.raises(DataValidationError, match=message) as err:
        TwoTowerModel(4, max_iter=1).fit((users, items), sample_weight=w)
    assert "TwoTowerModel.fit" in str(err.value)
    with pytest.raises(DataValidationError, match=message):
        AllPairsObjective(
            EmbeddingTower(30, 2),
            EmbeddingTower(20, 2),
            (users, items),
            sample_weight=w,
        )


def test_weighted_als_with_enough_cg_steps_is_exact_weighted_als():
    obj, _, _ = make("table", sample_weight="random")
    x0 = obj.initial_point()
    exact = als(obj, x0, max_iter=3, tol=0)
    cg = als(obj, x0, max_iter=3, tol=0, cg_steps=6 * K)
    assert _rel(cg.x, exact.x) < 1e-10
