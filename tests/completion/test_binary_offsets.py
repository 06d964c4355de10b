"""Offsets inside the +/-1 losses (center="both"): the math against the naive
computation and autograd, and the estimator around it."""

import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.completion import (
    LogisticLoss,
    MatrixCompletion,
    SquaredHingeLoss,
    ais_impute,
)
from embedopt.completion.binary import (
    LossCentering,
    OffsetProblem,
    ShiftedLoss,
)
from embedopt.data import ObservedEntries, split_entries


def biased_signs(m=60, n=50, frac=0.5, seed=0):
    """Signs of ``a_i + b_j + u_i^T v_j`` (+ noise): rows and columns with
    their own propensity to be positive, as raters and rated users have."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(1.0, 1.5, m), rng.normal(0.0, 1.0, n)
    low = rng.standard_normal((m, 2)) @ rng.standard_normal((2, n))
    S = np.sign(a[:, None] + b[None] + low + 0.3 * rng.standard_normal((m, n)))
    r, c = np.nonzero(rng.random((m, n)) < frac)
    return ObservedEntries((r, c), np.where(S[r, c] >= 0, 1.0, -1.0), (m, n))


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredHingeLoss()])
def test_shifted_loss_is_the_loss_at_the_shifted_values(loss):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, generator=g, dtype=torch.float64)
    off = torch.randn(30, generator=g, dtype=torch.float64)
    y = torch.where(torch.rand(30, generator=g) < 0.7, 1.0, -1.0).double()
    shifted = ShiftedLoss(loss, off)
    torch.testing.assert_close(shifted.value(x, y), loss.value(x + off, y))
    xa = x.clone().requires_grad_(True)
    loss.value(xa + off, y).sum().backward()
    torch.testing.assert_close(shifted.grad(x, y), xa.grad)
    assert (shifted.rho, shifted.binary, shifted.name) == (
        loss.rho,
        True,
        loss.name,
    )


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredHingeLoss()])
def test_offsets_minimize_the_penalized_loss(loss):
    obs = biased_signs()
    cen = LossCentering("both", loss, reg=5.0).fit(obs)
    # the objective of the docstring, by autograd, at the fitted offsets
    mu = torch.tensor(cen.mean_, dtype=torch.float64, requires_grad=True)
    a = torch.tensor(cen.row_offset_, requires_grad=True)
    b = torch.tensor(cen.col_offset_, requires_grad=True)
    y = torch.as_tensor(obs.values)
    x = mu + a[torch.as_tensor(obs.rows)] + b[torch.as_tensor(obs.cols)]
    pen = 0.5 * 5.0 * loss.rho * ((a * a).sum() + (b * b).sum())
    (loss.value(x, y).sum() + pen).backward()
    for p in (mu, a, b):
        assert float(p.grad.abs().max()) < 1e-4
    # "global" is the intercept alone; "none" is zero
    glob = LossCentering("global", loss).fit(obs)
    assert not glob.row_offset_.any() and not glob.col_offset_.any()
    none = LossCentering("none", loss).fit(obs)
    assert none.mean_ == 0.0 and none.transform(obs) is obs


def test_offset_problem_objective_and_validation_against_the_naive_model():
    obs = biased_signs()
    tr, va = split_entries(obs, (0.8, 0.2), random_state=0)
    loss = LogisticLoss()
    cen = LossCentering("both", loss).fit(tr)
    prob = OffsetProblem(tr, centering=cen, loss=loss, validation=va, dtype="float64")
    res = ais_impute(prob, lam=3.0, tol=1e-6, max_iter=300, random_state=0)
    U, s, V = (a.numpy() for a in res.x)
    X = (U * s) @ V.T
    y = torch.as_tensor(tr.values)
    naive = float(
        loss.value(
            torch.as_tensor(cen.offsets(tr.indices) + X[tr.rows, tr.cols]), y
        ).sum()
    )
    assert abs(res.history["objective"][-1] - (naive + 3.0 * s.sum())) < 1e-6 * naive
    pred = cen.offsets(va.indices) + X[va.rows, va.cols]
    expect = np.mean(np.where(pred >= 0, 1.0, -1.0) == va.values)
    assert prob.validation_score(res.x) == pytest.approx(expect)


def test_estimator_with_offsets_predicts_offsets_plus_low_rank():
    obs = biased_signs(seed=1)
    tr, te = split_entries(obs, (0.8, 0.2), random_state=0)
    opts = dict(loss="logistic", random_state=0, n_lambdas=8)
    model = MatrixCompletion(center="both", **opts).fit(tr)
    assert isinstance(model.centering_, LossCentering) and model.center_ == "both"
    X = (model.U_ * model.s_) @ model.V_.T
    expect = model.centering_.offsets(te.indices) + X[te.rows, te.cols]
    np.testing.assert_allclose(model.decision_function(te), expect, atol=1e-4)
    plain = MatrixCompletion(**opts).fit(tr)
    # the propensities are in the data: the offsets find them
    assert model.score(te) >= plain.score(te) - 0.02
    for center in ("row", "column", "global"):
        with pytest.raises(InvalidParameterError, match="'none' or 'both'"):
            MatrixCompletion(loss="squared_hinge", center=center).fit(tr)


def test_an_accuracy_tie_is_a_plateau_not_a_turn():
    from embedopt.completion.path import _Patience

    acc = _Patience(1, higher_better=True)
    # the majority sign everywhere, twice: the path must go on
    assert [acc.stop(s) for s in (0.93, 0.93, 0.94, 0.95)] == [False] * 4
    assert acc.stop(0.949)
    # an RMSE tie still counts (the square loss's paths are unchanged)
    assert _Patience(1, higher_better=False).stop(0.5) is False
    rmse = _Patience(1, higher_better=False)
    assert [rmse.stop(s) for s in (0.5, 0.5)] == [False, True]


def test_tensor_offsets_every_mode():
    from embedopt.completion import TensorCompletion
    from embedopt.data import make_low_rank_tensor

    obs = make_low_rank_tensor(10, random_state=0).observed
    obs = obs.with_values(np.where(obs.values >= 0, 1.0, -1.0))
    model = TensorCompletion(
        1.0, loss="logistic", center="both", random_state=0, max_iter=50
    ).fit(obs)
    assert isinstance(model.centering_, LossCentering)
    assert len(model.centering_.offsets_) == 3 and model.score(obs) > 0.8


def test_offsets_weight_zero_is_an_absent_entry():
    loss = LogisticLoss()
    obs = biased_signs(m=30, n=25)
    w = np.ones(obs.nnz)
    w[::3] = 0.0
    weighted = LossCentering("both", loss).fit(obs, w)
    subset = LossCentering("both", loss).fit(obs.subset(w > 0))
    np.testing.assert_allclose(weighted.mean_, subset.mean_, atol=1e-5)
    np.testing.assert_allclose(weighted.row_offset_, subset.row_offset_, atol=1e-5)
    model = MatrixCompletion(
        loss="logistic", center="both", random_state=0, n_lambdas=4
    ).fit(obs, sample_weight=w + 1.0)
    assert isinstance(model.centering_, LossCentering)
