"""The O(m+n) value, gradient and Gauss-Newton product against the naive O(mn)
computation with autograd, for every option (DESIGN.md test kind 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.linalg.points import flatten, unflatten
from embedopt.similarity import (
    AllPairsObjective,
    AutogradLoss,
    dense_objective,
    popularity_weights,
)

from .._derivatives import central_difference
from ._common import K, M, N, embed, make, towers

CONFIGS = list(
    itertools.product(
        ["mlp", "table", "concat"],
        ["square", "logistic"],
        ["unobserved", "all"],
        ["factors", 0.3],
    )
)


def _rel(a, b):
    a, b = flatten(a), flatten(b)
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _naive_gn(obj, prob, x, v, *, loss, omega, lam, imputed, imputation):
    """(J^T D J + lam I) v with D the loss's second derivative on the dense matrix."""

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
    W = omega * torch.as_tensor(np.outer(prob["a"], prob["b"]), dtype=Yh.dtype)
    D = torch.where(mask, d2, W) if imputed == "unobserved" else d2 * mask + W
    _, pullback = torch.func.vjp(yhat, *x)
    return tuple(a + lam * b for a, b in zip(pullback(D * Jv), v, strict=True))


@pytest.mark.parametrize("kind,loss,imputed,imputation", CONFIGS)
def test_value_gradient_gn_match_naive(kind, loss, imputed, imputation):
    obj, prob, ref = make(kind, loss, imputed, imputation=imputation)
    x = obj.initial_point()
    f_ref = float(dense_objective(obj, x))
    assert obj.value(x) == pytest.approx(f_ref, rel=1e-13, abs=1e-13)
    f, g = obj.value_and_grad(x)
    assert f == pytest.approx(f_ref, rel=1e-13, abs=1e-13)
    xs = [p.clone().requires_grad_(True) for p in x]
    g_ref = torch.autograd.grad(dense_objective(obj, xs), xs)
    assert _rel(g, g_ref) < 1e-10
    gen = torch.Generator().manual_seed(1)
    v = tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in x)
    assert _rel(obj.gnvp(x, v), _naive_gn(obj, prob, x, v, **ref)) < 1e-10


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_gradient_matches_finite_differences(loss):
    obj, _, _ = make("mlp", loss)
    x = obj.initial_point()
    flat = flatten(x)
    gen = torch.Generator().manual_seed(2)
    d = torch.randn(flat.shape, generator=gen, dtype=flat.dtype)
    fd = central_difference(lambda t: obj.value(unflatten(flat + t * d, x)))
    _, g = obj.value_and_grad(x)
    assert float(flatten(g) @ d) == pytest.approx(float(fd), rel=1e-6)


@pytest.mark.parametrize("kind", ["mlp", "table"])
def test_chunked_passes_equal_one_pass(kind):
    whole, _, _ = make(kind)
    chunked, _, _ = make(kind, chunk_size=2)
    assert len(chunked.sides[0].chunks) == 4
    x = whole.initial_point()
    fa, ga = whole.value_and_grad(x)
    fb, gb = chunked.value_and_grad(x)
    assert fa == pytest.approx(fb, rel=1e-14)
    assert _rel(ga, gb) < 1e-13
    v = tuple(torch.ones_like(p) for p in x)
    assert _rel(whole.gnvp(x, v), chunked.gnvp(x, v)) < 1e-13


@pytest.mark.parametrize("imputed", ["unobserved", "all"])
def test_gauss_newton_matrix_is_symmetric_psd(imputed):
    obj, _, _ = make("concat", "logistic", imputed, lam=0.0)
    x = obj.initial_point()
    n = flatten(x).numel()
    cols = [
        flatten(obj.gnvp(x, unflatten(torch.eye(n, dtype=torch.float64)[i], x)))
        for i in range(n)
    ]
    G = torch.stack(cols, 1)
    assert torch.allclose(G, G.T, atol=1e-12 * G.abs().max())
    assert float(torch.linalg.eigvalsh(0.5 * (G + G.T)).min()) > -1e-10 * float(
        G.abs().max()
    )


def test_float32_towers_accumulate_in_float64():
    obj64, _, _ = make("mlp", dtype=torch.float64)
    obj32, _, _ = make("mlp", dtype=torch.float32)
    x32 = obj32.initial_point()
    f32 = obj32.value(x32)
    f64 = obj64.value(tuple(p.double() for p in x32))
    assert isinstance(f32, float)
    assert f32 == pytest.approx(f64, rel=1e-6)
    _, g = obj32.value_and_grad(x32)
    assert all(t.dtype == torch.float32 for t in g)


def test_custom_loss_equals_builtin():
    square = AutogradLoss(lambda y, z: 0.5 * (y - z) ** 2)
    obj_a, _, _ = make("mlp", "square")
    obj_b, _, _ = make("mlp", "square")
    obj_b.loss = square
    x = obj_a.initial_point()
    fa, ga = obj_a.value_and_grad(x)
    fb, gb = obj_b.value_and_grad(x)
    assert fa == pytest.approx(fb, rel=1e-14)
    assert _rel(ga, gb) < 1e-13
    v = tuple(torch.ones_like(p) for p in x)
    assert _rel(obj_a.gnvp(x, v), obj_b.gnvp(x, v)) < 1e-13


