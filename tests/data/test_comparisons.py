import warnings

import numpy as np
import pytest

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import (
    Comparisons,
    ComparisonWarning,
    as_comparisons,
    flip_comparisons,
    load_digits,
    load_eurodist,
    load_music_triplets,
    make_all_triplets,
    make_class_triplets,
    make_planted_embedding,
    make_random_triplets,
    split_comparisons,
)
from tests.conftest import requires_dataset


def _dist(P, a, b):
    return ((P[a] - P[b]) ** 2).sum(-1)


def test_responses_orient_triplets_and_quadruplets():
    c = Comparisons([[0, 1, 2], [0, 1, 2]], responses=[1, -1])
    assert c.indices.tolist() == [[0, 1, 2], [0, 2, 1]] and c.kind == "triplet"
    q = Comparisons([[0, 1, 2, 3]], responses=np.array([-1.0]))
    assert q.indices.tolist() == [[2, 3, 0, 1]] and q.kind == "quadruplet"
    assert q.as_quadruplets().shape == (1, 4)
    assert c.as_quadruplets().tolist()[1] == [0, 2, 0, 1]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([[0, 1]],), {}, "shape"),
        (([0, 1, 2],), {}, "shape"),
        ((np.zeros((0, 3), dtype=int),), {}, "empty"),
        (([[0, 1, -2]],), {}, "negative"),
        (([[0, 1, 5]],), {"n_objects": 4}, "out of range"),
        (([[0, 1.5, 2]],), {}, "integers"),
        (([[0, np.nan, 2]],), {}, "integers"),
        (([[True, False, True]],), {}, "integers"),
        (([["a", "b", "c"]],), {}, "dtype"),
        (([[0, 1, 2]],), {"responses": [1, 1]}, "one \\+/-1 response"),
        (([[0, 1, 2]],), {"responses": [0]}, "not \\+1 or -1"),
        (
            ([[0, 1, 2]] * 3,),
            {"responses": [1, 2, 0]},
            r"^2 response\(s\) are not \+1 or -1 \(first: comparison 1 has ",
        ),
        (([[0, 0, 1], [1, 1, 2]],), {}, "All 2"),
        (([[0, 1], [2]],), {}, "could not read|dtype"),
    ],
)
def test_bad_comparisons_raise_before_work(args, kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComparisonWarning)
        with pytest.raises(DataValidationError, match=match):
            Comparisons(*args, **kwargs)


def test_integral_floats_are_accepted():
    c = Comparisons(np.array([[0.0, 1.0, 2.0]]))
    assert c.indices.dtype == np.int64


def test_repeated_index_dropped_with_counting_warning():
    with pytest.warns(ComparisonWarning, match="Dropped 3 of 5"):
        c = Comparisons([[0, 1, 2], [0, 0, 1], [1, 2, 2], [3, 1, 3], [1, 2, 3]])
    assert len(c) == 2 and c.n_dropped == 3
    with pytest.warns(ComparisonWarning, match="Dropped 3 of 4"):
        q = Comparisons([[0, 1, 2, 3], [0, 0, 2, 3], [0, 1, 0, 1], [0, 1, 1, 0]])
    assert len(q) == 1
    with pytest.raises(DataValidationError, match="repeat an index"):
        Comparisons([[0, 0, 1], [0, 1, 2]], drop_degenerate=False)


def test_as_comparisons_and_bad_types():
    c = as_comparisons([[0, 1, 2]], [-1], n_objects=5)
    assert c.n_objects == 5 and c.indices.tolist() == [[0, 2, 1]]
    assert as_comparisons(c) is c
    assert as_comparisons(c, n_objects=7).n_objects == 7
    with pytest.raises(DataValidationError, match="smaller"):
        as_comparisons(c, n_objects=2)
    with pytest.raises(DataValidationError, match="cannot read"):
        as_comparisons("text")
    with pytest.raises(InvalidParameterError, match="n_objects"):
        Comparisons([[0, 1, 2]], n_objects=2.5)


def test_random_triplets_are_oriented_by_the_points():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(20, 3))
    c = make_random_triplets(P, 500, random_state=0)
    T = c.indices
    assert len(c) == 500 and c.n_objects == 20
    assert np.all(_dist(P, T[:, 0], T[:, 1]) < _dist(P, T[:, 0], T[:, 2]))
    assert np.all((T[:, 0] != T[:, 1]) & (T[:, 1] != T[:, 2]) & (T[:, 0] != T[:, 2]))
    again = make_random_triplets(P, 500, random_state=0)
    np.testing.assert_array_equal(T, again.indices)


def test_all_triplets_count_and_orientation():
    P = np.random.default_rng(1).normal(size=(7, 2))
    c = make_all_triplets(P)
    assert len(c) == 7 * 6 * 5 // 2
    T = c.indices
    assert np.all(_dist(P, T[:, 0], T[:, 1]) < _dist(P, T[:, 0], T[:, 2]))
    D = np.array([[0, 1, 1], [1, 0, 2], [1, 2, 0]], dtype=float)
    assert len(make_all_triplets(distances=D)) == 2  # the tie at object 0 dropped


