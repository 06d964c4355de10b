"""Neural building blocks shared by the two-tower models of several packages.

Towers (plain ``torch.nn.Module`` s mapping ids to k-dimensional embeddings:
id embedding tables, MLPs over side features, and their combination), pair
scores and retrieval losses over in-batch negatives. The trainable index of
:mod:`embedopt.quantization` and the all-pairs similarity learning of
``embedopt.similarity`` build their models from them.
"""

from .losses import (
    RETRIEVAL_LOSSES,
    cosine_scores,
    dot_scores,
    in_batch_hinge_loss,
    in_batch_softmax_loss,
    retrieval_loss,
)
from .towers import (
    EmbeddingTower,
    HybridTower,
    MLPTower,
    SideFeatureEncoder,
    SumTower,
)

__all__ = [
    "RETRIEVAL_LOSSES",
    "EmbeddingTower",
    "HybridTower",
    "MLPTower",
    "SideFeatureEncoder",
    "SumTower",
    "cosine_scores",
    "dot_scores",
    "in_batch_hinge_loss",
    "in_batch_softmax_loss",
    "retrieval_loss",
]
