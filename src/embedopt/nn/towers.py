"""Towers: the ``torch.nn.Module`` s that embed users or items.

A tower maps a batch of ids to a batch of k-dimensional embeddings,
``tower(ids) -> (b, k)``; two of them (a user tower and an item tower) make a
two-tower model, scored by inner products or cosines of their outputs.

- :class:`EmbeddingTower`: one learned row per id (matrix factorization).
- :class:`MLPTower`: a two-layer MLP over the side features of the id
  (categorical codes through learned embeddings, dense features through a
  linear map), optionally fed the id's row of an :class:`EmbeddingTower` too.
- :class:`ConcatTower`: the id embedding and the side features concatenated
  into one MLP, unit-norm output (the towers of Jiang et al., Sec. 3.2).
- :class:`SumTower`: the sum of towers; :func:`build_tower` builds the
  ``"hybrid"`` tower as the sum of an :class:`EmbeddingTower` and an
  :class:`MLPTower` (an id's own row plus what its features predict).

``"hybrid"`` has that one meaning across the library (:data:`TOWERS`).

Every tower holds its side features as (non-persistent) buffers indexed by
the ids, exposes ``n_ids`` and ``n_components``, and is built on the given
device and dtype. Parameters are initialized from the ``generator`` passed to
the constructor, never from torch's global random state: id embeddings
``N(0, std^2)``; other weights ``N(0, 1 / fan_in)`` with ``fan_in`` the last
dimension of the weight; biases 0. Draws are made in float32 so that float32
and float64 towers start from the same values.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._core import InvalidParameterError, Registry, check_memory, persistable
from ..data import SideFeatures

__all__ = [
    "FEATURE_TOWERS",
    "TOWERS",
    "ConcatTower",
    "EmbeddingTower",
    "MLPTower",
    "SideFeatureEncoder",
    "SumTower",
    "build_tower",
]


@torch.no_grad()
def _init_weight(
    weight: torch.Tensor, generator: torch.Generator | None, std: float | None = None
) -> None:
    """``std * N(0, 1)``, or ``N(0, 1) / sqrt(fan_in)`` when ``std`` is None."""
    where = generator.device if generator is not None else None
    draw = torch.randn(
        weight.shape, generator=generator, device=where, dtype=torch.float32
    )
    weight.copy_(std * draw if std is not None else draw / math.sqrt(weight.shape[-1]))


def _empty(*shape, device, dtype) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, device=device, dtype=dtype))


def _skip_init(cls, *args, device, dtype):
    # torch's default initialization would draw from the global RNG (and
    # cost a pass over a large table); the layers are built around
    # uninitialized parameters instead. (torch.nn.utils.skip_init does this
    # on the meta device, whose first use imports torch._dynamo: 0.4-1.4 s
    # once per process, longer than a whole default ALS fit on ML-100K.)
    if cls is nn.Embedding:
        n, dim = args
        return nn.Embedding(n, dim, _weight=_empty(n, dim, device=device, dtype=dtype))
    if cls is nn.Linear:
        n_in, n_out = args
        layer = nn.Linear.__new__(nn.Linear)  # its __init__ would draw
        nn.Module.__init__(layer)
        layer.in_features, layer.out_features = n_in, n_out
        layer.weight = _empty(n_out, n_in, device=device, dtype=dtype)
        layer.bias = _empty(n_out, device=device, dtype=dtype)
        return layer
    raise TypeError(f"no uninitialized construction for {cls.__name__}")


def _check_size(rows: int, cols: int, device, dtype, what: str) -> None:
    """Refuse a weight that cannot fit on the device before allocating it
    (torch's allocator would fail with an internal error, or the system run
    out of memory)."""
    where = torch.empty(0).device if device is None else torch.device(device)
    itemsize = torch.empty((), dtype=dtype).element_size()
    check_memory(
        "embedopt.nn",
        rows * cols * itemsize,
        where,
        f"a {what} of {rows} x {cols}",
        "A stray index, a category code far above the others or ids never "
        "remapped to 0..n-1 make a table of max index + 1 rows; a huge "
        "n_components or hidden makes every weight that wide.",
    )


def _linear(n_in, n_out, generator, device, dtype) -> nn.Linear:
    _check_size(n_out, n_in, device, dtype, "weight matrix")
    layer = _skip_init(nn.Linear, n_in, n_out, device=device, dtype=dtype)
    _init_weight(layer.weight, generator)
    with torch.no_grad():
        layer.bias.zero_()
    return layer


def _embedding(n, dim, generator, device, dtype, std=None) -> nn.Embedding:
    _check_size(n, dim, device, dtype, "embedding table")
    table = _skip_init(nn.Embedding, n, dim, device=device, dtype=dtype)
    _init_weight(table.weight, generator, std)
    return table


class _Tower(nn.Module):
    """What every tower has: ``n_ids``, ``n_components`` and optional unit norm."""

    def __init__(self, n_ids: int, n_components: int, normalize: bool):
        super().__init__()
        self.n_ids = n_ids
        self.n_components = n_components
        self.normalize = normalize

    def _output(self, out: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(out, dim=1) if self.normalize else out


def _check_positive(owner: str, **values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidParameterError(
                f"The '{name}' parameter of {owner} must be an int in [1, inf). "
                f"Got {v!r}."
            )


@persistable
class EmbeddingTower(_Tower):
    """One learned k-dimensional row per id: ``tower(ids) = W[ids]``.

    Parameters
    ----------
    n_ids : int
        Number of users or items.
    n_components : int
        Output dimension k.
    std : float
        Standard deviation of the initial rows.
    normalize : bool
        Return unit-norm rows (for cosine scoring).
    generator : torch.Generator, optional
        Initialization draws; None uses torch's default generator.
    device : torch.device or str, optional
    dtype : torch.dtype, optional

    Attributes
    ----------
    weight : torch.nn.Parameter, shape (n_ids, n_components)

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> EmbeddingTower(10, 4, generator=g)(torch.tensor([1, 3])).shape
    torch.Size([2, 4])
    """

    def __init__(
        self,
        n_ids: int,
        n_components: int,
        *,
        std: float = 0.05,
        normalize: bool = False,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        _check_positive("EmbeddingTower", n_ids=n_ids, n_components=n_components)
        super().__init__(n_ids, n_components, normalize)
        self.table = _embedding(n_ids, n_components, generator, device, dtype, std)

    @property
    def weight(self) -> nn.Parameter:
        """The embedding table."""
        return self.table.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of ``ids`` (int64, shape (b,)): shape (b, n_components)."""
        return self._output(self.table(ids))


