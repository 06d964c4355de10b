"""Export a fitted :class:`ProductQuantizer` to faiss, to serve it there.

The index is ``IndexPreTransform(LinearTransform(R^T), IndexPQ)``: faiss
applies ``y = A x`` to column vectors, so our row-vector rotation ``x R`` is
``A = R^T``; the PQ centroids keep our (M, K, n / M) layout. faiss is an
optional dependency: ``pip install "embedopt[faiss]"`` (faiss-cpu).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._core import DataValidationError, check_is_fitted
from ..linalg.rotations import orthogonality_error
from ..nn.index import FAISS_INSTALL, _import_faiss  # noqa: F401 (FAISS_INSTALL: old path)
from .estimators import ProductQuantizer

__all__ = ["to_faiss"]


def to_faiss(
    pq: ProductQuantizer, codes: ArrayLike | None = None, *, metric: str | None = None
) -> Any:
    """Build a faiss index equivalent to a fitted :class:`ProductQuantizer`.

    Parameters
    ----------
    pq : ProductQuantizer
        Fitted, with an orthogonal rotation (faiss' reverse transform assumes
        one) and ``n_centroids`` a power of two (faiss stores ``log2 K`` bits).
    codes : array-like of int, shape (N, M), optional
        Database codes from ``pq.encode`` to add as they are (no re-encoding).
    metric : {"l2", "ip"}, optional
        Default: ``pq.metric``.

    Returns
    -------
    faiss.IndexPreTransform
        ``search`` returns the same neighbours and scores as ``pq.search``
        (up to float rounding); ``sa_decode(sa_encode(X))`` equals
        ``pq.transform(X)``.

    Raises
    ------
    ImportError
        If faiss is not installed.
    DataValidationError
        If K is not a power of two or R is not orthogonal.
    """
    faiss = _import_faiss("to_faiss", "(or pip install faiss-gpu on a CUDA machine)")
    check_is_fitted(pq, "codebooks_tensor_")
    K = pq.n_centroids
    nbits = round(math.log2(K))
    if 2**nbits != K:
        raise DataValidationError(
            f"faiss PQ codebooks have 2**nbits centroids; n_centroids={K} is not a "
            "power of two."
        )
    if orthogonality_error(pq.rotation_tensor_) > 1e-4:
        raise DataValidationError(
            "The rotation is not orthogonal (rotation='unconstrained'?); faiss' "
            "IndexPreTransform decodes with R^T and would not match."
        )
    metric = pq.metric if metric is None else metric
    d, M = pq.n_features_in_, pq.n_subquantizers
    R = np.ascontiguousarray(pq.rotation_, dtype=np.float32)
    lt = faiss.LinearTransform(d, d, False)
    faiss.copy_array_to_vector(np.ascontiguousarray(R.T).ravel(), lt.A)
    lt.is_trained = True
    lt.set_is_orthonormal()
    fm = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
    ipq = faiss.IndexPQ(d, M, nbits, fm)
    cb = np.ascontiguousarray(pq.codebooks_, dtype=np.float32)
    faiss.copy_array_to_vector(cb.ravel(), ipq.pq.centroids)
    if hasattr(ipq.pq, "sync_transposed_centroids"):  # faiss >= 1.7.3 caches them
        ipq.pq.sync_transposed_centroids()
    ipq.is_trained = True
    if codes is not None:
        c = pq._codes(codes).cpu().numpy()
        # Bit-pack the codes the way faiss stores them (nbits per sub-code).
        packed = np.zeros((c.shape[0], ipq.pq.code_size), dtype=np.uint8)
        for m in range(M):
            for b in range(nbits):
                bit = m * nbits + b
                packed[:, bit // 8] |= (((c[:, m] >> b) & 1) << (bit % 8)).astype(
                    np.uint8
                )
        # IndexPreTransform cannot take codes; the PQ index can (before wrapping,
        # so that the wrapper picks up ntotal).
        ipq.add_sa_codes(packed)
    index = faiss.IndexPreTransform(lt, ipq)
    return index
