import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.metrics import accuracy, mae, nmse, nmse_lowrank, rmse


def test_basic_metrics():
    assert rmse([1, 2], [1, 4]) == pytest.approx(np.sqrt(2))
    assert mae([1, 2], [1, 4]) == pytest.approx(1.0)
    assert nmse([3, 4], [3, 5]) == pytest.approx(1 / 5)
    assert accuracy([1, -1, 1], [0.3, -2.0, -0.1]) == pytest.approx(2 / 3)
    with pytest.raises(DataValidationError):
        rmse([1, 2], [1])
    with pytest.raises(DataValidationError):
        rmse([], [])


def test_nmse_lowrank_matches_dense():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((15, 3)), rng.standard_normal((12, 3))
    At, Bt = rng.standard_normal((15, 2)), rng.standard_normal((12, 2))
    X, T = A @ B.T, At @ Bt.T
    mask = rng.random((15, 12)) < 0.3
    rows, cols = np.nonzero(mask)
    want = np.linalg.norm((X - T)[~mask]) / np.linalg.norm(T[~mask])
    assert nmse_lowrank(A, B, At, Bt, exclude=(rows, cols)) == pytest.approx(want)
    assert nmse_lowrank(A, B, At, Bt) == pytest.approx(
        np.linalg.norm(X - T) / np.linalg.norm(T)
    )
