"""Matrix completion
=================

Recover a low-rank matrix from a few noisy entries: a rank-5, 150 x 150
matrix with N(0, 0.05^2) noise of which 15 m log m entries are observed (the
AIS-Impute paper's synthetic problem, smaller). ``MatrixCompletion`` picks
lambda on a validation split of its own (``lam="auto"``); ``center="none"``
because the matrix has zero mean already. The figure compares completed and
true entries that were not observed.

    python examples/matrix_completion.py
"""

import matplotlib.pyplot as plt
import numpy as np

from embedopt.completion import MatrixCompletion
from embedopt.data import make_low_rank_matrix
from embedopt.metrics import nmse_lowrank

m = 150
problem = make_low_rank_matrix(
    m, rank=5, n_observed=round(15 * m * np.log(m)), random_state=0
)
model = MatrixCompletion(center="none", random_state=0).fit(problem.observed)

print(f"observed entries: {problem.observed.nnz} of {m * m}")
print(f"selected lambda = {model.lam_:.3g}, recovered rank = {model.rank_}")
# Error over the whole matrix against the noiseless truth U V^T.
error = nmse_lowrank(model.U_ * model.s_, model.V_, problem.U, problem.V)
print(f"NMSE of the completed matrix = {error:.4f}")

# Completed against true entries, on entries that were not observed.
rng = np.random.default_rng(1)
rows, cols = rng.integers(0, m, 2000), rng.integers(0, m, 2000)
unseen = np.ones((m, m), dtype=bool)
unseen[problem.observed.rows, problem.observed.cols] = False
rows, cols = rows[unseen[rows, cols]], cols[unseen[rows, cols]]
truth = (problem.U[rows] * problem.V[cols]).sum(1)
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(truth, model.predict(rows, cols), s=4, alpha=0.5)
ax.axline((0, 0), slope=1, color="gray", linewidth=0.8)
ax.set_xlabel("true entry (noiseless)")
ax.set_ylabel("completed entry")
ax.set_title("entries not observed")
fig.tight_layout()
plt.show()
