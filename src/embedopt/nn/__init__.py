"""Neural building blocks shared by the two-tower models of several packages.

Towers (plain ``torch.nn.Module`` s mapping ids to k-dimensional embeddings:
id embedding tables, MLPs over side features, and their combinations), pair
scores, retrieval losses over in-batch negatives, the retrieval surface
(``recommend``, ``similar_items``, ``evaluate``) of every two-tower model, and
the approximate item index (IVF-PQ with an exact re-rank) recommenders search.
The trainable index of :mod:`embedopt.quantization` and the all-pairs
similarity learning of ``embedopt.similarity`` build their models from them.
"""

from .index import ItemIndex
from .losses import (
    RETRIEVAL_LOSSES,
    cosine_scores,
    dot_scores,
    in_batch_hinge_loss,
    in_batch_softmax_loss,
    retrieval_loss,
)
from .retrieval import RetrievalMixin, pairs_by_user, ranking_metrics
from .towers import (
    FEATURE_TOWERS,
    TOWERS,
    ConcatTower,
    EmbeddingTower,
    MLPTower,
    SideFeatureEncoder,
    SumTower,
    build_tower,
)

__all__ = [
    "FEATURE_TOWERS",
    "RETRIEVAL_LOSSES",
    "TOWERS",
    "ConcatTower",
    "EmbeddingTower",
    "ItemIndex",
    "MLPTower",
    "RetrievalMixin",
    "SideFeatureEncoder",
    "SumTower",
    "build_tower",
    "cosine_scores",
    "dot_scores",
    "in_batch_hinge_loss",
    "in_batch_softmax_loss",
    "pairs_by_user",
    "ranking_metrics",
    "retrieval_loss",
]
