"""Ordinal embedding
=================

Place objects from "i is closer to j than to k" answers: 50 points are drawn
in the plane, 2,000 random triplets are answered by their distances, and
``OrdinalEmbedding`` (STE loss, defaults: full-batch L-BFGS at this size,
SVRG-SBB above 10^5 triplets) learns an embedding that is checked against
2,000 held-out triplets. Triplets fix points only up to translation,
rotation, reflection and scale, so the figure aligns the learned embedding
to the true points (``procrustes_align``) before drawing both.

    python examples/ordinal_embedding.py
"""

import matplotlib.pyplot as plt

from embedopt.data import make_planted_embedding
from embedopt.metrics import procrustes_align
from embedopt.ordinal import OrdinalEmbedding

data = make_planted_embedding(50, 2, n_train=2000, n_test=2000, random_state=0)
model = OrdinalEmbedding(2, random_state=0).fit(data.train)

print(f"objects: {data.points.shape[0]}, training triplets: {len(data.train)}")
objective = model.history_["objective"][-1]
print(
    f"final objective after {model.n_iter_} iterations of {model.solver_} "
    f"({model.stop_reason_}): {objective:.4g}"
)
print(f"held-out triplet accuracy = {model.score(data.test):.3f}")

truth = data.points
learned = procrustes_align(model.embedding_, truth)
fig, ax = plt.subplots(figsize=(5, 4.5))
for a, b in zip(truth, learned, strict=True):
    ax.plot([a[0], b[0]], [a[1], b[1]], color="gray", linewidth=0.5)
ax.scatter(*truth.T, s=20, label="true points")
ax.scatter(*learned.T, s=20, marker="x", label="learned, aligned")
ax.set_aspect("equal")
ax.legend()
fig.tight_layout()
plt.show()