def test_all_triplets_exclude_leaves_out_the_questions_asked():
    P = np.random.default_rng(1).normal(size=(9, 2))
    train = make_random_triplets(P, 60, random_state=0)
    flipped = train.indices[:5][:, [0, 2, 1]]  # the same questions, reversed
    held = make_all_triplets(P, exclude=np.vstack([train.indices[5:], flipped]))
    asked = {(i, min(j, k), max(j, k)) for i, j, k in train.indices}
    everything = make_all_triplets(P).indices
    naive = [t for t in everything if (t[0], min(t[1:]), max(t[1:])) not in asked]
    np.testing.assert_array_equal(held.indices, np.array(naive))
    assert len(held) == len(everything) - len(asked)
    with pytest.raises(DataValidationError, match="same 9 objects"):
        make_all_triplets(P, exclude=[[0, 1, 9]])
    with pytest.raises(DataValidationError, match=r"\(m, 3\) integer array"):
        make_all_triplets(P, exclude=np.zeros((2, 4), dtype=int))


def test_flip_rate_flips_exactly_that_fraction():
    P = np.random.default_rng(2).normal(size=(30, 2))
    c = make_random_triplets(P, 1000, random_state=0)
    f = flip_comparisons(c, 0.1, random_state=0)
    changed = (f.indices != c.indices).any(1)
    assert changed.sum() == 100
    np.testing.assert_array_equal(f.indices[changed][:, [0, 2, 1]], c.indices[changed])
    with pytest.raises(InvalidParameterError, match="flip_rate"):
        flip_comparisons(c, 1.0)


def test_class_triplets_follow_the_labels():
    y = np.repeat(np.arange(4), 5)
    c = make_class_triplets(y, 2000, random_state=0)
    T = c.indices
    assert np.all(y[T[:, 0]] == y[T[:, 1]]) and np.all(y[T[:, 0]] != y[T[:, 2]])
    assert np.all(T[:, 0] != T[:, 1])
    assert len(np.unique(T[:, 2])) == 20
    noisy = make_class_triplets(y, 2000, flip_rate=0.15, random_state=0)
    T = noisy.indices
    assert np.mean(y[T[:, 0]] != y[T[:, 1]]) == pytest.approx(0.15)
    with pytest.raises(DataValidationError, match="two classes"):
        make_class_triplets(np.zeros(5), 10)


def test_planted_embedding_and_split():
    prob = make_planted_embedding(30, 4, n_train=600, n_test=300, random_state=0)
    assert prob.points.shape == (30, 4) and len(prob.train) == 600
    a, b = split_comparisons(prob.train, (0.75, 0.25), random_state=0)
    assert len(a) == 450 and len(b) == 150
    both = np.concatenate([a.indices, b.indices])
    assert sorted(map(tuple, both)) == sorted(map(tuple, prob.train.indices))
    with pytest.raises(InvalidParameterError, match="fractions"):
        split_comparisons(prob.train, (0.5, 0.6))


def test_planted_held_out_triplets_ask_new_questions():
    prob = make_planted_embedding(12, 2, n_train=300, n_test=200, random_state=3)

    def questions(c):
        T = c.indices
        return {(i, min(j, k), max(j, k)) for i, j, k in T.tolist()}

    test_q = questions(prob.test)
    assert len(prob.test) == 200 and len(test_q) == 200  # none asked twice
    assert not test_q & questions(prob.train)
    # held-out answers follow the planted distances
    P, T = prob.points, prob.test.indices
    d = lambda a, b: ((P[a] - P[b]) ** 2).sum(1)  # noqa: E731
    assert np.all(d(T[:, 0], T[:, 1]) < d(T[:, 0], T[:, 2]))
    with pytest.raises(InvalidParameterError, match="other questions"):
        make_planted_embedding(5, 2, n_train=20, n_test=20, random_state=0)


@requires_dataset("music-aset400-triplets")
def test_load_music_triplets():
    data = load_music_triplets()
    assert len(data.comparisons) == 9107 - 17 and data.n_dropped == 17
    assert data.comparisons.n_objects == 400 and data.artist_ids.size == 400
    assert data.tags.shape == (400, 58) and data.tag_names[0] == "r&b"


@requires_dataset("eurodist")
def test_load_eurodist():
    data = load_eurodist()
    assert data.distances.shape == (21, 21) and data.names[0] == "Athens"
    np.testing.assert_array_equal(data.distances, data.distances.T)
    assert np.triu(data.distances, 1).sum() == 316081


@requires_dataset("sklearn-digits")
def test_load_digits():
    data = load_digits()
    assert data.X.shape == (1797, 64) and set(np.unique(data.y)) == set(range(10))


def test_missing_dataset_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="music-aset400-triplets"):
        load_music_triplets(tmp_path)


def test_as_quadruplets_keeps_every_comparison_as_asked():
    from embedopt.data import Comparisons, as_quadruplets

    np.testing.assert_array_equal(
        as_quadruplets([[0, 1, 2], [3, 3, 5]]), [[0, 1, 0, 2], [3, 3, 3, 5]]
    )
    quads = np.array([[0, 1, 2, 3]])
    np.testing.assert_array_equal(as_quadruplets(quads), quads)
    comps = Comparisons(np.array([[0, 1, 2]]), n_objects=3)
    np.testing.assert_array_equal(as_quadruplets(comps), comps.as_quadruplets())
