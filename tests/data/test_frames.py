"""data.frames: frames and string-id columns read into codes + IdMaps, once."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.data import IdMap
from embedopt.data.frames import (
    decode_ids,
    encode_ids,
    frame_columns,
    is_frame,
    is_id_column,
    map_id_columns,
    pair_columns,
    public_ids,
)


def test_string_and_object_columns_are_ids_numbers_are_positions():
    assert is_id_column(["a", "b"])
    assert is_id_column(np.array([1, "a"], dtype=object))
    assert not is_id_column(np.arange(3))
    assert not is_id_column([1.0, 2.0])
    assert not is_id_column(np.array([True]))
    assert not is_id_column(3)


def test_only_id_columns_are_mapped_unless_every():
    cols, maps = map_id_columns([["b", "a", "b"], [5, 3, 5]], ("user", "item"))
    np.testing.assert_array_equal(cols[0], [1, 0, 1])
    assert cols[1] == [5, 3, 5] and maps[1] is None  # positions, untouched
    cols, maps = map_id_columns([["b", "a"], [5, 3]], ("user", "item"), every=True)
    np.testing.assert_array_equal(cols[1], [1, 0])
    assert maps[1].ids.tolist() == [3, 5]


def test_a_shared_map_covers_every_column():
    cols, maps = map_id_columns(
        [["x", "y"], ["z", "x"], ["y", "w"]], ("head", "closer", "farther"), shared=True
    )
    assert maps[0] is maps[1] is maps[2]
    assert maps[0].ids.tolist() == ["w", "x", "y", "z"]
    np.testing.assert_array_equal(np.stack(cols, 1), [[1, 3, 2], [2, 1, 0]])
    with pytest.raises(DataValidationError, match="mix integer and string"):
        map_id_columns([["x"], [1], ["y"]], ("head", "closer", "farther"), shared=True)


@pytest.mark.parametrize(
    ("column", "match"),
    [
        (np.array(["a", None], dtype=object), r"column 0 \(user ids\).*None"),
        (np.array(["a", 1], dtype=object), r"column 0 \(user ids\) mixes"),
    ],
)
def test_bad_id_columns_name_the_column(column, match):
    with pytest.raises(DataValidationError, match=match):
        map_id_columns([column, ["i", "j"]], ("user", "item"))


def test_encode_raises_naming_the_id_and_the_parameter_or_marks_minus_one():
    id_map, _ = IdMap.fit(["a", "b"])
    with pytest.raises(DataValidationError, match=r"'z' at position 1.*unknown='nan'"):
        encode_ids(["a", "z"], id_map, what="user ids", owner="Model")
    codes = encode_ids(["a", "z"], id_map, what="user ids", unknown="fallback")
    np.testing.assert_array_equal(codes, [0, -1])
    # a scalar and an (n, 1) column are one column
    np.testing.assert_array_equal(encode_ids(np.array([["b"]]), id_map, what="x"), [1])
    with pytest.raises(DataValidationError, match="1-d"):
        encode_ids(np.array([["a", "b"]] * 2), id_map, what="x")


def test_public_ids_are_int64_or_str_and_decode_keeps_pads():
    ints, _ = IdMap.fit([193609, 7])
    strs, _ = IdMap.fit(["b", "a"])
    assert public_ids(ints).dtype == np.int64
    assert public_ids(strs).dtype.kind == "U"
    assert public_ids(None) is None
    np.testing.assert_array_equal(
        decode_ids([[1, -1]], public_ids(ints)), [[193609, -1]]
    )
    assert decode_ids([1, -1], public_ids(strs)).tolist() == ["b", ""]
    np.testing.assert_array_equal(decode_ids([2, -1], None), [2, -1])


def test_tuples_of_string_ids_are_pairs_without_pandas():
    (users, items, values), maps = pair_columns(
        (["u2", "u1"], [4, 3], [1.0, 2.0]), owner="M"
    )
    np.testing.assert_array_equal(users, [1, 0])
    assert items == [4, 3] and maps[1] is None and values == [1.0, 2.0]
    assert pair_columns((np.arange(2), np.arange(2)), owner="M") is None


def test_frames_are_read_by_position():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"r": [4.0, 3.5], "i": ["x", "y"], "u": ["a", "b"]})
    assert is_frame(df) and not is_frame(df.to_numpy())
    cols, values = frame_columns(df[["u", "i", "r"]], ("user", "item"), owner="M")
    assert cols[0].tolist() == ["a", "b"] and values.tolist() == [4.0, 3.5]
    with pytest.raises(DataValidationError, match=r"\(user, item, value\); got 2"):
        frame_columns(df[["u", "i"]], ("user", "item"), owner="M")
    with pytest.raises(DataValidationError, match="sample_weight"):
        pair_columns(df, owner="M")
    # nullable numbers: a missing value is NaN (refused downstream)
    nullable = pd.DataFrame(
        {"u": [1, 2], "i": [1, 2], "r": pd.array([1.0, None], "Float64")}
    )
    assert np.isnan(frame_columns(nullable, ("user", "item"), owner="M")[1][1])
    text = df.assign(r=["x", "y"])[["u", "i", "r"]]
    with pytest.raises(DataValidationError, match=r"value column 'r'.*numbers"):
        frame_columns(text, ("user", "item"), owner="M")
    # numbers written as strings: refused as the tuple form refuses them
    # (pandas alone would read "3" as 3.0)
    digits = df.assign(r=pd.Series(["4", "3"], dtype=object))[["u", "i", "r"]]
    with pytest.raises(DataValidationError, match=r"astype\(float\)"):
        frame_columns(digits, ("user", "item"), owner="M")
    mixed = df.assign(r=pd.Series([4, 3.5], dtype=object))[["u", "i", "r"]]
    assert frame_columns(mixed, ("user", "item"), owner="M")[1].tolist() == [4, 3.5]


class _ForeignFrame:
    """A frame of another library: only the interchange protocol."""

    def __dataframe__(self, *args, **kwargs):
        raise AssertionError("not read in this test")


def test_another_librarys_frame_without_pandas_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails
    assert is_frame(_ForeignFrame())
    with pytest.raises(DataValidationError, match="pip install pandas"):
        frame_columns(_ForeignFrame(), ("user", "item"), owner="MatrixCompletion")


def test_pandas_is_never_imported_to_look_for_a_frame(monkeypatch):
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert not is_frame(np.zeros((2, 3)))
    assert not is_frame(("a", "b"))
    assert "pandas" not in sys.modules
