"""load_libsvm: sparse features and labels, and clear errors on malformed files."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.data import load_libsvm
from tests.conftest import data_dir, requires_dataset


def _write(tmp_path, text, name="toy"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_features_and_labels(tmp_path):
    path = _write(tmp_path, "+1 1:0.5 3:1\n-1 2:2 # a comment\n\n+1\n")
    X, y = load_libsvm(path)
    np.testing.assert_array_equal(
        X.toarray(), [[0.5, 0.0, 1.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    )
    assert y.dtype == np.int64 and list(y) == [1, -1, 1]
    X, y = load_libsvm(path, 5, n_rows=2)
    assert X.shape == (2, 5) and list(y) == [1, -1]


def test_real_valued_labels_stay_floats(tmp_path):
    _, y = load_libsvm(_write(tmp_path, "0.5 1:1\n2 1:2\n"))
    assert y.dtype == np.float64 and list(y) == [0.5, 2.0]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("+1 1:1 2:1\n-1 0:1\n", "line 2: not a LIBSVM line"),  # 0 is not 1-based
        ("+1 1:1\n-1 7:1\n", "line 2: .*1 <= k <= 5"),
        ("+1 1:x\n", "line 1"),
        ("+1 1=1\n", "line 1"),
        ("label 1:1\n", "line 1"),
        ("", "no patterns"),
        ("# only a comment\n", "no patterns"),
    ],
)
def test_malformed_files_name_themselves_and_the_line(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(DataValidationError, match=match) as exc:
        load_libsvm(path, 5)
    assert "toy" in str(exc.value)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        load_libsvm(tmp_path / "nope")


@requires_dataset("libsvm-adult")
def test_a1a():
    X, y = load_libsvm(data_dir() / "libsvm-adult" / "a1a", 123)
    assert X.shape == (1605, 123) and set(np.unique(y)) == {-1, 1}
    assert np.all(X.data == 1.0)
