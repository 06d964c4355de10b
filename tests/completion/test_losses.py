import numpy as np
import pytest
import torch

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.completion import LOSSES, LogisticLoss, Loss, get_loss
from tests._derivatives import check_grad

D = torch.float64


def _xy(name, n=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 3 * torch.randn(n, generator=g, dtype=D)
    if get_loss(name).binary:
        y = torch.where(torch.randn(n, generator=g, dtype=D) > 0, 1.0, -1.0).to(D)
    else:
        y = torch.randn(n, generator=g, dtype=D)
    return x, y


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_matches_autograd_and_finite_differences(name):
    loss = get_loss(name)
    x, y = _xy(name)
    grad = loss.grad(x, y)
    # elementwise: every entry perturbed at once
    check_grad(lambda z: loss.value(z, y), x, grad, rtol=1e-6, atol=1e-6, batch_dims=1)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_rho_bounds_the_curvature(name):
    loss = get_loss(name)
    x = torch.linspace(-20, 20, 4001, dtype=D)
    for yv in (1.0, -1.0):
        y = torch.full_like(x, yv)
        g = loss.grad(x, y)
        slope = (g[1:] - g[:-1]).abs() / (x[1:] - x[:-1])
        assert float(slope.max()) <= loss.rho + 1e-9


def test_logistic_is_stable_at_extremes():
    loss = LogisticLoss()
    x = torch.tensor([-1e4, 1e4, -800.0, 800.0], dtype=torch.float32)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    v, g = loss.value(x, y), loss.grad(x, y)
    assert torch.isfinite(v).all() and torch.isfinite(g).all()
    assert v[0] == pytest.approx(1e4) and v[1] == 0.0
    assert g[0] == pytest.approx(-1.0) and g[1] == 0.0


def test_label_checks_and_lookup():
    with pytest.raises(DataValidationError, match=r"\+/-1 labels.*loss='square'"):
        LogisticLoss().check_labels(np.array([1.0, 0.0]))
    with pytest.raises(
        DataValidationError,
        match=r"^The logistic loss needs \+/-1 labels, but 2 observed value\(s\) are "
        r"not \+/-1 \(first: entry 1 is ",
    ):
        LogisticLoss().check_labels(np.array([1.0, 0.0, 3.0]))
    get_loss("square").check_labels(np.array([0.3]))
    with pytest.raises(InvalidParameterError, match="'loss' parameter"):
        get_loss("hinge")

    class Custom(Loss):
        rho = 2.0

    c = Custom()
    assert get_loss(c) is c
