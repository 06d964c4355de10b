"""Two-tower model with a trainable PQ index: network and training (Sec. 3.2).

Users and items are embedded by two towers (id embedding + side features +
MLP, cosine scoring: :class:`~embedopt.nn.ConcatTower`); the item tower ends
with a :class:`~.layers.ProductQuantizationLayer` (Figure 1).
:func:`train_two_tower_index` follows the protocol of Sec. 3.2:

1. ``warmup_steps`` steps of the towers alone (retrieval loss only);
2. warm start of the codebooks and the rotation by OPQ
   (:func:`~.solvers.opq`, ``warm_start_iter`` iterations) on the item
   embeddings of ``warm_start_samples`` training pairs;
3. ``n_steps`` steps with the indexing layer: retrieval loss on
   ``T(item)`` plus ``distortion_weight`` times the distortion of eq. (1).
   The rotation is kept fixed (the baseline), trained through the Cayley
   transform, or trained by Givens coordinate descent (GCD-R/G/S).

The estimator, :class:`~.two_tower_estimator.TwoTowerRetrieval`, calls
:func:`train_two_tower_index` and retrieves through the index.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from .._core import (
    PROGRESS_CONSTRAINTS,
    ConvergenceWarning,
    DataValidationError,
    Interval,
    InvalidParameterError,
    Options,
    RandomState,
    Registry,
    check_tensor_memory,
    persistable,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
    validate_params,
)
from ..data import (
    InteractionsLike,
    SideFeatures,
    as_interactions,
    as_side_features,
)
from ..nn import RETRIEVAL_LOSSES, ConcatTower, retrieval_loss
from ..optim import (
    GivensOptimizer,
    IterationState,
    SolverResult,
    minibatch_train,
    random_batches,
)
from .baselines import opq
from .layers import ProductQuantizationLayer
from .rotation_learners import ROTATIONS, RotationMethod

__all__ = [
    "INDEX_ROTATIONS",
    "LAYER_ROTATION_OPTIMIZERS",
    "TWO_TOWER_CONSTRAINTS",
    "TwoTowerNet",
    "TwoTowerRotation",
    "train_towers",
    "train_two_tower_index",
]


class TwoTowerRotation(NamedTuple):
    """How one rotation method of :class:`TwoTowerRetrieval` trains R.

    Attributes
    ----------
    layer : str
        ``rotation`` of the :class:`~.layers.ProductQuantizationLayer` (a key of
        :data:`LAYER_ROTATION_OPTIMIZERS`).
    selection : str or None
        Pair selection of Givens coordinate descent.
    """

    layer: str
    selection: str | None


def _layer_form(method: RotationMethod) -> TwoTowerRotation | None:
    """How the indexing layer learns R under a method of :data:`ROTATIONS`:
    no rotation step keeps the warm start's R fixed; GCD, Cayley and the
    unconstrained matrix take gradient steps; OPQ's closed-form Procrustes
    step has no form in end-to-end training (None)."""
    if method.learner is None:
        return TwoTowerRotation("fixed", None)
    if method.learner == "givens":
        return TwoTowerRotation("givens", str(method.options["selection"]))
    if method.learner in ("cayley", "unconstrained"):
        return TwoTowerRotation(method.learner, None)
    return None


#: The methods of :data:`~.rotation_learners.ROTATIONS` (the one registry of
#: rotation methods) that the indexing layer trains R with, by the same names
#: (``"gcd-g"`` finds ``"gcd_g"``; ``"none"`` keeps the OPQ warm start's R).
INDEX_ROTATIONS = Registry(
    "rotation",
    {
        name: form
        for name in ROTATIONS
        if (form := _layer_form(ROTATIONS[name])) is not None
    },
    owner="TwoTowerRetrieval",
)

#: Optimizer factories of the layer's rotation, by its ``rotation`` kind:
#: ``factory(layer, lr=, selection=, generator=) -> Optimizer | None``.
LAYER_ROTATION_OPTIMIZERS = Registry(
    "rotation optimizer", owner="ProductQuantizationLayer"
)


@LAYER_ROTATION_OPTIMIZERS.register("fixed")
def _fixed_rotation(layer, *, lr, selection, generator) -> None:
    return None


@LAYER_ROTATION_OPTIMIZERS.register("givens")
def _givens_optimizer(layer, *, lr, selection, generator) -> GivensOptimizer:
    return GivensOptimizer(
        layer.rotation_parameters(), lr=lr, selection=selection, generator=generator
    )


# The Cayley and unconstrained baselines take plain SGD steps of lr / 4, the
# per-plane step of GCD (see rotation_learners.CayleyLearner).
@LAYER_ROTATION_OPTIMIZERS.register("cayley")
def _cayley_sgd(layer, *, lr, selection, generator) -> torch.optim.Optimizer:
    return torch.optim.SGD([layer.cayley.weight], lr=lr / 4.0)


@LAYER_ROTATION_OPTIMIZERS.register("unconstrained")
def _unconstrained_sgd(layer, *, lr, selection, generator) -> torch.optim.Optimizer:
    return torch.optim.SGD([layer.rotation_weight], lr=lr / 4.0)


@persistable
class TwoTowerNet(nn.Module):
    """User tower, item tower and the item-side PQ indexing layer (Figure 1).

    Parameters
    ----------
    user_tower, item_tower : torch.nn.Module
        ``tower(ids) -> (b, k)``, e.g. :class:`~embedopt.nn.ConcatTower`; the
        item tower has an ``n_components`` attribute (k) and sets the device
        and dtype of the indexing layer.
    n_subquantizers, n_centroids : int
        M (divides k) and K of the indexing layer.
    rotation : {"givens", "cayley", "fixed", "unconstrained"}
        How the layer represents R.

    Attributes
    ----------
    index : ProductQuantizationLayer
    """

    def __init__(
        self,
        user_tower: nn.Module,
        item_tower: nn.Module,
        *,
        n_subquantizers: int = 8,
        n_centroids: int = 256,
        rotation: str = "givens",
    ):
        super().__init__()
        self.user_tower = user_tower
        self.item_tower = item_tower
        weight = next(item_tower.parameters())
        self.index = ProductQuantizationLayer(
            item_tower.n_components, n_subquantizers, n_centroids, rotation=rotation
        ).to(device=weight.device, dtype=weight.dtype)

    @property
    def device(self) -> torch.device:
        """Where the network lives."""
        return self.index.codebooks.device

    def users(self, u: torch.Tensor) -> torch.Tensor:
        """User embeddings of ``u`` (int64, shape (b,)): shape (b, k)."""
        return self.user_tower(u)

    def items(self, i: torch.Tensor) -> torch.Tensor:
        """Item embeddings of ``i`` (int64, shape (b,)) before the index: (b, k)."""
        return self.item_tower(i)


def train_towers(
    net: TwoTowerNet,
    users: torch.Tensor,
    items: torch.Tensor,
    *,
    n_steps: int,
    use_index: bool,
    optimizer: torch.optim.Optimizer,
    rotation_optimizer: torch.optim.Optimizer | None = None,
    batch_size: int = 1024,
    loss: str = "hinge",
    margin: float = 0.1,
    temperature: float = 0.05,
    distortion_weight: float = 1.0,
    log_every: int = 100,
    generator: torch.Generator | None = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "two_tower",
) -> SolverResult:
    """Train the towers on positive (user, item) pairs with in-batch negatives.

    Parameters
    ----------
    net : TwoTowerNet
    users, items : torch.Tensor of int64, shape (n_pairs,)
        Positive interactions.
    n_steps : int
        Minibatch steps.
    use_index : bool
        Score users against ``T(item)`` and add the distortion term (eq. 1).
    optimizer : torch.optim.Optimizer
        Steps every parameter except a Givens rotation.
    rotation_optimizer : GivensOptimizer, optional
        Steps the rotation (GCD) after each backward pass.
    batch_size : int
    loss : {"hinge", "softmax"}
        Hinge with margin ``margin`` over in-batch negatives (paper: 0.1) or
        in-batch softmax cross-entropy at ``temperature``
        (:func:`~embedopt.nn.retrieval_loss`).
    margin, temperature, distortion_weight : float
    log_every : int
        Steps per history row (one "iteration" of the monitor).
    generator : torch.Generator, optional
        Batch sampling.
    verbose, callback
        See :class:`TwoTowerRetrieval`.
    name : str

    Returns
    -------
    SolverResult
        From :func:`~embedopt.optim.minibatch_train`: ``history`` has
        ``objective`` (mean total loss of the window), ``retrieval_loss`` and
        ``distortion`` (means over the window).
    """
    net.train()

    def step(b: torch.Tensor) -> dict[str, torch.Tensor]:
        u = net.users(users[b])
        v = net.items(items[b])
        d = torch.zeros((), device=u.device)
        if use_index:
            v, d = net.index(v)
        r = retrieval_loss(u, v, loss, margin=margin, temperature=temperature)
        total = r + distortion_weight * d if use_index else r
        return {"objective": total, "retrieval_loss": r, "distortion": d}

    optimizers = [optimizer]
    if rotation_optimizer is not None:
        optimizers.append(rotation_optimizer)
    return minibatch_train(
        step,
        random_batches(
            users.shape[0], batch_size, generator=generator, device=users.device
        ),
        optimizers,
        n_steps=n_steps,
        log_every=log_every,
        model=net,
        verbose=verbose,
        callback=callback,
        name=name,
    )


#: Parameters of :func:`train_two_tower_index` (and :class:`TwoTowerRetrieval`).
TWO_TOWER_CONSTRAINTS = {
    "n_components": [Interval(int, 1, None)],
    "hidden": [Interval(int, 1, None)],
    "n_subquantizers": [Interval(int, 1, None)],
    "n_centroids": [Interval(int, 1, 65536)],
    "rotation": [Options(INDEX_ROTATIONS)],
    "loss": [Options(RETRIEVAL_LOSSES)],
    "margin": [Interval(float, 0, None)],
    "temperature": [Interval(float, 0, None, closed="neither")],
    "batch_size": [Interval(int, 2, None)],
    "learning_rate": [Interval(float, 0, None, closed="neither")],
    "rotation_learning_rate": [Interval(float, 0, None)],
    "warmup_steps": [Interval(int, 0, None)],
    "n_steps": [Interval(int, 1, None)],
    "distortion_weight": [Interval(float, 0, None)],
    "warm_start_samples": [Interval(int, 1, None)],
    "warm_start_iter": [Interval(int, 1, None)],
    "log_every": [Interval(int, 1, None)],
    **PROGRESS_CONSTRAINTS,
}

# What train_towers takes from the settings in every phase.
_TRAIN_KEYS = (
    "batch_size",
    "loss",
    "margin",
    "temperature",
    "log_every",
    "verbose",
    "callback",
)

# Settings a warm state (phases 1-2) depends on; warm_start_from must match.
_WARM_CONFIG_KEYS = (
    "n_components",
    "hidden",
    "n_subquantizers",
    "n_centroids",
    "warmup_steps",
    "warm_start_samples",
    "warm_start_iter",
)


def train_two_tower_index(
    interactions: InteractionsLike,
    user_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
    item_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
    *,
    n_components: int = 64,
    hidden: int = 128,
    n_subquantizers: int = 8,
    n_centroids: int = 256,
    rotation: str = "gcd_g",
    loss: str = "hinge",
    margin: float = 0.1,
    temperature: float = 0.05,
    batch_size: int = 1024,
    learning_rate: float = 3e-3,
    rotation_learning_rate: float = 1.0,
    warmup_steps: int = 2000,
    n_steps: int = 2000,
    distortion_weight: float = 1.0,
    warm_start_samples: int = 8192,
    warm_start_iter: int = 200,
    log_every: int = 100,
    warm_state: dict | None = None,
    random_state: int | np.random.Generator | RandomState | None = None,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "float32",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
) -> SolverResult:
    """Train a two-tower model and its PQ index by the protocol of Sec. 3.2.

    Phases: warm-up of the towers, OPQ warm start of the index (both skipped
    when ``warm_state`` is given), then ``n_steps`` steps with the index.
    The parameters are those of :class:`TwoTowerRetrieval`.

    Parameters
    ----------
    interactions : Interactions, ObservedEntries or tuple (users, items)
        Positive pairs (:func:`~embedopt.data.as_interactions`).
    user_features, item_features : SideFeatures or dict, optional
        :func:`~embedopt.data.as_side_features`; the user tower reads the
        categorical user features only.
    n_components, hidden, n_subquantizers, n_centroids, batch_size : int
    rotation, loss : str
    margin, temperature, distortion_weight : float
    learning_rate, rotation_learning_rate : float
    warmup_steps, n_steps, warm_start_samples, warm_start_iter, log_every : int
    warm_state : dict, optional
        ``info["warm_state"]`` of an earlier run on the same data with the
        same tower settings: its towers after warm-up and its OPQ warm start
        are reused (phases 1-2 are skipped).
    random_state : None, int, numpy Generator or RandomState
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"} or torch.dtype
    verbose, callback
        See :class:`TwoTowerRetrieval`.

    Returns
    -------
    SolverResult
        ``x`` is the trained :class:`TwoTowerNet` (in eval mode); ``history``
        that of the index phase (:func:`train_towers`); ``info["warm_state"]``
        the towers after warm-up, the warm-start rotation, codebooks and
        distortion, the warm-up history, and the shape and settings it
        depends on.

    Raises
    ------
    DataValidationError
        If ``n_subquantizers`` does not divide ``n_components``, there are
        fewer warm-start samples than ``n_centroids``, the data or features
        are invalid, or ``warm_state`` comes from other data or settings.
    """
    name = "train_two_tower_index"
    settings = dict(
        n_components=n_components,
        hidden=hidden,
        n_subquantizers=n_subquantizers,
        n_centroids=n_centroids,
        rotation=rotation,
        loss=loss,
        margin=margin,
        temperature=temperature,
        batch_size=batch_size,
        learning_rate=learning_rate,
        rotation_learning_rate=rotation_learning_rate,
        warmup_steps=warmup_steps,
        n_steps=n_steps,
        distortion_weight=distortion_weight,
        warm_start_samples=warm_start_samples,
        warm_start_iter=warm_start_iter,
        log_every=log_every,
        verbose=verbose,
        callback=callback,
    )
    validate_params(name, settings, TWO_TOWER_CONSTRAINTS)
    largest = torch.finfo(resolve_dtype(dtype)).max
    for key in ("learning_rate", "rotation_learning_rate"):
        # torch's optimizers hold the step size in the dtype of the weights
        if settings[key] > largest:
            raise InvalidParameterError(
                f"The {key!r} parameter of {name} must be at most {largest:.4g} "
                f"(the largest {resolve_dtype(dtype)}). Got {settings[key]!r}."
            )
    if n_components % n_subquantizers:
        raise DataValidationError(
            f"n_subquantizers={n_subquantizers} must divide "
            f"n_components={n_components}."
        )
    data = as_interactions(interactions)
    _check_tables(name, data.shape, n_components, device, dtype)
    _check_batch(name, batch_size, device, dtype)
    n_warm = min(warm_start_samples, len(data))
    if n_centroids > n_warm:
        raise DataValidationError(
            f"n_centroids={n_centroids} exceeds the {n_warm} warm-start samples."
        )
    if warm_state is not None:
        _check_warm_state(warm_state, data.shape, settings)
    return _train(
        data,
        as_side_features(user_features, data.n_users, "user"),
        as_side_features(item_features, data.n_items, "item"),
        settings,
        warm_state,
        resolve_random_state(random_state, name),
        resolve_device(device),
        resolve_dtype(dtype),
    )


#: Copies of the id tables that training holds: weights, gradients and Adam's
#: two moments.
_TABLE_COPIES = 4


def _check_tables(name, shape, n_components, device, dtype) -> None:
    """Refuse id tables (one row per user and item) that cannot fit."""
    n_rows = shape[0] + shape[1]
    check_tensor_memory(
        name,
        _TABLE_COPIES * n_rows * n_components,
        device,
        dtype,
        f"the id embeddings of {shape[0]} users and {shape[1]} items "
        f"({n_components} columns)",
        "A stray index or ids never remapped to 0..n-1 are the usual cause (the "
        "shape is max index + 1 unless shape= is given): drop the stray pairs, "
        "or pass a DataFrame to map the ids to 0..n-1 (the model keeps the map; "
        "or np.unique(ids, return_inverse=True) by hand).",
    )


#: In-batch score matrices a training step holds (scores, their gradient,
#: the loss terms).
_BATCH_COPIES = 3


def _check_batch(name, batch_size, device, dtype) -> None:
    """Refuse a batch whose b x b in-batch scores cannot fit."""
    check_tensor_memory(
        name,
        _BATCH_COPIES * batch_size * batch_size,
        device,
        dtype,
        f"the {batch_size} x {batch_size} in-batch scores of a step",
        "Lower batch_size (each step scores every user of the batch against "
        "every item of the batch).",
    )


def _train(data, user_features, item_features, settings, warm_state, rs, dev, dt):
    """The three phases on validated input (see train_two_tower_index)."""
    # Independent streams per phase: every rotation method sees the same
    # warm-up, warm start and batches for a given seed.
    g_init = rs.torch("cpu")
    g_warm, g_opq, g_idx, g_rot = (
        torch.Generator().manual_seed(int(rs.numpy.integers(2**62))) for _ in range(4)
    )
    method = INDEX_ROTATIONS.get(settings["rotation"])
    net = _build_net(
        data.shape,
        _categorical_only(user_features),
        item_features,
        settings,
        method.layer,
        g_init,
        dev,
        dt,
    )
    users = torch.as_tensor(data.users, device=dev)
    items = torch.as_tensor(data.items, device=dev)
    train_kw = {k: settings[k] for k in _TRAIN_KEYS}
    warm = None
    if warm_state is None:
        warm, warm_state = _warm_phases(
            net, users, items, g_warm, g_opq, settings, train_kw
        )
        warm_state["shape"] = data.shape
    else:
        net.user_tower.load_state_dict(warm_state["user_tower"])
        net.item_tower.load_state_dict(warm_state["item_tower"])
    if warm is not None and warm.stop_reason == "callback":
        # a callback that returns True ends the whole fit: the index keeps
        # the OPQ warm start and the index phase never runs
        net.index.set_state(warm_state["rotation"], warm_state["codebooks"])
        res = warm
    else:
        res = _index_phase(
            net, users, items, warm_state, method, (g_idx, g_rot), settings, train_kw
        )
    net.eval()
    res.info["warm_state"] = warm_state
    return res


def _check_warm_state(state: dict, shape: tuple, settings: dict) -> None:
    config = {k: settings[k] for k in _WARM_CONFIG_KEYS}
    if state.get("shape") != tuple(shape) or state.get("config") != config:
        raise DataValidationError(
            "The warm state (warm_start_from) was computed with other data or "
            f"tower settings: shape {state.get('shape')} vs {tuple(shape)}, "
            f"settings {state.get('config')} vs {config}."
        )


def _categorical_only(features: SideFeatures) -> SideFeatures:
    # The user tower has always read categorical features only; dense user
    # features are validated but not used (kept so that results do not change).
    return SideFeatures(
        features.categorical, features.cardinalities, features.dense[:, :0]
    )


def _build_net(
    shape, user_features, item_features, settings, rotation, generator, device, dtype
) -> TwoTowerNet:
    """The two towers (user tower first: seeded draws in a fixed order), the index."""

    def tower(n_ids: int, features: SideFeatures) -> ConcatTower:
        return ConcatTower(
            n_ids,
            settings["n_components"],
            features,
            hidden=settings["hidden"],
            generator=generator,
            device=device,
            dtype=dtype,
        )

    return TwoTowerNet(
        tower(shape[0], user_features),
        tower(shape[1], item_features),
        n_subquantizers=settings["n_subquantizers"],
        n_centroids=settings["n_centroids"],
        rotation=rotation,
    )


def _towers(net: TwoTowerNet) -> list[nn.Parameter]:
    return list(net.user_tower.parameters()) + list(net.item_tower.parameters())


def _index_phase(net, users, items, state, method, generators, settings, train_kw):
    """Phase 3: the towers, codebooks and rotation trained with the index."""
    g_idx, g_rot = generators
    net.index.set_state(state["rotation"], state["codebooks"])
    lr = settings["learning_rate"]
    opt = torch.optim.Adam(
        [
            {"params": _towers(net), "lr": lr},
            {"params": [net.index.codebooks], "lr": lr},
        ]
    )
    rot_opt = LAYER_ROTATION_OPTIMIZERS.get(method.layer)(
        net.index,
        lr=settings["rotation_learning_rate"],
        selection=method.selection,
        generator=g_rot,
    )
    return train_towers(
        net,
        users,
        items,
        n_steps=settings["n_steps"],
        use_index=True,
        optimizer=opt,
        rotation_optimizer=rot_opt,
        distortion_weight=settings["distortion_weight"],
        generator=g_idx,
        name=f"two_tower[{INDEX_ROTATIONS.resolve_name(settings['rotation'])}]",
        **train_kw,
    )


def _cloned(state: dict) -> dict:
    return {k: v.detach().clone() for k, v in state.items()}


def _warm_phases(net, users, items, g_warm, g_opq, settings, train_kw):
    """Phases 1-2: warm-up steps, then the OPQ warm start of the index.

    Returns the warm-up's result (None without warm-up) and the warm state.
    """
    warm = None
    if settings["warmup_steps"]:
        warm = train_towers(
            net,
            users,
            items,
            n_steps=settings["warmup_steps"],
            use_index=False,
            optimizer=torch.optim.Adam(_towers(net), lr=settings["learning_rate"]),
            generator=g_warm,
            name="two_tower[warm-up]",
            **train_kw,
        )
    # Sec. 3.2: warm start codebooks and R by OPQ on collected embeddings.
    with torch.no_grad():
        pick = torch.randint(
            0, users.shape[0], (settings["warm_start_samples"],), generator=g_opq
        )
        emb = net.items(items[pick.to(items.device)])
    with warnings.catch_warnings():
        # A fixed number of OPQ iterations is the plan (tol=0).
        warnings.simplefilter("ignore", ConvergenceWarning)
        ws = opq(
            emb,
            n_subquantizers=settings["n_subquantizers"],
            n_centroids=settings["n_centroids"],
            max_iter=settings["warm_start_iter"],
            tol=0.0,
            random_state=int(torch.randint(2**62, (1,), generator=g_opq)),
            device=emb.device,
            dtype=emb.dtype,
        )
    return warm, dict(
        user_tower=_cloned(net.user_tower.state_dict()),
        item_tower=_cloned(net.item_tower.state_dict()),
        rotation=ws.x.rotation.clone(),
        codebooks=ws.x.codebooks.clone(),
        distortion=float(ws.history["objective"][-1]),
        warmup_history=warm.history if warm is not None else {},
        config={k: settings[k] for k in _WARM_CONFIG_KEYS},
    )
