"""Ordinal solvers: planted structure, convex reference, lazy updates, budget."""

import warnings

import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.data import make_all_triplets, make_planted_embedding
from embedopt.metrics import procrustes_distance, triplet_error
from embedopt.ordinal import (
    OrdinalProblem,
    batch_gd,
    embedding_from_gram,
    projected_gd,
    sgd,
    svrg,
    svrg_sbb,
    svrg_sbb_pl,
)
from tests.conftest import requires_cuda

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


@pytest.fixture(scope="module")
def small():
    return make_planted_embedding(30, 2, n_train=2000, n_test=1000, random_state=0)


@pytest.mark.parametrize(
    ("loss", "max_error", "max_distance"),
    [
        ("ste", 0.03, 0.02),
        ("gnmds", 0.03, 0.02),
        ("soe", 0.03, 0.02),
        # t-STE's heavy tails (alpha = 1 in 2-d) tolerate violated triplets
        # far away, so its optimum fits the planted points less tightly.
        ("tste", 0.08, 0.06),
    ],
)
def test_planted_embedding_recovered_from_noiseless_triplets(
    loss, max_error, max_distance
):
    rng = np.random.default_rng(0)
    P = rng.normal(size=(25, 2))
    comps = make_all_triplets(P)  # 6,900 noiseless triplets
    res = svrg_sbb(comps, 2, loss=loss, max_iter=30, random_state=0, device="cpu")
    X = res.x.numpy()
    assert triplet_error(X, comps) < max_error
    assert procrustes_distance(X, P) < max_distance


@pytest.mark.parametrize(
    "solver", [svrg_sbb, svrg_sbb_pl, svrg, sgd, batch_gd, projected_gd]
)
def test_every_solver_learns_and_records_history(solver, small):
    res = solver(
        small.train, 2, max_iter=15, validation=small.test, random_state=0, device="cpu"
    )
    h = res.history
    assert res.x.shape == (30, 2) and torch.isfinite(res.x).all()
    assert h["val_error"][-1] < 0.15, solver.__name__
    assert h["objective"][-1] < h["objective"][0]
    n = len(h["iteration"])
    assert all(len(v) == n for v in h.values())
    # one budget: |Q| + 2m gradient calls per epoch (m = |Q|); batch GD's
    # safeguard spends one more call for each rejected step.
    steps = np.diff(h["passes"])
    assert np.median(steps) == pytest.approx(3.0, abs=0.01) and steps.min() >= 2.99


def test_convex_baseline_reaches_the_same_triplet_error():
    # The convex problem is over G (rank up to n): compare the comparisons
    # predicted by G's own distances with those of the 2-d non-convex fit. Both
    # must fit the training triplets equally well; on new questions the
    # unconstrained-rank G generalizes worse (the paper's cvx rows too), so the
    # held-out check is a looser sanity bound.
    prob = make_planted_embedding(15, 2, n_train=800, n_test=400, random_state=1)
    cvx = projected_gd(prob.train, 2, loss="ste", max_iter=150, random_state=0)
    ncvx = svrg_sbb(prob.train, 2, loss="ste", max_iter=40, random_state=0)
    G = cvx.info["gram"]
    E_cvx = embedding_from_gram(G, 15)
    e_cvx, e_ncvx = (triplet_error(E, prob.train) for E in (E_cvx, ncvx.x))
    assert e_cvx < 0.05 and e_ncvx < 0.05
    assert abs(e_cvx - e_ncvx) < 0.02
    assert triplet_error(E_cvx, prob.test) < 0.1
    assert triplet_error(ncvx.x, prob.test) < 0.1
    assert torch.allclose(G.sum(0), torch.zeros(15), atol=1e-3)  # centered
    assert torch.linalg.eigvalsh(G).min() > -1e-4  # PSD


