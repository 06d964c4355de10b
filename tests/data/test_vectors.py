import numpy as np
import pytest

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import (
    GENRES_1M,
    load_glove,
    load_movielens_side_features,
    make_correlated_gaussian,
    read_fvecs,
    read_ivecs,
)
from tests.conftest import requires_dataset


def _write_vecs(path, arr, dtype):
    n, d = arr.shape
    rec = np.empty((n, d + 1), dtype=np.int32)
    rec[:, 0] = d
    rec[:, 1:] = arr.astype(dtype).view(np.int32)
    rec.tofile(path)


def test_fvecs_and_ivecs_roundtrip(tmp_path):
    X = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    _write_vecs(tmp_path / "a.fvecs", X, np.float32)
    np.testing.assert_array_equal(read_fvecs(tmp_path / "a.fvecs"), X)
    np.testing.assert_array_equal(
        read_fvecs(tmp_path / "a.fvecs", count=2, offset=3), X[3:5]
    )
    ids = np.arange(12, dtype=np.int32).reshape(3, 4)
    _write_vecs(tmp_path / "g.ivecs", ids, np.int32)
    np.testing.assert_array_equal(read_ivecs(tmp_path / "g.ivecs"), ids)


def test_fvecs_rejects_truncated_files(tmp_path):
    X = np.ones((3, 4), np.float32)
    _write_vecs(tmp_path / "a.fvecs", X, np.float32)
    raw = (tmp_path / "a.fvecs").read_bytes()
    (tmp_path / "b.fvecs").write_bytes(raw[:-4])
    with pytest.raises(DataValidationError, match="truncated"):
        read_fvecs(tmp_path / "b.fvecs")


def test_correlated_gaussian_has_the_requested_spectrum():
    X, cov = make_correlated_gaussian(
        4000, 16, decay=4.0, random_state=0, return_covariance=True
    )
    assert X.shape == (4000, 16) and X.dtype == np.float32
    ev = np.linalg.eigvalsh(cov)[::-1]
    np.testing.assert_allclose(ev[0] / ev[-1], np.exp(4.0 * 15 / 16), rtol=1e-6)
    assert np.trace(cov) == pytest.approx(16.0)
    emp = np.cov(X.T)
    assert np.abs(emp - cov).max() < 0.15
    np.testing.assert_array_equal(
        X, make_correlated_gaussian(4000, 16, decay=4.0, random_state=0)
    )
    with pytest.raises(InvalidParameterError, match="decay"):
        make_correlated_gaussian(10, 4, decay=-1.0)


@requires_dataset("glove-6b-50d")
def test_load_glove():
    X = load_glove(n_vectors=10)
    assert X.shape == (10, 50) and X.dtype == np.float32
    assert X[0, 0] == pytest.approx(0.418)  # "the" (SOURCE.txt)
    assert load_glove().shape == (400000, 50)


@requires_dataset("movielens-1m")
def test_movielens_side_features_align_with_ratings():
    f = load_movielens_side_features()
    m, n = f.ratings.entries.shape
    assert (m, n) == (6040, 3706)
    assert all(v.shape[0] == m for v in f.user_features.values())
    assert f.item_features["genres"].shape == (n, len(GENRES_1M))
    assert f.user_features["age"].max() < f.cardinalities["age"]
    assert f.item_features["known"].mean() > 0.95
    # Item index 1 is Toy Story: Animation|Children's|Comedy.
    toy = f.item_features["genres"][0]
    assert {GENRES_1M[i] for i in np.flatnonzero(toy)} == {
        "Animation",
        "Children's",
        "Comedy",
    }


@requires_dataset("movielens-100k")
def test_movielens_100k_side_features_in_the_1m_layout():
    f = load_movielens_side_features(dataset="100k")
    m, n = f.ratings.entries.shape
    assert (m, n) == (943, 1682)
    for name, v in f.user_features.items():
        assert v.shape == (m,) and 0 <= v.min() and v.max() < f.cardinalities[name]
    # User 1: 24 years old (group 18-24), M, technician (index 19 of u.occupation).
    assert f.user_features["age"][0] == 1 and f.user_features["gender"][0] == 1
    assert f.user_features["occupation"][0] == 19
    toy = f.item_features["genres"][0]  # Toy Story (1995)
    assert {GENRES_1M[i] for i in np.flatnonzero(toy)} == {
        "Animation",
        "Children's",
        "Comedy",
    }
    assert f.item_features["decade"][0] == 9 and f.item_features["known"].all()
    with pytest.raises(ValueError, match="dataset"):
        load_movielens_side_features(dataset="10m")
