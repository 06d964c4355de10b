"""Ordinal embedding: place objects from "i is closer to j than to k" answers.

50 points are drawn in the plane, 2,000 random triplets are answered by their
distances, and ``OrdinalEmbedding`` (STE loss, SVRG-SBB) learns an embedding
that is checked against 2,000 held-out triplets.

    python examples/ordinal_embedding.py
"""

import warnings

from embedopt import ConvergenceWarning
from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalEmbedding

data = make_planted_embedding(50, 2, n_train=2000, n_test=2000, random_state=0)
model = OrdinalEmbedding(2, max_iter=30, random_state=0)
with warnings.catch_warnings():
    # A fixed budget of 30 epochs is the point here, not the stopping rule.
    warnings.simplefilter("ignore", ConvergenceWarning)
    model.fit(data.train)

print(f"objects: {data.points.shape[0]}, training triplets: {len(data.train)}")
objective = model.history_["objective"][-1]
print(f"final objective after {model.n_iter_} epochs: {objective:.4g}")
print(f"held-out triplet accuracy = {model.score(data.test):.3f}")