@persistable
class SideFeatureEncoder(nn.Module):
    """Side features of the ids as one vector: learned code embeddings, projected
    dense features, side by side.

    Parameters
    ----------
    features : SideFeatures
        Per-row features (:func:`~embedopt.data.as_side_features`).
    embedding_dim : int
        Width of each categorical feature's embedding.
    dense_dim : int
        Width of the linear map of the dense features (absent if d = 0).
    generator, device, dtype
        As for :class:`EmbeddingTower`.

    Attributes
    ----------
    out_features : int
        ``embedding_dim * c + dense_dim * (d > 0)``.
    categorical, dense : torch.Tensor
        The features as buffers, shapes (n, c) and (n, d).
    """

    def __init__(
        self,
        features: SideFeatures,
        *,
        embedding_dim: int = 16,
        dense_dim: int = 16,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        _check_positive(
            "SideFeatureEncoder", embedding_dim=embedding_dim, dense_dim=dense_dim
        )
        # Non-persistent: the features are data, not weights; a state_dict
        # moved to a model of other rows must not bring them along.
        cat = torch.as_tensor(features.categorical, device=device)
        self.register_buffer("categorical", cat, persistent=False)
        dense = torch.as_tensor(features.dense).to(device=device, dtype=dtype)
        self.register_buffer("dense", dense, persistent=False)
        self.codes = nn.ModuleList(
            _embedding(c, embedding_dim, generator, device, dtype)
            for c in features.cardinalities
        )
        self.project = None
        if features.n_dense:
            self.project = _linear(
                features.n_dense, dense_dim, generator, device, dtype
            )
        self.out_features = embedding_dim * len(self.codes) + (
            dense_dim if self.project is not None else 0
        )

    def parts(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """Encoded features of ``ids`` (int64, shape (b,)), one tensor per feature."""
        cats = self.categorical[ids]
        out = [emb(cats[:, j]) for j, emb in enumerate(self.codes)]
        if self.project is not None:
            out.append(self.project(self.dense[ids]))
        return out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Encoded features of ``ids`` (int64, shape (b,)): shape (b, out_features)."""
        parts = self.parts(ids)
        if not parts:
            return self.dense.new_zeros((ids.shape[0], 0))
        return torch.cat(parts, 1)


@persistable
class MLPTower(_Tower):
    """A two-layer MLP over the side features of the ids (and optionally their
    id embedding): ``Linear -> ReLU -> Linear`` to k dimensions.

    Parameters
    ----------
    features : SideFeatures or None
        Per-row side features; None for an id embedding alone.
    n_components : int
        Output dimension k.
    id_embedding : EmbeddingTower, optional
        Its row of the id is concatenated before the side features.
    hidden : int
        Width of the hidden layer.
    embedding_dim, dense_dim : int
        See :class:`SideFeatureEncoder`.
    normalize : bool
        Return unit-norm embeddings (cosine scoring).
    generator, device, dtype
        As for :class:`EmbeddingTower`.

    Attributes
    ----------
    n_ids : int
    n_components : int
    encoder : SideFeatureEncoder or None
    mlp : torch.nn.Sequential

    Raises
    ------
    InvalidParameterError
        If there is no input (no features and no id embedding), or the id
        embedding and the features disagree on the number of rows.
    """

    def __init__(
        self,
        features: SideFeatures | None,
        n_components: int,
        *,
        id_embedding: EmbeddingTower | None = None,
        hidden: int = 128,
        embedding_dim: int = 16,
        dense_dim: int = 16,
        normalize: bool = True,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        owner = type(self).__name__
        _check_positive(owner, n_components=n_components, hidden=hidden)
        if features is None and id_embedding is None:
            raise InvalidParameterError(
                f"{owner} needs side features, an id embedding, or both."
            )
        if features is not None and id_embedding is not None:
            if features.n != id_embedding.n_ids:
                raise InvalidParameterError(
                    f"{owner}: the features have {features.n} rows but the id "
                    f"embedding has {id_embedding.n_ids} ids."
                )
        n_ids = features.n if features is not None else id_embedding.n_ids
        super().__init__(n_ids, n_components, normalize)
        self.id_embedding = id_embedding
        self.encoder = None
        width = id_embedding.n_components if id_embedding is not None else 0
        if features is not None:
            self.encoder = SideFeatureEncoder(
                features,
                embedding_dim=embedding_dim,
                dense_dim=dense_dim,
                generator=generator,
                device=device,
                dtype=dtype,
            )
            width += self.encoder.out_features
        if width == 0:
            raise InvalidParameterError(f"{owner}: the side features are empty.")
        self.mlp = nn.Sequential(
            _linear(width, hidden, generator, device, dtype),
            nn.ReLU(),
            _linear(hidden, n_components, generator, device, dtype),
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Embeddings of ``ids`` (int64, shape (b,)): shape (b, n_components)."""
        parts = [self.id_embedding(ids)] if self.id_embedding is not None else []
        if self.encoder is not None:
            parts += self.encoder.parts(ids)
        return self._output(self.mlp(torch.cat(parts, 1)))


@persistable
class ConcatTower(MLPTower):
    """Id embedding and side features through one MLP, unit-norm output.

    ``tower(i) = normalize(MLP([W[i], e_1(c_i1), ..., e_c(c_ic), A d_i + b]))``
    with a learned id table W (k columns), one learned embedding ``e_j`` per
    categorical feature and a linear map of the dense features ``d_i``: the
    user and item towers of Jiang et al. (Sec. 3.2), scored by cosines.

    Parameters
    ----------
    n_ids : int
        Number of users or items.
    n_components : int
        Output dimension k (also the width of the id embedding).
    features : SideFeatures, optional
        Per-row side features; None for the id embedding alone.
    hidden : int
        Width of the hidden layer.
    id_std : float
        Standard deviation of the initial id embeddings.
    embedding_dim, dense_dim : int
        See :class:`SideFeatureEncoder`.
    normalize : bool
    generator, device, dtype
        As for :class:`EmbeddingTower`; the draws go to the id table, the
        categorical embeddings, the dense map and the MLP, in this order.

    Examples
    --------
    >>> from embedopt.data import as_side_features
    >>> feats = as_side_features({"genre": [0, 1, 1, 2]}, 4, "item")
    >>> g = torch.Generator().manual_seed(0)
    >>> tower = ConcatTower(4, 8, feats, hidden=16, generator=g)
    >>> tower(torch.tensor([0, 2])).shape
    torch.Size([2, 8])
    """

    def __init__(
        self,
        n_ids: int,
        n_components: int,
        features: SideFeatures | None = None,
        *,
        hidden: int = 128,
        id_std: float = 0.05,
        embedding_dim: int = 16,
        dense_dim: int = 16,
        normalize: bool = True,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        ids = EmbeddingTower(
            n_ids,
            n_components,
            std=id_std,
            generator=generator,
            device=device,
            dtype=dtype,
        )
        super().__init__(
            features,
            n_components,
            id_embedding=ids,
            hidden=hidden,
            embedding_dim=embedding_dim,
            dense_dim=dense_dim,
            normalize=normalize,
            generator=generator,
            device=device,
            dtype=dtype,
        )


@persistable
class SumTower(_Tower):
    """The sum of towers of the same ids: ``tower(i) = t_1(i) + ... + t_s(i)``.

    With an :class:`EmbeddingTower` and an :class:`MLPTower` over side
    features, an id's embedding is its own learned row plus what its features
    predict: the matrix-factorization model is the special case of a zero
    MLP, and ids with few interactions lean on their features (the "sum of
    both" towers of all-pairs similarity learning).

    Parameters
    ----------
    *towers : torch.nn.Module
        Towers with the same ``n_ids`` and ``n_components``.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> a, b = EmbeddingTower(4, 3, generator=g), EmbeddingTower(4, 3, generator=g)
    >>> t = SumTower(a, b)
    >>> t(torch.tensor([0, 1])).shape
    torch.Size([2, 3])
    """

    def __init__(self, *towers: nn.Module):
        if not towers:
            raise InvalidParameterError("SumTower needs at least one tower.")
        ids = {getattr(t, "n_ids", None) for t in towers}
        dims = {getattr(t, "n_components", None) for t in towers}
        if len(ids) != 1 or len(dims) != 1:
            raise InvalidParameterError(
                "SumTower: the towers must have the same n_ids and n_components; "
                f"got n_ids {sorted(ids, key=str)}, n_components "
                f"{sorted(dims, key=str)}."
            )
        super().__init__(ids.pop(), dims.pop(), False)
        self.towers = nn.ModuleList(towers)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Sum of the towers' embeddings of ``ids``: shape (b, n_components)."""
        out = self.towers[0](ids)
        for tower in self.towers[1:]:
            out = out + tower(ids)
        return out


def _embedding_tower(n_ids, n_components, features, *, hidden, **common):
    return EmbeddingTower(n_ids, n_components, std=0.1, **common)


def _mlp_tower(n_ids, n_components, features, *, hidden, **common):
    return MLPTower(features, n_components, hidden=hidden, normalize=False, **common)


def _hybrid_tower(n_ids, n_components, features, *, hidden, **common):
    # the id's own row plus what its features predict (the sum of both
    # towers); matrix factorization is the case of a zero MLP
    return SumTower(
        _embedding_tower(n_ids, n_components, None, hidden=hidden, **common),
        _mlp_tower(n_ids, n_components, features, hidden=hidden, **common),
    )


#: Built-in towers by name (:func:`build_tower`): ``"embedding"`` (a learned
#: row per id), ``"mlp"`` (a two-layer MLP over the side features),
#: ``"hybrid"`` (their sum, :class:`SumTower`).
TOWERS = Registry(
    "tower",
    {"embedding": _embedding_tower, "mlp": _mlp_tower, "hybrid": _hybrid_tower},
    owner="embedopt.nn",
)

#: The towers that read side features.
FEATURE_TOWERS = ("mlp", "hybrid")


def build_tower(
    kind: str,
    n_ids: int,
    n_components: int,
    features: SideFeatures | None = None,
    *,
    hidden: int = 64,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """A built-in tower of :data:`TOWERS` with linear outputs.

    Id embeddings start at ``N(0, 0.1^2)``; the MLPs are unnormalized.

    Parameters
    ----------
    kind : {"embedding", "mlp", "hybrid"}
    n_ids : int
    n_components : int
    features : SideFeatures, optional
        Needed by ``"mlp"`` and ``"hybrid"``.
    hidden : int
        Hidden width of the MLP.
    generator, device, dtype
        As for :class:`EmbeddingTower`; the draws go to the id table first.

    Returns
    -------
    torch.nn.Module

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> build_tower("embedding", 5, 3, generator=g)(torch.tensor([0, 4])).shape
    torch.Size([2, 3])
    """
    make = TOWERS.get(kind)
    if TOWERS.resolve_name(kind) in FEATURE_TOWERS and features is None:
        raise InvalidParameterError(
            f"The {kind!r} tower needs side features; use 'embedding' without them."
        )
    common = dict(generator=generator, device=device, dtype=dtype)
    return make(n_ids, n_components, features, hidden=hidden, **common)