def test_cache_follows_the_point():
    obj, _prob, _ref = make("table")
    x = obj.initial_point()
    obj.value_and_grad(x)
    y = tuple(p + 0.1 for p in x)
    f_ref = float(dense_objective(obj, y))
    assert obj.value(y) == pytest.approx(f_ref, rel=1e-13)
    x[0].add_(0.1)  # in place: the cache must notice the new version
    assert obj.value(x) == pytest.approx(float(dense_objective(obj, x)))


def test_load_and_embeddings():
    obj, _, _ = make("table")
    x = tuple(p + 1.0 for p in obj.initial_point())
    obj.load(x)
    P, Q = obj.embeddings(obj.initial_point())
    assert P.shape == (M, K) and Q.shape == (N, K)
    assert torch.equal(obj.initial_point()[0], x[0])


def test_popularity_weights():
    w = popularity_weights([1, 4, 9, 0], alpha=0.5)
    np.testing.assert_allclose(w, np.array([1, 2, 3, 0]) / 1.5)
    np.testing.assert_allclose(popularity_weights([3, 5], alpha=0.0), [1.0, 1.0])


def test_bad_input_is_refused_before_work():
    ut, it = towers()
    pairs = ([0, 1], [1, 2])
    with pytest.raises(InvalidParameterError, match="omega"):
        AllPairsObjective(ut, it, pairs, omega=-1.0)
    with pytest.raises(InvalidParameterError, match="lam"):
        AllPairsObjective(ut, it, pairs, lam=float("inf"))
    with pytest.raises(InvalidParameterError, match="imputed"):
        AllPairsObjective(ut, it, pairs, imputed="some")
    with pytest.raises(DataValidationError, match="item_weights"):
        AllPairsObjective(ut, it, pairs, item_weights=np.ones(N + 1))
    with pytest.raises(DataValidationError, match="user_weights"):
        AllPairsObjective(ut, it, pairs, user_weights=-np.ones(M))
    with pytest.raises(DataValidationError, match="imputation factors"):
        AllPairsObjective(ut, it, pairs, imputation=(np.ones((M, 2)), np.ones((N, 3))))
    with pytest.raises(DataValidationError):
        AllPairsObjective(ut, it, ([0, M], [1, 2]))  # user index out of range
    with pytest.raises(InvalidParameterError, match="imputation"):
        AllPairsObjective(ut, it, pairs, imputation="zero")
    obj = AllPairsObjective(ut, it, pairs)
    with pytest.raises(InvalidParameterError, match="parameter tensors"):
        obj.value(obj.initial_point()[:1])


def test_hybrid_auto_starts_gauss_newton_from_the_als_tables():
    import warnings

    from embedopt.nn import SumTower
    from embedopt.similarity import TwoTowerModel

    rng = np.random.default_rng(0)
    pairs = (rng.integers(0, 12, 50), rng.integers(0, 9, 50))
    feats = {"group": np.arange(12) % 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = TwoTowerModel(3, hidden=4, max_iter=2, random_state=0).fit(
            pairs, user_features=feats
        )
        tables = TwoTowerModel(
            3, user_tower="embedding", max_iter=2, random_state=0
        ).fit(pairs, user_features=feats)
    assert isinstance(model.user_tower_, SumTower)
    assert model.solver_ == "gauss_newton" and tables.solver_ == "als"
    warm = model.warm_start_history_
    assert 1 <= len(warm["objective"]) <= 2
    assert warm["objective"][-1] < warm["objective"][0]
    assert tables.warm_start_history_ is None


def test_plain_tables_take_the_gather_path_and_match_torch_func():
    # A plain table that is its tower's only parameter is differentiated by
    # gather / scatter-add; the same table behind a wrapper goes through
    # torch.func. Both must give the same value, gradient and GN product.
    from torch import nn

    from embedopt.nn import EmbeddingTower

    fast, prob, _ = make("table")
    assert all(side.ids is not None for side in fast.sides)
    ut, it = towers("table")
    slow = AllPairsObjective(
        nn.Sequential(ut),
        nn.Sequential(it),
        prob["pairs"],
        omega=0.7,
        user_weights=prob["a"],
        item_weights=prob["b"],
        imputation=prob["tilde"],
        lam=0.1,
    )
    assert all(side.ids is None for side in slow.sides)
    x = fast.initial_point()
    fa, ga = fast.value_and_grad(x)
    fb, gb = slow.value_and_grad(x)
    assert fa == pytest.approx(fb, rel=1e-14) and _rel(ga, gb) < 1e-13
    v = tuple(torch.randn_like(p) for p in x)
    assert _rel(fast.gnvp(x, v), slow.gnvp(x, v)) < 1e-13
    normalized = AllPairsObjective(
        EmbeddingTower(M, K, normalize=True, dtype=torch.float64),
        it,
        prob["pairs"],
    )
    assert normalized.sides[0].ids is None  # unit rows: not a plain gather