def test_lazy_svrg_matches_the_dense_update_on_ordinal_losses(small):
    # Smooth losses only: with a hinge, rounding differences of 1e-16 between
    # the two (equivalent) updates can flip whether a margin is active, after
    # which the paths legitimately differ.
    for loss in ("ste", "tste", "ckl"):
        kw = dict(
            loss=loss,
            batch_size=8,
            update_frequency=400,
            max_iter=3,
            tol=0,
            random_state=5,
            dtype="float64",
            device="cpu",
        )
        lazy = svrg_sbb(small.train, 2, lazy=True, **kw)
        dense = svrg_sbb(small.train, 2, lazy=False, **kw)
        torch.testing.assert_close(lazy.x, dense.x, rtol=0, atol=1e-10)


def test_sbb0_and_step_bounds(small):
    res = svrg_sbb(
        small.train,
        2,
        epsilon=0.05,
        relative_epsilon=False,
        max_iter=8,
        tol=0,
        random_state=0,
    )
    assert np.all(res.history["step_size"][1:] <= 1 / 0.05 + 1e-9)  # eq. (15)
    # relative epsilon: in units of 3 / n_objects for triplets
    rel = svrg_sbb(small.train, 2, epsilon=0.5, max_iter=8, tol=0, random_state=0)
    assert rel.info["epsilon"] == pytest.approx(0.5 * 3 / 30)
    assert np.all(rel.history["step_size"][1:] <= 30 / (3 * 0.5) + 1e-9)
    res0 = svrg_sbb(small.train, 2, epsilon=0.0, max_iter=5, tol=0, random_state=0)
    assert np.isfinite(res0.history["objective"]).all()


def test_random_output_and_pl_modules(small):
    res = svrg_sbb(small.train, 2, output="random", max_iter=4, tol=0, random_state=0)
    assert triplet_error(res.x, small.test) < 0.2
    pl = svrg_sbb_pl(small.train, 2, module_epochs=2, max_iter=6, tol=0, random_state=0)
    assert pl.n_iter == 6 and triplet_error(pl.x, small.test) < 0.2


@pytest.mark.bitwise_rerun
def test_same_seed_same_result_and_tol_stops(small):
    a = svrg_sbb(small.train, 2, max_iter=3, random_state=1)
    b = svrg_sbb(small.train, 2, max_iter=3, random_state=1)
    torch.testing.assert_close(a.x, b.x, rtol=0, atol=0)
    res = svrg_sbb(small.train, 2, max_iter=200, tol=1e-2, random_state=0)
    assert res.stop_reason == "tol" and res.n_iter < 200


def test_inner_step_touches_only_the_batch_rows(small, monkeypatch):
    # O(b p) per inner step: every row_gradients call sees 4 b rows, whatever n
    # (the torch loop; tests/ordinal/test_compiled.py checks the compiled one).
    monkeypatch.setenv("EMBEDOPT_COMPILED", "0")
    prob = OrdinalProblem(small.train, "ste", dtype="float64")
    seen = []
    real = prob.row_gradients

    def spy(Z, batch, weights):
        seen.append(Z.shape)
        return real(Z, batch, weights)

    prob.row_gradients = spy
    from embedopt.optim import svrg as generic_svrg

    generic_svrg(
        prob,
        torch.zeros(30, 2, dtype=torch.float64) + 0.1,
        batch_size=5,
        max_iter=1,
        learning_rate=1.0,
    )
    assert seen and all(s == (20, 2, 2) for s in seen)


def test_cuda_request_without_cuda_is_an_error(small):
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        svrg_sbb(small.train, 2, device="cuda", max_iter=1)


