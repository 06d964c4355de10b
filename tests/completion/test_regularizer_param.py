"""MCP against the naive computation, and ``regularizer=`` in the estimators."""

import numpy as np
import pytest
import torch

from embedopt import load
from embedopt._core import InvalidParameterError
from embedopt.completion import (
    MatrixCompletion,
    MinimaxConcavePenalty,
    NuclearNorm,
    TensorCompletion,
    get_regularizer,
    spectral_prox,
)
from embedopt.completion.problem import CompletionProblem
from embedopt.completion.proximal import proximal_completion
from embedopt.completion.regularizers import (
    REGULARIZER_DEFAULTS,
    resolve_regularizer,
)
from embedopt.data import make_low_rank_tensor
from tests._derivatives import autograd_grad
from tests.conftest import data_dir, random_entries, requires_dataset

D = torch.float64


# -- MCP: value, weights, proximal step ---------------------------------------------
def test_mcp_value_is_zhangs_penalty_scaled_to_slope_one():
    theta = 3.0
    reg = MinimaxConcavePenalty(theta)
    a = torch.linspace(0, 8, 81, dtype=D)
    # Zhang's rho(a; lam, gamma) = int_0^a (lam - t / gamma)_+ dt, over lam,
    # with theta = gamma * lam (lam = 1.5, gamma = 2), by quadrature
    lam, gamma = 1.5, 2.0
    t = torch.linspace(0, 1, 20001, dtype=D)
    naive = torch.stack(
        [torch.trapezoid((lam - (x * t) / gamma).clamp(min=0), x * t) / lam for x in a]
    )
    torch.testing.assert_close(reg.rbar(a), naive, atol=1e-7, rtol=0)
    s = torch.tensor([7.0, 2.9, 1.0, 0.2], dtype=D)
    torch.testing.assert_close(reg.weights(s)[:-1], autograd_grad(reg.rbar, s))
    assert reg.weights(s)[-1] == 1.0


@pytest.mark.parametrize(("theta", "lam"), [(3.0, 1.0), (3.0, 2.5), (1.0, 2.0)])
def test_mcp_prox_is_the_grid_minimizer(theta, lam):
    reg = MinimaxConcavePenalty(theta)
    z = torch.tensor(
        [-4.0, -1.7, -0.3, 0.0, 0.4, 0.9, 1.2, 1.6, 2.2, 2.9, 5.0], dtype=D
    )
    grid = torch.linspace(-8, 8, 160001, dtype=D)
    cost = (grid[None, :] - z[:, None]) ** 2 / 2 + lam * reg.rbar(grid.abs())[None, :]
    best = grid[cost.argmin(1)]
    x = reg.prox(z, lam)
    # the same minimizer up to the grid's spacing, and never a worse cost
    torch.testing.assert_close(x, best, atol=2e-4, rtol=0)
    mine = (x - z) ** 2 / 2 + lam * reg.rbar(x.abs())
    assert torch.all(mine <= cost.min(1).values + 1e-12)


def test_spectral_prox_minimizes_the_matrix_problem():
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(9, 6, generator=g, dtype=D) * 2
    reg, lam = MinimaxConcavePenalty(4.0), 1.5
    X = spectral_prox(reg, Z, lam)
    # against the dense SVD: the scalar prox of each singular value
    U, s, Vh = torch.linalg.svd(Z, full_matrices=False)
    torch.testing.assert_close(X, (U * reg.prox(s, lam)) @ Vh)

    def objective(Y):
        sv = torch.linalg.svdvals(Y)
        return float(((Y - Z) ** 2).sum() / 2 + lam * reg.rbar(sv).sum())

    best = objective(X)
    for _ in range(50):  # no nearby matrix does better
        Y = X + 0.05 * torch.randn(9, 6, generator=g, dtype=D)
        assert objective(Y) >= best - 1e-12
    with pytest.raises(InvalidParameterError, match="no scalar proximal step"):
        spectral_prox(get_regularizer("lsp"), Z, lam)


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_the_solvers_mcp_step_is_the_dense_weighted_svt():
    """One exact-SVT step from ``X_0 = U diag(s) V^T`` on the sparse plus low
    rank ``Z`` (never formed) against the dense SVD of Z: Lemma 3.6 with the
    weights of MCP's linearization at ``X_0``."""
    entries, _, _ = random_entries(m=20, n=15, rank=3, frac=0.6, seed=1)
    P = CompletionProblem(entries, dtype="float64")
    g = torch.Generator().manual_seed(0)
    U0, _ = torch.linalg.qr(torch.randn(20, 3, generator=g, dtype=D))
    V0, _ = torch.linalg.qr(torch.randn(15, 3, generator=g, dtype=D))
    s0 = torch.tensor([6.0, 3.0, 1.0], dtype=D)
    reg, lam = MinimaxConcavePenalty(5.0), 0.8
    res = proximal_completion(
        P, (U0, s0, V0), lam=lam, svt="exact", regularizer=reg,
        max_iter=1, lam_start=lam, random_state=0,
    )  # fmt: skip
    X0 = (U0 * s0) @ V0.T
    O = torch.zeros(20, 15, dtype=D)
    mask = torch.zeros(20, 15, dtype=torch.bool)
    O[entries.rows, entries.cols] = torch.as_tensor(entries.values)
    mask[entries.rows, entries.cols] = True
    Z = X0 - torch.where(mask, X0 - O, torch.zeros_like(O))  # mu = 1
    U, s, Vh = torch.linalg.svd(Z)
    w = reg.weights(s0)
    w = torch.cat([w[:-1], w[-1].expand(s.numel() - s0.numel())])
    expected = (U[:, :15] * (s - lam * w).clamp(min=0)) @ Vh
    Uh, sh, Vt = res.x
    torch.testing.assert_close((Uh * sh) @ Vt.T, expected, atol=1e-6, rtol=0)


