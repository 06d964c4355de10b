"""recommend(..., approximate=True) through build_index (issue 23, item 4)."""

import numpy as np
import pytest

from embedopt._core import InvalidParameterError, NotFittedError
from embedopt.similarity import TwoTowerModel
from tests._tolerance import assert_close, score_tolerance


def _model():
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 40, 600), rng.integers(0, 300, 600)
    keep = np.unique(users * 300 + items, return_index=True)[1]
    return TwoTowerModel(8, max_iter=5, random_state=0).fit((users[keep], items[keep]))


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_approximate_recommend_reranks_the_index_candidates_exactly():
    model = _model()
    users = np.arange(40)
    with pytest.raises(NotFittedError, match="build_index"):
        model.recommend(users, 5, approximate=True)
    # every list probed and every item re-ranked: the exact answer
    model.build_index(n_lists=4, n_probe=4, rerank=300, random_state=0)
    exact = model.recommend(users, 5)
    approx = model.recommend(users, 5, approximate=True)
    np.testing.assert_array_equal(approx[0], exact[0])
    assert_close(approx[1], exact[1], score_tolerance(model))  # other kernels
    with pytest.raises(InvalidParameterError, match="whole catalogue"):
        model.recommend(users, 5, approximate=True, items=[1, 2, 3])
    # a new fit drops the index built on the old item vectors
    model.fit((users, users))
    assert not hasattr(model, "item_index_")
