"""The stochastic and ALS baselines of the all-pairs objective: unbiased
minibatch estimates (exact expectations by enumeration, and the samplers end
to end), decrease of the exact objective, and ALS's exact half-steps against
the objective's gradient and the naive O(mn) objective (DESIGN.md kinds 1-3)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

from embedopt._core import (
    ConvergenceWarning,
    DataValidationError,
    InvalidParameterError,
    NumericalInstabilityError,
)
from embedopt.linalg.points import flatten
from embedopt.nn import EmbeddingTower
from embedopt.similarity import (
    AllPairsObjective,
    als,
    block_loss,
    dense_objective,
    sampled_pairs_loss,
    stochastic,
)
from embedopt.similarity.baselines import _PermutationStream
from embedopt.similarity.solvers import _ALS
from tests.conftest import requires_cuda

from ._common import K, M, N, make, problem, towers

ALL_PAIRS = np.array(list(itertools.product(range(M), range(N))))

ESTIMATE_CONFIGS = list(
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


# -- unbiased estimates ------------------------------------------------------------
@pytest.mark.parametrize("kind,loss,imputed,imputation", ESTIMATE_CONFIGS)
def test_pair_estimate_has_exact_expectation(kind, loss, imputed, imputation):
    # E over one uniform pair (i, j) of its estimate mn t_ij + reg is the mean
    # of the estimates of all mn pairs; it must be L (and the naive dense
    # objective), and so must the gradient of the batch of all pairs.
    obj, _prob, _ref = make(kind, loss, imputed, imputation=imputation)
    x = obj.initial_point()
    mean = np.mean([float(sampled_pairs_loss(obj, x, [i], [j])) for i, j in ALL_PAIRS])
    assert mean == pytest.approx(obj.value(x), rel=1e-12)
    assert mean == pytest.approx(float(dense_objective(obj, x)), rel=1e-12)
    xs = tuple(p.clone().requires_grad_(True) for p in x)
    est = sampled_pairs_loss(obj, xs, ALL_PAIRS[:, 0], ALL_PAIRS[:, 1])
    assert float(est.detach()) == pytest.approx(obj.value(x), rel=1e-13)
    _, g_ref = obj.value_and_grad(x)
    assert _rel(torch.autograd.grad(est, xs), g_ref) < 1e-12


@pytest.mark.parametrize(
    "kind,loss,imputed",
    [("table", "square", "all"), ("mlp", "logistic", "unobserved")],
)
def test_block_estimate_has_exact_expectation(kind, loss, imputed):
    # Every (3 rows) x (2 columns) subset is equally likely: the mean of their
    # estimates is the expectation, and must be L.
    obj, _, _ = make(kind, loss, imputed)
    x = obj.initial_point()
    blocks = list(
        itertools.product(
            itertools.combinations(range(M), 3), itertools.combinations(range(N), 2)
        )
    )
    assert len(blocks) == 350
    mean = np.mean([float(block_loss(obj, x, list(r), list(c))) for r, c in blocks])
    assert mean == pytest.approx(obj.value(x), rel=1e-12)
    whole = block_loss(obj, x, np.arange(M), np.arange(N))
    assert float(whole) == pytest.approx(obj.value(x), rel=1e-13)


def test_permutation_stream_sweeps_every_row_before_repeating():
    g = torch.Generator().manual_seed(0)
    stream = _PermutationStream(10, 3, g, "cpu")
    draws = [stream() for _ in range(6)]
    assert all(d.numel() == 3 for d in draws)
    for sweep in (draws[:3], draws[3:]):  # 3 disjoint blocks of 3 per permutation
        assert torch.cat(sweep).unique().numel() == 9
    assert not torch.equal(torch.cat(draws[:3]), torch.cat(draws[3:]))


def _estimate_variance(obj, x, sampling, shape):
    """Variance of one step's estimate, by enumeration (lam = 0).

    Pairs: one uniform pair, the batch averages ``shape`` independent ones.
    Blocks: one uniform (rows x cols) block; the blocks of one sweep are
    disjoint, i.e. negatively correlated, so this bounds the variance of
    their mean from above.
    """
    if sampling == "pairs":
        t = [float(sampled_pairs_loss(obj, x, [i], [j])) for i, j in ALL_PAIRS]
        return float(np.var(t)) / shape
    blocks = itertools.product(
        itertools.combinations(range(M), shape[0]),
        itertools.combinations(range(N), shape[1]),
    )
    return float(
        np.var([float(block_loss(obj, x, list(r), list(c))) for r, c in blocks])
    )


@pytest.mark.parametrize("sampling", ["pairs", "blocks"])
def test_stochastic_minibatch_losses_are_unbiased(sampling):
    # SG with a step that underflows to nothing keeps x0: the epoch's mean
    # minibatch loss is then a mean of draws of the estimate at x0 by the
    # solver's own sampler, and must match L(x0).
    obj, _, _ = make("table", "logistic", "unobserved", lam=0.0)
    x0 = obj.initial_point()
    steps, batch, shape = 600, 16, (3, 3)
    res = stochastic(
        obj,
        x0,
        optimizer="sgd",
        learning_rate=1e-300,
        sampling=sampling,
        batch_size=batch,
        block_shape=shape,
        pairs_per_epoch=steps * (batch if sampling == "pairs" else 9),
        max_iter=1,
        random_state=0,
    )
    assert res.info["steps_per_epoch"] == steps
    f0 = obj.value(x0)
    assert res.history["objective"][0] == f0  # x did not move
    var = _estimate_variance(obj, x0, sampling, batch if sampling == "pairs" else shape)
    se = np.sqrt(var / steps)
    assert abs(res.history["minibatch_objective"][0] - f0) < 4 * se
    assert 4 * se < 0.1 * abs(f0)  # the test can tell a wrong scaling apart


@pytest.mark.parametrize(
    "optimizer,sampling,lr",
    [("adam", "pairs", 0.05), ("adam", "blocks", 0.05), ("sgd", "pairs", 2e-3)],
)
def test_stochastic_decreases_the_exact_objective(optimizer, sampling, lr):
    obj, _, _ = make("mlp", "square", "unobserved")
    x0 = obj.initial_point()
    res = stochastic(
        obj,
        x0,
        optimizer=optimizer,
        sampling=sampling,
        learning_rate=lr,
        batch_size=8,
        block_shape=(3, 3),
        pairs_per_epoch=10 * M * N,
        max_iter=5,
        random_state=0,
    )
    h = res.history
    assert res.stop_reason == "max_iter" and res.n_iter == 5
    assert h["objective"][-1] < 0.9 * res.info["initial_objective"]
    assert h["objective"][-1] == pytest.approx(obj.value(res.x), rel=1e-14)
    assert set(h) >= {"iteration", "time", "minibatch_objective", "steps", "passes"}
    assert all(len(v) == 5 for v in h.values())
    per_step = 8 if sampling == "pairs" else 9
    np.testing.assert_allclose(h["passes"], h["steps"] * per_step / (M * N))
    # The towers are left as they were: the solver works on its own point.
    assert all(torch.equal(a, b) for a, b in zip(obj.initial_point(), x0, strict=True))


@pytest.mark.bitwise_rerun
def test_stochastic_same_seed_same_result_and_callback_stops():
    obj, _, _ = make("table")
    x0 = obj.initial_point()
    kw = dict(sampling="blocks", batch_size=4, max_iter=3, random_state=5)
    a, b = stochastic(obj, x0, **kw), stochastic(obj, x0, **kw)
    assert all(torch.equal(p, q) for p, q in zip(a.x, b.x, strict=True))
    c = stochastic(obj, x0, **{**kw, "random_state": 6})
    assert not all(torch.equal(p, q) for p, q in zip(a.x, c.x, strict=True))
    seen = []
    res = stochastic(
        obj,
        x0,
        max_iter=5,
        callback=lambda s: seen.append(s.objective) or len(seen) == 2,
        evaluate=lambda x: {"norm": float(flatten(x).norm())},
        random_state=0,
    )
    assert res.stop_reason == "callback" and res.n_iter == 2
    assert len(res.history["norm"]) == 2


def test_stochastic_tolerance_stops_and_warns():
    obj, _, _ = make("table")
    kw = dict(learning_rate=0.05, batch_size=8, pairs_per_epoch=350, random_state=0)
    res = stochastic(obj, obj.initial_point(), tol=0.3, max_iter=50, **kw)
    assert res.stop_reason == "tol" and res.n_iter < 50
    g = res.history["grad_norm"]
    assert g[-1] <= 0.3 * res.info["initial_grad_norm"] < g[-2]
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        stochastic(obj, obj.initial_point(), tol=1e-30, max_iter=2, **kw)


def test_stochastic_nonfinite_objective_names_the_learning_rate():
    obj, _, _ = make("table")
    with pytest.raises(NumericalInstabilityError, match="learning rate"):
        stochastic(
            obj,
            obj.initial_point(),
            optimizer="sgd",
            learning_rate=1e6,
            max_iter=3,
            random_state=0,
        )


def test_stochastic_bad_parameters():
    obj, _, _ = make("table")
    x0 = obj.initial_point()
    bad = [
        dict(optimizer="rmsprop"),
        dict(sampling="rows"),
        dict(learning_rate=0.0),
        dict(batch_size=0),
        dict(sampling="blocks", block_shape=(M + 1, 2)),
        dict(sampling="blocks", block_shape=(2,)),
        dict(block_shape=[2, 2]),
        dict(optimizer_options={"lr": 1.0}),
        dict(optimizer_options={"no_such_option": 1.0}),
        dict(pairs_per_epoch=0),
        dict(tol=-1.0),
    ]
    for kwargs in bad:
        with pytest.raises(InvalidParameterError):
            stochastic(obj, x0, **kwargs)
    with pytest.raises(InvalidParameterError, match="parameter tensors"):
        stochastic(obj, x0[:1])
    with pytest.raises(InvalidParameterError, match="objective"):
        stochastic("not an objective", x0)
    with pytest.raises(DataValidationError, match="users"):
        sampled_pairs_loss(obj, x0, [M], [0])
    with pytest.raises(DataValidationError, match="same length"):
        sampled_pairs_loss(obj, x0, [0, 1], [0])
    with pytest.raises(DataValidationError, match="cols"):
        block_loss(obj, x0, [0], [0.5])


# -- ALS ---------------------------------------------------------------------------
ALS_CONFIGS = list(
    itertools.product(["unobserved", "all"], ["factors", 0.3], [0.1, 0.0])
)


def _table_problem(imputed="unobserved", imputation="factors", lam=0.1, omega=0.7):
    return make("table", "square", imputed, omega=omega, lam=lam, imputation=imputation)


@pytest.mark.parametrize("imputed,imputation,lam", ALS_CONFIGS)
def test_als_half_steps_solve_their_block_exactly(imputed, imputation, lam):
    obj, _prob, _ref = _table_problem(imputed, imputation, lam)
    solver = _ALS(obj, "ALS")
    x = list(obj.initial_point())
    f_prev, g0 = obj.value_and_grad(tuple(x))
    scale = float(flatten(g0).abs().max())
    for s in (0, 1, 0, 1):
        solver.half_step(x, s, None)
        f, g = obj.value_and_grad(tuple(x))
        # The table just solved has zero gradient: ALS's normal equations are
        # the stationarity conditions of the objective...
        assert float(g[s].abs().max()) < 1e-12 * scale
        assert f <= f_prev + 1e-13 * abs(f_prev)
        f_prev = f
    # ... and of the naive dense objective, independently of its gradient code.
    xs = [p.clone().requires_grad_(True) for p in x]
    g_naive = torch.autograd.grad(dense_objective(obj, xs), xs)
    assert float(g_naive[1].abs().max()) < 1e-12 * scale


def test_als_converges_to_a_stationary_point():
    obj, _, _ = _table_problem("unobserved", "factors", lam=0.1)
    x0 = obj.initial_point()
    res = als(obj, x0, max_iter=500, tol=1e-9, random_state=0)
    assert res.converged
    h = res.history
    assert np.all(np.diff(h["objective"]) <= 1e-13 * abs(h["objective"][0]))
    assert h["objective"][0] < res.info["initial_objective"]
    _, g0 = obj.value_and_grad(x0)
    _, g = obj.value_and_grad(res.x)
    assert res.info["initial_grad_norm"] == pytest.approx(float(flatten(g0).norm()))
    assert h["grad_norm"][-1] == pytest.approx(float(flatten(g).norm()))
    assert float(flatten(g).norm()) <= 1e-9 * float(flatten(g0).norm())


@pytest.mark.parametrize("chunk_size", [1, 3])
def test_als_chunks_do_not_change_the_result(chunk_size, monkeypatch):
    obj, _, _ = _table_problem("all", 0.3)
    x0 = obj.initial_point()
    whole = als(obj, x0, max_iter=3, tol=0)
    # Also split the item Gramian products into column blocks.
    monkeypatch.setattr("embedopt.linalg.normal_equations._CHUNK_ELEMENTS", 2 * K * K)
    parts = als(obj, x0, max_iter=3, tol=0, chunk_size=chunk_size)
    assert _rel(parts.x, whole.x) < 1e-12


def test_als_is_ials_for_implicit_feedback():
    # Hu et al.'s iALS, dense: confidence 1 + alpha on observed pairs and 1
    # elsewhere, preference 1 / 0, p_u = (Q^T C_u Q + lam I)^{-1} Q^T C_u p(u).
    alpha, lam_ials = 4.0, 0.3
    prob = problem(0)
    r, c, _ = prob["pairs"]
    omega = 1.0 / (1.0 + alpha)
    ut, it = towers("table")
    obj = AllPairsObjective(
        ut, it, (r, c), omega=omega, lam=omega * lam_ials, imputation=0.0
    )
    x = list(obj.initial_point())
    _ALS(obj, "ALS").half_step(x, 0, None)
    Q = x[1]
    pref = torch.as_tensor(prob["mask"], dtype=torch.float64)
    conf = 1.0 + alpha * pref
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


def test_als_singular_systems_get_a_minimizer():
    # lam = 0 and omega = 0: users with fewer than k observed items have
    # singular systems; the least-squares solution still zeroes their gradient.
    obj, _, _ = _table_problem("unobserved", 0.0, lam=0.0, omega=0.0)
    counts = np.bincount(obj.pattern.row_indices().numpy(), minlength=M)
    assert (counts < K).any()
    x = list(obj.initial_point())
    _ALS(obj, "ALS").half_step(x, 0, None)
    _, g = obj.value_and_grad(tuple(x))
    assert torch.isfinite(x[0]).all()
    assert float(g[0].abs().max()) < 1e-10


def test_als_accepts_nn_embedding_float32_and_unused_rows():
    g = torch.Generator().manual_seed(0)
    ut = torch.nn.Embedding(M + 2, K, dtype=torch.float32)
    it = torch.nn.Embedding(N, K, dtype=torch.float32)
    with torch.no_grad():
        for t in (ut, it):
            t.weight.copy_(0.5 * torch.randn(t.weight.shape, generator=g))
    prob = problem(0)
    obj = AllPairsObjective(
        ut,
        it,
        prob["pairs"],
        omega=0.5,
        lam=0.1,
        user_inputs=torch.arange(M) + 2,  # table rows 0 and 1 belong to no user
        item_inputs=torch.arange(N),
    )
    res = als(obj, obj.initial_point(), max_iter=5, tol=0)
    assert all(p.dtype == torch.float32 for p in res.x)
    assert torch.equal(res.x[0][:2], torch.zeros(2, K))  # argmin of lam/2 ||w||^2
    f = res.history["objective"]
    assert f[-1] < res.info["initial_objective"]
    assert np.all(np.diff(f) <= 1e-5 * abs(f[0]))  # float32 storage rounding


def test_als_refuses_what_it_cannot_solve():
    obj, _, _ = make("mlp", "square")
    with pytest.raises(InvalidParameterError, match="embedding tables"):
        als(obj, obj.initial_point())
    obj, _, _ = make("table", "logistic")
    with pytest.raises(InvalidParameterError, match="square loss"):
        als(obj, obj.initial_point())
    g = torch.Generator().manual_seed(0)
    prob = problem(0)
    normed = EmbeddingTower(M, K, normalize=True, generator=g)
    obj = AllPairsObjective(normed, EmbeddingTower(N, K, generator=g), prob["pairs"])
    with pytest.raises(InvalidParameterError, match="normalize=True"):
        als(obj, obj.initial_point())
    shared = AllPairsObjective(
        EmbeddingTower(M, K, generator=g),
        EmbeddingTower(N, K, generator=g),
        prob["pairs"],
        user_inputs=torch.zeros(M, dtype=torch.int64),  # one row for every user
    )
    with pytest.raises(DataValidationError, match="own one row"):
        als(shared, shared.initial_point())
    obj, _, _ = _table_problem()
    with pytest.raises(InvalidParameterError, match="max_iter"):
        als(obj, obj.initial_point(), max_iter=0)
    with pytest.raises(InvalidParameterError, match="chunk_size"):
        als(obj, obj.initial_point(), chunk_size=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        als(obj, obj.initial_point(), max_iter=2, tol=0)  # a budget: no warning


@pytest.mark.gpu
@requires_cuda
def test_baselines_on_cuda_match_cpu():
    prob = problem(0)

    def objective(device):
        g = torch.Generator().manual_seed(0)
        ut, it = (
            EmbeddingTower(n, K, std=0.5, generator=g, dtype=torch.float64).to(device)
            for n in (M, N)
        )
        return AllPairsObjective(
            ut, it, prob["pairs"], omega=0.7, lam=0.1, imputation=prob["tilde"]
        )

    cpu, gpu = objective("cpu"), objective("cuda")
    a = als(cpu, cpu.initial_point(), max_iter=3, tol=0)
    b = als(gpu, gpu.initial_point(), max_iter=3, tol=0)
    assert b.x[0].device.type == "cuda"
    assert _rel(tuple(p.cpu() for p in b.x), a.x) < 1e-10
    for sampling in ("pairs", "blocks"):
        res = stochastic(
            gpu,
            gpu.initial_point(),
            sampling=sampling,
            batch_size=8,
            pairs_per_epoch=10 * M * N,
            max_iter=2,
            random_state=0,
        )
        assert res.x[0].device.type == "cuda"
        assert res.history["objective"][-1] < res.info["initial_objective"]


@pytest.mark.parametrize("imputed,imputation,lam", ALS_CONFIGS)
def test_als_cg_half_steps_never_increase_the_objective(imputed, imputation, lam):
    obj, _, _ = _table_problem(imputed, imputation, lam)
    res = als(obj, obj.initial_point(), max_iter=8, tol=0, cg_steps=1)
    f = np.concatenate([[res.info["initial_objective"]], res.history["objective"]])
    assert np.all(np.diff(f) <= 1e-13 * abs(f[0]))
    # One CG step per row is not the exact half-step: these are other iterates.
    exact = als(obj, obj.initial_point(), max_iter=8, tol=0)
    assert _rel(res.x, exact.x) > 1e-6


def test_als_with_enough_cg_steps_is_exact_als():
    obj, _, _ = _table_problem("unobserved", "factors", lam=0.1)
    x0 = obj.initial_point()
    exact = als(obj, x0, max_iter=3, tol=0)
    cg = als(obj, x0, max_iter=3, tol=0, cg_steps=6 * K)
    assert _rel(cg.x, exact.x) < 1e-10


def test_als_can_stop_on_the_relative_objective_decrease():
    obj, _, _ = _table_problem("unobserved", "factors", lam=0.1)
    res = als(obj, obj.initial_point(), max_iter=500, tol=1e-6, stop_on="objective")
    assert res.converged and res.n_iter < 500
    f = res.history["objective"]
    assert f[-2] - f[-1] <= 1e-6 * f[-2] and np.all(f[:-2] - f[1:-1] > 1e-6 * f[:-2])


def test_gauss_newton_can_stop_on_the_relative_objective_decrease():
    from embedopt.similarity import gauss_newton

    obj, _, _ = _table_problem("unobserved", "factors", lam=0.1)
    res = gauss_newton(
        obj, obj.initial_point(), max_iter=200, tol=1e-4, stop_on="objective"
    )
    assert res.converged and res.n_iter < 200
    f = res.history["objective"]
    # stops at the first iteration whose relative decrease is below tol
    assert f[-2] - f[-1] <= 1e-4 * f[-2] and np.all(f[:-2] - f[1:-1] > 1e-4 * f[:-2])
    with pytest.raises(InvalidParameterError, match="stop_on"):
        gauss_newton(obj, obj.initial_point(), stop_on="loss")
