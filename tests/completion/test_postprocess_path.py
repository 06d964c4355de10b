import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from embedopt._core import InvalidParameterError
from embedopt.completion import (
    Centering,
    CompletionProblem,
    ais_impute,
    lambda_path,
    postprocess,
)
from embedopt.data import ObservedEntries, split_entries
from tests.conftest import random_entries

D = torch.float64


def _train_loss(problem, U, s, V):
    return problem.loss.total(problem.values_at(problem.pattern, U, s, V), problem.y)


def test_square_postprocess_is_the_least_squares_refit():
    entries, _, _ = random_entries(m=30, n=20, rank=3, frac=0.6, noise=0.1)
    problem = CompletionProblem(entries, dtype="float64")
    U, s, V = ais_impute(problem, lam=3.0, random_state=0).x
    U2, s2, V2 = postprocess(problem, U, s, V)
    # dense least squares over theta: D theta ~ y, D_e = U[i_e] * V[j_e]
    Dm = (U[entries.rows] * V[entries.cols]).numpy()
    theta = np.linalg.lstsq(Dm, entries.values, rcond=None)[0]
    X_ref = (U.numpy() * theta) @ V.numpy().T
    np.testing.assert_allclose((U2 * s2 @ V2.T).numpy(), X_ref, atol=1e-8)
    assert _train_loss(problem, U2, s2, V2) <= _train_loss(problem, U, s, V)
    assert torch.all(s2[:-1] >= s2[1:]) and torch.all(s2 >= 0)


def test_logistic_postprocess_matches_scipy_and_never_increases_loss():
    rng = np.random.default_rng(1)
    m, n = 40, 30
    S = np.sign(rng.standard_normal((m, 2)) @ rng.standard_normal((2, n)))
    mask = rng.random((m, n)) < 0.5
    r, c = np.nonzero(mask)
    problem = CompletionProblem(
        ObservedEntries((r, c), S[r, c], (m, n)), loss="logistic", dtype="float64"
    )
    U, s, V = ais_impute(problem, lam=3.0, random_state=0).x
    U2, s2, V2 = postprocess(problem, U, s, V)
    Dm = (U[problem.pattern.row_indices()] * V[problem.pattern.col_indices()]).numpy()
    yv = problem.y.numpy()

    def f(th):
        z = -yv * (Dm @ th)
        return np.logaddexp(0, z).sum(), Dm.T @ (-yv / (1 + np.exp(-z)))

    ref = minimize(f, s.numpy(), jac=True, method="BFGS", options={"gtol": 1e-10})
    assert _train_loss(problem, U2, s2, V2) == pytest.approx(ref.fun, rel=1e-6)
    assert _train_loss(problem, U2, s2, V2) <= _train_loss(problem, U, s, V)


def test_postprocess_of_rank_zero_is_identity():
    entries, _, _ = random_entries()
    problem = CompletionProblem(entries, dtype="float64")
    U, s, V = (
        torch.zeros(30, 0, dtype=D),
        torch.zeros(0, dtype=D),
        torch.zeros(20, 0, dtype=D),
    )
    assert postprocess(problem, U, s, V)[1].numel() == 0


def test_lambda_path_selects_on_validation():
    entries, _, _ = random_entries(m=40, n=30, rank=2, frac=0.6, noise=0.05)
    tr, va = split_entries(entries, (0.8, 0.2), random_state=0)
    path = lambda_path(
        tr,
        va,
        n_lambdas=8,
        lambda_min_ratio=1e-2,
        patience=None,
        random_state=0,
        dtype="float64",
    )
    assert len(path.lambdas) == 8 and np.all(np.diff(path.lambdas) < 0)
    assert path.best_index == int(np.argmin(path.scores))
    assert path.best_lambda == path.lambdas[path.best_index]
    U, s, V = path.best_factors
    problem = CompletionProblem(tr, validation=va, dtype="float64")
    assert problem.validation_score(U, s, V) == pytest.approx(path.scores.min())
    short = lambda_path(
        tr,
        va,
        n_lambdas=8,
        lambda_min_ratio=1e-2,
        patience=1,
        random_state=0,
        dtype="float64",
    )
    assert len(short.lambdas) <= 8
    explicit = lambda_path(
        tr, va, lambdas=[0.5, 2.0], postprocess=False, random_state=0
    )
    np.testing.assert_allclose(explicit.lambdas, [2.0, 0.5])
    assert not explicit.postprocessed.any()


def test_lambda_path_needs_validation():
    entries, _, _ = random_entries()
    with pytest.raises(InvalidParameterError, match="validation"):
        lambda_path(entries)


