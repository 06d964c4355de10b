"""make_ratings: shape, skew, value range, determinism, bounded memory."""

import numpy as np
import pytest

from embedopt._core import InvalidParameterError
from embedopt.data import RATINGS_SHAPES, ObservedEntries, make_ratings


@pytest.fixture(scope="module")
def ratings():
    return make_ratings(
        n_users=3000, n_items=800, n_ratings=60_000, chunk_size=5000, random_state=0
    )


def test_shape_dtypes_and_distinct_sorted_positions(ratings):
    r = ratings
    assert r.shape == (3000, 800) and r.nnz == 60_000
    assert r.rows.dtype == np.int32 and r.cols.dtype == np.int32
    assert r.values.dtype == np.float32
    lin = r.rows.astype(np.int64) * r.shape[1] + r.cols
    assert (np.diff(lin) > 0).all()  # sorted by user then item, no duplicates
    assert r.rows.min() >= 0 and r.rows.max() < 3000
    assert r.cols.min() >= 0 and r.cols.max() < 800


def test_every_user_rates_at_least_once_and_at_most_the_catalogue(ratings):
    deg = np.bincount(ratings.rows, minlength=ratings.shape[0])
    assert deg.min() >= 1 and deg.max() <= ratings.shape[1]


def test_degrees_are_skewed(ratings):
    user = np.sort(np.bincount(ratings.rows, minlength=3000))[::-1]
    item = np.sort(np.bincount(ratings.cols, minlength=800))[::-1]
    # a power law, not a uniform draw: the most active 10 % hold far more
    # than 10 % of the ratings, and the median is well below the mean
    assert user[:300].sum() > 0.3 * ratings.nnz
    assert item[:80].sum() > 0.3 * ratings.nnz
    assert np.median(user) < 0.8 * user.mean()
    assert np.median(item) < 0.5 * item.mean()
    uniform = make_ratings(
        n_users=3000,
        n_items=800,
        n_ratings=60_000,
        user_exponent=0.0,
        item_exponent=0.0,
        random_state=0,
    )
    flat = np.sort(np.bincount(uniform.cols, minlength=800))[::-1]
    assert flat[:80].sum() < 0.15 * uniform.nnz


def test_values_are_whole_stars_of_the_1_to_5_scale(ratings):
    v = ratings.values
    assert v.min() >= 1 and v.max() <= 5
    np.testing.assert_array_equal(v, np.rint(v))
    assert set(np.unique(v)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert 3.3 < v.mean() < 3.9 and 0.8 < v.std() < 1.2
    raw = make_ratings(
        n_users=300, n_items=100, n_ratings=3000, integer=False, random_state=0
    )
    assert raw.values.min() >= 1 and raw.values.max() <= 5
    assert (raw.values != np.rint(raw.values)).any()


def test_values_follow_the_planted_signal(ratings):
    r = ratings
    truth = r.truth_at(r.rows, r.cols)
    assert np.corrcoef(truth, r.values)[0, 1] > 0.7


def test_determinism_and_seed_dependence():
    kw = dict(n_users=500, n_items=200, n_ratings=8000, chunk_size=1000)
    a, b = make_ratings(**kw, random_state=3), make_ratings(**kw, random_state=3)
    c = make_ratings(**kw, random_state=4)
    for f in ("rows", "cols", "values"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.cols, c.cols)


def test_chunking_spans_users_of_every_size():
    # heavy users (more than n_items / 8) take the exact weighted path; tiny
    # chunks cut between users: still distinct positions and exact degrees
    r = make_ratings(
        n_users=50, n_items=40, n_ratings=1500, chunk_size=7, random_state=1
    )
    lin = r.rows.astype(np.int64) * 40 + r.cols
    assert r.nnz == 1500 and (np.diff(lin) > 0).all()
    assert np.bincount(r.rows).max() <= 40


def test_presets_and_entries():
    assert RATINGS_SHAPES["netflix"][:2] == (480_189, 17_770)
    assert RATINGS_SHAPES["ml-10m"][:2] == (69_878, 10_677)
    r = make_ratings("netflix", n_ratings=20_000, random_state=0)
    assert r.shape == (480_189, 17_770) and r.nnz == 20_000
    e = r.entries(np.arange(10))
    assert isinstance(e, ObservedEntries) and e.nnz == 10 and e.shape == r.shape
    np.testing.assert_array_equal(e.rows, r.rows[:10])


@pytest.mark.parametrize(
    "kw",
    [
        dict(preset="movielens"),
        dict(preset=None, n_users=10, n_items=10),
        dict(preset=None, n_users=10, n_items=10, n_ratings=101),
        dict(preset=None, n_users=10, n_items=10, n_ratings=10, rank=0),
    ],
)
def test_invalid_arguments_raise_the_library_error(kw):
    with pytest.raises(InvalidParameterError):
        make_ratings(**kw)
