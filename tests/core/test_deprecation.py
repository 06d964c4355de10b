"""Renamed parameters keep working for one release, with a FutureWarning."""

import numpy as np
import pytest

from embedopt._core import InvalidParameterError, clone, renamed_parameters
from embedopt.completion import MatrixCompletion, ais_impute
from embedopt.data import make_low_rank_matrix


def test_decorator_renames_and_warns():
    @renamed_parameters(old="new")
    def f(*, new=1):
        return new

    with pytest.warns(FutureWarning, match="'old' parameter of .*f was renamed 'new'"):
        assert f(old=5) == 5
    assert f(new=3) == 3
    with pytest.raises(InvalidParameterError, match="both 'old' and its new name"):
        f(old=1, new=2)


def test_completion_decay_is_now_lam_decay():
    with pytest.warns(FutureWarning, match="'decay' parameter of MatrixCompletion"):
        est = MatrixCompletion(decay=0.5)
    assert est.lam_decay == 0.5 and "decay" not in est.get_params()
    assert clone(est).lam_decay == 0.5
    prob = make_low_rank_matrix(40, rank=2, random_state=0)
    with pytest.warns(FutureWarning, match="renamed 'lam_decay'"):
        old = ais_impute(prob.observed, 2.0, decay=0.5, random_state=0)
    new = ais_impute(prob.observed, 2.0, lam_decay=0.5, random_state=0)
    np.testing.assert_array_equal(old.history["objective"], new.history["objective"])


def test_two_tower_max_iter_is_now_n_steps():
    from embedopt.quantization import TwoTowerRetrieval

    with pytest.warns(FutureWarning, match="renamed 'n_steps'"):
        est = TwoTowerRetrieval(max_iter=10)
    assert est.n_steps == 10 and "max_iter" not in est.get_params()
