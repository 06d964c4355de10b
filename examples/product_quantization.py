"""Product quantization with a learned rotation
============================================

2,000 correlated Gaussian vectors in 16 dimensions are compressed to 2 bytes
each (M = 4 sub-quantizers of 16 centroids), without a rotation (plain PQ)
and with the default rotation: OPQ's eigenvalue allocation refined by Givens
coordinate descent (GCD-G). 100 held-out queries are searched through the
codes and compared with their exact nearest neighbours. The figure shows the
distortion of both at each outer iteration.

    python examples/product_quantization.py
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from embedopt import ConvergenceWarning
from embedopt.data import make_correlated_gaussian
from embedopt.metrics import recall_at_k
from embedopt.quantization import ProductQuantizer

X = make_correlated_gaussian(2100, 16, random_state=0)
base, queries = X[:2000], X[2000:]
# Exact nearest neighbour of each query, by brute force.
d2 = (queries**2).sum(1)[:, None] - 2 * queries @ base.T + (base**2).sum(1)
nearest = np.argmin(d2, axis=1)

fig, ax = plt.subplots(figsize=(6, 3.6))
for rotation, init in (("none", "identity"), ("gcd-g", "eigenvalue")):
    pq = ProductQuantizer(
        4, 16, rotation=rotation, rotation_init=init, max_iter=20, random_state=0
    )
    with warnings.catch_warnings():
        # A fixed budget of 20 outer iterations, not the stopping rule.
        warnings.simplefilter("ignore", ConvergenceWarning)
        pq.fit(base)
    codes = pq.encode(base)  # (2000, 4) uint8
    _, ids = pq.search(queries, codes, k=10)  # asymmetric distances to the codes
    print(
        f"rotation={rotation:<6} distortion = {pq.distortion(base):.3f}   "
        f"recall@10 = {recall_at_k(ids, nearest, 10):.2f}"
    )
    ax.plot(pq.history_["iteration"], pq.history_["objective"], label=rotation)
ax.set_xlabel("outer iteration")
ax.set_ylabel("distortion (training set)")
ax.legend(title="rotation")
fig.tight_layout()
plt.show()
