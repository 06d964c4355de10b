import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError
from embedopt.completion import (
    CompletionProblem,
    TensorCompletion,
    ais_impute,
    apg,
    default_mode_weights,
    postprocess,
    soft_impute,
)
from embedopt.data import make_low_rank_tensor, split_entries

D = torch.float64


def _fold(M, d, shape):
    others = [k for k in range(len(shape)) if k != d]
    return np.moveaxis(M.reshape([shape[d]] + [shape[k] for k in others]), 0, d)


def _unfold(T, d):
    return np.moveaxis(T, d, 0).reshape(T.shape[d], -1)


def _dense(factors, shape):
    X = np.zeros(shape)
    for d, (U, s, V) in enumerate(factors):
        X += _fold(((U * s) @ V.T).numpy(), d, shape)
    return X


@pytest.fixture(scope="module")
def tiny():
    prob = make_low_rank_tensor(12, last_dim=3, rank=2, n_observed=250, random_state=0)
    return prob


def test_generator_truth_matches_dense(tiny):
    T = tiny.dense()
    idx = tiny.observed.indices
    np.testing.assert_allclose(tiny.truth_at(idx), T[tuple(idx.T)])
    resid = tiny.observed.values - tiny.truth_at(idx)
    assert abs(resid.std() - 0.05) < 0.02
    assert tiny.observed.shape == (12, 12, 3)


def test_unfoldings_predict_matches_dense(tiny):
    P = CompletionProblem(tiny.observed, dtype="float64")
    g = torch.Generator().manual_seed(0)
    factors = []
    for unf in P.unfoldings:
        a, b = unf.shape
        factors.append(
            (
                torch.randn(a, 2, generator=g, dtype=D),
                torch.rand(2, generator=g, dtype=D),
                torch.randn(b, 2, generator=g, dtype=D),
            )
        )
    X = _dense(factors, P.shape)
    np.testing.assert_allclose(
        P.predict(factors).numpy(), X[tuple(tiny.observed.indices.T)]
    )


def _reference(P, lam, w, iters=3000):
    """Dense FISTA on problem (30) with full SVTs (step 1/D)."""
    shape, Dn = P.shape, len(P.shape)
    idx = tuple(P.entries.indices.T)
    O = np.zeros(shape)
    M = np.zeros(shape, dtype=bool)
    O[idx], M[idx] = P.entries.values, True
    X = [np.zeros(shape) for _ in range(Dn)]
    Xp, t, mu = [x.copy() for x in X], 1.0, 1.0 / Dn
    for _ in range(iters):
        tn = (1 + np.sqrt(1 + 4 * t * t)) / 2
        Y = [x + (t - 1) / tn * (x - xp) for x, xp in zip(X, Xp, strict=True)]
        G = (sum(Y) - O) * M
        new = []
        for d in range(Dn):
            U, s, Vh = np.linalg.svd(_unfold(Y[d] - mu * G, d), full_matrices=False)
            new.append(_fold((U * np.maximum(s - mu * lam * w[d], 0)) @ Vh, d, shape))
        Xp, X, t = X, new, tn
    loss = 0.5 * (((sum(X) - O) * M) ** 2).sum()
    return loss + sum(
        lam * w[d] * np.linalg.svd(_unfold(X[d], d), compute_uv=False).sum()
        for d in range(Dn)
    )


@pytest.fixture(scope="module")
def reference(tiny):
    P = CompletionProblem(tiny.observed, dtype="float64")
    w = default_mode_weights(P.shape)
    assert w == pytest.approx([1.0, 1.0, 2.0])  # (1, 1, sqrt(m / 3)), m = 12
    return P, 0.5, _reference(P, 0.5, w)


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
@pytest.mark.parametrize("solver", [ais_impute, soft_impute, apg])
def test_tensor_solvers_reach_the_reference_optimum(reference, solver):
    P, lam, F_ref = reference
    res = solver(P, lam=lam, tol=1e-11, max_iter=3000, random_state=0)
    assert isinstance(res.x, list) and len(res.x) == 3
    assert res.history["objective"][-1] == pytest.approx(F_ref, rel=1e-6)
    assert {"rank_0", "rank_1", "rank_2"} <= set(res.history)


