"""The signed-network loader: the removal rule, the file format, the real data."""

import numpy as np
import pytest

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import SignedNetwork, load_bitcoin_alpha
from tests.conftest import requires_dataset

HEADER = "source,target,weight,timestamp"


def _write(folder, lines) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "soc-sign-bitcoinalpha.csv").write_text("\n".join(lines) + "\n")


def _edges(tmp_path, edges, **kwargs) -> SignedNetwork:
    _write(
        tmp_path / "signed-bitcoin-alpha",
        [HEADER] + [f"{s},{t},{w},{1000 + k}" for k, (s, t, w) in enumerate(edges)],
    )
    return load_bitcoin_alpha(tmp_path, **kwargs)


def test_rows_are_raters_columns_rated_signs_and_raw_values_kept(tmp_path):
    edges = [(7, 1, 10), (7, 2, -3), (9, 1, 2), (9, 2, -10), (9, 7, 1)]
    net = _edges(tmp_path, edges, min_observations=1)
    assert net.entries.shape == (2, 3)  # sources {7, 9} x targets {1, 2, 7}
    np.testing.assert_array_equal(net.source_ids, [7, 9])
    np.testing.assert_array_equal(net.target_ids, [1, 2, 7])
    e = net.entries
    got = {
        (int(net.source_ids[i]), int(net.target_ids[j])): v
        for i, j, v in zip(e.rows, e.cols, e.values, strict=True)
    }
    assert got == {(s, t): float(np.sign(w)) for s, t, w in edges}
    # weights and timestamps follow the order of the entries
    for i, j, w, ts in zip(e.rows, e.cols, net.weights, net.timestamps, strict=True):
        k = edges.index((int(net.source_ids[i]), int(net.target_ids[j]), int(w)))
        assert ts == 1000 + k
    assert net.n_removed == 0 and net.name == "bitcoin-alpha"


def test_min_observations_counts_given_for_rows_received_for_columns(tmp_path):
    # user 5 gives one rating (row dropped); user 3 receives one (column dropped)
    edges = [(1, 2, 1), (1, 4, 1), (6, 2, -1), (6, 4, 1), (5, 2, 1), (1, 3, 1)]
    net = _edges(tmp_path, edges)
    np.testing.assert_array_equal(net.source_ids, [1, 6])
    np.testing.assert_array_equal(net.target_ids, [2, 4])
    assert net.entries.nnz == 4 and net.n_removed == 2
    # applied once, on the file's counts: column 2 keeps the counts it had
    assert _edges(tmp_path, edges, min_observations=1).entries.nnz == 6


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["source,target,rating"], "expected format"),
        ([HEADER, "1,2,x,5"], "expected format"),
        ([HEADER, "1,2,3"], "expected format"),
        ([HEADER, "1.5,2,3,5"], "source ids must be integers"),
        ([HEADER, "1,2,0,5", "1,3,1,5"], "weight 0"),
        ([HEADER], "no edges"),
    ],
)
def test_malformed_files_name_themselves(tmp_path, lines, match):
    _write(tmp_path / "signed-bitcoin-alpha", lines)
    with pytest.raises(DataValidationError, match=match):
        load_bitcoin_alpha(tmp_path, min_observations=1)


def test_nothing_left_and_bad_parameters_and_missing_files(tmp_path):
    with pytest.raises(DataValidationError, match="lower min_observations"):
        _edges(tmp_path, [(1, 2, 1), (3, 4, -1)])
    with pytest.raises(InvalidParameterError, match="min_observations"):
        load_bitcoin_alpha(tmp_path, min_observations=0)
    with pytest.raises(FileNotFoundError, match="EMBEDOPT_DATA"):
        load_bitcoin_alpha(tmp_path / "nowhere")


@requires_dataset("signed-bitcoin-alpha")
def test_bitcoin_alpha_real():
    everything = load_bitcoin_alpha(min_observations=1)
    assert everything.entries.nnz == 24_186
    assert np.union1d(everything.source_ids, everything.target_ids).size == 3_783
    assert set(np.unique(everything.weights)) <= set(range(-10, 11)) - {0}
    net = load_bitcoin_alpha()
    assert net.entries.shape == (2105, 2288) and net.entries.nnz == 21_551
    assert net.n_removed == 24_186 - 21_551
    assert set(np.unique(net.entries.values)) == {-1.0, 1.0}
    assert abs(np.mean(net.entries.values > 0) - 0.9326) < 1e-4