# -- the estimators' parameters --------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        (dict(regularizer="mcp", regularizer_params={"rank": 3}), "takes: 'gamma'"),
        (dict(regularizer="nuclear", regularizer_params={"gamma": 2.0}), "nothing"),
        (
            dict(regularizer="lsp", regularizer_params={"gamma": 2.0, "theta": 1.0}),
            "not both",
        ),
        (dict(regularizer="mcp", regularizer_params={"gamma": -1.0}), "positive"),
        (dict(regularizer="tnn", regularizer_params={"rank": 0}), "int >= 1"),
        (
            dict(regularizer=NuclearNorm(), regularizer_params={"gamma": 1.0}),
            "carries its own",
        ),
    ],
)
def test_bad_regularizer_params_are_refused_before_work(params, match):
    entries, _, _ = random_entries()
    for cls in (MatrixCompletion, TensorCompletion):
        est = cls(**params)
        with pytest.raises(InvalidParameterError, match=match) as exc:
            est.fit(entries)
        assert f"'regularizer_params' parameter of {cls.__name__}" in str(exc.value)
        assert not hasattr(est, "shape_")
    with pytest.raises(InvalidParameterError, match="'regularizer' parameter"):
        MatrixCompletion(regularizer="l0").fit(entries)


def test_resolve_regularizer_takes_any_spelling_and_defaults():
    reg = resolve_regularizer("capped-l1", None, "x")
    assert reg.name == "capped_l1" and reg.gamma == 4.0 and reg.theta is None
    assert reg.at(3.0).theta == 12.0
    assert resolve_regularizer("mcp", {"theta": 4.0}, "x").theta == 4.0
    assert resolve_regularizer("nuclear", None, "x") is None
    assert resolve_regularizer("TNN", {"rank": 2}, "x").rank == 2


@pytest.fixture(scope="module")
def ratings():
    entries, _, _ = random_entries(m=40, n=30, rank=3, frac=0.5, noise=0.05, seed=3)
    return entries


def test_the_default_is_mcp_for_ratings_and_names_equal_instances(ratings):
    a = MatrixCompletion(random_state=0).fit(ratings)
    b = MatrixCompletion(regularizer="mcp", random_state=0).fit(ratings)
    np.testing.assert_array_equal(a.U_, b.U_)
    np.testing.assert_array_equal(a.s_, b.s_)
    assert isinstance(a.regularizer_, MinimaxConcavePenalty)
    a = MatrixCompletion(regularizer="nuclear", random_state=0).fit(ratings)
    b = MatrixCompletion(regularizer=NuclearNorm(), random_state=0).fit(ratings)
    np.testing.assert_array_equal(a.U_, b.U_)
    np.testing.assert_array_equal(a.s_, b.s_)
    assert isinstance(a.regularizer_, NuclearNorm)


