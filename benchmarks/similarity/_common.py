"""MovieLens implicit feedback for the similarity benchmarks: splits, features,
ranking metrics of any scorer."""

from __future__ import annotations

import numpy as np


def movielens(name: str, seed: int):
    """Per-user 80/20 split of MovieLens ``name`` ("100k" / "1m") as implicit
    feedback, with user and item side features (dicts of arrays)."""
    from embedopt.data import load_movielens_side_features, split_by_user

    d = load_movielens_side_features(dataset=name)
    e = d.ratings.entries
    train, test = split_by_user((e.rows, e.cols), (0.8, 0.2), random_state=seed)
    users = dict(d.user_features)
    items = {"genres": d.item_features["genres"], "decade": d.item_features["decade"]}
    return train, test, users, items


def inner_split(train, seed: int):
    """A validation split inside the training pairs (for a peer's grid search)."""
    from embedopt.data import split_by_user

    return split_by_user(train, (0.875, 0.125), random_state=seed + 1)


def csr(data):
    """Interactions as a users x items CSR matrix of ones."""
    import scipy.sparse as sp

    return sp.csr_matrix(
        (np.ones(len(data), np.float32), (data.users, data.items)), shape=data.shape
    )


def ranking(P, Q, train, test, k: int = 10) -> dict:
    """P@k, recall@k, nDCG@k, MAP@k of the scores ``P Q^T`` on the test pairs,
    training pairs excluded (exact top-k over all items)."""
    import torch

    from embedopt.linalg import top_k_inner_products
    from embedopt.nn import pairs_by_user, ranking_metrics

    users, relevant = pairs_by_user(test)
    P = torch.as_tensor(np.ascontiguousarray(P), dtype=torch.float32)
    Q = torch.as_tensor(np.ascontiguousarray(Q), dtype=torch.float32)
    ids, _ = top_k_inner_products(P[users], Q, k, exclude=csr(train)[users])
    out = ranking_metrics(ids, relevant, k)
    short = {"precision": "P", "recall": "R", "ndcg": "nDCG", "map": "MAP"}
    return {f"{short[name]}@{k}": out[f"{name}@{k}"] for name in short}
