"""Towers: shapes, seeding, devices and dtypes, gradients; scores and losses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from embedopt import InvalidParameterError
from embedopt.data import as_side_features
from embedopt.nn import (
    RETRIEVAL_LOSSES,
    ConcatTower,
    EmbeddingTower,
    MLPTower,
    SideFeatureEncoder,
    cosine_scores,
    dot_scores,
    in_batch_hinge_loss,
    in_batch_softmax_loss,
    retrieval_loss,
)
from tests.conftest import requires_cuda


def _features(n=6):
    rng = np.random.default_rng(0)
    return as_side_features(
        {
            "genre": np.arange(n) % 3,
            "flag": np.arange(n) % 2 == 0,
            "tags": rng.normal(size=(n, 4)),
        },
        n,
        "item",
    )


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _weights(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_embedding_tower_rows_seeding_and_normalization():
    t = EmbeddingTower(10, 4, std=0.5, generator=_gen(1))
    ids = torch.tensor([3, 0, 3])
    out = t(ids)
    assert out.shape == (3, 4) and torch.equal(out[0], out[2])
    assert torch.equal(out[1], t.weight[0])
    assert (t.n_ids, t.n_components) == (10, 4)
    assert _same(
        _weights(t), _weights(EmbeddingTower(10, 4, std=0.5, generator=_gen(1)))
    )
    assert not _same(_weights(t), _weights(EmbeddingTower(10, 4, generator=_gen(2))))
    unit = EmbeddingTower(10, 4, normalize=True, generator=_gen(1))(ids)
    torch.testing.assert_close(unit.norm(dim=1), torch.ones(3))
    big = EmbeddingTower(2000, 8, std=0.05, generator=_gen(0))
    assert abs(float(big.weight.detach().std()) - 0.05) < 0.005


def test_towers_never_touch_the_global_random_state():
    state = torch.get_rng_state()
    ConcatTower(6, 4, _features(), hidden=8, generator=_gen())
    MLPTower(_features(), 4, hidden=8, generator=_gen())
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_concat_tower_shapes_unit_norm_and_dtype(dtype):
    t = ConcatTower(6, 4, _features(), hidden=8, generator=_gen(), dtype=dtype)
    out = t(torch.tensor([0, 5, 2]))
    assert out.shape == (3, 4) and out.dtype == dtype
    torch.testing.assert_close(out.norm(dim=1), torch.ones(3, dtype=dtype))
    assert t.encoder.out_features == 16 * 2 + 16
    assert t.n_ids == 6 and t.n_components == 4
    raw = ConcatTower(6, 4, _features(), normalize=False, generator=_gen())
    assert not torch.allclose(raw(torch.arange(6)).norm(dim=1), torch.ones(6))


def test_float64_towers_start_from_the_float32_values():
    a = _weights(ConcatTower(6, 4, _features(), hidden=8, generator=_gen(3)))
    b = _weights(
        ConcatTower(6, 4, _features(), hidden=8, generator=_gen(3), dtype=torch.float64)
    )
    assert all(torch.equal(a[k].double(), b[k]) for k in a)


def test_initialization_rule():
    t = ConcatTower(6, 4, _features(), hidden=8, id_std=0.05, generator=_gen())
    w = t.mlp[0].weight
    assert w.shape == (8, 4 + 48)
    assert torch.all(t.mlp[0].bias == 0) and torch.all(t.encoder.project.bias == 0)
    # Replaying the draws in order: id table, categorical tables, dense map, MLP.
    g = _gen()
    ids = 0.05 * torch.randn((6, 4), generator=g)
    torch.testing.assert_close(t.id_embedding.weight, ids, rtol=0, atol=0)
    for table in t.encoder.codes:
        expect = torch.randn(table.weight.shape, generator=g) / math.sqrt(16)
        torch.testing.assert_close(table.weight, expect, rtol=0, atol=0)
    expect = torch.randn((16, 4), generator=g) / 2.0
    torch.testing.assert_close(t.encoder.project.weight, expect, rtol=0, atol=0)
    expect = torch.randn((8, 52), generator=g) / math.sqrt(52)
    torch.testing.assert_close(w, expect, rtol=0, atol=0)


def test_gradients_reach_every_parameter():
    t = ConcatTower(6, 4, _features(), hidden=8, generator=_gen())
    t(torch.arange(6)).pow(3).sum().backward()
    for name, p in t.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_features_are_buffers_outside_the_state_dict():
    t = ConcatTower(6, 4, _features(), hidden=8, generator=_gen())
    assert t.encoder.categorical.shape == (6, 2) and t.encoder.dense.shape == (6, 4)
    assert not any("categorical" in k or "dense" in k for k in t.state_dict())
    other = ConcatTower(6, 4, _features(), hidden=8, generator=_gen(5))
    other.load_state_dict(t.state_dict())
    torch.testing.assert_close(other(torch.arange(6)), t(torch.arange(6)))


def test_mlp_tower_over_features_only_and_with_an_id_embedding():
    f = _features()
    t = MLPTower(f, 3, hidden=5, generator=_gen())
    assert t.id_embedding is None and t(torch.arange(6)).shape == (6, 3)
    ids = EmbeddingTower(6, 2, generator=_gen())
    t = MLPTower(f, 3, id_embedding=ids, hidden=5, generator=_gen())
    assert t.mlp[0].in_features == 2 + 48
    t = MLPTower(None, 3, id_embedding=ids, hidden=5)
    assert t.mlp[0].in_features == 2 and t.n_ids == 6
    enc = SideFeatureEncoder(as_side_features(None, 6), generator=_gen())
    assert enc(torch.arange(3)).shape == (3, 0)


def test_bad_tower_arguments():
    with pytest.raises(InvalidParameterError, match="'n_components' parameter of Emb"):
        EmbeddingTower(5, 0)
    with pytest.raises(InvalidParameterError, match="needs side features"):
        MLPTower(None, 3)
    with pytest.raises(InvalidParameterError, match="side features are empty"):
        MLPTower(as_side_features(None, 4), 3)
    with pytest.raises(InvalidParameterError, match="6 rows but the id embedding"):
        MLPTower(_features(), 3, id_embedding=EmbeddingTower(5, 2))
    with pytest.raises(InvalidParameterError, match="'hidden' parameter of Concat"):
        ConcatTower(5, 3, hidden=0)


def test_scores():
    g = _gen()
    u, v = torch.randn(3, 4, generator=g), torch.randn(5, 4, generator=g)
    torch.testing.assert_close(dot_scores(u, v), u @ v.T)
    cos = torch.nn.functional.cosine_similarity(u[:, None], v[None], dim=2)
    torch.testing.assert_close(cosine_scores(u, v), cos)
    assert torch.all(cosine_scores(torch.zeros(1, 4), v) == 0)


def test_losses_against_their_definitions():
    g = _gen(4)
    S = torch.randn(5, 5, generator=g, dtype=torch.float64)
    off = ~torch.eye(5, dtype=torch.bool)
    hinge = torch.relu(0.3 - S.diagonal()[:, None] + S)[off].mean()
    torch.testing.assert_close(in_batch_hinge_loss(S, 0.3), hinge)
    logits = S / 0.2
    soft = (torch.logsumexp(logits, 1) - logits.diagonal()).mean()
    torch.testing.assert_close(in_batch_softmax_loss(S, 0.2), soft)
    u, v = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    torch.testing.assert_close(
        retrieval_loss(u, v, "hinge", margin=0.3), in_batch_hinge_loss(u @ v.T, 0.3)
    )
    torch.testing.assert_close(
        retrieval_loss(u, v, "softmax", temperature=0.2),
        in_batch_softmax_loss(u @ v.T, 0.2),
    )
    assert list(RETRIEVAL_LOSSES) == ["hinge", "softmax"]
    with pytest.raises(InvalidParameterError, match="Unknown retrieval loss: 'mse'"):
        retrieval_loss(u, v, "mse")


@pytest.mark.gpu
@requires_cuda
def test_towers_on_cuda_match_cpu():
    cpu = ConcatTower(6, 4, _features(), hidden=8, generator=_gen(7))
    gpu = ConcatTower(6, 4, _features(), hidden=8, generator=_gen(7), device="cuda")
    assert gpu.encoder.dense.device.type == "cuda"
    ids = torch.arange(6)
    torch.testing.assert_close(gpu(ids.cuda()).cpu(), cpu(ids), rtol=1e-5, atol=1e-6)


def test_sum_tower_adds_its_towers_and_checks_shapes():
    from embedopt._core import InvalidParameterError
    from embedopt.nn import EmbeddingTower, SumTower

    g = torch.Generator().manual_seed(0)
    a, b = EmbeddingTower(5, 3, generator=g), EmbeddingTower(5, 3, generator=g)
    ids = torch.tensor([0, 4, 2])
    assert torch.equal(SumTower(a, b)(ids), a(ids) + b(ids))
    assert SumTower(a, b).n_ids == 5 and SumTower(a, b).n_components == 3
    with pytest.raises(InvalidParameterError, match="same n_ids"):
        SumTower(a, EmbeddingTower(6, 3, generator=g))
    with pytest.raises(InvalidParameterError, match="at least one"):
        SumTower()
