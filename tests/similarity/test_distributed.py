"""Data-parallel oracles: 2 processes on loopback (gloo) give one process's value,
gradient and Gauss-Newton product to float64 rounding, with every process
holding bitwise the same results."""

from __future__ import annotations

import warnings

import pytest
import torch

from embedopt._core import ConvergenceWarning, InvalidParameterError
from embedopt.linalg.points import flatten
from embedopt.nn import EmbeddingTower
from embedopt.optim import newton_cg
from embedopt.similarity import (
    AllPairsObjective,
    DistributedAllPairsObjective,
    gauss_newton,
    run_distributed,
    shard_bounds,
)
from tests.conftest import fast_start_method

from ._common import M, N, make

# (loss, imputed, chunk_size): both imputed-pair sets; chunked passes and a
# non-square loss once each.
CONFIGS = [
    ("square", "unobserved", None),
    ("square", "all", None),
    ("logistic", "unobserved", 3),
]
GAUSS_NEWTON = dict(
    max_iter=2, preconditioner="diagonal", n_probes=2, random_state=0, cg_max_iter=4
)
NEWTON = dict(use="gauss_newton", damping=1.0, max_iter=2, tol=0.0, cg_max_iter=4)


def _distributed(
    loss, imputed, chunk_size, *, shift=0.0, dtype=torch.float64, sample_weight=None
):
    """The configuration of ``make`` as a DistributedAllPairsObjective, its user
    tower's parameters moved by ``shift`` before construction."""
    obj, prob, ref = make(
        "mlp",
        loss,
        imputed,
        chunk_size=chunk_size,
        dtype=dtype,
        sample_weight=sample_weight,
    )
    su, sv = obj.sides
    with torch.no_grad():
        for p in su.tower.parameters():
            p.add_(shift)
    return DistributedAllPairsObjective(
        su.tower,
        sv.tower,
        prob["pairs"],
        loss=loss,
        omega=ref["omega"],
        user_weights=prob["a"],
        item_weights=prob["b"],
        imputation=ref["imputation"],
        imputed=imputed,
        lam=ref["lam"],
        chunk_size=chunk_size,
        sample_weight=prob["sample_weight"],
    )


def _direction(x):
    gen = torch.Generator().manual_seed(1)
    return tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in x)


def _oracles(obj, newton=False):
    """value, gradient, GN product, embeddings and (newton) 2 Newton-CG iterates."""
    x = obj.initial_point()
    out = dict(value=obj.value(x))
    out["f"], out["grad"] = obj.value_and_grad(x)
    out["gn"] = obj.gnvp(x, _direction(x))
    out["P"], out["Q"] = obj.embeddings(x)
    if newton:
        with warnings.catch_warnings():  # 2 iterations on purpose
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = newton_cg(obj, x, **NEWTON)
            # Random probes (damping scale, Jacobi preconditioner): the same
            # seed on every process keeps the replicas identical.
            gn = gauss_newton(obj, x, **GAUSS_NEWTON)
        out["x"], out["objective"] = res.x, list(res.history["objective"])
        out["x_gn"] = gn.x
    return out


def _no_local_pairs(cls):
    """Observed pairs of users 0-3 only: the second process has none."""
    g = torch.Generator().manual_seed(0)
    return cls(
        EmbeddingTower(M, 3, std=0.5, generator=g, dtype=torch.float64),
        EmbeddingTower(N, 3, std=0.5, generator=g, dtype=torch.float64),
        ([0, 1, 2, 3], [0, 4, 2, 1], [1.0, 2.0, 0.5, 1.0]),
        omega=0.5,
        lam=0.1,
    )


