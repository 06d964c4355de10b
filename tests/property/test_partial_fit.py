"""Property-based bad input for TwoTowerModel.partial_fit and
recommend_for_features (issue 23): the library's own error or a valid,
finite result, never an internal error; junk is refused."""

from __future__ import annotations

import copy
import functools
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from embedopt.similarity import TwoTowerModel  # noqa: E402

from ._harness import call, check_finite, examples  # noqa: E402
from ._strategies import bad_indices, junk  # noqa: E402

_rng = np.random.default_rng(0)
_U, _I = _rng.integers(0, 20, 150), _rng.integers(0, 12, 150)
_G = np.arange(20) % 3


@functools.cache
def _fitted(features: bool) -> TwoTowerModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = TwoTowerModel(3, hidden=4, max_iter=2, random_state=0, device="cpu")
        return model.fit((_U, _I), user_features={"g": _G} if features else None)


def _add(model, X, **kw):
    model = copy.deepcopy(model)  # the cached model stays as fitted
    model.partial_fit(X, **kw)
    check_finite(model.user_embeddings_)
    check_finite(model.item_embeddings_)
    return model


@examples(0.5)
@given(st.data())
def test_partial_fit_bad_pairs(data):
    side = data.draw(st.integers(0, 1))
    valid = np.array([3, 20, 21]) if side == 0 else np.array([1, 12, 5])
    bad = data.draw(bad_indices(valid, 22 if side == 0 else 13))
    other = np.array([0, 1, 2])
    X = (bad.value, other) if side == 0 else (other, bad.value)
    call("TwoTowerModel.partial_fit", "data", lambda: _add(_fitted(False), X))


@examples(0.5)
@given(junk())
def test_partial_fit_junk_is_refused(bad):
    call(
        "TwoTowerModel.partial_fit",
        "data",
        lambda: _add(_fitted(False), bad.value),
        must_refuse=True,
        label=bad.label,
    )


@examples(0.5)
@given(bad_indices(np.array([0, 2, 1]), 3))
def test_features_of_new_rows_and_cold_users(bad):
    X = (np.array([20, 21, 22]), np.array([0, 1, 2]))
    fitted = _fitted(True)
    call(
        "TwoTowerModel.partial_fit",
        "features",
        lambda: _add(fitted, X, user_features={"g": bad.value}),
    )
    call(
        "TwoTowerModel.recommend_for_features",
        "features",
        lambda: check_finite(fitted.recommend_for_features({"g": bad.value}, 2)[1]),
    )