@pytest.mark.gpu
@requires_cuda
def test_gpu_matches_cpu_closely():
    prob = make_planted_embedding(50, 3, n_train=3000, n_test=1000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = svrg_sbb(
            prob.train,
            3,
            max_iter=10,
            random_state=0,
            device="cpu",
            dtype="float64",
            learning_rate=5.0,
        )
        gpu = svrg_sbb(
            prob.train,
            3,
            max_iter=10,
            random_state=0,
            device="cuda",
            dtype="float64",
            learning_rate=5.0,
        )
    assert gpu.x.device.type == "cuda"
    e_cpu, e_gpu = (
        triplet_error(cpu.x, prob.test),
        triplet_error(gpu.x.cpu(), prob.test),
    )
    assert e_gpu < 0.15 and abs(e_cpu - e_gpu) < 0.05


@pytest.mark.gpu
@requires_cuda
def test_gpu_full_gradient_matches_cpu():
    prob = make_planted_embedding(200, 4, n_train=20000, n_test=10, random_state=0)
    X = torch.randn(200, 4, dtype=torch.float64)
    for loss in ("ste", "tste", "gnmds", "ckl", "soe"):
        a = OrdinalProblem(
            prob.train,
            loss
            if loss != "tste"
            else __import__("embedopt.ordinal", fromlist=["get_loss"]).get_loss(
                "tste", 4
            ),
            dtype="float64",
            device="cpu",
        )
        b = OrdinalProblem(prob.train, a.loss, dtype="float64", device="cuda")
        fa, ga = a.value_and_grad(X)
        fb, gb = b.value_and_grad(X.cuda())
        assert fa == pytest.approx(fb, rel=1e-10)
        torch.testing.assert_close(ga, gb.cpu(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "solver, bad",
    [
        (svrg_sbb, {"batch_size": 0}),
        (sgd, {"learning_rate_decay": -1.0}),
        (batch_gd, {"tol": -1.0}),
    ],
)
def test_solver_parameters_are_checked_before_the_data(solver, bad):
    # Out-of-range comparisons too: the parameter error must come first,
    # before the comparisons are validated and moved to the device.
    bad_data = np.array([[0, 1, 99]])
    with pytest.raises(InvalidParameterError, match=next(iter(bad))):
        solver(bad_data, 2, n_objects=3, **bad)


def test_svrg_is_svrg_sbb_with_a_fixed_step():
    from embedopt._core import InvalidParameterError
    from embedopt.data import make_planted_embedding
    from embedopt.ordinal import svrg, svrg_sbb

    prob = make_planted_embedding(15, 2, n_train=300, n_test=5, random_state=0)
    kw = dict(max_iter=3, random_state=0, dtype="float64", learning_rate=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = svrg(prob.train, 2, **kw)
        b = svrg_sbb(
            prob.train,
            2,
            step_size="constant",
            epsilon=0.0,
            relative_epsilon=False,
            **kw,
        )
    np.testing.assert_array_equal(a.x.numpy(), b.x.numpy())
    with pytest.raises(InvalidParameterError, match="no 'epsilon' parameter"):
        svrg(prob.train, 2, epsilon=0.1)


def test_lbfgs_learns_and_records_history_per_iteration(small):
    from embedopt.ordinal import lbfgs

    res = lbfgs(small.train, 2, validation=small.test, random_state=0, device="cpu")
    h = res.history
    assert res.x.dtype == torch.float64  # SciPy's precision by default
    assert res.stop_reason == "tol" and h["val_error"][-1] < 0.05
    assert set(h) == {"iteration", "time", "objective", "grad_norm", "val_error"}
    assert len({len(v) for v in h.values()}) == 1
    # the default rule: the last change is at most tol times the first value
    f = h["objective"]
    assert abs(f[-1] - f[-2]) <= 1e-5 * f[0] and f[-1] < f[0]


def test_auto_picks_lbfgs_for_small_and_svrg_sbb_for_large_problems(small, monkeypatch):
    from embedopt.ordinal import OrdinalEmbedding, resolve_solver
    from embedopt.ordinal import solvers as mod

    limit = mod.AUTO_LBFGS_MAX_COMPARISONS
    assert resolve_solver("auto", limit) == "lbfgs"
    assert resolve_solver("auto", limit + 1) == "svrg_sbb"
    assert resolve_solver("SVRG-SBB", 10) == "svrg_sbb"
    m = OrdinalEmbedding(2, random_state=0).fit(small.train)
    assert m.solver_ == "lbfgs" and m.embedding_tensor_.dtype == torch.float64
    monkeypatch.setattr(mod, "AUTO_LBFGS_MAX_COMPARISONS", 100)
    m = OrdinalEmbedding(2, max_iter=20, random_state=0).fit(small.train)
    assert m.solver_ == "svrg_sbb" and m.embedding_tensor_.dtype == torch.float32
    # SVRG-SBB's default epoch samples |Q| / 4: |Q| + 2 |Q| / 4 gradient calls
    assert np.diff(m.history_["passes"]) == pytest.approx(1.5)
    assert m.score(small.test) > 0.95


def test_lbfgs_ridge_is_lam_times_the_squared_norm_with_its_gradient(small):
    from embedopt.ordinal import lbfgs
    from embedopt.ordinal.solvers import _with_ridge

    prob = OrdinalProblem(small.train, "ste", dtype="float64")
    lam = 0.37
    f = _with_ridge(prob.value_and_grad, lam)
    X = torch.randn(
        30, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    value, grad = f(X)
    base, _ = prob.value_and_grad(X)
    assert value == pytest.approx(base + lam * float((X * X).sum()), rel=1e-12)
    Xa = X.clone().requires_grad_(True)
    d = lambda i, j: ((Xa[i] - Xa[j]) ** 2).sum(-1)  # noqa: E731
    q = torch.as_tensor(small.train.indices)
    auto = torch.nn.functional.softplus(d(q[:, 0], q[:, 1]) - d(q[:, 0], q[:, 2]))
    (auto.mean() + lam * (Xa * Xa).sum()).backward()
    torch.testing.assert_close(grad, Xa.grad, rtol=1e-10, atol=1e-12)
    # a heavy ridge shrinks the fitted embedding; lam=0 is the plain loss
    free = lbfgs(small.train, 2, random_state=0, device="cpu").x
    tight = lbfgs(small.train, 2, lam=1.0, random_state=0, device="cpu").x
    assert float(tight.norm()) < 0.5 * float(free.norm())
    with pytest.raises(InvalidParameterError, match="lam"):
        lbfgs(small.train, 2, lam=-1.0)


def test_every_solver_has_the_one_call_shape():
    # (comparisons, n_components, *, init, <run options>, <its own>); svrg and
    # svrg_sbb_pl pass their keywords on to svrg_sbb.
    import inspect

    from embedopt.ordinal import SOLVERS

    run = ["init", "max_iter", "tol", "random_state", "device", "dtype", "verbose"]
    for name, solve in SOLVERS.items():
        params = list(inspect.signature(solve).parameters.values())
        assert [p.name for p in params[:2]] == ["comparisons", "n_components"], name
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:2]), name
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params[2:])
        if params[-1].kind is not params[-1].VAR_KEYWORD:
            assert [p.name for p in params[2:10]] == [*run, "callback"], name


def test_policy_functions_resolve_the_estimators_auto_rules():
    from embedopt.ordinal import (
        get_loss,
        lbfgs_threads,
        resolve_lam,
        resolve_n_init,
        solver_defaults,
    )
    from embedopt.ordinal.solvers import AUTO_LBFGS_MAX_COMPARISONS

    big = AUTO_LBFGS_MAX_COMPARISONS + 1
    assert solver_defaults("lbfgs", 10) == dict(
        max_iter=1000, tol=1e-5, init_scale=1.0, dtype=torch.float64
    )
    assert solver_defaults("svrg_sbb", 10) == dict(
        max_iter=100, tol=1e-3, init_scale=0.1, dtype=torch.float32
    )
    assert solver_defaults("svrg_sbb", big)["update_frequency"] == big // 4
    assert "update_frequency" not in solver_defaults(
        "svrg_sbb", big, update_frequency=7
    )
    assert solver_defaults("sgd", big, max_iter=3, tol=0.0)["max_iter"] == 3
    ste, soe = get_loss("ste"), get_loss("soe")
    assert resolve_lam("auto", "lbfgs", ste, 50) == 0.01
    assert resolve_lam("auto", "svrg_sbb", ste, 50) == 0.0
    assert resolve_lam("auto", "lbfgs", soe, 50) == 0.0
    assert resolve_n_init("auto", soe, 2, None) == 3
    assert resolve_n_init("auto", soe, 2, np.zeros((3, 2))) == 1
    with pytest.raises(InvalidParameterError, match="n_init=2"):
        resolve_n_init(2, ste, 2, np.zeros((3, 2)))
    prob = OrdinalProblem([[0, 1, 2]], "ste")
    assert lbfgs_threads(prob) == 1
