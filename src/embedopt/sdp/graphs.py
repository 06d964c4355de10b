"""The graphs of the sdp problems: the kNN Laplacian of NPKL, the CMVU pairs.

:func:`knn_laplacian` builds the normalized Laplacian of the symmetric kNN
graph with heat-kernel weights (the ``Delta`` of eq. 13);
:func:`knn_pairs` the neighbour pairs N of eq. 23 with their squared
distances, the components of the kNN graph joined so that the CMVU
objective is bounded below (see :mod:`embedopt.sdp.problem`).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike
from scipy.sparse.csgraph import connected_components

from .._core import DataValidationError, DataWarning, DeviceLike

__all__ = ["edge_bandwidth", "extend_by_neighbors", "knn_laplacian", "knn_pairs"]


def _warn_if_disconnected(graph, message: str, *, stacklevel: int, **fields):
    """Warn (:class:`DataWarning`) when the undirected ``graph`` is not connected.

    ``message`` is formatted with ``n_components`` (their number) and
    ``fields``; ``stacklevel`` is the one of a ``warnings.warn`` in the caller.
    """
    n_comp, _ = connected_components(graph, directed=False)
    if n_comp > 1:
        text = message.format(n_components=n_comp, **fields)
        warnings.warn(text, DataWarning, stacklevel=stacklevel + 1)


def knn_laplacian(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    n_neighbors: int = 5,
    *,
    bandwidth: float | None = None,
    device: DeviceLike = "cpu",
    chunk_size: int | None = None,
    warn_disconnected: bool = True,
) -> sp.csr_matrix:
    """Normalized Laplacian of the symmetric kNN graph with heat-kernel weights.

    ``i ~ j`` when j is among the ``n_neighbors`` nearest neighbours of i or
    i among those of j (Euclidean distance); the weight is the heat kernel
    ``W_ij = exp(-||x_i - x_j||^2 / t)``; the Laplacian is the normalized
    ``Lap = I - D^{-1/2} W D^{-1/2}`` with ``D = diag(W 1)``, whose
    eigenvalues lie in [0, 2] (the ``Delta`` of eq. 13).

    Parameters
    ----------
    X : array-like, shape (n, d)
        Features (dense NumPy or scipy.sparse rows).
    n_neighbors : int
        Neighbours per pattern (self excluded).
    bandwidth : float, optional
        The heat-kernel width t; default the mean squared distance over the
        kNN edges (so the weights are O(1) whatever the feature scale).
    device : torch.device or str
        Where the distances are computed (chunks of ``chunk_size`` rows).
    chunk_size : int, optional
        Rows per distance block: memory ``O(chunk_size * n)``; default
        ``2**24 // n`` rows (blocks of 128 MB in float64).
    warn_disconnected : bool
        Emit a :class:`~embedopt.DataWarning` when the graph has several connected
        components (the smoothness term then does not link them).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n)

    Raises
    ------
    DataValidationError
        NaN or infinite features, or ``n_neighbors >= n``.
    """
    feats = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n = feats.shape[0]
    if not np.all(np.isfinite(feats)):
        row = int(np.nonzero(~np.isfinite(feats).all(axis=1))[0][0])
        raise DataValidationError(
            f"X has NaN or infinite features (first in row {row}); impute or drop "
            "them before building the kNN graph."
        )
    if n_neighbors >= n:
        raise DataValidationError(
            f"n_neighbors={n_neighbors} needs more than {n_neighbors} patterns; got "
            f"n={n}."
        )
    d2, cols = _knn_distances(feats, n_neighbors, device, chunk_size)
    rows = np.repeat(np.arange(n), n_neighbors)
    t = float(d2.mean()) if bandwidth is None else float(bandwidth)
    t = t if t > 0 else 1.0  # all neighbours at distance 0: unit weights
    with np.errstate(over="ignore", under="ignore"):  # weights that vanish are 0
        weights = np.exp(-d2 / t)
    if not weights.any():
        raise DataValidationError(
            f"Every kNN weight exp(-d / t) underflows to 0 with the bandwidth t={t:g} "
            f"(the squared distances to the neighbours are {float(d2.min()):.3g} and "
            "up): the graph would be empty. Increase 'bandwidth' (None: the mean "
            "squared distance)."
        )
    W = sp.csr_matrix((weights, (rows, cols)), shape=(n, n))
    W = W.maximum(W.T)  # symmetric kNN graph (i in kNN(j) or j in kNN(i))
    W.eliminate_zeros()  # a vanished weight is no edge
    if warn_disconnected:
        _warn_if_disconnected(
            W,
            "The {k}-NN graph has {n_components} connected components; the "
            "Laplacian term does not link them. Increase 'n_neighbors'.",
            stacklevel=2,
            k=n_neighbors,
        )
    deg = np.asarray(W.sum(axis=1)).ravel()
    # D^{-1/2} with 0 for a vertex all of whose weights vanished: its row of S
    # is 0 (and its Laplacian row that of an isolated vertex)
    inv = np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0)
    S = sp.diags(inv) @ W @ sp.diags(inv)
    return sp.csr_matrix(sp.identity(n) - S)


def _knn_distances(feats: np.ndarray, n_neighbors: int, device, chunk_size):
    """Squared distances to the ``n_neighbors`` nearest neighbours of every row
    (self excluded) and their indices, both raveled row by row; computed in
    blocks of ``chunk_size`` rows (default ``2**24 // n``) on ``device``."""
    n = feats.shape[0]
    Xt = torch.as_tensor(feats, dtype=torch.float64, device=device)
    sq = (Xt * Xt).sum(1)
    dists, idx = [], []
    chunk_size = chunk_size or max(1, 2**24 // n)
    for start in range(0, n, chunk_size):
        block = Xt[start : start + chunk_size]
        d2 = (
            sq[start : start + len(block), None] + sq[None, :] - 2 * block @ Xt.T
        ).clamp_min(0)
        d2[torch.arange(len(block)), torch.arange(start, start + len(block))] = np.inf
        val, ind = torch.topk(d2, n_neighbors, dim=1, largest=False)
        dists.append(val.cpu())
        idx.append(ind.cpu())
    d2 = torch.cat(dists).numpy().ravel()
    if not np.all(np.isfinite(d2)):
        raise DataValidationError(
            "The squared distances between the patterns overflow float64 (features "
            "of 1e154 or more); rescale X."
        )
    return d2, torch.cat(idx).numpy().ravel()


# -- the pairs of CMVU ------------------------------------------------------------
def _closest_cross_pair(feats: torch.Tensor, inside: np.ndarray, chunk: int):
    """The closest pair (i in ``inside``, j outside) and its squared distance."""
    a = torch.as_tensor(np.nonzero(inside)[0], device=feats.device)
    b = torch.as_tensor(np.nonzero(~inside)[0], device=feats.device)
    B = feats[b]
    best = (np.inf, -1, -1)
    for start in range(0, len(a), chunk):
        d2 = torch.cdist(feats[a[start : start + chunk]], B).square()
        k = int(torch.argmin(d2))
        value = float(d2.view(-1)[k])
        if value < best[0]:
            i, j = divmod(k, len(b))
            best = (value, int(a[start + i]), int(b[j]))
    return best[1], best[2]


def knn_pairs(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    n_neighbors: int = 5,
    *,
    connect: bool = True,
    device: DeviceLike = "cpu",
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs N of CMVU: the symmetric kNN graph, made connected.

    ``{i, j}`` is a pair when j is among the ``n_neighbors`` nearest
    neighbours of i or i among those of j (the graph of
    :func:`~embedopt.sdp.knn_laplacian`). With ``connect``, while the graph
    has several components, the component of pattern 0 is joined to the rest
    by its closest cross pair (Euclidean), so that eq. 23 is bounded below
    (see the module docstring); each join costs ``O(n^2 d)`` at most.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n, d)
    n_neighbors : int
    connect : bool
        Join the components (a :class:`~embedopt.DataWarning` says how many edges were
        added); False keeps the plain kNN graph.
    device : torch.device or str
        Where the distances are computed.

    Returns
    -------
    pairs : numpy.ndarray of int64, shape (m, 2)
        Each pair once, ``i < j``.
    sqdist : numpy.ndarray of float64, shape (m,)
        ``d_ij = ||x_i - x_j||^2``.

    Raises
    ------
    DataValidationError
        NaN or infinite features, or ``n_neighbors >= n``.
    """
    feats = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    # unit heat-kernel weights (t = inf): no weight underflows, so the sparsity
    # pattern of the Laplacian is exactly the kNN graph; its connectivity is
    # handled below
    lap = knn_laplacian(
        feats, n_neighbors, bandwidth=np.inf, device=device, warn_disconnected=False
    )
    upper = sp.triu(lap, k=1).tocoo()
    edges = [np.stack([upper.row, upper.col], 1).astype(np.int64)]
    n = feats.shape[0]
    graph = sp.csr_matrix((np.ones(len(edges[0])), tuple(edges[0].T)), shape=(n, n))
    n_comp, labels = connected_components(graph, directed=False)
    if connect and n_comp > 1:
        Xt = torch.as_tensor(feats, dtype=torch.float64, device=device)
        inside = labels == labels[0]
        chunk = max(1, 2**24 // n)
        for _ in range(n_comp - 1):
            i, j = _closest_cross_pair(Xt, inside, chunk)
            edges.append(np.array([[min(i, j), max(i, j)]], dtype=np.int64))
            inside |= labels == labels[j]
        warnings.warn(
            f"The {n_neighbors}-NN graph has {n_comp} connected components; joined "
            f"them by {n_comp - 1} closest cross pair(s) so that the CMVU objective "
            "is bounded below.",
            DataWarning,
            stacklevel=2,
        )
    pairs = np.concatenate(edges)
    diff = feats[pairs[:, 0]] - feats[pairs[:, 1]]
    return pairs, np.einsum("ij,ij->i", diff, diff)


# -- new patterns: the out-of-sample extension of both estimators -----------------
def edge_bandwidth(X: np.ndarray, edges: np.ndarray) -> float:
    """Mean squared distance ``||x_i - x_j||^2`` over a graph's edges.

    The heat-kernel width with which :func:`extend_by_neighbors` weighs a new
    pattern's neighbours when the fit had none of its own: the scale of the
    distances the fit's graph links. 1.0 when there are no edges or all of
    them join equal patterns (as :func:`knn_laplacian` does for a zero width).

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d)
    edges : numpy.ndarray of int, shape (m, 2)

    Returns
    -------
    float
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        return 1.0
    diff = X[edges[:, 0]] - X[edges[:, 1]]
    t = float(np.einsum("ij,ij->i", diff, diff).mean())
    return t if t > 0 else 1.0


def extend_by_neighbors(
    X_fit: np.ndarray,
    embedding: np.ndarray,
    X_new: np.ndarray,
    n_neighbors: int,
    bandwidth: float,
    *,
    chunk_size: int | None = None,
) -> np.ndarray:
    """Place new patterns: heat-kernel weighted means of their neighbours' rows.

    Each row x of ``X_new`` gets ``sum_j w_j v_j / sum_j w_j`` over its
    ``n_neighbors`` nearest rows ``x_j`` of ``X_fit`` (Euclidean), with the
    weights ``w_j = exp(-||x - x_j||^2 / t)`` of the kNN graph of
    :func:`knn_laplacian`, ``t = bandwidth`` (computed relative to the
    nearest neighbour, so that they never all underflow). A pattern equal to
    one of the fit (to rounding) gets that pattern's row (the mean of the
    rows of equal ones), so the patterns of the fit keep their embedding.

    Parameters
    ----------
    X_fit : numpy.ndarray, shape (n, d)
        The patterns of the fit.
    embedding : numpy.ndarray, shape (n, r)
        Their rows.
    X_new : numpy.ndarray, shape (m, d)
    n_neighbors : int
        At most n (fewer are taken when the fit has fewer patterns).
    bandwidth : float
        The heat-kernel width t (``inf``: equal weights).
    chunk_size : int, optional
        New rows per distance block (memory ``O(chunk_size * n)``); default
        ``2**24 // n``.

    Returns
    -------
    numpy.ndarray, shape (m, r)
    """
    n = X_fit.shape[0]
    k = min(int(n_neighbors), n)
    fit = torch.as_tensor(X_fit, dtype=torch.float64)
    sq = (fit * fit).sum(1)
    V = torch.as_tensor(embedding, dtype=torch.float64)
    out = []
    chunk_size = chunk_size or max(1, 2**24 // n)
    for start in range(0, X_new.shape[0], chunk_size):
        block = torch.as_tensor(X_new[start : start + chunk_size], dtype=torch.float64)
        bsq = (block * block).sum(1)
        d2 = (bsq[:, None] + sq[None, :] - 2 * block @ fit.T).clamp_min(0)
        d2, idx = torch.topk(d2, k, dim=1, largest=False)
        # equal to a pattern of the fit up to the rounding of the expansion
        same = d2 <= 1e-12 * (bsq[:, None] + sq[idx])
        w = torch.exp(-(d2 - d2[:, :1]) / float(bandwidth))
        w = torch.where(same.any(1, keepdim=True), same.to(w.dtype), w)
        w = w / w.sum(1, keepdim=True)
        out.append(torch.einsum("mk,mkr->mr", w, V[idx]))
    if not out:
        return np.zeros((0, embedding.shape[1]))
    return torch.cat(out).numpy()
