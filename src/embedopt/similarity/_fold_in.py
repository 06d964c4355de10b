"""New users and items for a fitted :class:`TwoTowerModel` (issue 23, items 1-2).

``partial_fit`` grows the towers by the rows of ids never seen and gives
those rows their embeddings with everything else fixed:

- an embedding table (the ``"embedding"`` tower): the exact ALS half-step
  of those rows, i.e. the minimizer of the all-pairs objective over them
  with the other side's embeddings fixed (the rows decouple, so each new
  user's row is its own ridge problem; ``_ALS.half_step`` of
  :mod:`.solvers` solves it);
- a tower over side features (``"mlp"``, ``"hybrid"``): the features of
  the new rows are appended to its buffers and the tower's output is the
  embedding; an id table inside it (the hybrid tower's) starts at 0, so a
  new id is placed by its features alone, as a cold-start one is
  (:func:`feature_embeddings`).

A user's own ``nn.Module`` tower cannot grow: the model does not know how
it maps ids. The codes of id-mapped sides stay in the sorted order of the
ids (:class:`~embedopt.data.IdMap`), so the grown rows are permuted into
place (:func:`permute_tower`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._core import DataValidationError, InvalidParameterError
from ..data import Interactions, SideFeatures
from ..nn import EmbeddingTower, MLPTower, SideFeatureEncoder, SumTower
from .problem import AllPairsObjective, popularity_weights
from .solvers import _ALS, table_part

_BUILT_IN = (EmbeddingTower, MLPTower, SumTower)


def encoders(tower: nn.Module) -> list[SideFeatureEncoder]:
    """The side-feature encoders inside a tower (empty for an id table)."""
    return [m for m in tower.modules() if isinstance(m, SideFeatureEncoder)]


def check_growable(tower: nn.Module, side: str, owner: str) -> None:
    """Refuse a tower that cannot take new ids (a user's own module)."""
    parts = tower.towers if isinstance(tower, SumTower) else [tower]
    if not all(isinstance(t, _BUILT_IN) for t in parts):
        raise InvalidParameterError(
            f"{owner} cannot add {side}s to the {side} tower, a "
            f"{type(tower).__name__}: only the built-in towers of embedopt.nn "
            f"know how to grow. Refit on all the data with fit instead."
        )


def _feature_tensors(encoder, features: SideFeatures, side: str, owner: str):
    """The categorical codes and dense rows of ``features`` as the encoder's
    tensors, checked against what it was fitted on."""
    n_cat, n_dense = len(encoder.codes), int(encoder.dense.shape[1])
    if features.n_categorical != n_cat or features.n_dense != n_dense:
        raise DataValidationError(
            f"{owner}: the {side} features have {features.n_categorical} "
            f"categorical feature(s) and {features.n_dense} dense column(s); the "
            f"model was fitted on {n_cat} and {n_dense}. Give the same features, "
            "in the same order, as at fit."
        )
    for j, emb in enumerate(encoder.codes):
        top = int(features.categorical[:, j].max()) if features.n else -1
        if top >= emb.num_embeddings:
            raise DataValidationError(
                f"{owner}: {side} categorical feature {j} holds code {top}, but "
                f"the model knows codes 0..{emb.num_embeddings - 1} only (the "
                "categories seen at fit); map unseen categories to a known one."
            )
    where = encoder.dense.device
    cat = torch.as_tensor(features.categorical, device=where)
    dense = torch.as_tensor(features.dense).to(device=where, dtype=encoder.dense.dtype)
    return cat, dense


@torch.no_grad()
def feature_embeddings(
    tower: nn.Module, features: SideFeatures, side: str, owner: str
) -> torch.Tensor:
    """The tower's embeddings of entities known only by their features: the
    output on those features with every id-table part at 0."""
    if isinstance(tower, SumTower):
        parts = [t for t in tower.towers if not isinstance(t, EmbeddingTower)]
        if parts:
            out = feature_embeddings(parts[0], features, side, owner)
            for t in parts[1:]:
                out = out + feature_embeddings(t, features, side, owner)
            return out
    if isinstance(tower, MLPTower) and tower.encoder is not None:
        cat, dense = _feature_tensors(tower.encoder, features, side, owner)
        pieces = [emb(cat[:, j]) for j, emb in enumerate(tower.encoder.codes)]
        if tower.encoder.project is not None:
            pieces.append(tower.encoder.project(dense))
        if tower.id_embedding is not None:
            width = tower.id_embedding.n_components
            pieces.insert(0, dense.new_zeros((features.n, width)))
        out = tower.mlp(torch.cat(pieces, 1))
        return nn.functional.normalize(out, dim=1) if tower.normalize else out
    raise InvalidParameterError(
        f"{owner}: the {side} tower ({type(tower).__name__}) reads no side "
        f"features, so it cannot embed {side}s from features; fit with "
        f"{side}_features and {side}_tower='hybrid' (or 'mlp')."
    )


@torch.no_grad()
def grow_tower(
    tower: nn.Module, n_new: int, features: SideFeatures | None, side: str, owner: str
) -> None:
    """Append ``n_new`` rows to the tower in place: zero rows to its id
    tables, ``features`` to its side-feature buffers."""
    check_growable(tower, side, owner)
    for enc in encoders(tower):
        cat, dense = _feature_tensors(enc, features, side, owner)
        enc.categorical = torch.cat([enc.categorical, cat])
        enc.dense = torch.cat([enc.dense, dense])
    for module in tower.modules():
        if isinstance(module, EmbeddingTower):
            old = module.table.weight
            rows = torch.cat([old.detach(), old.new_zeros((n_new, old.shape[1]))])
            module.table.weight = nn.Parameter(rows, requires_grad=old.requires_grad)
            module.table.num_embeddings = rows.shape[0]
        if isinstance(module, _BUILT_IN):
            module.n_ids += n_new


@torch.no_grad()
def permute_tower(tower: nn.Module, order: np.ndarray) -> None:
    """Reorder the tower's rows in place: row r becomes the old row ``order[r]``."""
    for enc in encoders(tower):
        index = torch.as_tensor(order, device=enc.dense.device)
        enc.categorical = enc.categorical[index]
        enc.dense = enc.dense[index]
    for module in tower.modules():
        if isinstance(module, EmbeddingTower):
            weight = module.table.weight
            index = torch.as_tensor(order, device=weight.device)
            weight.copy_(weight[index].clone())


def solve_rows(
    fixed: torch.Tensor,
    pairs: Interactions,
    side: int,
    options: dict,
    counts: np.ndarray,
    sample_weight: np.ndarray | None,
    owner: str,
) -> torch.Tensor:
    """The exact ALS rows of new entities of ``side`` (0 users, 1 items)
    given the other side's embeddings ``fixed``.

    ``pairs`` holds the new entities' pairs with their codes 0..b-1 on
    ``side`` and the other side's codes on the other; ``counts`` are the
    other side's training pairs per entity (its popularity weights).
    """
    if isinstance(options["imputation"], tuple):
        raise InvalidParameterError(
            f"{owner}: with a prior model as imputation (a tuple) the new "
            "entities have no rows of its factors; refit with fit instead."
        )
    b = pairs.shape[side]
    new = nn.Embedding.from_pretrained(fixed.new_zeros((b, fixed.shape[1])), False)
    old = nn.Embedding.from_pretrained(fixed.detach().clone(), freeze=False)
    towers = (new, old) if side == 0 else (old, new)
    weights = [None, None]
    if options["user_weights"] is not None:  # popularity weights
        own = pairs.users if side == 0 else pairs.items
        weights[side] = popularity_weights(np.bincount(own, minlength=b))
        weights[1 - side] = popularity_weights(counts)
    keep = ("omega", "lam", "imputation", "imputed")
    objective = AllPairsObjective(
        *towers,
        pairs,
        user_weights=weights[0],
        item_weights=weights[1],
        sample_weight=sample_weight,
        **{key: options[key] for key in keep},
    )
    x = list(objective.initial_point())
    _ALS(objective, owner).half_step(x, side, options["chunk_size"])
    return x[side].to(fixed.dtype)


def solvable(tower: nn.Module) -> bool:
    """Whether new rows of the tower are solved (a plain id table) rather
    than read from features."""
    return table_part(tower) is tower


def _column(values, id_map, ids, size: int, side: str, owner: str):
    """Codes of one column of new pairs, ids unseen so far appended after
    the known codes (in sorted order), and those new ids (None: positions)."""
    from ..data import IdMap

    if id_map is None:
        arr = np.asarray(values)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise DataValidationError(
                f"{owner}: the {side}s of a model fitted on positions must be "
                f"integer positions; got {arr.dtype}."
            )
        arr = arr.astype(np.int64).ravel()
        if arr.size and arr.min() < 0:
            raise DataValidationError(
                f"{owner}: {side} positions must be >= 0; got {int(arr.min())}."
            )
        return arr, None
    batch, codes = IdMap.fit(values, what=f"{side} ids")
    if batch.ids.size and (batch.ids.dtype.kind == "i") != (ids.dtype.kind in "iu"):
        kind = "integer" if ids.dtype.kind in "iu" else "string"
        raise DataValidationError(
            f"{owner}: the model's {side} ids are {kind}s; the new {side} ids "
            "must be of the same kind."
        )
    known = id_map.encode(batch.ids, unknown="missing")
    fresh = known < 0
    known[fresh] = size + np.arange(int(fresh.sum()))
    return known[codes], batch.ids[fresh]


def new_pairs(columns, maps, fitted_ids, shape, owner: str):
    """``(users, items)`` codes of new pairs and the new ids of each side.

    Parameters
    ----------
    columns : list of array-like
        The user and item columns as given (ids or positions).
    maps, fitted_ids : the model's IdMaps and ``user_ids_`` / ``item_ids_``.
    shape : the model's ``(m, n)``.

    Returns
    -------
    codes : list of numpy.ndarray
        Codes in the grown space: known ids keep theirs, new ones follow.
    new_ids : list of (numpy.ndarray or None)
        The new ids of each side in code order (None: a side of positions).
    grown : tuple of int
    """
    codes, new_ids, grown = [], [], []
    for values, id_map, ids, size, side in zip(
        columns, maps, fitted_ids, shape, ("user", "item"), strict=True
    ):
        c, fresh = _column(values, id_map, ids, size, side, owner)
        codes.append(c)
        new_ids.append(fresh)
        top = size + fresh.size if fresh is not None else max(size, _top(c))
        grown.append(int(top))
    if codes[0].size != codes[1].size:
        raise DataValidationError(
            f"{owner}: X has {codes[0].size} users but {codes[1].size} items; "
            "give one of each per pair."
        )
    return codes, new_ids, tuple(grown)


def _top(codes: np.ndarray) -> int:
    return int(codes.max()) + 1 if codes.size else 0
