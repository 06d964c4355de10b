"""End-to-end trainable embedding index: a two-tower retrieval model (Sec. 3.2).

Users and items are embedded by two towers (id embedding + categorical side
features + MLP, cosine scoring); the item tower ends with a
:class:`~.layers.ProductQuantizationLayer` (Figure 1). Training follows the
protocol of Sec. 3.2:

1. ``warmup_steps`` steps of the towers alone (retrieval loss only);
2. warm start of the codebooks and the rotation by OPQ
   (:func:`~.solvers.opq`, ``warm_start_iter`` iterations) on the item
   embeddings of ``warm_start_samples`` training pairs;
3. ``max_iter`` steps with the indexing layer: retrieval loss on
   ``T(item)`` plus ``distortion_weight`` times the distortion of eq. (1).
   The rotation is kept fixed (the baseline), trained through the Cayley
   transform, or trained by Givens coordinate descent (GCD-R/G/S).

Retrieval quality is measured through the index: the top-k items of a user
are found by inner-product ADC search over the items' PQ codes.
"""

from __future__ import annotations

import math
import warnings
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from .._core import (
    BaseEstimator,
    ConvergenceWarning,
    DataValidationError,
    Interval,
    Options,
    check_is_fitted,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
    to_numpy,
    validate_params,
)
from ..data import ObservedEntries
from ..metrics import precision_at_k, recall_at_k
from ..optim import GivensOptimizer, IterationMonitor, SolverResult
from .layers import ProductQuantizationLayer
from .solvers import opq

__all__ = ["TWO_TOWER_ROTATIONS", "TwoTowerNet", "TwoTowerRetrieval", "train_towers"]

#: Rotation methods of the indexing layer -> (layer rotation, pair selection).
TWO_TOWER_ROTATIONS = {
    "fixed": ("fixed", None),
    "cayley": ("cayley", None),
    "gcd-r": ("givens", "random"),
    "gcd-g": ("givens", "greedy"),
    "gcd-s": ("givens", "steepest"),
    "unconstrained": ("unconstrained", None),
}


class _Tower(nn.Module):
    def __init__(self, n_ids, cat_cards, n_dense, dim, hidden):
        super().__init__()
        self.ids = nn.Embedding(n_ids, dim)
        self.cats = nn.ModuleList(nn.Embedding(c, 16) for c in cat_cards)
        self.dense = nn.Linear(n_dense, 16) if n_dense else None
        width = dim + 16 * len(cat_cards) + (16 if n_dense else 0)
        self.mlp = nn.Sequential(
            nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, dim)
        )
        nn.init.normal_(self.ids.weight, std=0.05)

    def forward(self, idx, cats, dense):
        parts = [self.ids(idx)]
        parts += [emb(cats[:, k]) for k, emb in enumerate(self.cats)]
        if self.dense is not None:
            parts.append(self.dense(dense))
        out = self.mlp(torch.cat(parts, 1))
        return nn.functional.normalize(out, dim=1)  # cosine scoring


class TwoTowerNet(nn.Module):
    """User tower, item tower and the item-side PQ indexing layer.

    Parameters
    ----------
    n_users, n_items : int
    user_cats : torch.Tensor of int64, shape (n_users, c_u)
        Categorical user features (one column per feature).
    user_cards : list of int
        Cardinality of each user feature.
    item_cats : torch.Tensor of int64, shape (n_items, c_i)
    item_cards : list of int
    item_dense : torch.Tensor, shape (n_items, d_i)
        Dense item features (e.g. multi-hot genres); may have 0 columns.
    dim : int
        Embedding dimension n.
    hidden : int
        Width of the towers' hidden layer.
    n_subquantizers, n_centroids : int
    rotation : {"givens", "cayley", "fixed", "unconstrained"}
    """

    def __init__(
        self,
        n_users,
        n_items,
        user_cats,
        user_cards,
        item_cats,
        item_cards,
        item_dense,
        *,
        dim=64,
        hidden=128,
        n_subquantizers=8,
        n_centroids=256,
        rotation="givens",
    ):
        super().__init__()
        self.register_buffer("user_cats", user_cats)
        self.register_buffer("item_cats", item_cats)
        self.register_buffer("item_dense", item_dense)
        self.user_tower = _Tower(n_users, user_cards, 0, dim, hidden)
        self.item_tower = _Tower(n_items, item_cards, item_dense.shape[1], dim, hidden)
        self.index = ProductQuantizationLayer(
            dim, n_subquantizers, n_centroids, rotation=rotation
        )

    def users(self, u: torch.Tensor) -> torch.Tensor:
        """Normalized user embeddings.

        Parameters
        ----------
        u : torch.Tensor of int64, shape (b,)

        Returns
        -------
        torch.Tensor, shape (b, dim)
        """
        return self.user_tower(u, self.user_cats[u], None)

    def items(self, i: torch.Tensor) -> torch.Tensor:
        """Normalized item embeddings before the indexing layer.

        Parameters
        ----------
        i : torch.Tensor of int64, shape (b,)

        Returns
        -------
        torch.Tensor, shape (b, dim)
        """
        return self.item_tower(i, self.item_cats[i], self.item_dense[i])


