"""Tiny all-pairs problems (their naive O(mn) reference is
``embedopt.similarity.dense_objective``)."""

from __future__ import annotations

import numpy as np
import torch

from embedopt.data import as_side_features
from embedopt.nn import ConcatTower, EmbeddingTower, MLPTower
from embedopt.similarity import AllPairsObjective

M, N, K = 7, 5, 3


def towers(kind="mlp", dtype=torch.float64, seed=0, k=K):
    """A (user, item) tower pair of a tiny problem."""
    g = torch.Generator().manual_seed(seed)
    if kind == "table":
        return (
            EmbeddingTower(M, k, std=0.5, generator=g, dtype=dtype),
            EmbeddingTower(N, k, std=0.5, generator=g, dtype=dtype),
        )
    fu = as_side_features({"a": [0, 1, 2, 0, 1, 2, 0]}, M, "user")
    # Off zero: a zero input with zero biases sits on the ReLU kink.
    fv = as_side_features({"d": np.linspace(-1, 1, N)[:, None] + 0.1}, N, "item")
    if kind == "concat":
        return (
            ConcatTower(M, k, fu, hidden=4, normalize=True, generator=g, dtype=dtype),
            ConcatTower(N, k, fv, hidden=4, normalize=True, generator=g, dtype=dtype),
        )
    return (
        MLPTower(fu, k, hidden=4, normalize=False, generator=g, dtype=dtype),
        MLPTower(fv, k, hidden=4, normalize=False, generator=g, dtype=dtype),
    )


def problem(seed=0, loss="square", density=0.4):
    """Observed pairs, labels (±1 for logistic), weights and imputation factors."""
    rng = np.random.default_rng(seed)
    mask = rng.random((M, N)) < density
    mask[0, 0] = mask[M - 1, N - 1] = True
    r, c = np.nonzero(mask)
    y = rng.normal(size=r.size)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return dict(
        mask=mask,
        pairs=(r, c, y),
        a=rng.random(M) + 0.5,
        b=rng.random(N) + 0.5,
        tilde=(rng.normal(size=(M, 2)), rng.normal(size=(N, 2))),
    )


def embed(obj, params):
    """P, Q as differentiable functions of the point (the reference path)."""
    xu, xv = obj.split(params)
    out = []
    for side, xs in zip(obj.sides, (xu, xv), strict=True):
        out.append(
            torch.func.functional_call(
                side.tower, dict(zip(side.names, xs, strict=True)), (side.inputs,)
            )
        )
    return out


def make(
    kind="mlp",
    loss="square",
    imputed="unobserved",
    omega=0.7,
    lam=0.1,
    imputation="factors",
    dtype=torch.float64,
    chunk_size=None,
    seed=0,
    sample_weight=None,
):
    """(objective, problem, reference kwargs) of one configuration;
    ``sample_weight="random"``: a random confidence per observed pair."""
    prob = problem(seed, loss)
    imp = prob["tilde"] if imputation == "factors" else imputation
    ut, it = towers(kind, dtype, seed)
    if isinstance(sample_weight, str):
        rng = np.random.default_rng(seed + 100)
        sample_weight = rng.random(len(prob["pairs"][0])) * 3
    prob["sample_weight"] = sample_weight
    obj = AllPairsObjective(
        ut,
        it,
        prob["pairs"],
        loss=loss,
        omega=omega,
        user_weights=prob["a"],
        item_weights=prob["b"],
        imputation=imp,
        imputed=imputed,
        lam=lam,
        chunk_size=chunk_size,
        sample_weight=sample_weight,
    )
    ref = dict(loss=loss, omega=omega, lam=lam, imputed=imputed, imputation=imp)
    return obj, prob, ref