def _worker():
    """What each of the 2 processes computes (run_distributed's target)."""
    import torch.distributed as dist

    out = {}
    for config in CONFIGS:
        # The second process's towers start elsewhere; the first one's win.
        obj = _distributed(*config, shift=float(dist.get_rank()))
        res = _oracles(obj, newton=config == CONFIGS[0])
        res["spread"] = obj.replica_spread(res.get("x", res["grad"]))
        res["local"] = (obj.sides[0].n, obj.sides[1].n, len(obj.labels))
        out[config] = res
    # float32 towers: the observed-pair products and their collectives run
    # in float32 (the Gramians in float64).
    out["float32"] = _oracles(_distributed(*CONFIGS[0], dtype=torch.float32))
    # confidences of the observed pairs follow their users to their shard
    out["weighted"] = _oracles(
        _distributed(*CONFIGS[2], shift=float(dist.get_rank()), sample_weight="random")
    )
    obj = _no_local_pairs(DistributedAllPairsObjective)
    out["no_pairs"], out["no_pairs_local"] = _oracles(obj), len(obj.labels)
    try:  # 1 user for 2 processes: refused on every process, no collective hangs
        DistributedAllPairsObjective(
            EmbeddingTower(1, 2), EmbeddingTower(3, 2), ([0], [2], [1.0])
        )
    except Exception as exc:
        out["bad"] = (type(exc).__name__, str(exc))
    return out


@pytest.fixture(scope="module")
def one_process():
    out = {
        c: _oracles(make("mlp", c[0], c[1], chunk_size=c[2])[0], c == CONFIGS[0])
        for c in CONFIGS
    }
    out["float32"] = _oracles(make("mlp", *CONFIGS[0][:2], dtype=torch.float32)[0])
    loss, imputed, chunk_size = CONFIGS[2]
    out["weighted"] = _oracles(
        make("mlp", loss, imputed, chunk_size=chunk_size, sample_weight="random")[0]
    )
    out["no_pairs"] = _oracles(_no_local_pairs(AllPairsObjective))
    return out


@pytest.fixture(scope="module")
def two_processes(one_process):
    # One launch for every check, forked after one_process has run the same
    # code here: spawned processes would import torch again and forked ones
    # would warm up torch.func again (seconds each).
    return run_distributed(_worker, 2, threads=1, start_method=fast_start_method())


def _rel(a, b) -> float:
    a, b = flatten(a), flatten(b)
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_two_processes_match_one(one_process, two_processes, config):
    single = one_process[config]
    for res in (r[config] for r in two_processes):
        assert res["value"] == pytest.approx(single["value"], rel=1e-13)
        assert res["f"] == pytest.approx(single["value"], rel=1e-13)
        assert _rel(res["grad"], single["grad"]) < 1e-12
        assert _rel(res["gn"], single["gn"]) < 1e-12
        assert torch.allclose(res["P"], single["P"], rtol=0, atol=1e-14)
        assert torch.allclose(res["Q"], single["Q"], rtol=0, atol=1e-14)
        if "x" in single:  # same iterates as one process, objective decreasing
            assert _rel(res["x"], single["x"]) < 1e-10
            assert res["objective"] == pytest.approx(single["objective"], rel=1e-12)
            assert res["objective"][-1] < res["objective"][0]
            assert _rel(res["x_gn"], single["x_gn"]) < 1e-10


def test_weighted_pairs_match_one_process(one_process, two_processes):
    single = one_process["weighted"]
    assert single["value"] != pytest.approx(one_process[CONFIGS[2]]["value"])
    for res in (r["weighted"] for r in two_processes):
        assert res["value"] == pytest.approx(single["value"], rel=1e-13)
        assert _rel(res["grad"], single["grad"]) < 1e-12
        assert _rel(res["gn"], single["gn"]) < 1e-12


def test_float32_towers_match_one_process(one_process, two_processes):
    single = one_process["float32"]
    for res in (r["float32"] for r in two_processes):
        assert res["grad"][0].dtype == torch.float32
        assert res["value"] == pytest.approx(single["value"], rel=1e-6)
        assert _rel(res["grad"], single["grad"]) < 1e-5
        assert _rel(res["gn"], single["gn"]) < 1e-5


def test_a_process_without_observed_pairs(one_process, two_processes):
    single = one_process["no_pairs"]
    assert [r["no_pairs_local"] for r in two_processes] == [4, 0]
    for res in (r["no_pairs"] for r in two_processes):
        assert res["value"] == pytest.approx(single["value"], rel=1e-13)
        assert _rel(res["grad"], single["grad"]) < 1e-12
        assert _rel(res["gn"], single["gn"]) < 1e-12


