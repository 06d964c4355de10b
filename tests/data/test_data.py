import numpy as np
import pytest
import scipy.sparse as sp

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import (
    ObservedEntries,
    as_observed_entries,
    kfold_entries,
    load_movielens,
    make_low_rank_matrix,
    sample_positions,
    split_entries,
)
from tests.conftest import requires_dataset


def test_from_coo_infers_shape():
    obs = ObservedEntries.from_coo([0, 2], [1, 3], [1.0, 2.0])
    assert obs.shape == (3, 4) and obs.nnz == 2 and obs.ndim == 2


def test_from_scipy_and_dense_agree():
    A = np.array([[1.0, np.nan], [np.nan, 0.0]])
    d = ObservedEntries.from_dense(A)
    s = ObservedEntries.from_scipy(
        sp.coo_matrix(([1.0, 0.0], ([0, 1], [0, 1])), shape=(2, 2))
    )
    assert d.nnz == 2 and s.nnz == 2  # explicit zero is observed
    np.testing.assert_array_equal(d.values, s.values)
    assert s.to_scipy().shape == (2, 2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(indices=([0, 1], [0, 1]), values=[1.0, np.nan], shape=(2, 2)), "NaN"),
        (
            dict(indices=([0, 1], [0, 1]), values=[1.0, np.inf], shape=(2, 2)),
            "infinite",
        ),
        (dict(indices=([0, -1], [0, 1]), values=[1.0, 2.0], shape=(2, 2)), "negative"),
        (
            dict(indices=([0, 5], [0, 1]), values=[1.0, 2.0], shape=(2, 2)),
            "out of range",
        ),
        (
            dict(indices=([0, 0], [1, 1]), values=[1.0, 2.0], shape=(2, 2)),
            "duplicate.*aggregate_duplicates",
        ),
        (dict(indices=([0.5, 1], [0, 1]), values=[1.0, 2.0], shape=(2, 2)), "integers"),
        (dict(indices=([0, 1], [0, 1]), values=[1.0], shape=(2, 2)), "one value"),
        (dict(indices=([], []), values=[], shape=(2, 2)), "empty"),
        (dict(indices=([0], [0]), values=[1.0], shape=(2, 2, 2)), "modes"),
        (dict(indices=([0, 1], [0]), values=[1.0], shape=(2, 2)), "same length"),
    ],
)
def test_bad_entries_raise_clear_errors(kwargs, match):
    with pytest.raises(DataValidationError, match=match):
        ObservedEntries(**kwargs)


def test_aggregate_duplicates():
    obs = ObservedEntries(
        ([0, 0, 1], [1, 1, 0]), [1.0, 3.0, 5.0], (2, 2), validate=False
    )
    for how, want in [
        ("mean", 2.0),
        ("sum", 4.0),
        ("first", 1.0),
        ("last", 3.0),
        ("max", 3.0),
        ("min", 1.0),
    ]:
        agg = obs.aggregate_duplicates(how)
        assert agg.nnz == 2
        assert agg.values[np.flatnonzero((agg.rows == 0) & (agg.cols == 1))[0]] == want


def test_as_observed_entries_inputs():
    assert as_observed_entries(([0, 1], [1, 0], [1.0, 2.0])).nnz == 2
    assert as_observed_entries(np.array([[1.0, np.nan]])).nnz == 1
    assert as_observed_entries(sp.csr_matrix(np.eye(2))).nnz == 2
    with pytest.raises(DataValidationError, match="cannot read input"):
        as_observed_entries("nope")
    with pytest.raises(DataValidationError, match="tuple"):
        as_observed_entries((1, 2, 3, 4))
    obs = as_observed_entries(([0], [0], [1.0]), shape=(3, 3))
    assert obs.shape == (3, 3)
    with pytest.raises(DataValidationError, match="does not match"):
        as_observed_entries(obs, shape=(4, 4))


def test_split_and_kfold_partition():
    obs = make_low_rank_matrix(30, rank=2, n_observed=200, random_state=0).observed
    parts = split_entries(obs, (0.5, 0.25, 0.25), random_state=0)
    assert [p.nnz for p in parts] == [100, 50, 50]
    lin = np.concatenate([p.rows * 30 + p.cols for p in parts])
    assert np.unique(lin).size == 200
    with pytest.raises(InvalidParameterError):
        split_entries(obs, (0.5, 0.6))
    folds = list(kfold_entries(obs, 5, random_state=0))
    assert len(folds) == 5
    tests = np.concatenate([te.rows * 30 + te.cols for _, te in folds])
    assert np.unique(tests).size == 200
    for tr, te in folds:
        assert tr.nnz + te.nnz == 200


def test_make_low_rank_matrix_paper_defaults():
    prob = make_low_rank_matrix(100, random_state=0)
    assert prob.observed.nnz == round(15 * 100 * np.log(100))
    assert prob.U.shape == (100, 5)
    resid = prob.observed.values - prob.truth_at(prob.observed.rows, prob.observed.cols)
    assert abs(resid.std() - 0.05) < 0.005
    a = make_low_rank_matrix(50, random_state=1).observed.values
    b = make_low_rank_matrix(50, random_state=1).observed.values
    np.testing.assert_array_equal(a, b)


def test_sample_positions_distinct():
    rng = np.random.default_rng(0)
    r, c = sample_positions((1000, 1000), 5000, rng)
    assert np.unique(r * 1000 + c).size == 5000
    r, c = sample_positions((4, 4), 16, rng)
    assert np.unique(r * 4 + c).size == 16


def test_loader_missing_files_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="EMBEDOPT_DATA"):
        load_movielens("100k", tmp_path)
    with pytest.raises(InvalidParameterError):
        load_movielens("10m", tmp_path)


def test_loader_reads_original_formats(tmp_path):
    d = tmp_path / "movielens-100k"
    d.mkdir()
    (d / "u.data").write_text("1\t10\t5\t100\n2\t10\t3\t101\n1\t20\t4\t102\n")
    ml = load_movielens("100k", tmp_path)
    assert ml.entries.shape == (2, 2) and ml.entries.nnz == 3
    np.testing.assert_array_equal(ml.item_ids, [10, 20])
    d1 = tmp_path / "movielens-1m"
    d1.mkdir()
    (d1 / "ratings.dat").write_text("1::5::3::9\n7::5::4::9\n")
    ml1 = load_movielens("1m", d1)
    assert ml1.entries.nnz == 2 and ml1.timestamps is not None


@requires_dataset("movielens-100k")
def test_movielens_100k_real():
    ml = load_movielens("100k")
    assert ml.entries.shape == (943, 1682) and ml.entries.nnz == 100_000


@requires_dataset("movielens-latest-small")
def test_movielens_latest_small_real():
    ml = load_movielens("latest-small")
    assert ml.entries.nnz == 100_836 and ml.entries.shape[0] == 610


@requires_dataset("test-images")
def test_load_test_image():
    from embedopt.data import load_test_image

    img = load_test_image("camera")
    assert img.shape == (512, 512) and 0 <= img.min() and img.max() <= 1
    assert load_test_image("china").ndim == 2
    assert load_test_image("china", gray=False).shape[2] == 3


def test_complex_values_are_refused_not_truncated():
    import warnings

    from embedopt.data import ObservedEntries, as_observed_entries

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way
        with pytest.raises(DataValidationError, match="must be real"):
            ObservedEntries(np.array([[0, 0], [1, 1]]), np.array([1 + 1j, 2.0]))
        with pytest.raises(DataValidationError, match="must be real"):
            as_observed_entries(np.ones((3, 2)) * (1 + 1j))
