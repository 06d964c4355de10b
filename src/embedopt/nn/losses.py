"""Scores of user-item pairs and retrieval losses over in-batch negatives.

A batch holds b positive pairs: row ``i`` of the user embeddings ``U`` and
row ``i`` of the item embeddings ``V``. The score matrix ``S = U V^T`` has
the positives on its diagonal; the other items of the batch serve as
negatives (the sampled-negatives protocol of Jiang et al., Sec. 3.2).
"""

from __future__ import annotations

import torch
from torch import nn

from .._core import Registry

__all__ = [
    "RETRIEVAL_LOSSES",
    "cosine_scores",
    "dot_scores",
    "in_batch_hinge_loss",
    "in_batch_softmax_loss",
    "retrieval_loss",
]


def dot_scores(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Inner products ``S = U V^T`` of users ``u`` (b, k) and items ``v`` (c, k).

    Returns
    -------
    torch.Tensor, shape (b, c)
    """
    return u @ v.T


def cosine_scores(u: torch.Tensor, v: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Cosines of every user with every item.

    Parameters
    ----------
    u : torch.Tensor, shape (b, k)
    v : torch.Tensor, shape (c, k)
    eps : float
        Lower bound of the norms (zero rows score 0).

    Returns
    -------
    torch.Tensor, shape (b, c)
    """
    normalize = nn.functional.normalize
    return normalize(u, dim=1, eps=eps) @ normalize(v, dim=1, eps=eps).T


def in_batch_hinge_loss(scores: torch.Tensor, margin: float = 0.1) -> torch.Tensor:
    """Mean hinge over the in-batch negatives of each positive pair.

    ``sum_{i != j} max(0, margin - S_ii + S_ij) / (b (b - 1))``.

    Parameters
    ----------
    scores : torch.Tensor, shape (b, b)
        Positives on the diagonal.
    margin : float
        Paper: 0.1.

    Returns
    -------
    torch.Tensor
        Scalar.
    """
    b = scores.shape[0]
    pos = torch.diagonal(scores)
    # The diagonal terms equal the margin exactly (S_ii - S_ii = 0), so they
    # are subtracted instead of masked: a boolean gather of b^2 entries
    # dominated the step time.
    h = torch.relu(margin - pos[:, None] + scores)
    return (h.sum() - b * margin) / (b * (b - 1))


def in_batch_softmax_loss(
    scores: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """Softmax cross-entropy of each positive against its in-batch negatives.

    ``mean_i [log sum_j exp(S_ij / T) - S_ii / T]``.

    Parameters
    ----------
    scores : torch.Tensor, shape (b, b)
        Positives on the diagonal.
    temperature : float
        T > 0.

    Returns
    -------
    torch.Tensor
        Scalar.
    """
    target = torch.arange(scores.shape[0], device=scores.device)
    return nn.functional.cross_entropy(scores / temperature, target)


#: Retrieval losses by name: ``RETRIEVAL_LOSSES[name](scores, margin, temperature)``
#: (each reads the option it has).
RETRIEVAL_LOSSES = Registry(
    "retrieval loss",
    {
        "hinge": lambda scores, margin, temperature: in_batch_hinge_loss(
            scores, margin
        ),
        "softmax": lambda scores, margin, temperature: in_batch_softmax_loss(
            scores, temperature
        ),
    },
)


def retrieval_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    loss: str = "hinge",
    *,
    margin: float = 0.1,
    temperature: float = 0.05,
) -> torch.Tensor:
    """Retrieval loss of b positive pairs over in-batch negatives, dot scores.

    Parameters
    ----------
    u, v : torch.Tensor, shape (b, k)
        User and item embeddings of the positive pairs, row by row (unit
        rows make the scores cosines).
    loss : {"hinge", "softmax"}
        :func:`in_batch_hinge_loss` or :func:`in_batch_softmax_loss`.
    margin : float
        Of the hinge.
    temperature : float
        Of the softmax.

    Returns
    -------
    torch.Tensor
        Scalar.
    """
    return RETRIEVAL_LOSSES.get(loss)(dot_scores(u, v), margin, temperature)
