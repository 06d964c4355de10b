"""The two-tower index solver, its registries and the estimator's use of them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from embedopt import DataValidationError, InvalidParameterError
from embedopt.data import as_interactions
from embedopt.nn import ConcatTower
from embedopt.optim import GivensOptimizer, SolverResult
from embedopt.quantization import (
    LAYER_ROTATION_OPTIMIZERS,
    ROTATIONS,
    TwoTowerNet,
    TwoTowerRetrieval,
    train_two_tower_index,
)
from embedopt.quantization.two_tower import INDEX_ROTATIONS

SMALL = dict(
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
)


def _pairs():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 20, 200)
    items = (users % 4) * 3 + rng.integers(0, 3, 200)
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def test_rotation_registry_names_and_spellings():
    # one registry of rotation methods: the index trains R with those of
    # ProductQuantizer's ROTATIONS that have a gradient form, by the same names
    assert list(INDEX_ROTATIONS) == [
        "none",
        "gcd_r",
        "gcd_g",
        "gcd_s",
        "gcd_r_overlap",
        "gcd_g_overlap",
        "cayley",
        "unconstrained",
    ]
    assert set(INDEX_ROTATIONS) == set(ROTATIONS) - {"opq"}
    assert INDEX_ROTATIONS.get("none") == ("fixed", None)
    assert INDEX_ROTATIONS.get("GCD-G") == ("givens", "greedy")
    assert "gcd-s" in INDEX_ROTATIONS
    with pytest.raises(InvalidParameterError, match="Unknown rotation of TwoTower"):
        INDEX_ROTATIONS.get("svd")
    with pytest.raises(InvalidParameterError, match="Unknown rotation of TwoTower"):
        INDEX_ROTATIONS.get("opq")  # a closed-form step, not a gradient one
    layers = {INDEX_ROTATIONS[name].layer for name in INDEX_ROTATIONS}
    assert layers == set(LAYER_ROTATION_OPTIMIZERS)


def _net(rotation):
    g = torch.Generator().manual_seed(0)
    towers = [ConcatTower(n, 8, hidden=8, generator=g) for n in (5, 6)]
    return TwoTowerNet(*towers, n_subquantizers=2, n_centroids=4, rotation=rotation)


@pytest.mark.parametrize(
    ("layer", "kind"),
    [
        ("fixed", type(None)),
        ("givens", GivensOptimizer),
        ("cayley", torch.optim.SGD),
        ("unconstrained", torch.optim.SGD),
    ],
)
def test_layer_rotation_optimizers(layer, kind):
    net = _net(layer)
    g = torch.Generator().manual_seed(0)
    opt = LAYER_ROTATION_OPTIMIZERS.get(layer)(
        net.index, lr=0.8, selection="greedy", generator=g
    )
    assert isinstance(opt, kind)
    if layer in ("cayley", "unconstrained"):
        # The per-plane step of GCD (see CayleyLearner).
        assert opt.param_groups[0]["lr"] == pytest.approx(0.2)
        idx = net.index
        trained = idx.cayley.weight if layer == "cayley" else idx.rotation_weight
        assert opt.param_groups[0]["params"] == [trained]


def test_two_tower_net_composes_towers_and_index():
    net = _net("givens").to(torch.float64)
    assert net.device.type == "cpu" and net.index.dim == 8
    u = net.users(torch.tensor([0, 4]))
    v, d = net.index(net.items(torch.tensor([1, 5])))
    assert u.shape == v.shape == (2, 8) and d.ndim == 0


def test_solver_returns_the_net_and_a_reusable_warm_state():
    u, i = _pairs()
    with warnings.catch_warnings():
        # The step budgets are the plan: no ConvergenceWarning at all.
        warnings.simplefilter("error")
        res = train_two_tower_index((u, i), rotation="gcd-r", random_state=0, **SMALL)
    assert isinstance(res, SolverResult) and isinstance(res.x, TwoTowerNet)
    assert not res.x.training
    assert res.n_iter == 3 and res.stop_reason == "n_steps"
    assert set(res.history) >= {"objective", "retrieval_loss", "distortion"}
    state = res.info["warm_state"]
    assert state["shape"] == as_interactions((u, i)).shape
    assert state["warmup_history"]["objective"].shape == (2,)
    again = train_two_tower_index(
        (u, i), rotation="gcd_r", random_state=0, warm_state=state, **SMALL
    )
    np.testing.assert_array_equal(again.history["objective"], res.history["objective"])
    with pytest.raises(DataValidationError, match="other data or tower settings"):
        train_two_tower_index(
            (u, i), random_state=0, warm_state=state, **{**SMALL, "hidden": 4}
        )


def test_solver_checks_its_parameters_and_sizes():
    u, i = _pairs()
    with pytest.raises(InvalidParameterError, match="of train_two_tower_index"):
        train_two_tower_index((u, i), **{**SMALL, "loss": "mse"})
    with pytest.raises(DataValidationError, match="must divide"):
        train_two_tower_index((u, i), **{**SMALL, "n_subquantizers": 3})
    with pytest.raises(DataValidationError, match="exceeds the 32 warm-start"):
        train_two_tower_index((u, i), **{**SMALL, "n_centroids": 33})


def test_estimator_accepts_both_spellings_and_reports_a_callback_stop():
    u, i = _pairs()
    a = TwoTowerRetrieval(rotation="gcd-g", random_state=1, device="cpu", **SMALL)
    b = TwoTowerRetrieval(rotation="gcd_g", random_state=1, device="cpu", **SMALL)
    a.fit((u, i))
    b.fit((u, i))
    np.testing.assert_array_equal(
        a.recommend(np.arange(20), 3)[0], b.recommend(np.arange(20), 3)[0]
    )
    assert a.stop_reason_ == "n_steps" and a.shape_ == (20, 12)
    stopped = TwoTowerRetrieval(
        random_state=1, device="cpu", callback=lambda s: True, **SMALL
    ).fit((u, i))
    assert stopped.stop_reason_ == "callback" and stopped.n_iter_ == 1


@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")  # the stray index
def test_an_index_of_2_to_the_40_is_refused_naming_the_size():
    u, i = _pairs()
    u = u.copy()
    u[-1] = 2**40
    with pytest.raises(DataValidationError, match="1099511627777 users and 12 items"):
        TwoTowerRetrieval(random_state=0, device="cpu", **SMALL).fit((u, i))
    with pytest.raises(DataValidationError, match="1099511627777 users"):
        train_two_tower_index((u, i), **SMALL)


def test_float32_and_float64_start_from_the_same_towers():
    # Their recommendations differ later because training amplifies rounding
    # (documented in TwoTowerRetrieval's Notes), not because they start apart.
    u, i = _pairs()
    states = [
        train_two_tower_index(
            (u, i),
            random_state=0,
            device="cpu",
            dtype=dt,
            **{**SMALL, "warmup_steps": 0},
        ).info["warm_state"]
        for dt in ("float32", "float64")
    ]
    for tower in ("user_tower", "item_tower"):
        for name, w32 in states[0][tower].items():
            w64 = states[1][tower][name]
            assert w32.dtype == torch.float32 and w64.dtype == torch.float64
            torch.testing.assert_close(w32.double(), w64, rtol=0, atol=0)


def test_sample_weight_is_refused_with_a_way_out():
    # In-batch negatives give a per-pair weight no single meaning: refused
    # before any work, naming the resampling alternative and TwoTowerModel.
    u, i = _pairs()
    model = TwoTowerRetrieval(random_state=0, device="cpu", **SMALL)
    with pytest.raises(InvalidParameterError, match=r"p=w / w\.sum") as err:
        model.fit((u, i), sample_weight=np.ones(len(u)))
    assert "TwoTowerModel" in str(err.value)
    assert not hasattr(model, "net_")
    model.fit((u, i), sample_weight=None)  # None is the unweighted fit
    assert hasattr(model, "net_")
