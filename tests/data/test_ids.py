"""IdMap: the user's own ids <-> codes 0..n-1, the same with and without pandas."""

from __future__ import annotations

import numpy as np
import pytest

import embedopt.data.ids as ids_module
from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import IdMap


@pytest.fixture(params=["pandas", "numpy"])
def path(request, monkeypatch):
    """Run a test through pandas (where installed) and through NumPy alone."""
    if request.param == "pandas":
        pytest.importorskip("pandas")
    else:
        monkeypatch.setattr(ids_module, "_pandas", lambda: None)
    return request.param


@pytest.mark.parametrize(
    "values",
    [
        ["b", "a", "b", "c"],
        np.array(["b", "a", "b", "c"], dtype=object),
        [193609, 7, 193609, 42],
        np.array([3.0, 1.0, 3.0]),  # whole numbers read as float from a CSV
    ],
)
def test_codes_follow_the_sorted_ids_and_decode_back(path, values):
    id_map, codes = IdMap.fit(values)
    as_ids = np.asarray(values, dtype=object if isinstance(values[0], str) else None)
    expected_ids = np.unique(
        as_ids.astype(str) if isinstance(values[0], str) else as_ids
    )
    assert id_map.ids.tolist() == expected_ids.tolist()
    assert codes.dtype == np.int64
    assert id_map.decode(codes).tolist() == np.asarray(as_ids).tolist()
    np.testing.assert_array_equal(id_map.encode(values), codes)


def test_pandas_and_numpy_give_the_same_map(monkeypatch):
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    values = np.array([f"user{i}" for i in rng.integers(0, 500, 5000)], dtype=object)
    with_pandas = IdMap.fit(values)
    monkeypatch.setattr(ids_module, "_pandas", lambda: None)
    without = IdMap.fit(values)
    assert with_pandas[0] == without[0]
    assert with_pandas[0].ids.dtype == without[0].ids.dtype == object
    np.testing.assert_array_equal(with_pandas[1], without[1])


def test_unknown_ids_raise_with_their_position_or_become_minus_one(path):
    id_map, _ = IdMap.fit(["a", "b"])
    with pytest.raises(
        DataValidationError, match=r"1 id\(s\) unseen.*'z' at position 1"
    ):
        id_map.encode(["a", "z"], what="user ids")
    np.testing.assert_array_equal(id_map.encode(["z", "b"], unknown="missing"), [-1, 1])
    # integers are never strings: nothing matches, nothing is coerced
    np.testing.assert_array_equal(id_map.encode([0, 1], unknown="missing"), [-1, -1])
    with pytest.raises(InvalidParameterError, match="'unknown' parameter of IdMap"):
        id_map.encode(["a"], unknown="nan")


@pytest.mark.parametrize(
    ("values", "match"),
    [
        (["a", 1], "mixes integer and string ids"),
        (np.array(["a", None], dtype=object), "position 1 holds None"),
        ([1.0, np.nan], "missing id .* position 1"),
        ([1.5, 2.0], "fractional"),
        ([True, False], "bools"),
        ([[1, 2]], "1-d"),
        # wrapped onto negative int64 ids before; strings say what to do
        (np.array([2**63 + 5, 7], dtype=np.uint64), "id 9223372036854775813.*str"),
        (np.array([7, 2**64], dtype=object), "id 18446744073709551616"),
        (np.array([-(2**63) - 1, 7], dtype=object), "outside the 64-bit"),
        # the pads of recommend's answers are not ids
        (["a", "", "b"], "holds '' at position 1, the value that pads"),
        ([3, -1, 5], "holds -1 at position 1, the value that pads"),
    ],
)
def test_bad_id_columns_are_refused(path, values, match):
    with pytest.raises(DataValidationError, match=match):
        IdMap.fit(values)


def test_decode_refuses_codes_outside_the_map():
    id_map, _ = IdMap.fit([10, 20])
    with pytest.raises(DataValidationError, match=r"0\.\.1"):
        id_map.decode([2])
    with pytest.raises(DataValidationError, match="integers"):
        id_map.decode([0.0])


def test_identity_maps_and_the_checked_constructor():
    assert IdMap.fit([2, 0, 1])[0].is_identity
    assert not IdMap.fit([0, 2])[0].is_identity
    assert not IdMap.fit(["0", "1"])[0].is_identity
    assert IdMap(["a", "b"]) == IdMap.fit(["b", "a"])[0]
    with pytest.raises(DataValidationError, match="sorted and unique"):
        IdMap(["b", "a"])
    assert len(IdMap([])) == 0 and repr(IdMap([1, 5])) == "IdMap(2 ids)"


def test_the_hash_table_of_a_map_is_built_once_and_freed_with_it():
    pd = pytest.importorskip("pandas")
    import gc

    first = IdMap(np.array(["a", "c", "x"]))
    index = ids_module._hash_index(first.ids, pd)
    assert ids_module._hash_index(first.ids, pd) is index  # kept, not rebuilt
    np.testing.assert_array_equal(first.encode(["x", "a"]), [2, 0])
    key = id(first.ids)
    del first
    gc.collect()
    assert key not in ids_module._INDEXES  # dropped with its array
    # many maps made and freed in turn (their arrays' ids are reused) never
    # answer with another map's table
    for n in range(2, 40):
        m = IdMap(np.arange(n) * 3)
        np.testing.assert_array_equal(m.encode([3 * (n - 1), 0]), [n - 1, 0])
        assert m.encode([3 * n], unknown="missing").tolist() == [-1]
