"""OrdinalEmbedding on the user's own object ids and ``unknown=``."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalEmbedding

_PROB = make_planted_embedding(15, 2, n_train=400, n_test=40, random_state=0)
_NAMES = np.array([f"song-{k}" for k in range(15)])  # "song-10" < "song-2"


def _fit(**params):
    model = OrdinalEmbedding(2, random_state=0, max_iter=20, **params)
    return model.fit(_NAMES[_PROB.train.indices])


def test_one_map_over_all_columns_and_transform_by_id():
    model = _fit()
    assert model.object_ids_.tolist() == sorted(_NAMES.tolist())
    code = model.object_ids_.tolist().index("song-2")
    np.testing.assert_array_equal(
        model.transform(["song-2"])[0], model.embedding_[code]
    )
    assert model.score(_NAMES[_PROB.test.indices]) > 0.7


def test_responses_and_quadruplets_of_ids():
    T = _PROB.train.indices
    y = np.where(np.arange(len(T)) % 2 == 0, 1, -1)
    flipped = T.copy()
    flipped[y == -1] = T[y == -1][:, [0, 2, 1]]
    a = OrdinalEmbedding(2, random_state=0, max_iter=5).fit(_NAMES[flipped], y)
    b = OrdinalEmbedding(2, random_state=0, max_iter=5).fit(_NAMES[T])
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    quads = _NAMES[T[:, [0, 1, 0, 2]]]
    np.testing.assert_array_equal(b.predict(quads), b.predict(_NAMES[T]))


def test_unknown_objects_have_no_place_nan_and_response_zero():
    model = _fit()
    with pytest.raises(DataValidationError, match=r"'new-song'.*unknown="):
        model.transform(["new-song"])
    for policy in ("nan", "fallback"):
        model.set_params(unknown=policy)
        out = model.transform(["new-song", "song-1"])
        assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()
        asked = [["new-song", "song-1", "song-2"], ["song-3", "song-1", "song-2"]]
        assert model.predict(asked)[0] == 0
        assert np.isnan(model.decision_function(asked)[0])
        # score counts a comparison it cannot answer as wrong
        right = model.predict(asked)[1] == 1
        assert model.score(asked) == pytest.approx(right / 2)


def test_n_objects_must_match_the_ids_and_frames_have_three_or_four_columns():
    with pytest.raises(DataValidationError, match="leave n_objects=None"):
        OrdinalEmbedding().fit(_NAMES[_PROB.train.indices], n_objects=20)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(_NAMES[_PROB.train.indices])
    a = OrdinalEmbedding(2, random_state=0, max_iter=5).fit(frame)
    assert a.object_ids_.tolist() == sorted(_NAMES.tolist())
    with pytest.raises(DataValidationError, match=r"3 columns .* or 4"):
        OrdinalEmbedding().fit(frame.iloc[:, :2])
