"""Closed-form gradients of every loss vs autograd and finite differences."""

import numpy as np
import pytest
import torch

from embedopt.data import Comparisons
from embedopt.ordinal import (
    LOSSES,
    CKLLoss,
    GNMDSLoss,
    OrdinalProblem,
    SOELoss,
    STELoss,
    TSTELoss,
    comparison_gradients,
    get_loss,
)
from tests._derivatives import check_grad

LOSS_OBJECTS = [
    GNMDSLoss(),
    CKLLoss(0.1),
    CKLLoss(0.0),
    STELoss(),
    TSTELoss(2.0),
    SOELoss(),
]
IDS = ["gnmds", "ckl", "ckl_mu0", "ste", "tste", "soe"]


def _batch(seed=0, m=40, n=8, p=3, quad=False):
    g = np.random.default_rng(seed)
    X = torch.as_tensor(g.normal(size=(n, p)))
    idx = []
    while len(idx) < m:
        q = g.choice(n, size=4 if quad else 3, replace=False)
        idx.append(q if quad else q[[0, 1, 0, 2]])
    return X, torch.as_tensor(np.array(idx))


def _away_from_kinks(loss, X, Q):
    # The hinge losses are not differentiable where their argument is 0;
    # compare gradients only on comparisons away from it.
    e = X[Q[:, 0::2]] - X[Q[:, 1::2]]
    d = (e * e).sum(-1)
    if isinstance(loss, GNMDSLoss):
        return (d[:, 0] + loss.margin - d[:, 1]).abs() > 1e-3
    if isinstance(loss, SOELoss):
        r = d.sqrt()
        return (r[:, 0] + loss.margin - r[:, 1]).abs() > 1e-3
    return torch.ones(Q.shape[0], dtype=torch.bool)


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=IDS)
@pytest.mark.parametrize("quad", [False, True], ids=["triplets", "quadruplets"])
def test_closed_form_gradient_matches_autograd(loss, quad):
    X, Q = _batch(quad=quad)
    keep = _away_from_kinks(loss, X, Q)
    Q = Q[keep]
    Xq = X[Q]

    def values(Z):
        e = Z[:, 0::2] - Z[:, 1::2]
        d = (e * e).sum(-1)
        return loss.value(d[:, 0], d[:, 1])

    value, grad = comparison_gradients(loss, Xq)
    check_grad(
        values,
        Xq,
        grad,
        autograd_rtol=1e-10,
        autograd_atol=1e-12,
        finite_differences=False,
    )
    torch.testing.assert_close(value, values(Xq))


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=IDS)
def test_closed_form_gradient_matches_finite_differences(loss):
    X, Q = _batch(seed=1, m=12)
    Q = Q[_away_from_kinks(loss, X, Q)]
    Xq = X[Q]
    _, grad = comparison_gradients(loss, Xq)
    # Comparisons are independent: perturb a coordinate in all of them at once.
    check_grad(
        lambda Z: comparison_gradients(loss, Z)[0],
        Xq,
        grad,
        rtol=1e-5,
        atol=1e-7,
        batch_dims=1,
        autograd=False,
    )


@pytest.mark.parametrize("dense", [True, False], ids=["distance_matrix", "incidence"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_full_objective_and_row_gradients_match_autograd(name, dense):
    X, Q = _batch(seed=2, m=60, n=10, p=2)
    comps = Comparisons(Q.numpy()[:, [0, 1, 3]], n_objects=10)  # triplets
    prob = OrdinalProblem(comps, get_loss(name, 2), dtype="float64")
    assert prob.dense  # 10^2 <= 2 * 60: the n x n path by default
    prob.dense = dense
    f, g = prob.value_and_grad(X)
    Xr = X.clone().requires_grad_(True)
    v, _ = comparison_gradients(prob.loss, Xr[prob.quadruplets])
    v.mean().backward()
    assert f == pytest.approx(float(v.mean().detach()), rel=1e-12)
    torch.testing.assert_close(g, Xr.grad, rtol=1e-9, atol=1e-12)
    # row_gradients: weighted sum over two points of the batch's gradient rows
    batch = torch.tensor([3, 7, 7, 11])
    R = prob.rows(batch[None])[0]
    Y = X + 0.1
    Z = torch.stack((X[R], Y[R]), 1)
    w = torch.tensor([0.7, -1.3], dtype=torch.float64)
    got = prob.row_gradients(Z, batch, w)
    _, gx = comparison_gradients(prob.loss, X[prob.quadruplets[batch]])
    _, gy = comparison_gradients(prob.loss, Y[prob.quadruplets[batch]])
    torch.testing.assert_close(got, (0.7 * gx - 1.3 * gy).reshape(-1, 2))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_both_full_passes_agree_on_quadruplets_and_repeated_pairs(name):
    # quadruplets (four objects), pairs asked twice and coincident points
    X, Q = _batch(seed=5, m=300, n=12, p=3, quad=True)
    X[3] = X[4]
    Q = torch.cat((Q, Q[:20]))
    prob = OrdinalProblem(Comparisons(Q.numpy()), get_loss(name, 3), dtype="float64")
    assert prob.dense
    f_dense, g_dense = prob.value_and_grad(X)
    prob.dense = False
    f_sparse, g_sparse = prob.value_and_grad(X)
    assert f_dense == pytest.approx(f_sparse, rel=1e-12)
    torch.testing.assert_close(g_dense, g_sparse, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_losses_stay_finite_at_extreme_distances(loss, dtype):
    # exp(-d) underflows for d ~ 1e3 (float64) and ~ 1e2 (float32); the
    # stable forms never divide by it. Zero distances exercise the floors.
    big = 1e30 if dtype == torch.float64 else 1e18
    d = torch.tensor([0.0, 1e-30, 1e3, 1e4, big], dtype=dtype)
    dn, df = torch.meshgrid(d, d, indexing="ij")
    v = loss.value(dn, df)
    a, c = loss.partials(dn, df)
    for t in (v, a, c):
        assert torch.isfinite(t).all(), (loss, t)
    # coincident points: the gradient of the comparison is finite too
    Xq = torch.zeros(1, 4, 2, dtype=dtype)
    Xq[0, 3] = 1e8
    _, grad = comparison_gradients(loss, Xq)
    assert torch.isfinite(grad).all()


def test_ste_tste_values_at_extremes():
    ste = STELoss()
    d = torch.tensor([1e4, 0.0], dtype=torch.float64)
    assert float(ste.value(d[:1], d[1:])) == pytest.approx(1e4)
    assert float(ste.partials(d[:1], d[1:])[0]) == pytest.approx(1.0)
    assert float(ste.value(d[1:], d[:1])) == 0.0
    t = TSTELoss(1.0)
    # log(1 + (k_far / k_near)) with k = 1 / (1 + d) for alpha = 1
    val = float(t.value(torch.tensor([3.0]), torch.tensor([1.0])))
    assert val == pytest.approx(np.log(1 + 4 / 2))


def test_get_loss_defaults_and_errors():
    assert get_loss("tste", 10).alpha == 9.0
    assert get_loss("tste", 1).alpha == 1.0
    assert get_loss("ckl", mu=0.5).mu == 0.5
    assert get_loss("soe").margin == 0.1 and get_loss("gnmds").margin == 1.0
    with pytest.raises(ValueError, match="'loss' parameter"):
        get_loss("hinge")
    with pytest.raises(ValueError, match="with_dimension"):
        TSTELoss().value(torch.zeros(1), torch.zeros(1))
