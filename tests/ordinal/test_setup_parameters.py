"""The setup parameters every ordinal solver passes on by name (issue 21)."""

import inspect

import pytest

from embedopt.ordinal import lbfgs, svrg_sbb
from embedopt.ordinal.baselines import batch_gd, projected_gd, sgd
from embedopt.ordinal.problem import SETUP_PARAMETERS, setup_options


@pytest.mark.parametrize("solver", [svrg_sbb, lbfgs, sgd, batch_gd, projected_gd])
def test_solvers_have_every_setup_parameter(solver):
    # setup_options(locals()) reads these names from the solver's parameters.
    assert set(SETUP_PARAMETERS) <= set(inspect.signature(solver).parameters)


def test_setup_options_takes_the_setup_parameters_in_order():
    params = {name: object() for name in SETUP_PARAMETERS}
    options = setup_options({**params, "max_iter": 3, "run": {}})
    assert list(options) == list(SETUP_PARAMETERS)
    assert all(options[name] is params[name] for name in SETUP_PARAMETERS)
