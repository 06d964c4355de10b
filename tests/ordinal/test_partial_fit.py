"""OrdinalEmbedding.partial_fit: new objects placed with the rest fixed."""

import numpy as np
import pytest

import embedopt
from embedopt import DataValidationError, InvalidParameterError
from embedopt._core.context import resolve_fit_context
from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalEmbedding
from tests._persistence import assert_same_estimator

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")

PROB = make_planted_embedding(30, 2, n_train=2000, n_test=1000, random_state=0)
T, TEST = PROB.train.indices, PROB.test.indices
NEW = [0, 5, 9]
TOUCH = np.isin(T, NEW).any(1)
TEST_NEW = TEST[np.isin(TEST, NEW).any(1)]


def _model(**kw):
    return OrdinalEmbedding(2, random_state=0, device="cpu", **kw)


def test_placing_a_fitted_object_gives_its_row_back():
    # the rows of a converged fit minimize the fitted objective over each
    # row, the others fixed: placing them again finds them
    model = _model(solver="lbfgs", tol=1e-12, max_iter=3000).fit(T)
    fitted = model.embedding_.copy()
    new = np.zeros(30, bool)
    new[NEW] = True
    model.embedding_tensor_[new] = 0
    model._place(new, resolve_fit_context(model))
    np.testing.assert_allclose(model.embedding_[new], fitted[new], atol=1e-3)
    np.testing.assert_array_equal(model.embedding_[~new], fitted[~new])


def test_new_objects_are_placed_about_as_well_as_a_full_fit():
    full = _model().fit(T)
    model = _model().fit(T[~TOUCH], n_objects=30)
    known = model.embedding_[1:5].copy()
    model.partial_fit(T[TOUCH])
    np.testing.assert_array_equal(model.embedding_[1:5], known)
    assert model.score(TEST_NEW) > full.score(TEST_NEW) - 0.03
    assert len(model.comparisons_) == len(T)


def test_positions_and_ids_grow():
    low = (T < 27).all(1)
    model = _model().fit(T[low])
    assert model.n_objects_ == 27
    model.partial_fit(T[~low])
    assert model.n_objects_ == 30 and model.embedding_.shape == (30, 2)
    names = np.array([f"o{k:02d}" for k in range(30)])
    by_id = _model().fit(names[T[~TOUCH]])
    by_id.partial_fit(names[T[TOUCH]])
    assert list(by_id.object_ids_) == sorted(names)
    assert by_id.score(names[TEST_NEW]) > 0.85


def test_refit_all_warm_starts_from_the_placement():
    model = _model().fit(T[~TOUCH], n_objects=30)
    model.partial_fit(T[TOUCH], refit="all")
    assert model.score(TEST) > 0.9
    assert len(model.comparisons_) == len(T)


def test_weights_triplets_and_quadruplets_mix():
    model = _model().fit(T[~TOUCH], n_objects=30, sample_weight=np.ones((~TOUCH).sum()))
    quads = np.stack([T[TOUCH, 0], T[TOUCH, 1], T[TOUCH, 0], T[TOUCH, 2]], 1)
    model.partial_fit(quads, sample_weight=np.full(len(quads), 2.0))
    assert model.comparisons_.shape == (len(T), 4)
    assert model.comparison_weight_[-1] == 2.0
    assert model.score(TEST_NEW) > 0.85


def test_unfitted_is_fit_and_refusals():
    a, b = _model().partial_fit(T), _model().fit(T)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    with pytest.raises(InvalidParameterError, match="refit"):
        a.partial_fit(T[:3], refit="some")
    with pytest.raises(DataValidationError, match="positions"):
        a.partial_fit(np.array([["a", "b", "c"]]))
    names = np.array([f"o{k:02d}" for k in range(30)])
    by_id = _model().fit(names[T])
    with pytest.raises(DataValidationError, match="strings"):
        by_id.partial_fit(np.array([[1, 2, 3]]))


def test_save_load_after_partial_fit(tmp_path):
    model = _model().fit(T[~TOUCH], n_objects=30)
    model.partial_fit(T[TOUCH])
    model.save(tmp_path / "o.embedopt")
    assert_same_estimator(model, embedopt.load(tmp_path / "o.embedopt"))
