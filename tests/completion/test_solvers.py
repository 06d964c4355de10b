import numpy as np
import pytest
import torch

from embedopt._core import (
    ConvergenceWarning,
    DataValidationError,
    InvalidParameterError,
    NumericalInstabilityError,
)
from embedopt.completion import (
    CompletionProblem,
    SquareLoss,
    ais_impute,
    apg,
    soft_impute,
)
from embedopt.data import ObservedEntries
from embedopt.linalg import SparsePlusLowRank
from tests.conftest import random_entries

D = torch.float64


def _dense(entries):
    M = np.zeros(entries.shape)
    mask = np.zeros(entries.shape, dtype=bool)
    M[entries.rows, entries.cols] = entries.values
    mask[entries.rows, entries.cols] = True
    return torch.as_tensor(M, dtype=D), torch.as_tensor(mask)


def _objective(entries, X, lam):
    M, mask = _dense(entries)
    return float(
        0.5 * (((X - M) * mask) ** 2).sum() + lam * torch.linalg.svdvals(X).sum()
    )


def _reference_solution(entries, lam, iters=4000):
    """Dense FISTA with full SVT: the reference optimum on tiny problems."""
    M, mask = _dense(entries)
    X = Xp = torch.zeros_like(M)
    t = 1.0
    for _ in range(iters):
        tn = (1 + np.sqrt(1 + 4 * t * t)) / 2
        Y = X + (t - 1) / tn * (X - Xp)
        Z = Y - (Y - M) * mask
        U, s, Vh = torch.linalg.svd(Z, full_matrices=False)
        Xp, X, t = X, U @ torch.diag(torch.clamp(s - lam, min=0)) @ Vh, tn
    return X


def _X(res):
    U, s, V = res.x
    return U @ torch.diag(s) @ V.T


@pytest.fixture(scope="module")
def reference():
    entries, _, _ = random_entries(m=30, n=20, rank=3, frac=0.5, seed=0)
    lam = 1.0
    X = _reference_solution(entries, lam)
    return entries, lam, X, _objective(entries, X, lam)


@pytest.mark.parametrize(
    ("solver", "kw"),
    [(ais_impute, {}), (ais_impute, {"exact_svt": True}), (soft_impute, {}), (apg, {})],
)
def test_solvers_reach_the_reference_optimum(reference, solver, kw):
    entries, lam, Xref, Fref = reference
    res = solver(
        entries,
        lam=lam,
        tol=1e-12,
        max_iter=3000,
        dtype="float64",
        random_state=0,
        **kw,
    )
    F = _objective(entries, _X(res), lam)
    assert F == pytest.approx(Fref, rel=1e-6)
    torch.testing.assert_close(_X(res), Xref, atol=1e-3, rtol=0)
    # the recorded objective is the true objective of the final iterate
    assert res.history["objective"][-1] == pytest.approx(F, rel=1e-9)


def test_history_columns_and_continuation(reference):
    entries, lam, _, _ = reference
    res = ais_impute(
        entries,
        lam=lam,
        tol=1e-10,
        max_iter=300,
        dtype="float64",
        random_state=0,
        lam_decay=0.5,
        lam_start=8.0,
    )
    h = res.history
    assert {
        "iteration",
        "time",
        "objective",
        "lam",
        "rank",
        "svd_rank",
        "theta",
        "restart",
    } <= set(h)
    assert len({len(v) for v in h.values()}) == 1
    # Algorithm 3, step 3: lambda_t = (lambda_hat - lambda) nu^(t-1) + lambda
    t = np.arange(1, 6)
    np.testing.assert_allclose(h["lam"][:5], (8.0 - lam) * 0.5 ** (t - 1) + lam)
    assert h["lam"][-1] == lam
    assert res.stop_reason == "tol"


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_restart_resets_momentum(reference):
    entries, lam, _, _ = reference
    res = ais_impute(
        entries,
        lam=lam,
        tol=0.0,
        max_iter=150,
        dtype="float64",
        random_state=0,
        lam_start=lam,
    )
    h = res.history
    restarts = np.flatnonzero(h["restart"][:-1] == 1)
    assert restarts.size > 0, "this problem is known to trigger restarts"
    # step 9: after an increase, c = 1 so the next extrapolation weight is 0
    assert np.all(h["theta"][restarts + 1] == 0)
    # otherwise theta follows (c - 1) / (c + 2)
    assert h["theta"][0] == 0 and h["theta"][1] == pytest.approx(0.25)


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_soft_impute_is_monotone_without_continuation(reference):
    entries, lam, _, _ = reference
    res = soft_impute(
        entries,
        lam=lam,
        lam_start=lam,
        tol=1e-12,
        max_iter=200,
        dtype="float64",
        random_state=0,
    )
    obj = res.history["objective"]
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))


def test_acceleration_needs_fewer_iterations(reference):
    entries, lam, _, Fref = reference

    def iters_to(solver):
        res = solver(
            entries,
            lam=lam,
            tol=0.0,
            max_iter=400,
            dtype="float64",
            random_state=0,
            lam_start=lam,
        )
        gap = res.history["objective"] - Fref
        return int(np.argmax(gap <= 1e-6 * Fref))

    with pytest.warns(ConvergenceWarning):
        assert iters_to(ais_impute) < iters_to(soft_impute)


