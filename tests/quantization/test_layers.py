import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.linalg import orthogonality_error
from embedopt.optim import GivensOptimizer
from embedopt.quantization import (
    CayleyRotation,
    ProductQuantizationLayer,
    TwoTowerRetrieval,
)
from embedopt.quantization.codebooks import decode

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


def _layer(rotation, seed=0):
    torch.manual_seed(seed)
    layer = ProductQuantizationLayer(8, 2, 4, rotation=rotation)
    g = torch.Generator().manual_seed(seed)
    R = torch.linalg.qr(torch.randn(8, 8, generator=g))[0]
    layer.set_state(R, torch.randn(2, 4, 4, generator=g))
    return layer, R


@pytest.mark.parametrize("rotation", ["givens", "cayley", "fixed", "unconstrained"])
def test_forward_is_quantization_and_backward_is_straight_through(rotation):
    layer, R = _layer(rotation)
    x = torch.randn(16, 8, requires_grad=True)
    out, dist = layer(x)
    codes = layer.encode(x.detach())
    expect = decode(codes, layer.codebooks.detach()) @ R.T
    torch.testing.assert_close(out.detach(), expect, atol=1e-5, rtol=1e-5)
    z = x.detach() @ R
    assert float(dist.detach()) == pytest.approx(
        float(((z - decode(codes, layer.codebooks.detach())) ** 2).sum(1).mean()),
        rel=1e-5,
    )
    w = torch.randn(16, 8)
    (out * w).sum().backward(retain_graph=True)
    # d/dx of phi(xR)R^T with phi ~ identity: w R R^T = w for orthogonal R.
    torch.testing.assert_close(x.grad, w, atol=1e-5, rtol=1e-5)
    # codebooks learn from the distortion term only (documented choice)
    assert layer.codebooks.grad is None or not layer.codebooks.grad.any()
    dist.backward()
    assert layer.codebooks.grad.abs().sum() > 0


def test_distortion_trains_codebooks_and_givens_rotation():
    layer, _ = _layer("givens")
    x = torch.randn(256, 8) * torch.linspace(2, 0.1, 8)
    opt = torch.optim.SGD(layer.other_parameters(), lr=0.2)
    gopt = GivensOptimizer(layer.rotation_parameters(), lr=0.05, selection="greedy")
    first = None
    for _ in range(25):
        opt.zero_grad()
        gopt.zero_grad()
        _, d = layer(x)
        d.backward()
        opt.step()
        gopt.step()
        first = first if first is not None else float(d)
    assert float(layer(x)[1]) < 0.7 * first
    assert orthogonality_error(layer.rotation_matrix()) < 1e-5
    rot = layer.rotation_parameters()[0]
    assert all(p is not rot for p in layer.other_parameters())


def test_cayley_rotation_rebase_keeps_the_matrix():
    rot = CayleyRotation(5)
    with torch.no_grad():
        rot.weight.normal_()
    R = rot().detach().clone()
    assert orthogonality_error(R) < 1e-5
    rot.rebase()
    torch.testing.assert_close(rot().detach(), R, atol=1e-5, rtol=1e-5)
    assert float(rot.weight.abs().sum()) == 0


def test_layer_rejects_bad_settings():
    with pytest.raises(InvalidParameterError, match="'rotation' parameter"):
        ProductQuantizationLayer(8, 2, 4, rotation="svd")
    with pytest.raises(InvalidParameterError, match="divide"):
        ProductQuantizationLayer(8, 3, 4)


def _interactions(seed=0):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 30, 400)
    items = (users % 5) * 4 + rng.integers(0, 4, 400)  # 5 planted user groups
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _model(**kw):
    params = dict(
        n_components=8,
        hidden=8,
        n_subquantizers=2,
        n_centroids=4,
        batch_size=32,
        warmup_steps=30,
        n_steps=20,
        warm_start_samples=64,
        warm_start_iter=2,
        log_every=10,
        random_state=0,
        device="cpu",
    )
    params.update(kw)
    return TwoTowerRetrieval(**params)


def test_two_tower_protocol_and_shared_warm_start():
    u, i = _interactions()
    feats = dict(group=np.arange(30) % 5)
    ifeats = dict(genre=np.eye(4, dtype=np.float32)[np.arange(20) % 4])
    base = _model(rotation="none").fit(
        (u, i), shape=(30, 20), user_features=feats, item_features=ifeats
    )
    assert base.history_["distortion"].shape == (2,)
    gcd = _model(rotation="gcd-g").fit(
        (u, i),
        shape=(30, 20),
        user_features=feats,
        item_features=ifeats,
        warm_start_from=base,
    )
    assert gcd.warm_start_distortion_ == base.warm_start_distortion_
    again = _model(rotation="gcd-g").fit(
        (u, i), shape=(30, 20), user_features=feats, item_features=ifeats
    )
    np.testing.assert_allclose(
        again.history_["distortion"], gcd.history_["distortion"], rtol=1e-5
    )
    R = gcd.net_.index.rotation_matrix()
    assert orthogonality_error(R) < 1e-5
    rec, scores = gcd.recommend(np.arange(30), k=5)  # training pairs excluded
    assert np.all(np.diff(scores, axis=1) <= 0)
    for q in range(30):
        assert not set(rec[q]) & set(i[u == q].tolist())
    ev = gcd.evaluate((u[:50], i[:50]), k=5, exclude_seen=False)
    assert 0 <= ev["precision@5"] <= 1 and 0 <= ev["recall@5"] <= 1
    # more than the items left after the exclusions: padded with -1
    rec, scores = gcd.recommend(np.arange(30), k=20)
    for q in range(30):
        left = 20 - len(set(i[u == q].tolist()))
        assert sorted(rec[q][:left]) == sorted(set(range(20)) - set(i[u == q]))
        assert np.all(rec[q][left:] == -1) and np.all(scores[q][left:] == -np.inf)
    with pytest.raises(InvalidParameterError, match="'k' parameter"):
        gcd.recommend([0], k=0)


def test_two_tower_bad_input():
    u, i = _interactions()
    with pytest.raises(DataValidationError, match="must divide"):
        _model(n_subquantizers=3).fit((u, i))
    with pytest.raises(DataValidationError, match="non-negative"):
        _model().fit((u - 1, i))
    with pytest.raises(DataValidationError, match="expected 30"):
        _model().fit((u, i), user_features=dict(a=np.zeros(3, int)))
    with pytest.raises(DataValidationError, match="warm_start_from"):
        _model().fit((u, i), warm_start_from=_model())


def test_layer_checks_its_sizes_with_the_shared_message_shape():
    with pytest.raises(InvalidParameterError, match="'n_centroids' parameter of Pro"):
        ProductQuantizationLayer(8, 2, 0)
