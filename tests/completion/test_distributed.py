"""Data-parallel AIS-Impute (``process_group=``): 2-4 forked gloo processes on
loopback take the one-process iterates (to rounding), end with bitwise the
same model on every process, and fail with a clear error, not a hang, when a
process dies or stops answering."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

from embedopt._core import CollectiveError, DataValidationError, InvalidParameterError
from embedopt.completion import (
    CompletionProblem,
    DistributedCompletionProblem,
    MatrixCompletion,
    ais_impute,
    row_shards,
)
from embedopt.linalg import orthonormalize
from embedopt.linalg.distributed import Communicator, sharded_orthonormalize
from embedopt.similarity import run_distributed
from tests.conftest import fast_start_method, random_entries

OPTIONS = dict(
    lam=3.0,
    random_state=0,
    dtype="float64",
    device="cpu",
    max_iter=100,
    tol=1e-3,
    power_iters=1,  # fewer collectives: the tests' time is their latency
)


def _entries(seed=1):
    entries, _, _ = random_entries(m=70, n=45, rank=4, frac=0.35, noise=0.1, seed=seed)
    return entries


def _weights(nnz):
    return np.random.default_rng(5).uniform(0.5, 2.0, nnz)


def _solve(group, weighted=False):
    """ais_impute with validation entries (and sample weights): every
    iterate (this process's rows of it), the solution and the history."""
    train, val = _entries(1), _entries(2)
    blocks = []

    def record(state):
        U, s, V = state.x  # this process's rows of U
        blocks.append(((U * s) @ V.T).numpy().copy())

    X = train
    if weighted:
        prob_cls = CompletionProblem if group is None else DistributedCompletionProblem
        extra = {} if group is None else {"process_group": group}
        X = prob_cls(
            train,
            validation=val,
            sample_weight=_weights(train.nnz),
            dtype="float64",
            device="cpu",
            **extra,
        )
    res = ais_impute(
        X,
        validation=val,
        callback=record,
        process_group=group,
        **OPTIONS,
    )
    U, s, V = (t.numpy() for t in res.x)
    return {
        "U": U,
        "s": s,
        "V": V,
        "iterates": blocks,
        "objective": np.asarray(res.history["objective"]),
        "val_rmse": np.asarray(res.history["val_rmse"]),
        "n_iter": res.n_iter,
    }


def _fit(group, random_state=0, lam="auto"):
    train = _entries(1)
    train = train.with_values(train.values + 3.0)  # ratings-like: centering
    model = MatrixCompletion(
        lam,
        n_lambdas=6,
        scale=True,
        postprocess=True,  # "auto" also tries refinements, one process only
        random_state=random_state,
        dtype="float64",
        device="cpu",
        process_group=group,
    ).fit(train)
    return {
        "U": model.U_,
        "s": model.s_,
        "V": model.V_,
        "lam": model.lam_,
        "center": model.center_,
        "offsets": np.concatenate(
            [
                [model.centering_.mean_, model.centering_.scale_],
                *model.centering_.offsets_,
            ]
        ),
        "path_scores": np.asarray(model.path_["scores"] if model.path_ else []),
        "predict": model.predict([0, 5, 69], [1, 2, 44]),
    }


def _solve_local():
    """The plain solve from this process's rows only (``local=True``)."""
    train, val = _entries(1), _entries(2)
    bounds = row_shards(train.rows, 70, dist.get_world_size())
    a, b = bounds[dist.get_rank()]

    def mine(e):
        return e.subset((e.rows >= a) & (e.rows < b))

    problem = DistributedCompletionProblem(
        mine(train),
        bounds=bounds,
        local=True,
        shape=train.shape,
        validation=mine(val),
        dtype="float64",
        device="cpu",
    )
    res = ais_impute(problem, process_group="default", **OPTIONS)
    try:
        DistributedCompletionProblem(train, bounds=bounds, local=True, shape=(70, 45))
    except DataValidationError as exc:
        refused = str(exc)
    return [t.numpy() for t in res.x], refused


def _worker():
    bounds = row_shards(_entries(1).rows, 70, dist.get_world_size())
    return {
        "bounds": bounds,
        "plain": _solve("default"),
        "local": _solve_local(),
        "weighted": _solve("default", weighted=True),
        "fit": _fit("default"),
        "unseeded": _fit("default", random_state=None, lam=2.0),
    }


def _worker_plain():
    bounds = row_shards(_entries(1).rows, 70, dist.get_world_size())
    return {"bounds": bounds, "plain": _solve("default")}


@pytest.fixture(scope="module")
def runs():
    one = {"plain": _solve(None), "weighted": _solve(None, True), "fit": _fit(None)}
    start = fast_start_method()
    return {
        1: one,
        2: run_distributed(_worker, 2, threads=1, start_method=start),
        4: run_distributed(_worker_plain, 4, threads=1, start_method=start),
    }


def _close(a, b, rel=1e-6):
    return np.abs(a - b).max() <= rel * max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize(
    ("world", "case"), [(2, "plain"), (2, "weighted"), (4, "plain")]
)
def test_iterates_equal_one_process(runs, world, case):
    ref = runs[1][case]
    for rank, out in enumerate(runs[world]):
        res = out[case]
        a, b = out["bounds"][rank]
        assert res["n_iter"] == ref["n_iter"]
        assert len(res["iterates"]) == len(ref["iterates"])
        for mine, whole in zip(res["iterates"], ref["iterates"], strict=True):
            assert _close(mine, whole[a:b])
        assert _close(res["objective"], ref["objective"], 1e-9)
        assert _close(res["val_rmse"], ref["val_rmse"], 1e-9)
        model = (res["U"] * res["s"]) @ res["V"].T
        assert _close(model, (ref["U"] * ref["s"]) @ ref["V"].T)


@pytest.mark.parametrize(
    ("world", "case"), [(2, "plain"), (2, "weighted"), (4, "plain")]
)
def test_every_process_holds_bitwise_the_same_solution(runs, world, case):
    first = runs[world][0][case]
    for out in runs[world][1:]:
        for key in ("U", "s", "V", "objective", "val_rmse"):
            assert np.array_equal(out[case][key], first[key]), key


def test_each_process_may_hold_its_rows_only(runs):
    for out in runs[2]:
        (U, s, V), refused = out["local"]
        plain = out["plain"]
        assert np.array_equal(U, plain["U"])
        assert np.array_equal(s, plain["s"]) and np.array_equal(V, plain["V"])
        assert "other rows" in refused
    with pytest.raises(InvalidParameterError, match="bounds"):
        DistributedCompletionProblem(_entries(1), local=True, process_group=None)


def test_estimator_fit_equals_one_process(runs):
    ref = runs[1]["fit"]
    for out in runs[2]:
        res = out["fit"]
        assert res["center"] == ref["center"]
        assert res["lam"] == pytest.approx(ref["lam"], rel=1e-9)
        assert _close(res["path_scores"], ref["path_scores"], 1e-8)
        model = (res["U"] * res["s"]) @ res["V"].T
        assert _close(model, (ref["U"] * ref["s"]) @ ref["V"].T)
        assert _close(res["predict"], ref["predict"])
        assert _close(res["offsets"], ref["offsets"], 1e-9)


@pytest.mark.parametrize("case", ["fit", "unseeded"])
def test_estimator_processes_hold_bitwise_the_same_model(runs, case):
    first, second = (out[case] for out in runs[2])
    for key in ("U", "s", "V", "predict", "path_scores", "offsets"):
        assert np.array_equal(first[key], second[key]), key
    assert first["lam"] == second["lam"]


def test_shards_are_balanced_by_entries(runs):
    for world in (2, 4):
        bounds = runs[world][0]["bounds"]
        counts = np.bincount(_entries(1).rows, minlength=70)
        per = [counts[a:b].sum() for a, b in bounds]
        assert bounds[0][0] == 0 and bounds[-1][1] == 70
        assert max(per) - min(per) <= counts.max() + 1


# -- failures ------------------------------------------------------------------------
def _dies_or_hangs(how):
    """Process 1 leaves at its second iteration; process 0's error message."""

    def leave(state):
        if dist.get_rank() == 1 and state.iteration == 2:
            if how == "dies":
                os._exit(0)
            time.sleep(2)  # past the group's timeout of 1 s, then carries on

    try:
        ais_impute(_entries(1), callback=leave, process_group="default", **OPTIONS)
    except CollectiveError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("how", ["dies", "hangs"])
def test_a_lost_process_is_a_clear_error_not_a_hang(how):
    start = time.perf_counter()
    messages = run_distributed(
        _dies_or_hangs,
        2,
        args=(how,),
        threads=1,
        timeout=1.0,
        start_method=fast_start_method(),
    )
    assert time.perf_counter() - start < 30
    first = messages[0]
    assert first is not None and "process 0 of 2" in first
    assert "died" in first and "timeout" in first


def _refusals():
    out = []
    for call in (
        lambda: ais_impute(
            _entries(1), lam=1.0, exact_svt=True, process_group="default"
        ),
        lambda: ais_impute(
            CompletionProblem(_entries(1)), lam=1.0, process_group="default"
        ),
        lambda: MatrixCompletion(solver="soft_impute", process_group="default").fit(
            _entries(1)
        ),
    ):
        try:
            call()
        except InvalidParameterError as exc:
            out.append(str(exc))
    return out


def _few_validation_rows(group):
    """Validation entries in the first rows only: one process holds none."""
    val = _entries(2)
    val = val.subset(val.rows < 5)
    res = ais_impute(_entries(1), validation=val, process_group=group, **OPTIONS)
    return np.asarray(res.history["val_rmse"])


def test_a_process_without_validation_entries():
    ref = _few_validation_rows(None)
    out = run_distributed(
        _few_validation_rows,
        2,
        args=("default",),
        threads=1,
        start_method=fast_start_method(),
    )
    for scores in out:
        assert _close(scores, ref, 1e-9)


def test_one_process_options_are_refused_on_a_group():
    messages = run_distributed(
        _refusals, 2, threads=1, start_method=fast_start_method()
    )
    for m in messages:
        assert len(m) == 3
        assert "one process only" in m[0]
        assert "DistributedCompletionProblem" in m[1]
        assert "one process only" in m[2]


def test_a_group_without_torch_distributed_is_a_clear_error():
    with pytest.raises(InvalidParameterError, match="init_process_group"):
        ais_impute(_entries(1), lam=1.0, process_group="default")
    with pytest.raises(InvalidParameterError, match="init_process_group"):
        MatrixCompletion(process_group="default").fit(_entries(1))
    with pytest.raises(InvalidParameterError, match="process_group"):
        MatrixCompletion(process_group="everyone").fit(_entries(1))


# -- the pieces, in one process ----------------------------------------------------
def test_sharded_orthonormalize_alone_is_orthonormalize():
    X = torch.randn(
        50, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    comm = Communicator(None)
    for passes in (1, 2):
        Q = sharded_orthonormalize(X, comm, passes)
        assert torch.allclose(Q, orthonormalize(X, passes), atol=1e-12)
    deficient = torch.cat([X[:, :3], X[:, :3]], dim=1)  # Cholesky fails: TSQR
    Q = sharded_orthonormalize(deficient, comm)
    assert torch.allclose(Q.T @ Q, torch.eye(6, dtype=torch.float64), atol=1e-10)


def _tsqr_rows():
    """Each process's rows of a rank-deficient basis (the TSQR fallback)."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 3, generator=g, dtype=torch.float64)
    X = torch.cat([X, X], dim=1)
    bounds = [(0, 25), (25, 40)]
    a, b = bounds[dist.get_rank()]
    return sharded_orthonormalize(X[a:b], Communicator("default")), X


def test_tsqr_fallback_spans_the_columns_orthonormally():
    (Q0, X), (Q1, _) = run_distributed(
        _tsqr_rows, 2, threads=1, start_method=fast_start_method()
    )
    Q = torch.cat([Q0, Q1])
    assert torch.allclose(Q.T @ Q, torch.eye(6, dtype=torch.float64), atol=1e-10)
    assert torch.allclose(Q @ (Q.T @ X), X, atol=1e-10)  # X's columns in the span


def test_row_shards():
    rows = np.repeat(np.arange(6), [10, 1, 1, 1, 1, 10])
    assert row_shards(rows, 6, 2) == [(0, 3), (3, 6)]  # 12 entries each
    assert row_shards(rows, 6, 3) == [(0, 1), (1, 5), (5, 6)]
    assert row_shards(np.array([], dtype=int), 3, 3) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(InvalidParameterError, match="fewer processes"):
        row_shards(rows, 6, 7)
