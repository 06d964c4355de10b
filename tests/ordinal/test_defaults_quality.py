"""What OrdinalEmbedding's defaults reach, pinned (issue 13).

``benchmarks/ordinal/defaults.py`` compares the defaults with cblearn's on
several data sets and seeds; these tests pin one seed of each at a level
the defaults clearly reach (measured value in the comment), so that a
change of a default that costs quality fails here. No peer is needed.
"""

import warnings

import pytest

from embedopt.data import (
    load_eurodist,
    load_music_triplets,
    make_all_triplets,
    make_planted_embedding,
    make_random_triplets,
    split_comparisons,
)
from embedopt.ordinal import OrdinalEmbedding
from tests.conftest import requires_dataset


def _fit_quietly(p, loss, train, n_objects=None):
    # every warning is an error: the defaults must converge on their own
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return OrdinalEmbedding(p, loss=loss, random_state=0).fit(
            train, n_objects=n_objects
        )


@pytest.fixture(scope="module")
def table_one():
    # Ma et al.'s Table I problem: 100 points in 10-d, 10^4 + 10^4 triplets
    return make_planted_embedding(random_state=1000)


# Measured held-out errors with the defaults (seed above): gnmds 0.050, ckl
# 0.178, ste 0.045, tste 0.071, soe 0.043; cblearn's defaults reach 0.048,
# 0.180, 0.087, 0.070, 0.043 on this problem. CKL cannot go lower: its own
# optimum, reached from the planted points too, misorders 15 % of the
# training triplets. STE's bound is below its 0.054 without the default
# normal prior (lam="auto"), so losing the prior fails here.
TABLE_ONE = {"gnmds": 0.07, "ckl": 0.20, "ste": 0.05, "tste": 0.09, "soe": 0.06}


@pytest.mark.parametrize("loss", sorted(TABLE_ONE))
def test_defaults_on_the_table_one_problem(table_one, loss):
    m = _fit_quietly(10, loss, table_one.train)
    assert m.solver_ == "lbfgs"  # 10^4 comparisons: the small-problem path
    assert m.stop_reason_ in ("tol", "line_search")
    assert 1 - m.score(table_one.test) < TABLE_ONE[loss]


@pytest.fixture(scope="module")
def music():
    comps = load_music_triplets().comparisons
    return split_comparisons(comps, (0.8, 0.2), random_state=0), comps.n_objects


# Measured on the seed-0 80/20 split: gnmds 0.189, ckl 0.162, ste 0.173,
# tste 0.146, soe 0.215 (cblearn's defaults: 0.202, 0.168, 0.181, 0.142,
# 0.218). Without the normal prior of lam="auto": ckl 0.171, ste 0.201.
MUSIC = {"gnmds": 0.21, "ckl": 0.168, "ste": 0.185, "tste": 0.16, "soe": 0.235}


@requires_dataset("music-aset400-triplets")
@pytest.mark.parametrize("loss", sorted(MUSIC))
def test_defaults_on_the_music_triplets(music, loss):
    (train, test), n = music
    m = _fit_quietly(9, loss, train, n_objects=n)
    assert 1 - m.score(test) < MUSIC[loss]


@pytest.fixture(scope="module")
def eurodist():
    D = load_eurodist().distances
    train = make_random_triplets(distances=D, n_triplets=2000, random_state=0)
    return train, make_all_triplets(distances=D, exclude=train)


@requires_dataset("eurodist")
@pytest.mark.parametrize("loss", ["gnmds", "ckl", "ste", "tste", "soe"])
def test_defaults_on_eurodist_converge_without_warnings(eurodist, loss):
    train, test = eurodist
    m = _fit_quietly(2, loss, train)
    # measured: gnmds 0.046, ckl 0.071 (0.077 without the prior), ste 0.049,
    # tste 0.076, soe 0.046 (0.102 from one start: n_init="auto" is 3 here)
    assert 1 - m.score(test) < 0.12
    if loss == "soe":
        assert 1 - m.score(test) < 0.07
    if loss == "ste":
        assert 1 - m.score(test) < 0.07  # cblearn's STE: 0.060
    if loss == "ckl":
        assert 1 - m.score(test) < 0.075