def _retrieval_loss(u, v, loss, margin, temperature):
    # In-batch negatives: the other items of the batch.
    S = u @ v.T
    if loss == "softmax":
        target = torch.arange(S.shape[0], device=S.device)
        return nn.functional.cross_entropy(S / temperature, target)
    b = S.shape[0]
    pos = torch.diagonal(S)
    # Hinge over the off-diagonal pairs: the diagonal term equals the margin
    # exactly (S_ii - S_ii = 0), so subtract it instead of masking (a boolean
    # gather of b^2 entries dominated the step time).
    h = torch.relu(margin - pos[:, None] + S)
    return (h.sum() - b * margin) / (b * (b - 1))


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
    callback=None,
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
        in-batch softmax cross-entropy at ``temperature``.
    margin, temperature, distortion_weight : float
    log_every : int
        Steps per history row (one "iteration" of the monitor).
    generator : torch.Generator, optional
        Batch sampling.
    verbose : int
    callback : callable, optional
    name : str

    Returns
    -------
    SolverResult
        ``history`` has ``objective`` (mean total loss of the window),
        ``retrieval_loss`` and ``distortion`` (means over the window).
    """
    n_iter = max(1, math.ceil(n_steps / log_every))
    monitor = IterationMonitor(
        name,
        n_iter,
        0.0,
        stopping=lambda h: False,
        verbose=verbose,
        callback=callback,
        nonfinite_hint="lower the learning rate",
    )
    n = users.shape[0]
    net.train()
    step = 0
    with warnings.catch_warnings():
        # A fixed step budget is the plan, not a failure to converge.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in monitor:
            tot = ret = dis = 0.0
            k = 0
            while k < log_every and step < n_steps:
                b = torch.randint(0, n, (batch_size,), generator=generator).to(
                    users.device
                )
                u = net.users(users[b])
                v = net.items(items[b])
                d = torch.zeros((), device=u.device)
                if use_index:
                    v, d = net.index(v)
                r = _retrieval_loss(u, v, loss, margin, temperature)
                total = r + distortion_weight * d if use_index else r
                optimizer.zero_grad(set_to_none=True)
                if rotation_optimizer is not None:
                    rotation_optimizer.zero_grad(set_to_none=True)
                total.backward()
                optimizer.step()
                if rotation_optimizer is not None:
                    rotation_optimizer.step()
                tot += float(total.detach())
                ret += float(r.detach())
                dis += float(d.detach())
                k += 1
                step += 1
            monitor.record(
                net, objective=tot / k, retrieval_loss=ret / k, distortion=dis / k
            )
    res = monitor.result(net)
    res.stop_reason = "n_steps"
    return res


def _cloned(state: dict) -> dict:
    return {k: v.detach().clone() for k, v in state.items()}


def _check_warm_state(other, est, shape) -> dict:
    state = getattr(other, "warm_state_", None)
    if state is None:
        raise DataValidationError(
            "warm_start_from must be a fitted TwoTowerRetrieval (it has no "
            "warm_state_)."
        )
    if other.shape_ != tuple(shape) or state["config"] != est._warm_config():
        raise DataValidationError(
            "warm_start_from was fitted with other data or tower settings: "
            f"shape {other.shape_} vs {tuple(shape)}, settings {state['config']} vs "
            f"{est._warm_config()}."
        )
    return state


@torch.no_grad()
def _reinit(net: nn.Module, generator: torch.Generator) -> None:
    # Seeded initialization (torch's default init draws from the global RNG).
    for name, p in net.named_parameters():
        if "rotation" in name or "cayley" in name:
            continue
        if p.ndim == 1:
            p.zero_()
        elif isinstance(p, nn.Parameter) and "ids" in name:
            p.copy_(0.05 * torch.randn(p.shape, generator=generator))
        else:
            fan_in = p.shape[-1]
            p.copy_(torch.randn(p.shape, generator=generator) / math.sqrt(fan_in))


def _pairs(X, shape):
    if isinstance(X, ObservedEntries):
        return X.rows, X.cols, X.shape
    if isinstance(X, tuple) and len(X) in (2, 3):
        r, c = np.asarray(X[0]), np.asarray(X[1])
        if r.shape != c.shape or r.ndim != 1 or r.size == 0:
            raise DataValidationError(
                "Interactions must be two non-empty 1-D arrays (users, items) of the "
                f"same length; got shapes {r.shape} and {c.shape}."
            )
        if not (
            np.issubdtype(r.dtype, np.integer) and np.issubdtype(c.dtype, np.integer)
        ):
            raise DataValidationError("User and item indices must be integers.")
        if r.min() < 0 or c.min() < 0:
            raise DataValidationError("User and item indices must be non-negative.")
        sh = shape or (int(r.max()) + 1, int(c.max()) + 1)
        if r.max() >= sh[0] or c.max() >= sh[1]:
            raise DataValidationError(
                f"Indices exceed shape {sh}: max user {int(r.max())}, max item "
                f"{int(c.max())}."
            )
        return r.astype(np.int64), c.astype(np.int64), sh
    raise DataValidationError(
        "Interactions must be ObservedEntries or a tuple (users, items[, values]); "
        f"got {type(X).__name__}."
    )


def _features(feats, n, name):
    """Dict of feature arrays -> (categorical int64 (n, c), cards, dense (n, d))."""
    cats, cards, dense = [], [], []
    for key, v in (feats or {}).items():
        a = np.asarray(v)
        if a.shape[0] != n:
            raise DataValidationError(
                f"{name} feature {key!r} has {a.shape[0]} rows; expected {n}."
            )
        if a.ndim == 1 and np.issubdtype(a.dtype, np.integer):
            if a.min() < 0:
                raise DataValidationError(
                    f"{name} feature {key!r} has negative category codes."
                )
            cats.append(a.astype(np.int64))
            cards.append(int(a.max()) + 1)
        elif a.ndim == 2 and np.issubdtype(a.dtype, np.floating):
            if not np.isfinite(a).all():
                raise DataValidationError(f"{name} feature {key!r} has NaN/inf.")
            dense.append(a.astype(np.float32))
        elif a.ndim == 1 and a.dtype == bool:
            cats.append(a.astype(np.int64))
            cards.append(2)
        else:
            raise DataValidationError(
                f"{name} feature {key!r} must be 1-D integer codes or a 2-D float "
                f"array; got dtype {a.dtype}, shape {a.shape}."
            )
    cat = np.stack(cats, 1) if cats else np.zeros((n, 0), np.int64)
    den = np.concatenate(dense, 1) if dense else np.zeros((n, 0), np.float32)
    return torch.as_tensor(cat), cards, torch.as_tensor(den)


class TwoTowerRetrieval(BaseEstimator):
    """Two-tower retrieval model with a trainable PQ index (Jiang et al., Sec. 3.2).

    Parameters
    ----------
    n_components : int
        Embedding dimension (paper: 512; we default to 64 for CPU budgets).
    hidden : int
        Hidden width of each tower.
    n_subquantizers, n_centroids : int
        M and K of the indexing layer.
    rotation : {"fixed", "cayley", "gcd-r", "gcd-g", "gcd-s", "unconstrained"}
        How R evolves after the OPQ warm start (``"fixed"``: the baseline).
    loss : {"hinge", "softmax"}
        Retrieval loss over in-batch negatives (paper: hinge, margin 0.1).
    margin, temperature : float
    batch_size : int
    learning_rate : float
        Adam step of the towers and codebooks.
    rotation_learning_rate : float
        lambda of GCD (plain angles ``-lr * A_ij``); the Cayley and
        unconstrained baselines use plain SGD with ``lr / 4`` (the per-plane
        step of GCD, see :class:`~.rotation_learners.CayleyLearner`).
    warmup_steps : int
        Steps before the indexing layer is switched on.
    max_iter : int
        Steps with the indexing layer.
    distortion_weight : float
        Weight of the distortion term of eq. (1).
    warm_start_samples : int
        Training pairs whose item embeddings warm-start OPQ (paper: 8192).
    warm_start_iter : int
        OPQ iterations of the warm start (paper: 200).
    log_every : int
        Steps per history row.
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
    callback : callable, optional

    Attributes
    ----------
    net_ : TwoTowerNet
    history_ : dict of numpy.ndarray
        Index phase (``objective``, ``retrieval_loss``, ``distortion``).
    warmup_history_ : dict of numpy.ndarray
    warm_start_distortion_ : float
        OPQ distortion of the warm-start sample.
    n_iter_ : int
    stop_reason_ : str
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(int, 1, None)],
        "hidden": [Interval(int, 1, None)],
        "n_subquantizers": [Interval(int, 1, None)],
        "n_centroids": [Interval(int, 1, 65536)],
        "rotation": [Options(TWO_TOWER_ROTATIONS)],
        "loss": [Options(["hinge", "softmax"])],
        "margin": [Interval(float, 0, None)],
        "temperature": [Interval(float, 0, None, closed="neither")],
        "batch_size": [Interval(int, 2, None)],
        "learning_rate": [Interval(float, 0, None, closed="neither")],
        "rotation_learning_rate": [Interval(float, 0, None)],
        "warmup_steps": [Interval(int, 0, None)],
        "max_iter": [Interval(int, 1, None)],
        "distortion_weight": [Interval(float, 0, None)],
        "warm_start_samples": [Interval(int, 1, None)],
        "warm_start_iter": [Interval(int, 1, None)],
        "log_every": [Interval(int, 1, None)],
        "random_state": ["random_state"],
        "device": ["device"],
        "dtype": ["dtype"],
        "verbose": [Interval(int, 0, None), "boolean"],
        "callback": ["callable", None],
    }

    def __init__(
        self,
        n_components=64,
        *,
        hidden=128,
        n_subquantizers=8,
        n_centroids=256,
        rotation="gcd-g",
        loss="hinge",
        margin=0.1,
        temperature=0.05,
        batch_size=1024,
        learning_rate=3e-3,
        rotation_learning_rate=1.0,
        warmup_steps=2000,
        max_iter=2000,
        distortion_weight=1.0,
        warm_start_samples=8192,
        warm_start_iter=200,
        log_every=100,
        random_state=None,
        device="auto",
        dtype="float32",
        verbose=0,
        callback=None,
    ):
        self.n_components = n_components
        self.hidden = hidden
        self.n_subquantizers = n_subquantizers
        self.n_centroids = n_centroids
        self.rotation = rotation
        self.loss = loss
        self.margin = margin
        self.temperature = temperature
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.rotation_learning_rate = rotation_learning_rate
        self.warmup_steps = warmup_steps
        self.max_iter = max_iter
        self.distortion_weight = distortion_weight
        self.warm_start_samples = warm_start_samples
        self.warm_start_iter = warm_start_iter
        self.log_every = log_every
        self.random_state = random_state
        self.device = device
        self.dtype = dtype
        self.verbose = verbose
        self.callback = callback

    def fit(
        self,
        X,
        y=None,
        *,
        shape=None,
        user_features=None,
        item_features=None,
        warm_start_from=None,
    ) -> TwoTowerRetrieval:
        """Train the towers and the index (warm-up, OPQ warm start, index phase).

        Parameters
        ----------
        X : ObservedEntries or tuple (users, items[, values])
            Positive interactions (values, if any, are ignored).
        y : None
            Ignored.
        shape : tuple (n_users, n_items), optional
            Default: from ``X``.
        user_features, item_features : dict of str to array, optional
            Per-user / per-item features: 1-D integer arrays are categorical
            codes, 2-D float arrays dense features (e.g.
            :func:`~embedopt.data.load_movielens_side_features`).
        warm_start_from : TwoTowerRetrieval, optional
            A model fitted on the same data: reuse its towers after warm-up and
            its OPQ warm start (``warm_state_``) and run only the index phase.
            This is how rotation methods are compared from one shared warm
            start (Sec. 3.2 protocol) without repeating phases 1-2.

        Returns
        -------
        self
        """
        self._validate_params()
        if self.n_components % self.n_subquantizers:
            raise DataValidationError(
                f"n_subquantizers={self.n_subquantizers} must divide "
                f"n_components={self.n_components}."
            )
        rs = resolve_random_state(self.random_state, type(self).__name__)
        dev = resolve_device(self.device)
        dt = resolve_dtype(self.dtype)
        rows, cols, sh = _pairs(X, shape)
        if self.n_centroids > min(self.warm_start_samples, rows.size):
            raise DataValidationError(
                f"n_centroids={self.n_centroids} exceeds the "
                f"{min(self.warm_start_samples, rows.size)} warm-start samples."
            )
        ucat, ucards, _ = _features(user_features, sh[0], "user")
        icat, icards, iden = _features(item_features, sh[1], "item")
        # Independent streams per phase: every rotation method sees the same
        # warm-up, warm start and batches for a given seed.
        g_init = rs.torch("cpu")
        g_warm, g_opq, g_idx, g_rot = (
            torch.Generator().manual_seed(int(rs.numpy.integers(2**62)))
            for _ in range(4)
        )
        layer_rot, selection = TWO_TOWER_ROTATIONS[self.rotation]
        net = TwoTowerNet(
            sh[0],
            sh[1],
            ucat,
            ucards,
            icat,
            icards,
            iden,
            dim=self.n_components,
            hidden=self.hidden,
            n_subquantizers=self.n_subquantizers,
            n_centroids=self.n_centroids,
            rotation=layer_rot,
        )
        _reinit(net, g_init)
        net = net.to(device=dev, dtype=dt)
        net.user_cats = net.user_cats.long()
        net.item_cats = net.item_cats.long()
        users = torch.as_tensor(rows, device=dev)
        items = torch.as_tensor(cols, device=dev)
        towers = list(net.user_tower.parameters()) + list(net.item_tower.parameters())
        opt = torch.optim.Adam(towers, lr=self.learning_rate)
        common = dict(
            batch_size=self.batch_size,
            loss=self.loss,
            margin=self.margin,
            temperature=self.temperature,
            log_every=self.log_every,
            verbose=self.verbose,
            callback=self.callback,
        )
        if warm_start_from is not None:
            state = _check_warm_state(warm_start_from, self, sh)
            net.user_tower.load_state_dict(state["user_tower"])
            net.item_tower.load_state_dict(state["item_tower"])
        else:
            state = self._warm_phases(net, users, items, opt, g_warm, g_opq, common)
        net.index.set_state(state["rotation"], state["codebooks"])
        lr_rot = self.rotation_learning_rate
        params = [{"params": towers, "lr": self.learning_rate}]
        params.append({"params": [net.index.codebooks], "lr": self.learning_rate})
        opt = torch.optim.Adam(params)
        rot_opt = None
        if selection is not None:
            rot_opt = GivensOptimizer(
                net.index.rotation_parameters(),
                lr=lr_rot,
                selection=selection,
                generator=g_rot,
            )
        elif self.rotation in ("cayley", "unconstrained"):
            rp = (
                [net.index.cayley.weight]
                if self.rotation == "cayley"
                else [net.index.rotation_weight]
            )
            rot_opt = torch.optim.SGD(rp, lr=lr_rot / 4.0)
        res = train_towers(
            net,
            users,
            items,
            n_steps=self.max_iter,
            use_index=True,
            optimizer=opt,
            rotation_optimizer=rot_opt,
            distortion_weight=self.distortion_weight,
            generator=g_idx,
            name=f"two_tower[{self.rotation}]",
            **common,
        )
        net.eval()
        self.net_ = net
        self.shape_ = sh
        self.warm_state_ = state
        self.warm_start_distortion_ = state["distortion"]
        self.warmup_history_ = state["warmup_history"]
        self.history_ = res.history
        self.n_iter_ = res.n_iter
        self.stop_reason_ = res.stop_reason
        return self

    def _warm_phases(self, net, users, items, opt, g_warm, g_opq, common) -> dict:
        """Phases 1-2: warm-up steps, then the OPQ warm start of the index."""
        warm = None
        if self.warmup_steps:
            warm = train_towers(
                net,
                users,
                items,
                n_steps=self.warmup_steps,
                use_index=False,
                optimizer=opt,
                generator=g_warm,
                name="two_tower[warm-up]",
                **common,
            )
        # Sec. 3.2: warm start codebooks and R by OPQ on collected embeddings.
        with torch.no_grad():
            pick = torch.randint(
                0, users.shape[0], (self.warm_start_samples,), generator=g_opq
            )
            emb = net.items(items[pick.to(items.device)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ws = opq(
                emb,
                self.n_subquantizers,
                self.n_centroids,
                max_iter=self.warm_start_iter,
                tol=0.0,
                random_state=int(torch.randint(2**62, (1,), generator=g_opq)),
                device=emb.device,
                dtype=emb.dtype,
            )
        return dict(
            user_tower=_cloned(net.user_tower.state_dict()),
            item_tower=_cloned(net.item_tower.state_dict()),
            rotation=ws.x.rotation.clone(),
            codebooks=ws.x.codebooks.clone(),
            distortion=float(ws.history["objective"][-1]),
            warmup_history=warm.history if warm is not None else {},
            config=self._warm_config(),
        )

    def _warm_config(self) -> dict:
        keys = (
            "n_components",
            "hidden",
            "n_subquantizers",
            "n_centroids",
            "warmup_steps",
            "warm_start_samples",
            "warm_start_iter",
        )
        return {k: getattr(self, k) for k in keys}

    # -- retrieval ---------------------------------------------------------------
    @torch.no_grad()
    def item_codes(self) -> torch.Tensor:
        """PQ codes of every item through the fitted index.

        Returns
        -------
        torch.Tensor of int64, shape (n_items, M)
        """
        check_is_fitted(self, "net_")
        net = self.net_
        dev = net.item_cats.device
        emb = net.items(torch.arange(self.shape_[1], device=dev))
        return net.index.encode(emb)

    @torch.no_grad()
    def recommend(self, users, k: int = 100, *, exclude=None) -> np.ndarray:
        """Top-k items of each user, searched through the PQ index (ADC, inner product).

        Parameters
        ----------
        users : array-like of int, shape (n,)
        k : int
        exclude : ObservedEntries or tuple (users, items), optional
            Pairs never to recommend (e.g. the training interactions).

        Returns
        -------
        numpy.ndarray of int64, shape (n, k)
            Item ids by decreasing score; -1 pads a row when fewer than k
            items are left after the exclusions.
        """
        check_is_fitted(self, "net_")
        net = self.net_
        owner = f"{type(self).__name__}.recommend"
        validate_params(owner, dict(k=k), {"k": [Interval(int, 1, None)]})
        u = np.asarray(users, dtype=np.int64).ravel()
        if u.size and (u.min() < 0 or u.max() >= self.shape_[0]):
            raise DataValidationError(
                f"user indices must lie in [0, {self.shape_[0]})."
            )
        dev = net.item_cats.device
        codes = self.item_codes()
        seen: dict[int, set] = {}
        extra = 0
        if exclude is not None:
            er, ec, _ = _pairs(exclude, self.shape_)
            order = np.argsort(er, kind="stable")
            er, ec = er[order], ec[order]
            bounds = np.searchsorted(er, u, "left"), np.searchsorted(er, u, "right")
            for q, (a, b) in enumerate(zip(*bounds, strict=True)):
                seen[q] = set(ec[a:b].tolist())
            extra = max((len(s) for s in seen.values()), default=0)
        out = np.full((u.size, k), -1, dtype=np.int64)
        for a in range(0, u.size, 512):
            q = net.users(torch.as_tensor(u[a : a + 512], device=dev))
            _, ids = net.index.search(q, codes, min(k + extra, codes.shape[0]))
            ids = to_numpy(ids)
            for r in range(ids.shape[0]):
                s = seen.get(a + r)
                row = ids[r] if not s else ids[r][~np.isin(ids[r], list(s))]
                out[a + r, : min(k, row.size)] = row[:k]
        return out

    def evaluate(self, test, *, exclude=None, k: int = 100) -> dict:
        """precision@k and recall@k of retrieval through the index.

        Parameters
        ----------
        test : ObservedEntries or tuple (users, items)
            Held-out positive pairs; every user with one is a query.
        exclude : ObservedEntries or tuple, optional
            Training pairs removed from the rankings.
        k : int

        Returns
        -------
        dict
            ``precision@k``, ``recall@k``, ``n_users``.
        """
        tr, tc, _ = _pairs(test, self.shape_)
        users = np.unique(tr)
        order = np.argsort(tr, kind="stable")
        tr, tc = tr[order], tc[order]
        rel = np.split(tc, np.searchsorted(tr, users[1:]))
        ids = self.recommend(users, k, exclude=exclude)
        return {
            f"precision@{k}": precision_at_k(ids, rel, k),
            f"recall@{k}": recall_at_k(ids, rel, k),
            "n_users": int(users.size),
        }
