"""The compiled inner steps (numba) against autograd and against the torch loop.

The compiled steps run on the mini-batches the solver draws with its own
generator, so a seeded run must give the torch loop's iterates to rounding:
every solver that uses them (SVRG-SBB, SVRG, Algorithm 2, SGD), every loss,
triplets and quadruplets, weighted comparisons and the random output.
"""

import numpy as np
import pytest
import torch

from embedopt.data import make_planted_embedding
from embedopt.ordinal import (
    LOSSES,
    OrdinalProblem,
    STELoss,
    get_loss,
    sgd,
    svrg,
    svrg_sbb,
    svrg_sbb_pl,
)
from embedopt.ordinal._kernels import COMPILED_ENV, compiled_available

pytestmark = [
    pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning"),
    pytest.mark.skipif(not compiled_available(), reason="numba is not installed"),
]

LOSS_NAMES = list(LOSSES)


@pytest.fixture(scope="module")
def small():
    return make_planted_embedding(30, 2, n_train=2000, n_test=500, random_state=0)


def _quadruplets(comps, seed=0):
    """Random quadruplets ``(i, j, l, k)`` oriented by the planted triplets' rows."""
    t = np.asarray(comps.indices)
    g = np.random.default_rng(seed)
    other = g.integers(0, t.max() + 1, len(t))
    other = np.where(other == t[:, 2], (other + 1) % (t.max() + 1), other)
    return np.c_[t[:, 0], t[:, 1], other, t[:, 2]]


def _both(monkeypatch, solver, *args, **kwargs):
    """The run with the compiled steps, and the same run with the torch loop."""
    monkeypatch.delenv(COMPILED_ENV, raising=False)
    fast = solver(*args, **kwargs)
    monkeypatch.setenv(COMPILED_ENV, "0")
    slow = solver(*args, **kwargs)
    monkeypatch.delenv(COMPILED_ENV)
    return fast, slow


def _run(solver, data, loss, **kw):
    opts = dict(loss=loss, batch_size=10, max_iter=3, tol=0, random_state=3)
    opts.update(device="cpu", dtype="float64")
    opts.update(kw)
    return solver(data, 2, **opts)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("kind", ["triplets", "quadruplets"])
def test_svrg_sbb_iterates_match_the_torch_loop(loss, kind, small, monkeypatch):
    data = small.train if kind == "triplets" else _quadruplets(small.train)
    fast, slow = _both(monkeypatch, _run, svrg_sbb, data, loss)
    assert fast.history["step_size"].tolist() == pytest.approx(
        slow.history["step_size"].tolist(), rel=1e-9
    )
    # the hinges (GNMDS, SOE) could flip an active margin on a rounding
    # difference; on these seeds none does
    torch.testing.assert_close(fast.x, slow.x, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("solver", "kw"),
    [
        (svrg, {}),
        (svrg_sbb, {"output": "random"}),
        (svrg_sbb_pl, {"module_epochs": 2, "max_iter": 4}),
        (svrg_sbb, {"update_frequency": 500, "epsilon": 0.0}),
        (sgd, {}),
    ],
    ids=["svrg", "random_output", "pl_modules", "sbb0_quarter_epochs", "sgd"],
)
def test_every_stochastic_solver_matches_the_torch_loop(solver, kw, small, monkeypatch):
    fast, slow = _both(monkeypatch, _run, solver, small.train, "ste", **kw)
    torch.testing.assert_close(fast.x, slow.x, rtol=0, atol=1e-9)


@pytest.mark.parametrize("loss", ["ste", "ckl"])
def test_weighted_comparisons_match_the_torch_loop(loss, small, monkeypatch):
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(small.train))
    fast, slow = _both(monkeypatch, _run, svrg_sbb, small.train, loss, sample_weight=w)
    torch.testing.assert_close(fast.x, slow.x, rtol=0, atol=1e-9)