def test_tensor_postprocess_never_increases_loss(tiny):
    P = CompletionProblem(tiny.observed, dtype="float64")
    res = ais_impute(P, lam=1.0, random_state=0)
    before = P.loss.total(P.predict(res.x), P.y)
    pp = postprocess(P, res.x)
    assert P.loss.total(P.predict(pp), P.y) <= before
    assert [f[1].numel() for f in pp] == [f[1].numel() for f in res.x]


def test_tensor_completion_estimator():
    prob = make_low_rank_tensor(30, random_state=1)
    tr, te = split_entries(prob.observed, (0.8, 0.2), random_state=0)
    model = TensorCompletion(center="none", random_state=0).fit(tr)
    truth = prob.truth_at(te.indices)
    pred = model.predict(te.indices)
    assert np.linalg.norm(pred - truth) / np.linalg.norm(truth) < 0.1
    assert len(model.ranks_) == 3 and model.mode_weights_[2] == pytest.approx(
        np.sqrt(10)
    )
    dense = model.to_dense()
    np.testing.assert_allclose(dense[tuple(te.indices.T)], pred)
    with pytest.raises(DataValidationError, match="MatrixCompletion"):
        TensorCompletion().fit(([0, 1], [1, 0], [1.0, 2.0]))


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_four_way_tensor_with_default_lambda_path():
    # lam="auto" scores every path step on validation entries: with four modes
    # the per-mode factors used to be read as one (U, s, V) triple (issue 14).
    from embedopt.completion import CompletionProblem, TensorCompletion
    from embedopt.data import ObservedEntries, split_entries

    rng = np.random.default_rng(0)
    shape = (6, 5, 4, 3)
    idx = np.unique(np.stack([rng.integers(0, s, 400) for s in shape], 1), axis=0)
    entries = ObservedEntries(idx, rng.standard_normal(len(idx)), shape)
    # max_iter: noise has no low-rank solution, so a lambda of the path would
    # run all 500 default iterations; what is tested is the path's bookkeeping
    model = TensorCompletion(random_state=0, n_lambdas=3, max_iter=60).fit(entries)
    assert len(model.ranks_) == 4 and np.isfinite(model.predict(idx)).all()
    tr, va = split_entries(entries, (0.8, 0.2), random_state=0)
    prob = CompletionProblem(tr, validation=va)
    factors = [
        (torch.ones(n, 1), torch.ones(1), torch.ones(m, 1))
        for n, m in [(6, 60), (5, 72), (4, 90), (3, 120)]
    ]
    assert prob.validation_score(factors) == prob.validation_score(*factors)


@pytest.mark.parametrize(
    "weights",
    [
        [1.0, 2.0],
        [0.0, 0.0, 0.0],
        ["a", "b", "c"],
        [-1.0, 1.0, 1.0],
        [1.0, 1.0, float("nan")],
    ],
)
def test_bad_mode_weights_are_refused_before_any_work(weights):
    from embedopt._core import InvalidParameterError
    from embedopt.completion import TensorCompletion, ais_impute

    t = make_low_rank_tensor(8, n_observed=150, random_state=0).observed
    with pytest.raises(
        InvalidParameterError,
        match="'mode_weights' parameter of TensorCompletion must be 3 positive finite",
    ):
        TensorCompletion(mode_weights=weights, random_state=0).fit(t)
    with pytest.raises(InvalidParameterError, match="'mode_weights'"):
        ais_impute(t, lam=1.0, mode_weights=weights)


def test_tensor_estimator_ends_with_the_common_fitted_attributes():
    from embedopt.completion import TensorCompletion

    obs = make_low_rank_tensor(10, n_observed=200, random_state=0).observed
    model = TensorCompletion(lam=0.5, solver="auto", max_iter=40, random_state=0)
    model.fit(obs)
    assert model.solver_ == "ais_impute"
    assert model.objective_ == pytest.approx(model.history_["objective"][-1])
    assert model.n_iter_ == len(model.history_["objective"])
    assert model.stop_reason_
