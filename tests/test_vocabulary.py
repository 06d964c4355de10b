"""docs/vocabulary.md names every estimator parameter, and only real ones.

The vocabulary is the one place that says what a parameter name means across
the library (``max_iter`` outer iterations, ``n_steps`` a fixed budget, ...).
A parameter added to an estimator's ``_parameter_constraints`` without a row
there fails here, and so does a row whose name no public callable takes.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from embedopt._core import BaseEstimator
from tests._package import public_names

VOCABULARY = Path(__file__).resolve().parents[1] / "docs" / "vocabulary.md"


PUBLIC = [obj for _, _, obj in public_names()]


def _estimators() -> list[type]:
    found = {
        obj.__qualname__: obj
        for obj in PUBLIC
        if inspect.isclass(obj)
        and issubclass(obj, BaseEstimator)
        and obj is not BaseEstimator
    }
    return sorted(found.values(), key=lambda cls: cls.__name__)


def _public_parameter_names() -> set[str]:
    """Parameter names of every public function, method and class."""
    names: set[str] = set()
    for obj in PUBLIC:
        members = [obj]
        if inspect.isclass(obj):
            members += [m for m in vars(obj).values() if inspect.isfunction(m)]
        for member in members:
            try:
                names |= set(inspect.signature(member).parameters)
            except (TypeError, ValueError):
                continue
    return names


def _documented() -> set[str]:
    """Backticked names in the first column of the vocabulary's tables."""
    names: set[str] = set()
    for line in VOCABULARY.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first = line.split("|")[1]
            names |= set(re.findall(r"`([a-z_][a-z0-9_]*)`", first))
    return names


ESTIMATORS = _estimators()
DOCUMENTED = _documented()


def test_every_estimator_is_found():
    assert len(ESTIMATORS) >= 8


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_every_parameter_has_a_row(cls):
    missing = sorted(set(cls._parameter_constraints) - DOCUMENTED)
    assert not missing, (
        f"docs/vocabulary.md has no row for {cls.__name__}'s parameters {missing}"
    )


def test_every_row_names_a_real_parameter():
    stale = sorted(DOCUMENTED - _public_parameter_names())
    assert not stale, f"docs/vocabulary.md documents unknown parameters {stale}"
