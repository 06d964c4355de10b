"""Serving a recommender: save, load elsewhere, fold in a new user
===============================================================

The loop a service runs around a fitted model. Users and items carry their
own string ids. A two-tower model is fitted on 299 users' interactions, an
approximate item index is built, and the model is saved to one file (no
pickle). A fresh Python process loads it and answers a recommendation
request. Then a user who arrived after the fit is folded in from their few
interactions (one exact ALS half-step, nothing else refitted), the index is
rebuilt, and the new user gets recommendations. The figure shows the scores
of the new user's top ten.

    python examples/serving.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from embedopt.similarity import TwoTowerModel

rng = np.random.default_rng(0)
m, n, groups = 300, 200, 6
user_group = rng.integers(0, groups, m)
item_group = rng.integers(0, groups, n)
users, items = [], []
for u in range(m):
    liked = np.flatnonzero(item_group == user_group[u])
    for i in np.unique(rng.choice(liked, 12, replace=False)):
        users.append(f"user{u}")
        items.append(f"item{i}")
users, items = np.array(users), np.array(items)
late = users == f"user{m - 1}"  # arrives after the fit

model = TwoTowerModel(16, random_state=0).fit((users[~late], items[~late]))
model.build_index(n_centroids=16, random_state=0)
ids, _ = model.recommend(["user0"], k=5, approximate=True)

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "model.embedopt"
    model.save(path)
    print(f"saved {path.stat().st_size / 1e3:.0f} kB")
    # a fresh process, as a service would: embedopt.load executes nothing
    answer = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, embedopt; m = embedopt.load(sys.argv[1]); "
            "print(' '.join(m.recommend(['user0'], k=5, approximate=True)[0][0]))",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
print(f"same recommendations after load = {int(answer == list(ids[0]))}")

# the late user's interactions, folded in without a refit
model.partial_fit((users[late], items[late]))
model.build_index(n_centroids=16, random_state=0)  # partial_fit dropped the old one
new_ids, new_scores = model.recommend([f"user{m - 1}"], k=10, approximate=True)
groups_of = {f"item{i}": g for i, g in enumerate(item_group)}
share = np.mean([groups_of[i] == user_group[m - 1] for i in new_ids[0]])
print(f"new user's top-10 in their taste group = {share:.1f}")

fig, ax = plt.subplots(figsize=(6, 3.6))
ax.barh(new_ids[0][::-1], new_scores[0][::-1])
ax.set_xlabel("score")
ax.set_title(f"user{m - 1}, folded in after the fit")
fig.tight_layout()
plt.show()