def test_processes_hold_bitwise_the_same_results(two_processes):
    first, second = (r[CONFIGS[0]] for r in two_processes)
    assert first["value"] == second["value"]
    for key in ("grad", "gn", "x", "x_gn"):
        assert torch.equal(flatten(first[key]), flatten(second[key]))
    assert first["spread"] == second["spread"] == 0.0


def test_each_process_keeps_its_shards(two_processes):
    obj = make("mlp")[0]
    crow = obj.pattern.crow.tolist()
    for rank, res in enumerate(two_processes):
        (u0, u1), (v0, v1) = shard_bounds(M, 2)[rank], shard_bounds(N, 2)[rank]
        assert res[CONFIGS[0]]["local"] == (u1 - u0, v1 - v0, crow[u1] - crow[u0])
        name, message = res["bad"]
        assert name == "InvalidParameterError" and "1 users and 3 items" in message


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_one_process_is_the_single_process_objective_bitwise(config):
    # No process group: the same code path as AllPairsObjective, no collective.
    obj = _distributed(*config)
    single = make("mlp", config[0], config[1], chunk_size=config[2])[0]
    assert obj.world_size == 1 and obj.rank == 0
    x = single.initial_point()
    v = _direction(x)
    assert obj.value(x) == single.value(x)
    f, g = obj.value_and_grad(x)
    f_single, g_single = single.value_and_grad(x)
    assert f == f_single and torch.equal(flatten(g), flatten(g_single))
    assert torch.equal(flatten(obj.gnvp(x, v)), flatten(single.gnvp(x, v)))
    assert obj.replica_spread(x) == 0.0


def test_shard_bounds():
    assert shard_bounds(7, 2) == [(0, 4), (4, 7)]
    assert shard_bounds(6, 3) == [(0, 2), (2, 4), (4, 6)]
    assert shard_bounds(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    for n, w in ((0, 1), (10, 3), (11, 4)):
        bounds = shard_bounds(n, w)
        sizes = [b - a for a, b in bounds]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(bounds[i][1] == bounds[i + 1][0] for i in range(w - 1))
        assert max(sizes) - min(sizes) <= 1
    with pytest.raises(InvalidParameterError, match="n_shards"):
        shard_bounds(5, 0)
    with pytest.raises(InvalidParameterError, match="'n'"):
        shard_bounds(-1, 2)


def test_run_distributed_refuses_bad_parameters():
    with pytest.raises(InvalidParameterError, match="world_size"):
        run_distributed(print, 0)
    with pytest.raises(InvalidParameterError, match="backend"):
        run_distributed(print, 1, backend="mpi")
    with pytest.raises(InvalidParameterError, match="start_method"):
        run_distributed(print, 1, start_method="thread")


def test_run_distributed_refuses_fork_after_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(InvalidParameterError, match="start_method='spawn'"):
        run_distributed(print, 1, start_method="fork")


def test_is_an_all_pairs_objective():
    assert issubclass(DistributedAllPairsObjective, AllPairsObjective)


def _oracles_only():
    return {c: _oracles(_distributed(*c)) for c in CONFIGS}


@pytest.mark.parametrize("world_size", [3, 4])
def test_more_processes_match_one_and_each_other(one_process, world_size):
    # Uneven shards of every size down to one entity (N = 5 items over 4).
    results = run_distributed(
        _oracles_only, world_size, threads=1, start_method=fast_start_method()
    )
    for config in CONFIGS:
        single = one_process[config]
        first = results[0][config]
        for res in (r[config] for r in results):
            assert res["value"] == first["value"]
            assert torch.equal(flatten(res["grad"]), flatten(first["grad"]))
            assert torch.equal(flatten(res["gn"]), flatten(first["gn"]))
        assert first["value"] == pytest.approx(single["value"], rel=1e-13)
        assert _rel(first["grad"], single["grad"]) < 1e-12
        assert _rel(first["gn"], single["gn"]) < 1e-12
