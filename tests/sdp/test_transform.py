"""``transform`` of KernelLearning and ColoredMVU: new patterns placed by their
neighbours among the fitted ones (issue 23, item 5)."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import embedopt
from embedopt._core import DataValidationError, NotFittedError
from embedopt.sdp import ColoredMVU, KernelLearning, knn_laplacian, knn_pairs
from embedopt.sdp.graphs import extend_by_neighbors


def _blobs(n=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, 2)) + 3.0 * np.stack([y == 1, y == 2], axis=1)
    return X, y


def _fit(kind, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny budgets, disconnected graphs
        if kind == "npkl":
            return KernelLearning(3, n_pairs=30, random_state=0, **kw).fit(X, y=y)
        return ColoredMVU(2, random_state=0, **kw).fit(X, y)


KINDS = ["npkl", "cmvu"]


@functools.cache
def _fitted(kind):
    """The default fit of ``kind`` on the blobs, once per session (read only)."""
    return _fit(kind, *_blobs())


def _naive(X_fit, V, x, k, t):
    """One new pattern, written out: k nearest by sorting, heat weights."""
    d2 = ((X_fit - x) ** 2).sum(1)
    nn = np.argsort(d2, kind="stable")[:k]
    w = np.exp(-d2[nn] / t)
    return (w[:, None] * V[nn]).sum(0) / w.sum()


@pytest.mark.parametrize("kind", KINDS)
def test_new_patterns_get_the_heat_weighted_mean_of_their_neighbours(kind):
    X, _ = _blobs()
    est = _fitted(kind)
    new = np.random.default_rng(1).normal(size=(7, 2)) * 2 + 2
    out = est.transform(new)
    assert out.shape == (7, est.n_components)
    for x, row in zip(new, out, strict=True):
        expect = _naive(X, est.embedding_, x, est.n_neighbors, est.bandwidth_)
        np.testing.assert_allclose(row, expect, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_the_fitted_patterns_keep_their_rows(kind):
    X, _ = _blobs()
    est = _fitted(kind)
    np.testing.assert_array_equal(est.transform(X), est.embedding_)
    np.testing.assert_array_equal(est.transform(X[[4]]), est.embedding_[[4]])


def test_fit_transform_is_the_embedding_of_fit():
    X, y = _blobs()
    a = KernelLearning(3, n_pairs=30, random_state=0).fit_transform(X, y)
    b = KernelLearning(3, n_pairs=30, random_state=0).fit(X, y=y).embedding_
    np.testing.assert_array_equal(a, b)
    ml, cl = [[0, 1], [10, 11]], [[0, 10], [1, 20]]
    a = KernelLearning(2, random_state=0).fit_transform(X, must_link=ml, cannot_link=cl)
    b = KernelLearning(2, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(a, b.embedding_)


def test_the_bandwidth_is_the_fits_or_the_mean_over_the_graphs_edges():
    X, y = _blobs()
    assert _fit("npkl", X, y, bandwidth=2.5).bandwidth_ == 2.5
    lap = sp.triu(knn_laplacian(X, 5), k=1).tocoo()
    d2 = ((X[lap.row] - X[lap.col]) ** 2).sum(1)
    assert _fitted("npkl").bandwidth_ == pytest.approx(d2.mean(), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, sqdist = knn_pairs(X, 5)
    assert _fitted("cmvu").bandwidth_ == pytest.approx(sqdist.mean(), rel=1e-12)


def test_a_given_laplacian_lends_its_edges_and_the_neighbours_still_count():
    X, y = _blobs()
    lap = knn_laplacian(X, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = KernelLearning(3, n_neighbors=40, n_pairs=30, random_state=0).fit(
            X, y=y, laplacian=lap
        )
    # n_neighbors beyond the fit's 30 patterns: all of them are neighbours
    out = est.transform(X[:2] + 0.3)
    expect = _naive(X, est.embedding_, X[0] + 0.3, 30, est.bandwidth_)
    np.testing.assert_allclose(out[0], expect, rtol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_lists_and_tensors_give_the_same_rows(kind):
    import torch

    X, _ = _blobs()
    est = _fitted(kind)
    new = X[:5] * 0.9
    out = est.transform(new)
    np.testing.assert_allclose(est.transform(sp.csr_matrix(new)), out)
    np.testing.assert_allclose(est.transform(new.tolist()), out)
    np.testing.assert_allclose(est.transform(torch.as_tensor(new)), out)


def test_blocks_of_rows_give_the_same_rows():
    X, _ = _blobs()
    V = np.random.default_rng(0).normal(size=(30, 3))
    new = np.random.default_rng(1).normal(size=(11, 2))
    whole = extend_by_neighbors(X, V, new, 4, 1.5)
    np.testing.assert_allclose(
        extend_by_neighbors(X, V, new, 4, 1.5, chunk_size=3), whole, rtol=1e-13
    )
    # far from every pattern: the weights are relative to the nearest one
    far = extend_by_neighbors(X, V, new + 1e4, 4, 1e-3)
    assert np.all(np.isfinite(far))


def test_equal_weights_with_an_infinite_bandwidth_and_duplicates_averaged():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    V = np.array([[1.0], [3.0], [10.0], [100.0]])
    # the two copies of the origin: the mean of their rows
    np.testing.assert_allclose(extend_by_neighbors(X, V, X[:1], 3, 1.0), [[2.0]])
    out = extend_by_neighbors(X, V, np.array([[0.4, 0.0]]), 3, np.inf)
    np.testing.assert_allclose(out, [[(1 + 3 + 10) / 3]])


@pytest.mark.parametrize("kind", KINDS)
def test_no_new_patterns_give_no_rows(kind):
    est = _fitted(kind)
    out = est.transform(np.zeros((0, 2)))
    assert out.shape == (0, est.n_components) and out.dtype == np.float64


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("X_new", "match"),
    [
        (np.ones((3, 3)), "has 3 features.*fitted on 2"),
        (np.ones((3, 1)), "has 1 features.*fitted on 2"),
        (np.array([[0.0, 1.0], [np.nan, 0.0]]), "NaN or infinite.*row 1.*transforming"),
        (np.array([[np.inf, 1.0]]), "NaN or infinite"),
        (np.ones(2), "2-D"),
        (np.ones((2, 0)), "2-D"),
        ([["a", "b"]], "cannot read"),
    ],
    ids=["3 features", "1 feature", "NaN row", "inf", "1-D", "no columns", "text"],
)
def test_bad_new_patterns_are_refused(kind, X_new, match):
    est = _fitted(kind)
    with pytest.raises(DataValidationError, match=match):
        est.transform(X_new)


@pytest.mark.parametrize("cls", [KernelLearning, ColoredMVU])
def test_transform_before_fit_is_not_fitted(cls):
    with pytest.raises(NotFittedError):
        cls().transform(np.ones((2, 2)))


@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_model_places_new_patterns_alike(kind, tmp_path):
    X, _ = _blobs()
    est = _fitted(kind)
    est.save(tmp_path / "m.embedopt")
    again = embedopt.load(tmp_path / "m.embedopt")
    new = X[:4] + 0.2
    np.testing.assert_array_equal(again.transform(new), est.transform(new))


def test_a_model_without_its_fit_patterns_says_to_refit():
    # what a model file saved before transform existed loads as
    X, y = _blobs()
    est = _fit("npkl", X, y)
    del est.X_fit_
    with pytest.raises(NotFittedError, match="fit it again"):
        est.transform(X[:2])
