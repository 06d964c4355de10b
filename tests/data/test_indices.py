"""Indices that cannot be positions, and sizes inflated by a stray index."""

import warnings

import numpy as np
import pytest

from embedopt import DataValidationError, DataWarning
from embedopt.data import Comparisons, ObservedEntries, as_interactions

_INT64_MAX = np.iinfo(np.int64).max


def _stray(n_rows=300, big=10**6):
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 100, n_rows), rng.integers(0, 100, n_rows)
    lin = np.unique(rows * 100 + cols)
    rows, cols = lin // 100, lin % 100
    rows[-1] = big
    return rows, cols


def test_one_stray_index_warns_with_the_inferred_size():
    rows, cols = _stray()
    with pytest.warns(DataWarning) as record:
        obs = ObservedEntries((rows, cols), np.ones(rows.size))
    assert obs.shape == (10**6 + 1, 100)
    text = str(record[0].message)
    assert "inferred size is 1000001," in text and "far above the next, 99" in text
    assert "shape=" in text and "np.unique" in text


def test_dense_ids_or_an_explicit_size_do_not_warn():
    rows, cols = _stray()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        ObservedEntries((rows, cols), np.ones(rows.size), (10**6 + 1, 100))
        ids = np.arange(20_000)  # large, but every index occurs
        ObservedEntries((ids, ids % 7), np.ones(ids.size))
        Comparisons(np.c_[ids[:-2], ids[1:-1], ids[2:]])


def test_comparisons_and_interactions_warn_too():
    T = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 50_000]])
    with pytest.warns(DataWarning, match=r"object indices reach 50000.*n_objects="):
        Comparisons(T)
    with pytest.warns(DataWarning, match="item indices reach 50000, so the inferred"):
        as_interactions(([0, 1, 2], [0, 1, 50_000]))


def test_int64_max_is_no_position():
    rows = np.array([0, 1, _INT64_MAX])
    with pytest.raises(DataValidationError, match=r"largest int64.*sentinel"):
        ObservedEntries((rows, [0, 1, 2]), [1.0, 2.0, 3.0])
    with pytest.raises(DataValidationError, match="largest object index is 9223"):
        Comparisons([[0, 1, _INT64_MAX]])
    with pytest.raises(DataValidationError, match="largest int64"):
        as_interactions((rows, np.array([0, 1, 2])))


def test_uint64_above_int64_is_refused_not_wrapped():
    rows = np.array([0, 1, 2**63 + 5], dtype=np.uint64)
    with pytest.raises(DataValidationError, match=r"9223372036854775813 \(uint64\)"):
        ObservedEntries((rows, np.array([0, 1, 2], dtype=np.uint64)), [1.0, 2, 3])
    with pytest.raises(DataValidationError, match="must fit in int64"):
        Comparisons(np.array([[0, 1, 2**63 + 5]], dtype=np.uint64))
    with pytest.raises(DataValidationError, match="must fit in int64"):
        as_interactions((rows, np.array([0, 1, 2], dtype=np.uint64)))
    # unsigned indices that fit are fine
    small = np.array([0, 1], np.uint64), np.array([1, 0], np.uint8)
    ok = ObservedEntries(small, [1, 2])
    assert ok.shape == (2, 2)


def test_boolean_indices_are_refused_clearly():
    mask = np.array([True, False, True])
    with pytest.raises(DataValidationError, match=r"got booleans.*flatnonzero"):
        ObservedEntries((mask, mask), [1.0, 2.0, 3.0])
    with pytest.raises(DataValidationError, match="got booleans"):
        Comparisons(np.ones((4, 3), dtype=bool))
    with pytest.raises(DataValidationError, match="must be integers"):
        as_interactions((mask, mask))


def test_shapes_beyond_int64_are_checked_for_duplicates_without_overflow():
    big = (2**40, 2**40)  # 2**80 positions: no linear index fits in int64
    rows, cols = np.array([0, 5, 5]), np.array([1, 2, 2])
    with pytest.raises(DataValidationError, match=r"1 duplicate position.*\(5, 2\)"):
        ObservedEntries((rows, cols), [1.0, 2.0, 3.0], big)
    obs = ObservedEntries((rows[:2], cols[:2]), [1.0, 2.0], big)
    with pytest.raises(DataValidationError, match="exceeds int64"):
        obs.aggregate_duplicates()


@pytest.mark.parametrize("value", [1e300, 2.0**63, -1e300, np.inf])
def test_float_indices_beyond_int64_are_refused_with_their_value(value):
    rows = np.array([0.0, 1.0, value])
    with pytest.raises(DataValidationError, match="below 2\\*\\*63; entry 2"):
        ObservedEntries((rows, np.array([0.0, 1.0, 2.0])), [1.0, 2.0, 3.0])
