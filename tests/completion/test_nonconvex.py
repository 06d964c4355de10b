import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.completion import (
    REGULARIZERS,
    CompletionProblem,
    ais_impute,
    dc_completion,
    get_regularizer,
    irnn,
)
from tests._derivatives import autograd_grad
from tests.conftest import random_entries

D = torch.float64


@pytest.mark.parametrize("name", sorted(REGULARIZERS))
def test_weights_are_supergradients_and_nondecreasing(name):
    reg = get_regularizer(name)
    s = torch.tensor([9.0, 4.0, 2.5, 0.7, 0.1], dtype=D)
    w = reg.weights(s)
    assert w.numel() == s.numel() + 1 and w[-1] == 1.0  # rbar'(0) = 1
    assert torch.all(w[1:] >= w[:-1])
    # Away from kinks, the weight is the derivative of rbar.
    grad = autograd_grad(reg.rbar, s)
    kink = torch.isclose(s, torch.tensor(getattr(reg, "theta", -1.0), dtype=D))
    torch.testing.assert_close(w[:-1][~kink], grad[~kink])
    # concavity: rbar(a) <= rbar(b) + w(b) (a - b)
    a, b = torch.tensor([3.0], dtype=D), torch.tensor([1.5], dtype=D)
    if name != "tnn":  # tnn is index-based, not elementwise
        assert reg.rbar(a) <= reg.rbar(b) + reg.weights(b)[0] * (a - b) + 1e-12


def test_get_regularizer_errors():
    with pytest.raises(InvalidParameterError, match="'regularizer' parameter"):
        get_regularizer("l0")


@pytest.fixture(scope="module")
def problem():
    entries, U, V = random_entries(m=40, n=30, rank=3, frac=0.5, noise=0.01, seed=2)
    return CompletionProblem(entries, dtype="float64"), U, V


def _err(res, U, V):
    Uh, s, Vh = res.x
    X = (Uh * s) @ Vh.T
    T = torch.as_tensor(U @ V.T)
    return float(torch.linalg.norm(X - T) / torch.linalg.norm(T))


@pytest.mark.parametrize(
    ("reg", "kw"),
    [
        ("tnn", {"rank": 3}),
        ("capped_l1", {"theta": 5.0}),
        ("lsp", {"theta": 5.0}),
        ("mcp", {"theta": 10.0}),
    ],
)
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_dc_decreases_the_nonconvex_objective_and_beats_nuclear(problem, reg, kw):
    P, U, V = problem
    lam = 2.0
    res = dc_completion(
        P,
        lam=lam,
        regularizer=reg,
        tol=1e-9,
        max_iter=2000,
        outer_tol=1e-8,
        random_state=0,
        **kw,
    )
    obj = res.history["objective"]
    assert np.all(np.diff(obj) <= 1e-6 * np.abs(obj[:-1]))
    nuclear = ais_impute(P, lam=lam, tol=1e-9, max_iter=2000, random_state=0)
    # Less shrinkage of the leading singular values: closer to the truth.
    assert _err(res, U, V) < _err(nuclear, U, V)


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_irnn_reaches_the_dc_objective(problem):
    P, _, _ = problem
    dc = dc_completion(
        P,
        lam=2.0,
        regularizer="lsp",
        theta=5.0,
        tol=1e-10,
        max_iter=3000,
        outer_tol=1e-10,
        random_state=0,
    )
    ir = irnn(
        P,
        lam=2.0,
        regularizer="lsp",
        theta=5.0,
        tol=1e-10,
        max_iter=3000,
        random_state=0,
    )
    assert ir.history["objective"][-1] == pytest.approx(
        dc.history["objective"][-1], rel=1e-4
    )
