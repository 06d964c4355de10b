"""Interactions and side features: parsing and validation errors."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt import DataValidationError
from embedopt.data import (
    Interactions,
    ObservedEntries,
    SideFeatures,
    as_interactions,
    as_side_features,
)


def test_tuple_interactions_infer_or_check_the_shape():
    d = as_interactions((np.array([0, 2, 1], np.int32), [1, 0, 3]))
    assert isinstance(d, Interactions) and d.shape == (3, 4) and len(d) == 3
    assert d.users.dtype == np.int64 and d.items.dtype == np.int64
    assert d.values is None and (d.n_users, d.n_items) == (3, 4)
    d = as_interactions(([0, 2], [1, 0], [5.0, 3]), shape=[10, 6])
    assert d.shape == (10, 6)
    np.testing.assert_array_equal(d.values, [5.0, 3.0])
    assert as_interactions(d) is d


def test_observed_entries_keep_their_own_shape():
    obs = ObservedEntries.from_coo([0, 1], [2, 0], [1.0, 4.0], shape=(5, 3))
    d = as_interactions(obs, shape=(2, 3))
    assert d.shape == (5, 3)
    np.testing.assert_array_equal(d.users, [0, 1])
    np.testing.assert_array_equal(d.items, [2, 0])
    np.testing.assert_array_equal(d.values, [1.0, 4.0])
    tensor = ObservedEntries(np.array([[0, 1, 2]]), [1.0], (2, 2, 3))
    with pytest.raises(DataValidationError, match="3-way tensor"):
        as_interactions(tensor)


@pytest.mark.parametrize(
    ("X", "shape", "match"),
    [
        ([[0, 1], [1, 0]], None, "ObservedEntries or a tuple"),
        ((np.array([0, 1]),), None, "ObservedEntries or a tuple"),
        (([0, 1], [1]), None, "same length"),
        (([], []), None, "non-empty"),
        ((np.zeros((2, 2), int), np.zeros((2, 2), int)), None, "1-D"),
        (([0.0, 1.0], [1, 0]), None, "must be integers"),
        (([0, -1], [1, 0]), None, "non-negative; got min user -1"),
        (([0, 3], [1, 0]), (3, 2), "exceed shape"),
        (([0, 1], [1, 0]), (2,), "pair of positive ints"),
        (([0, 1], [1, 0]), (0, 2), "pair of positive ints"),
        (([0, 1], [1, 0], [1.0]), None, "one per pair"),
        (([0, 1], [1, 0], ["a", "b"]), None, "one per pair"),
        (([0, 1], [1, 0], [1.0, np.nan]), None, "pair 1 has NaN"),
    ],
)
def test_bad_interactions_are_named(X, shape, match):
    with pytest.raises(DataValidationError, match=match):
        as_interactions(X, shape)


def test_side_features_split_by_kind_in_dict_order():
    tags = np.arange(8, dtype=np.float64).reshape(4, 2)
    f = as_side_features(
        {
            "genre": [0, 2, 1, 2],
            "tags": tags,
            "flag": np.array([True, False, True, True]),
            "more": np.ones((4, 1), np.float32),
        },
        4,
        "item",
    )
    assert isinstance(f, SideFeatures)
    assert f.n == 4 and f.n_categorical == 2 and f.n_dense == 3
    assert f.cardinalities == (3, 2)
    np.testing.assert_array_equal(f.categorical[:, 0], [0, 2, 1, 2])
    np.testing.assert_array_equal(f.categorical[:, 1], [1, 0, 1, 1])
    assert f.categorical.dtype == np.int64 and f.dense.dtype == np.float32
    np.testing.assert_array_equal(f.dense[:, :2], tags)
    assert as_side_features(f, 4) is f
    empty = as_side_features(None, 3, "user")
    assert empty.categorical.shape == (3, 0) and empty.dense.shape == (3, 0)
    assert empty.cardinalities == ()


@pytest.mark.parametrize(
    ("feats", "match"),
    [
        ({"a": np.zeros(3, int)}, "user feature 'a' has 3 rows; expected 5"),
        ({"a": np.int64(2)}, "user feature 'a' has 0 rows"),
        ({"a": np.array([0, 1, -1, 0, 0])}, "negative category codes"),
        ({"a": np.full((5, 2), np.nan)}, "NaN/inf"),
        ({"a": np.zeros(5)}, "1-D integer codes or a 2-D float"),
        ({"a": np.zeros((5, 2), int)}, "1-D integer codes or a 2-D float"),
        ([np.zeros(5, int)], "must be a dict"),
    ],
)
def test_bad_side_features_are_named(feats, match):
    with pytest.raises(DataValidationError, match=match):
        as_side_features(feats, 5, "user")
    ok = as_side_features({"a": np.zeros(4, int)}, 4, "user")
    with pytest.raises(DataValidationError, match="user features have 4 rows"):
        as_side_features(ok, 5, "user")