def test_centering_recovers_additive_model():
    rng = np.random.default_rng(0)
    m, n = 20, 15
    a, b = rng.standard_normal(m), rng.standard_normal(n)
    full = 3.0 + a[:, None] + b[None, :]
    r, c = np.nonzero(rng.random((m, n)) < 0.7)
    obs = ObservedEntries((r, c), full[r, c], (m, n))
    cen = Centering("both", reg=0.0, n_sweeps=200).fit(obs)
    np.testing.assert_allclose(cen.offsets((r, c)), full[r, c], atol=1e-6)
    z = Centering("global", scale=True).fit(obs)
    t = z.transform(obs)
    assert abs(t.values.mean()) < 1e-12 and abs(t.values.std() - 1) < 1e-12
    np.testing.assert_allclose(z.inverse_transform((r, c), t.values), obs.values)
    with pytest.raises(InvalidParameterError):
        Centering("rows")


def test_refine_fits_the_whole_low_rank_factorization():
    # From a random rank-3 start the ALS refinement recovers a noiseless rank-3
    # matrix (singular-value refitting alone cannot: it keeps the subspaces).
    import torch

    from embedopt.completion import CompletionProblem, postprocess
    from embedopt.completion.postprocess import refine
    from embedopt.data import make_low_rank_matrix

    prob = make_low_rank_matrix(80, 60, rank=3, noise_std=0.0, random_state=0)
    P = CompletionProblem(prob.observed, dtype="float64")
    gen = torch.Generator().manual_seed(0)
    U = torch.linalg.qr(torch.randn(80, 3, generator=gen, dtype=torch.float64)).Q
    V = torch.linalg.qr(torch.randn(60, 3, generator=gen, dtype=torch.float64)).Q
    s = torch.ones(3, dtype=torch.float64)
    truth = prob.U @ prob.V.T
    Ur, sr, Vr = refine(P, U, s, V, ridge=1e-8, n_sweeps=200, tol=0)
    Up, sp, Vp = postprocess(P, U, s, V)
    err = np.abs((Ur * sr).numpy() @ Vr.numpy().T - truth).max()
    err_pp = np.abs((Up * sp).numpy() @ Vp.numpy().T - truth).max()
    assert err < 1e-4 * np.abs(truth).max() < err_pp
    # An SVD again: orthonormal factors, decreasing nonnegative values.
    eye = torch.eye(3, dtype=torch.float64)
    torch.testing.assert_close(Ur.T @ Ur, eye, atol=1e-10, rtol=0)
    torch.testing.assert_close(Vr.T @ Vr, eye, atol=1e-10, rtol=0)
    assert (sr[:-1] >= sr[1:]).all() and (sr > 0).all()


def test_path_steps_past_the_optimum_stop_once_validation_turns_away():
    from embedopt.completion.path import _TurnedAway
    from embedopt.optim.monitor import IterationState

    def run(cb, values):
        for i, v in enumerate(values):
            if cb(IterationState("s", i + 1, 0.0, 0.0, {cb.key: v})):
                return i + 1
        return None

    # Two rises in a row, ending above the best score: stop at the 3rd value.
    assert _TurnedAway.window == 2
    assert run(_TurnedAway("val_rmse", 1.0, False), [1.1, 1.2, 1.3, 1.4, 1.5]) == 3
    # Rising but still better than the best lambda's score: go on.
    assert run(_TurnedAway("val_rmse", 2.0, False), [1.1, 1.2, 1.3, 1.4]) is None
    # Falling after each single rise: go on.
    assert run(_TurnedAway("val_rmse", 1.0, False), [1.1, 1.2, 1.1, 1.2, 1.1]) is None
    # ... until two rises in a row.
    assert run(_TurnedAway("val_rmse", 1.0, False), [1.1, 1.2, 1.1, 1.2, 1.3]) == 5
    # Accuracy: higher is better.
    assert run(_TurnedAway("val_accuracy", 0.9, True), [0.8, 0.7, 0.6, 0.5]) == 3
    # The user's callback still stops the solve.
    assert run(_TurnedAway("val_rmse", 1.0, False, lambda s: True), [0.5]) == 1


def test_postprocess_by_cg_matches_the_design_gram(monkeypatch):
    # High ranks refit the singular values by CG on the normal equations.
    import sys

    import torch

    from embedopt.completion import CompletionProblem, postprocess
    from embedopt.data import make_low_rank_matrix

    module = sys.modules["embedopt.completion.postprocess"]
    prob = make_low_rank_matrix(70, 50, rank=4, noise_std=0.3, random_state=1)
    P = CompletionProblem(prob.observed, dtype="float64")
    gen = torch.Generator().manual_seed(1)
    U = torch.linalg.qr(torch.randn(70, 8, generator=gen, dtype=torch.float64)).Q
    V = torch.linalg.qr(torch.randn(50, 8, generator=gen, dtype=torch.float64)).Q
    s = torch.linspace(5, 1, 8, dtype=torch.float64)
    monkeypatch.setattr(module, "CG_MIN_RANK", 10**9)
    gram = postprocess(P, U, s, V)
    monkeypatch.setattr(module, "CG_MIN_RANK", 1)
    by_cg = postprocess(P, U, s, V)
    for a, b in zip(gram, by_cg, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)
