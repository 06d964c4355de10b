"""Every ``>>>`` example in a docstring of the package runs and prints what it
shows (doctest), so examples in the API reference cannot rot."""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests._package import modules


def _examples(name: str) -> list[doctest.DocTest]:
    """The docstring examples of the objects defined in module ``name``."""
    module = importlib.import_module(name)
    return [test for test in doctest.DocTestFinder().find(module) if test.examples]


MODULES = [m.__name__ for m in modules() if _examples(m.__name__)]


def test_the_package_has_docstring_examples():
    assert len(MODULES) >= 10


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    for test in _examples(name):
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0
    assert failed == 0, f"{failed} of {attempted} docstring examples in {name} fail"