@pytest.mark.parametrize("name", ["mcp", "lsp", "capped_l1", "tnn"])
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_a_nonconvex_fit_has_the_usual_outputs(ratings, name, tmp_path):
    model = MatrixCompletion(regularizer=name, random_state=0).fit(ratings)
    assert model.regularizer_.name == name and model.solver_ == "ais_impute"
    if name != "tnn":  # its scale at the selected lambda
        gamma = REGULARIZER_DEFAULTS[name]["gamma"]
        assert model.regularizer_.theta == pytest.approx(gamma * model.lam_)
    pred = model.predict(ratings.rows, ratings.cols)
    assert np.isfinite(pred).all() and model.rank_ >= 1
    assert np.isfinite(model.history_["objective"]).all()
    model.save(tmp_path / "m.embedopt")
    again = load(tmp_path / "m.embedopt")
    np.testing.assert_array_equal(again.predict(ratings.rows, ratings.cols), pred)
    assert repr(again.regularizer_) == repr(model.regularizer_)
    again.partial_fit(ratings.subset(np.arange(5)), refit="all")
    assert np.isfinite(again.predict(ratings.rows, ratings.cols)).all()


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_mcp_recovers_a_low_rank_matrix_with_less_shrinkage(ratings):
    """At the same lambda, MCP leaves the leading singular values unshrunk."""
    kw = dict(lam=3.0, postprocess=False, center="none", random_state=0, tol=1e-6)
    kw["max_iter"] = 2000
    nuc = MatrixCompletion(regularizer="nuclear", **kw).fit(ratings)
    mcp = MatrixCompletion(regularizer="mcp", **kw).fit(ratings)
    assert mcp.s_[0] > nuc.s_[0]
    assert mcp.score(ratings) > nuc.score(ratings)  # -RMSE on the training entries


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_tensor_completion_takes_a_regularizer_per_mode():
    prob = make_low_rank_tensor(12, n_observed=600, random_state=0)
    model = TensorCompletion(
        lam=1.0, regularizer="mcp", regularizer_params={"gamma": 3.0}, random_state=0
    ).fit(prob.observed)
    assert model.regularizer_.theta == pytest.approx(3.0)
    assert np.isfinite(model.predict(prob.observed.indices)).all()


def test_auto_is_mcp_for_ratings_and_nuclear_for_signs(ratings):
    mc = MatrixCompletion(lam=1.0, regularizer="auto", max_iter=20, random_state=0)
    assert isinstance(mc.fit(ratings).regularizer_, MinimaxConcavePenalty)
    signs = ratings.with_values(np.where(ratings.values >= 0, 1.0, -1.0))
    mc.set_params(loss="logistic")
    assert isinstance(mc.fit(signs).regularizer_, NuclearNorm)


# -- the refit after the path: a nonconvex penalty frozen at the selection ----------
def test_the_refit_freezes_a_nonconvex_penalty_at_the_selected_solution():
    from embedopt.completion.path import _frozen_regularizer

    s = torch.tensor([9.0, 4.0, 1.0], dtype=D)
    start = (torch.eye(5, 3, dtype=D), s, torch.eye(4, 3, dtype=D))
    reg = MinimaxConcavePenalty(gamma=2.0)
    out = _frozen_regularizer({"regularizer": reg, "tol": 1e-3}, start, 3.0)
    assert "regularizer" not in out and out["tol"] == 1e-3
    # theta = gamma * lam = 6: weights 1 - s / 6 clipped at 0, then 1 beyond
    expected = torch.tensor([0.0, 1 / 3, 5 / 6, 1.0], dtype=D)
    torch.testing.assert_close(out["weights"], expected)
    # the nuclear norm and tensors (a list of per-mode SVDs) keep their options
    nuclear = {"regularizer": NuclearNorm()}
    assert _frozen_regularizer(nuclear, start, 3.0) is nuclear
    assert _frozen_regularizer({"regularizer": reg}, [start], 3.0)["regularizer"] is reg


@requires_dataset("movielens-latest-small")
def test_mcp_refit_does_not_descend_into_an_overfitted_solution():
    # 80/20 seed 1: reweighting MCP at every refit iteration took the
    # selected solution (test RMSE 0.859 before the refit) to 0.911; frozen
    # at the selection, 0.857 (the nuclear norm: 0.857).
    from embedopt.data import load_movielens, split_entries

    entries = load_movielens("latest-small", data_dir()).entries
    train, test = split_entries(
        entries, (0.8, 0.2), random_state=np.random.default_rng(1)
    )
    mcp = MatrixCompletion(regularizer="mcp", random_state=1).fit(train)
    assert -mcp.score(test) < 0.86
