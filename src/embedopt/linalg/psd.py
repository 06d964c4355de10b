"""Projections onto PSD cones and embeddings from Gram matrices.

Convex Gram-matrix formulations (the ordinal "cvx" baseline, low-rank SDPs,
kernel learning) iterate on an n x n symmetric G and need its Euclidean
projection onto the PSD cone, possibly restricted to centered matrices or to
a rank, and in the end the points ``X`` with ``X X^T ~ G``. Each costs one
symmetric eigendecomposition, O(n^3).
"""

from __future__ import annotations

import torch

__all__ = ["embedding_from_gram", "project_centered_psd", "project_psd"]


def _clip_eigenvalues(S: torch.Tensor, rank: int | None) -> torch.Tensor:
    w, V = torch.linalg.eigh(S)
    w = torch.clamp(w, min=0)
    if rank is not None and rank < w.numel():
        w[: w.numel() - rank] = 0  # eigh sorts ascending
    return (V * w) @ V.T


def project_psd(A: torch.Tensor, rank: int | None = None) -> torch.Tensor:
    """Euclidean (Frobenius) projection onto the PSD cone (optionally rank <= r).

    ``P(A) = V max(Lambda, 0) V^T`` for the eigendecomposition of the
    symmetric part ``(A + A^T) / 2``; with ``rank`` only the ``rank`` largest
    eigenvalues are kept (a projection onto a non-convex set).

    Parameters
    ----------
    A : torch.Tensor, shape (n, n)
        Only its symmetric part matters.
    rank : int, optional
        Keep at most this many positive eigenvalues.

    Returns
    -------
    torch.Tensor, shape (n, n)
        Symmetric PSD.
    """
    return _clip_eigenvalues(0.5 * (A + A.T), rank)


def project_centered_psd(G: torch.Tensor, rank: int | None = None) -> torch.Tensor:
    """Euclidean projection onto ``{G PSD, G 1 = 0}`` (optionally rank <= r).

    The set is the PSD cone of the subspace orthogonal to the all-ones
    vector, so the projection centers ``C G C`` (``C = I - 11^T / n``, the
    centering matrix; Ma et al., eq. (38)) and clips the negative
    eigenvalues; with ``rank`` only the ``rank`` largest are kept (a
    projection onto a non-convex set).

    Parameters
    ----------
    G : torch.Tensor, shape (n, n)
    rank : int, optional

    Returns
    -------
    torch.Tensor, shape (n, n)
        Symmetric PSD with zero row and column sums.

    See Also
    --------
    project_psd : the projection without centering.
    """
    S = 0.5 * (G + G.T)
    S = S - S.mean(0, keepdim=True)
    S = S - S.mean(1, keepdim=True)
    return _clip_eigenvalues(S, rank)


def embedding_from_gram(G: torch.Tensor, n_components: int) -> torch.Tensor:
    """The embedding ``X = V_p diag(sqrt(lambda_p))`` of the p largest eigenpairs.

    ``X X^T`` is the best rank-p PSD approximation of G (negative
    eigenvalues are clipped to 0).

    Parameters
    ----------
    G : torch.Tensor, shape (n, n)
    n_components : int

    Returns
    -------
    torch.Tensor, shape (n, n_components)
    """
    w, V = torch.linalg.eigh(0.5 * (G + G.T))
    w, V = w.flip(0)[:n_components], V.flip(1)[:, :n_components]
    return V * torch.sqrt(torch.clamp(w, min=0))