@pytest.mark.parametrize("loss", ["ste", "tste", "soe"])
def test_float32_iterates_match_the_torch_loop_to_rounding(loss, small, monkeypatch):
    fast, slow = _both(
        monkeypatch, _run, svrg_sbb, small.train, loss, dtype="float32", max_iter=2
    )
    assert fast.x.dtype == torch.float32
    torch.testing.assert_close(fast.x, slow.x, rtol=1e-4, atol=1e-5)


def _one_step_reference(problem, x, snap, drift, batch, t, w):
    """One inner step by autograd on the loss values (the naive computation)."""
    out = x.clone()
    for point, weight in ((x - t * drift, w[0]), (snap, w[1])):
        z = point.clone().requires_grad_(True)
        q = problem.quadruplets[batch]
        e = z[q[:, 0::2]] - z[q[:, 1::2]]
        d = (e * e).sum(-1)
        value = problem.loss.value(d[:, 0], d[:, 1])
        if problem.sample_weight is not None:
            value = value * problem.sample_weight[batch]
        (grad,) = torch.autograd.grad(value.sum(), z)
        out += weight * grad
    return out


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("weighted", [False, True])
def test_one_compiled_step_is_the_autograd_step(loss, weighted, small):
    g = np.random.default_rng(0)
    w = g.uniform(0.5, 2.0, len(small.train)) if weighted else None
    problem = OrdinalProblem(
        small.train, get_loss(loss, 2), dtype="float64", sample_weight=w
    )
    x = torch.as_tensor(g.normal(size=(30, 2)))
    snap = x + 0.05 * torch.as_tensor(g.normal(size=(30, 2)))
    drift = 1e-3 * torch.as_tensor(g.normal(size=(30, 2)))
    batch = torch.as_tensor(g.integers(0, problem.n_samples, (1, 7)))
    w_steps = torch.tensor([-0.3, 0.2], dtype=torch.float64)
    expect = _one_step_reference(problem, x, snap, drift, batch[0], 4, w_steps)
    got = x.clone()
    problem.step_kernel(got)(got, batch, w_steps, snapshot=snap, drift=drift, t0=4)
    torch.testing.assert_close(got, expect, rtol=1e-12, atol=1e-12)
    touched = torch.zeros(30, dtype=torch.bool)
    touched[problem.quadruplets[batch[0]].reshape(-1)] = True
    assert torch.equal(got[~touched], x[~touched])  # O(b p): other rows untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_step_without_snapshot_never_reads_the_snapshot_scratch(dtype, small):
    # SGD has no snapshot: the scratch rows of the snapshot's differences are
    # never written, and were once read as 0 * E[1]. Right after a cold
    # compile the allocation could hold NaN (0 * NaN = NaN): SGD diverged at
    # its first epoch in about one fresh process of three.
    from embedopt.ordinal._numba_steps import _batch_rows

    quads = np.asarray(small.train.indices)[:, [0, 1, 0, 2]].astype(np.int64)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 2)).astype(dtype)
    none = np.empty((0, 2), dtype)
    batches = rng.integers(0, len(quads), (1, 5))
    E = np.full((2, 2, 2), np.nan, dtype)  # what an uninitialized buffer may hold
    G = np.zeros((5, 2, 2), dtype)
    tv = np.zeros(1, dtype)
    w = np.array([1.0, 0.0])
    loss = (2, 0.0, float(np.finfo(dtype).eps))  # STE
    _batch_rows(x, none, none, quads, none[:0, 0], batches, 0, tv, w, loss, E, G)
    assert np.isfinite(G).all() and np.abs(G).sum() > 0


def test_the_torch_loop_stays_where_the_kernel_cannot_run(small, monkeypatch):
    x = torch.zeros(30, 2)

    class Custom(STELoss):
        name = "custom"

    assert OrdinalProblem(small.train, Custom()).step_kernel(x) is None
    assert OrdinalProblem(small.train, "tste").step_kernel(x) is None  # no alpha
    assert OrdinalProblem(small.train, "ste").step_kernel(x.half()) is None
    monkeypatch.setenv(COMPILED_ENV, "0")
    assert OrdinalProblem(small.train, "ste").step_kernel(x) is None