def test_ais_impute_never_densifies(monkeypatch):
    entries, _, _ = random_entries(m=120, n=90, rank=3, frac=0.3)

    def boom(self):
        raise AssertionError("Z_t was densified")

    monkeypatch.setattr(SparsePlusLowRank, "to_dense", boom)
    for exact in (False, True):
        res = ais_impute(entries, lam=2.0, exact_svt=exact, random_state=0)
        assert res.x[1].numel() >= 1
    with pytest.raises(AssertionError, match="densified"):
        apg(entries, lam=2.0, random_state=0)


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_max_rank_and_warm_start(reference):
    entries, lam, _, _ = reference
    capped = ais_impute(
        entries,
        lam=0.05,
        max_rank=2,
        random_state=0,
        dtype="float64",
        max_iter=50,
        tol=1e-6,
    )
    assert capped.history["rank"].max() <= 2
    cold = ais_impute(entries, lam=lam, tol=1e-8, random_state=0, dtype="float64")
    warm = ais_impute(
        entries, lam=lam, tol=1e-8, random_state=0, dtype="float64", init=cold.x
    )
    assert warm.n_iter < cold.n_iter


@pytest.mark.bitwise_rerun
def test_same_seed_same_result(reference):
    entries, lam, _, _ = reference
    a = ais_impute(entries, lam=lam, random_state=3)
    b = ais_impute(entries, lam=lam, random_state=3)
    for x, y in zip(a.x, b.x, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_validation_metric_recorded(reference):
    entries, lam, _, _ = reference
    res = ais_impute(entries, lam=lam, validation=entries, random_state=0)
    assert np.isfinite(res.history["val_rmse"]).all()


def test_logistic_binary_completion():
    rng = np.random.default_rng(0)
    m, n, r = 80, 60, 2
    S = np.sign(rng.standard_normal((m, r)) @ rng.standard_normal((r, n)))
    mask = rng.random((m, n)) < 0.5
    rows, cols = np.nonzero(mask)
    tr = ObservedEntries((rows, cols), S[rows, cols], (m, n))
    te_r, te_c = np.nonzero(~mask)
    te = ObservedEntries((te_r, te_c), S[te_r, te_c], (m, n))
    res = ais_impute(
        tr, lam=2.0, loss="logistic", validation=te, random_state=0, dtype="float64"
    )
    assert res.history["val_accuracy"][-1] > 0.9


def test_bad_inputs():
    entries, _, _ = random_entries()
    with pytest.raises(
        InvalidParameterError,
        match=r"'lam' parameter of ais_impute must be a float in \(0",
    ):
        ais_impute(entries, lam=0.0)
    with pytest.raises(InvalidParameterError, match="'lam_decay' parameter"):
        ais_impute(entries, lam=1.0, lam_decay=1.5)
    with pytest.raises(DataValidationError, match=r"\+/-1 labels"):
        ais_impute(entries, lam=1.0, loss="logistic")
    with pytest.raises(DataValidationError, match="NaN"):
        ais_impute(([0, 1], [0, 1], [1.0, np.nan]), lam=1.0)


def test_validation_shape_mismatch():
    entries, _, _ = random_entries()
    with pytest.raises(DataValidationError, match="Validation entries have shape"):
        CompletionProblem(
            entries, validation=ObservedEntries(([0], [0]), [1.0], (3, 3))
        )


def test_divergence_is_reported():
    class TooSmooth(SquareLoss):
        rho = 1e-3  # a wrong smoothness constant: step 1000 diverges

    entries, _, _ = random_entries()
    with pytest.raises(NumericalInstabilityError, match="step size"):
        ais_impute(
            entries,
            lam=1e-3,
            loss=TooSmooth(),
            max_iter=500,
            random_state=0,
            lam_start=1e-3,
        )


def test_adaptive_rank_cap_grows_to_the_solution_rank():
    # The solution has rank > 10, so the adaptive cap (start 10, +1 per
    # iteration while it is below twice the rank, doubled when the truncated
    # iteration converges) must grow; the fixed point is the same as with the
    # paper's uncapped basis QR([V_t, V_{t-1}]).
    entries, _, _ = random_entries(m=60, n=50, rank=14, frac=0.6, seed=3)
    lam = 0.5
    Xref = _reference_solution(entries, lam, iters=3000)
    Fref = _objective(entries, Xref, lam)
    assert int((torch.linalg.svdvals(Xref) > 1e-6).sum()) > 10
    runs = {
        adaptive: ais_impute(
            entries,
            lam=lam,
            tol=1e-12,
            max_iter=4000,
            dtype="float64",
            random_state=0,
            adaptive_rank=adaptive,
        )
        for adaptive in (True, False)
    }
    for res in runs.values():
        assert _objective(entries, _X(res), lam) == pytest.approx(Fref, rel=1e-6)
    k = runs[True].history["svd_rank"]
    # the basis never exceeds the cap, which starts at 10 and grows by one per
    # iteration until a converged binding iteration doubles it
    assert np.all(k <= 10 + np.arange(k.size))
    assert k.max() > 10


def test_adaptive_rank_cap_leaves_a_user_max_rank_alone():
    # With max_rank below the adaptive cap's start, the basis is max_rank
    # columns either way, and a binding max_rank truncation is the user's
    # choice, not the adaptive cap's: both runs are the same iteration for
    # iteration and stop on the tolerance.
    entries, _, _ = random_entries(m=60, n=50, rank=14, frac=0.6, seed=3)
    a, b = (
        ais_impute(
            entries,
            lam=0.5,
            max_rank=8,
            tol=1e-6,
            max_iter=500,
            dtype="float64",
            random_state=0,
            adaptive_rank=adaptive,
        )
        for adaptive in (True, False)
    )
    assert a.n_iter == b.n_iter and a.stop_reason == "tol"
    np.testing.assert_allclose(a.history["objective"], b.history["objective"])
