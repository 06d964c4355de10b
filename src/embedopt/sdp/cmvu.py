"""Colored maximum variance unfolding (CMVU, Sec. 4.2, eq. 23) on factors.

The slack CMVU of Song et al. (2008), as the paper states it (eq. 23):

``min_{Z PSD} 1/2 sum_{{i,j} in N} (Z_ii + Z_jj - 2 Z_ij - d_ij)^2
- lam tr(H Z H K)``

with N the kNN pairs, ``d_ij`` their squared Euclidean distances, H the
centering matrix and K the label kernel. :class:`CMVUProblem` answers the
oracles of :class:`~embedopt.sdp.FactorProblem` through factors only, and
:func:`knn_pairs` builds N (connected, see there).

Boundedness. The paper adds no trace constraint and no regularizer: the
distance penalty alone bounds the objective when the graph of N is
connected (scaling a centered factor by t grows the penalty like t^4 and the
label term like t^2). On a disconnected graph the components can drift apart
for free and the objective is unbounded below. Instead of a trace bound,
:func:`knn_pairs` therefore joins the components of the kNN graph by their
closest cross pairs (as MVU and Isomap implementations do), and
:class:`CMVUProblem` warns when the pairs it is given leave the graph
disconnected. The one direction left free, ``Z + a 1 1^T`` (a translation of
the embedding), changes neither term.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components

from .._core import DataValidationError, DataWarning, fill_doc
from .problems import (
    _GRADIENT_DOC,
    _VALUE_DOC,
    FactorGradient,
    _PairProblem,
    _warn_if_disconnected,
    knn_laplacian,
)

__all__ = ["CMVUProblem", "knn_pairs", "one_hot_labels"]


def one_hot_labels(y) -> np.ndarray:
    """The one-hot label matrix Y (n x c), so that ``K = Y Y^T``.

    ``K_ij = 1`` when i and j share a class, 0 otherwise: the label kernel of
    CMVU for classification labels.

    Parameters
    ----------
    y : array-like, shape (n,)

    Returns
    -------
    numpy.ndarray of float64, shape (n, c)
    """
    _, inverse = np.unique(np.asarray(y), return_inverse=True)
    out = np.zeros((len(inverse), int(inverse.max()) + 1))
    out[np.arange(len(inverse)), inverse] = 1.0
    return out


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


def knn_pairs(X, n_neighbors: int = 5, *, connect: bool = True, device="cpu"):
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
    # pattern of the Laplacian is exactly the kNN graph
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # connectivity handled below
        lap = knn_laplacian(feats, n_neighbors, bandwidth=np.inf, device=device)
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


class CMVUProblem(_PairProblem):
    """Colored maximum variance unfolding, eq. 23, on factors.

    ``f(Z) = 1/2 sum_{p = {i,j} in N} (E_p^T Z E_p - d_p)^2 - lam tr(H Z H K)``

    with ``E_p = e_i - e_j`` (so ``E_p^T Z E_p = Z_ii + Z_jj - Z_ij - Z_ji``,
    the squared distance of i and j in the embedding, also for the
    non-symmetric ``X Y^T`` of the bilinear surrogate), ``H = I - 1 1^T / n``
    and the label kernel ``K = Lb Lb^T`` given by a label factor ``Lb``
    (n x c; :func:`one_hot_labels` for classes) or ``K = I`` (``labels=None``:
    plain MVU, where ``tr(H Z H) = tr(H Z)`` is the variance of the
    embedding). The weight is the paper's trade-off lambda, 1 by default as in
    its experiments (Sec. 5.2); eq. 23's distance term carries the 1/2 and no
    other weight. The distances are not rescaled: for features of scale s the
    penalty grows like s^4 and the label term like s^2, so lambda is to be read
    relative to the data's scale.

    The gradient is ``G = sum_p r_p E_p E_p^T - lam H K H`` (symmetric), with
    residuals ``r_p = E_p^T Z E_p - d_p``; ``G W`` costs
    ``O((|N| + n c) k)`` for W with k columns (``H Lb (Lb^T H W)``, never the
    n x n K). f is quadratic: the penalty is quadratic in Z and the label
    term linear, so :meth:`curvature` gives the exact steps (Proposition 2).
    The Hessian is ``sum_p vec(E_p E_p^T) vec(E_p E_p^T)^T``; its largest
    eigenvalue is at most ``max_p (deg_i + deg_j) + 2`` (Gershgorin on the
    Gram matrix of the ``E_p E_p^T``: 4 on the diagonal, 1 for two pairs that
    share a pattern), the ``lipschitz`` used; ``strong_convexity = 0``.

    The problem has no ``trace_bound``: :func:`~embedopt.sdp.frank_wolfe` needs
    one passed explicitly.

    Parameters
    ----------
    n : int
        Number of patterns.
    pairs : array-like of int, shape (m, 2)
        The neighbour pairs N (:func:`knn_pairs`), ``i != j``, each once (a
        repeated pair weighs twice).
    sqdist : array-like of float, shape (m,)
        ``d_p``, the squared distances to preserve.
    labels : array-like, shape (n, c), optional
        Label factor ``Lb`` of ``K = Lb Lb^T``; None for ``K = I`` (MVU).
    lam : float
        Trade-off lambda between dependence on the labels and distance
        preservation.
    device : torch.device or str
    dtype : torch.dtype
        float64 by default.

    Raises
    ------
    DataValidationError
        Pairs out of range or self-pairs, distances of the wrong length, NaN
        or negative, labels of the wrong shape.
    """

    def __init__(
        self,
        n: int,
        pairs,
        sqdist,
        labels=None,
        *,
        lam: float = 1.0,
        device="cpu",
        dtype=torch.float64,
    ):
        super().__init__(n, lam, device, dtype)
        pairs, sqdist, labels = _check_cmvu_inputs(self.n, pairs, sqdist, labels)
        deg = np.bincount(pairs.ravel(), minlength=self.n)
        self.lipschitz = float((deg[pairs[:, 0]] + deg[pairs[:, 1]]).max() + 2)
        self.n_pairs = len(pairs)
        self._store_pairs(pairs)
        self.sqdist = torch.as_tensor(sqdist, device=self.device, dtype=dtype)
        self.labels = self.labels_t = self.classes = None
        if labels is not None:
            self.labels = torch.as_tensor(labels, device=self.device, dtype=dtype)
            if np.all((labels == 0) | (labels == 1)) and np.all(labels.sum(1) == 1):
                # one-hot: Lb^T W is a sum per class, a scatter in O(n k)
                # (a tiny GEMM can cost milliseconds when BLAS threads contend)
                self.classes = torch.as_tensor(labels.argmax(1), device=self.device)
            else:
                self.labels_t = self.labels.T.contiguous()

    # -- building blocks ---------------------------------------------------------
    def pair_values(self, U: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        """``s_p(U, V) = E_p^T U V^T E_p = (u_i - u_j) . (v_i - v_j)`` per pair.

        Bilinear in ``(U, V)``, O(|N| k).

        Parameters
        ----------
        U, V : torch.Tensor, shape (n, k)
            Pass one tensor twice for ``Z = V V^T``: its rows are gathered once.

        Returns
        -------
        torch.Tensor, shape (|N|,)
        """
        dU = U[self.rows] - U[self.cols]
        dV = dU if V is U else V[self.rows] - V[self.cols]
        return (dU * dV).sum(1)

    def _label_map(self, W: torch.Tensor) -> torch.Tensor:
        """``Lb^T H W`` (c x k), or ``H W`` when ``K = I``; O(n c k)."""
        centered = W - W.mean(0, keepdim=True)
        if self.labels is None:
            return centered
        if self.classes is None:
            return self.labels_t @ centered
        out = W.new_zeros((self.labels.shape[1], W.shape[1]))
        return out.index_add_(0, self.classes, centered)

    def _label_apply(self, M: torch.Tensor) -> torch.Tensor:
        """``H Lb M`` for ``M = Lb^T H W``, i.e. ``H K H W``."""
        if self.labels is None:
            return M  # already H W, and H H = H
        out = self.labels @ M if self.classes is None else M[self.classes]
        return out - out.mean(0, keepdim=True)

    # -- the oracles ---------------------------------------------------------------
    @fill_doc(value_doc=_VALUE_DOC)
    def value(self, X: torch.Tensor, Y: torch.Tensor) -> float:
        """``f(X Y^T)`` (eq. 23), O((|N| + n c) r).

        The distance penalty minus lambda times the label dependence.

        {value_doc}
        """
        return self.gradient(X, Y).value

    @fill_doc(gradient_doc=_GRADIENT_DOC)
    def gradient(self, X: torch.Tensor, Y: torch.Tensor) -> FactorGradient:
        """``f(X Y^T)`` and ``G = nabla f(X Y^T)`` as a (symmetric) operator.

        {gradient_doc}
        """
        resid = self.pair_values(X, Y) - self.sqdist
        i, j = self.rows, self.cols

        def value() -> float:
            fit = 0.5 * float((resid * resid).sum(dtype=torch.float64))
            # tr(H X Y^T H K) = <Lb^T H X, Lb^T H Y>
            dep = (self._label_map(X) * self._label_map(Y)).sum(dtype=torch.float64)
            return fit - self.lam * float(dep)

        def matmul(W: torch.Tensor) -> torch.Tensor:
            # sum_p r_p E_p E_p^T W: row i gets r_p (w_i - w_j), row j its negative
            t = resid.unsqueeze(1) * (W[i] - W[j])
            out = torch.zeros_like(W)
            out.index_add_(0, i, t)
            out.index_add_(0, j, -t)
            return out - self.lam * self._label_apply(self._label_map(W))

        return FactorGradient(value, matmul)


def _check_cmvu_inputs(n: int, pairs, sqdist, labels):
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
        raise DataValidationError(
            f"pairs must have shape (m, 2) with m >= 1; got shape {pairs.shape}."
        )
    pairs = pairs.astype(np.int64)
    if pairs.min() < 0 or pairs.max() >= n or np.any(pairs[:, 0] == pairs[:, 1]):
        raise DataValidationError(
            f"pairs must hold distinct pattern indices in [0, {n}) (no self-pairs)."
        )
    sqdist = np.asarray(sqdist, dtype=np.float64)
    if sqdist.shape != (len(pairs),) or not np.all(np.isfinite(sqdist)):
        raise DataValidationError(
            f"sqdist must hold {len(pairs)} finite squared distances, one per pair; "
            f"got shape {sqdist.shape}."
        )
    if np.any(sqdist < 0):
        raise DataValidationError("sqdist must be non-negative (squared distances).")
    graph = sp.csr_matrix((np.ones(len(pairs)), tuple(pairs.T)), shape=(n, n))
    _warn_if_disconnected(
        graph,
        "The pairs leave {n_components} connected components: the CMVU objective "
        "is unbounded below (components drift apart). Build them with knn_pairs.",
        stacklevel=3,
    )
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float64)
        if labels.ndim != 2 or labels.shape[0] != n:
            raise DataValidationError(
                f"labels must be a label factor of shape ({n}, c); got shape "
                f"{labels.shape}."
            )
    return pairs, sqdist, labels
