"""Armijo gradient descent: convergence, monotone decrease, diagonal scaling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embedopt._core import InvalidParameterError
from embedopt.optim import AutogradObjective, armijo_gradient_descent

# An ill-conditioned quadratic: diagonal scaling by its exact diagonal makes it
# perfectly conditioned.
_D = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)
_QUAD = AutogradObjective(lambda x: 0.5 * (_D * (x - 1) ** 2).sum())


def test_converges_and_decreases_monotonically():
    res = armijo_gradient_descent(_QUAD, torch.zeros(3, dtype=torch.float64), tol=1e-8)
    assert res.stop_reason == "tol"
    assert torch.allclose(res.x, torch.ones(3, dtype=torch.float64), atol=1e-7)
    f = np.asarray(res.history["objective"])
    assert (np.diff(f) <= 0).all()


def test_exact_diagonal_scaling_needs_far_fewer_iterations():
    x0 = torch.zeros(3, dtype=torch.float64)
    plain = armijo_gradient_descent(_QUAD, x0, tol=1e-8, max_iter=5000)
    scaled = armijo_gradient_descent(_QUAD, x0, tol=1e-8, preconditioner=_D)
    assert scaled.n_iter * 5 < plain.n_iter
    assert scaled.n_iter <= 5


def test_tuple_points_and_callable_preconditioner():
    obj = AutogradObjective(lambda x: ((x[0] - 2) ** 2).sum() + (x[1] ** 4).sum())
    x0 = (torch.zeros(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    res = armijo_gradient_descent(
        obj,
        x0,
        preconditioner=lambda x: (torch.full_like(x[0], 2.0), torch.ones_like(x[1])),
        max_iter=2000,
        tol=1e-6,
    )
    assert torch.allclose(res.x[0], torch.full((2,), 2.0, dtype=torch.float64))
    assert float(res.history["objective"][-1]) < 1e-6


def test_bad_parameters_are_refused():
    with pytest.raises(InvalidParameterError, match="initial_step"):
        armijo_gradient_descent(_QUAD, torch.zeros(3), initial_step=0.0)
    with pytest.raises(InvalidParameterError, match="growth"):
        armijo_gradient_descent(_QUAD, torch.zeros(3), growth=0.5)
