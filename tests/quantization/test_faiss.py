import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.quantization import ProductQuantizer, to_faiss

faiss = pytest.importorskip("faiss")

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


def _assert_same_ranking(ids_a, ids_b, dist):
    # Database vectors with identical codes tie exactly, and the two searches
    # may list tied items in either order: compare the set of ids at each
    # distinct distance of every query, which is still an exact check.
    assert ids_a.shape == ids_b.shape
    for a, b, d in zip(ids_a, ids_b, dist, strict=True):
        for v in np.unique(d):
            assert set(a[d == v]) == set(b[d == v])


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_faiss_export_agrees(metric):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((800, 16)).astype(np.float32)
    Q = rng.standard_normal((10, 16)).astype(np.float32)
    pq = ProductQuantizer(4, 16, rotation="gcd-g", max_iter=3, metric=metric)
    pq.set_params(random_state=0).fit(X)
    codes = pq.encode(X)
    index = to_faiss(pq, codes)
    d_ours, i_ours = pq.search(Q, codes, k=5)
    d_f, i_f = index.search(Q, 5)
    np.testing.assert_allclose(d_f, d_ours, rtol=1e-4, atol=1e-4)
    _assert_same_ranking(i_f, i_ours, d_ours)
    rec = index.sa_decode(index.sa_encode(X[:50]))
    np.testing.assert_allclose(rec, pq.transform(X[:50]), atol=1e-5)
    # faiss encodes new vectors to the same codes.
    empty = to_faiss(pq)
    empty.add(X)
    _assert_same_ranking(empty.search(Q, 5)[1], i_ours, d_ours)


def test_faiss_export_rejects_what_faiss_cannot_hold():
    X = np.random.default_rng(1).standard_normal((400, 8)).astype(np.float32)
    pq = ProductQuantizer(2, 12, max_iter=1, random_state=0).fit(X)
    with pytest.raises(DataValidationError, match="power of two"):
        to_faiss(pq)
