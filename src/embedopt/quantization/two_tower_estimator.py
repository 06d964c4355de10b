"""The two-tower retrieval estimator with a trainable PQ index (Sec. 3.2).

:class:`TwoTowerRetrieval` validates its parameters and data, trains through
:func:`~.two_tower.train_two_tower_index`, and retrieves through the index:
the top-k items of a user are found by inner-product ADC search over the
items' PQ codes.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from .._core import (
    BaseEstimator,
    DataValidationError,
    Interval,
    as_array,
    check_is_fitted,
    renamed_parameters,
    to_numpy,
    validate_params,
)
from ..data import as_interactions
from ..metrics import precision_at_k, recall_at_k
from .two_tower import TWO_TOWER_CONSTRAINTS, train_two_tower_index

__all__ = ["TwoTowerRetrieval"]

#: The parameters TwoTowerRetrieval hands to train_two_tower_index unchanged.
_TRAIN_PARAMS = (
    "n_components",
    "hidden",
    "n_subquantizers",
    "n_centroids",
    "rotation",
    "loss",
    "margin",
    "temperature",
    "batch_size",
    "learning_rate",
    "rotation_learning_rate",
    "warmup_steps",
    "n_steps",
    "distortion_weight",
    "warm_start_samples",
    "warm_start_iter",
    "log_every",
)


class TwoTowerRetrieval(BaseEstimator):
    """Two-tower retrieval model with a trainable PQ index (Jiang et al., Sec. 3.2).

    Fitting calls :func:`train_two_tower_index`.

    Parameters
    ----------
    n_components : int
        Embedding dimension (paper: 512; we default to 64 for CPU budgets).
    hidden : int
        Hidden width of each tower.
    n_subquantizers, n_centroids : int
        M and K of the indexing layer.
    rotation : {"fixed", "cayley", "gcd_r", "gcd_g", "gcd_s", "unconstrained"}
        How R evolves after the OPQ warm start (``"fixed"``: the baseline);
        hyphenated spellings (``"gcd-g"``) are accepted.
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
    n_steps : int
        Steps with the indexing layer (a fixed budget; renamed from
        ``max_iter``, which means outer iterations stopped by ``tol``
        elsewhere, see ``docs/vocabulary.md``).
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
        0 silent, 1 a progress bar per phase, 2 also a log record per
        history row.
    callback : callable, optional
        ``callback(state) -> bool | None`` after each history row of each
        training phase; True ends that phase.

    Attributes
    ----------
    net_ : TwoTowerNet
    shape_ : tuple of int
        ``(n_users, n_items)``.
    history_ : dict of numpy.ndarray
        Index phase (``objective``, ``retrieval_loss``, ``distortion``).
    warmup_history_ : dict of numpy.ndarray
    warm_state_ : dict
        Towers after warm-up and the OPQ warm start (for ``warm_start_from``).
    warm_start_distortion_ : float
        OPQ distortion of the warm-start sample.
    n_iter_ : int
    stop_reason_ : str

    Notes
    -----
    Same seed, device and dtype give the same model. A float32 and a float64
    fit of the same seed start from the same weights (drawn in float32) and
    see the same batches, but they are different models: their
    recommendations share about 40 % of their top-10 items and are rarely
    identical lists. This is the sensitivity of the training, not float32
    round-off piling up in a sum. Adam's steps do not depend on the scale of
    the gradient: a user whose in-batch terms cancel exactly (a gradient of
    1e-16 in float64) gets a rounding residual of about 1e-8 in float32,
    which Adam turns into a step of most of the learning rate, already at
    the first step. Later, the hinge's kinks and the discrete PQ assignments
    amplify any difference. In float64 alone, scaling the initial weights by
    ``1 + 1e-7 N(0, 1)`` (float32's rounding) moves the towers by 0.1 after
    300 warm-up steps and leaves the same 41 % overlap, and ``1e-12`` still
    changes 99 % of the top-10 lists (90 % overlap). precision@10 of such
    pairs of runs agrees within their noise (0.32 vs 0.31; 300 users x 400
    items, issue 14). Items with the same PQ code also score exactly alike,
    and the order of tied items in a list is unspecified. Compare retrieval
    metrics, not lists, across precisions, devices or library versions.
    """

    _parameter_constraints: ClassVar[dict] = {
        **TWO_TOWER_CONSTRAINTS,
        "random_state": ["random_state"],
        "device": ["device"],
        "dtype": ["dtype"],
    }

    @renamed_parameters(max_iter="n_steps")
    def __init__(
        self,
        n_components=64,
        *,
        hidden=128,
        n_subquantizers=8,
        n_centroids=256,
        rotation="gcd_g",
        loss="hinge",
        margin=0.1,
        temperature=0.05,
        batch_size=1024,
        learning_rate=3e-3,
        rotation_learning_rate=1.0,
        warmup_steps=2000,
        n_steps=2000,
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
        self._store_params(locals())

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

        Phase 1 trains the towers alone for ``warmup_steps``; phase 2 fits
        OPQ to the item embeddings of ``warm_start_samples`` training pairs;
        phase 3 takes ``n_steps`` steps with the indexing layer on (retrieval
        loss plus ``distortion_weight`` times the distortion), the rotation
        kept or trained as ``rotation`` says.

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
            :func:`~embedopt.data.load_movielens_side_features`); the user
            tower reads the categorical ones.
        warm_start_from : TwoTowerRetrieval, optional
            A model fitted on the same data: reuse its towers after warm-up and
            its OPQ warm start (``warm_state_``) and run only the index phase.
            This is how rotation methods are compared from one shared warm
            start (Sec. 3.2 protocol) without repeating phases 1-2.

        Returns
        -------
        self
        """
        ctx = self._start_fit()
        data = as_interactions(X, shape)
        state = None
        if warm_start_from is not None:
            state = getattr(warm_start_from, "warm_state_", None)
            if state is None:
                raise DataValidationError(
                    "warm_start_from must be a fitted TwoTowerRetrieval (it has no "
                    "warm_state_)."
                )
        # the features are checked (and built) by train_two_tower_index, after
        # it has checked that the id tables of data.shape fit in memory
        res = train_two_tower_index(
            data,
            user_features,
            item_features,
            **self._param_values(_TRAIN_PARAMS),
            warm_state=state,
            **ctx.run_options(self),
        )
        self.net_ = res.x
        self.shape_ = data.shape
        self.warm_state_ = res.info["warm_state"]
        self.warm_start_distortion_ = self.warm_state_["distortion"]
        self.warmup_history_ = self.warm_state_["warmup_history"]
        self._store_result(res)
        return self

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
        dev = net.device
        emb = net.items(torch.arange(self.shape_[1], device=dev))
        return net.index.encode(emb)

    @torch.no_grad()
    def recommend(self, users, k: int = 100, *, exclude=None) -> np.ndarray:
        """Top-k items of each user, searched through the PQ index (ADC, inner product).

        Parameters
        ----------
        users : array-like of int, shape (n,)
        k : int
            Items per user; at most the number of items are returned.
        exclude : ObservedEntries or tuple (users, items), optional
            Pairs never to recommend (e.g. the training interactions).

        Returns
        -------
        numpy.ndarray of int64, shape (n, min(k, n_items))
            Item ids by decreasing score; -1 pads a row when fewer items are
            left after the exclusions. Items with the same PQ code
            have equal scores; their order is unspecified (see Notes of the
            class).
        """
        check_is_fitted(self, "net_")
        net = self.net_
        owner = f"{type(self).__name__}.recommend"
        validate_params(owner, dict(k=k), {"k": [Interval(int, 1, None)]})
        k = min(int(k), self.shape_[1])
        u = as_array(users, "users")
        if u.dtype == bool or not np.issubdtype(u.dtype, np.integer):
            raise DataValidationError(
                f"users must be integer indices; got dtype {u.dtype}."
            )
        u = u.ravel()
        if u.size and (u.min() < 0 or u.max() >= self.shape_[0]):
            raise DataValidationError(
                f"user indices must lie in [0, {self.shape_[0]})."
            )
        u = u.astype(np.int64)
        dev = net.device
        codes = self.item_codes()
        seen: dict[int, set] = {}
        extra = 0
        if exclude is not None:
            ex = as_interactions(exclude, self.shape_)
            er, ec = ex.users, ex.items
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
        check_is_fitted(self, "shape_")
        held_out = as_interactions(test, self.shape_)
        tr, tc = held_out.users, held_out.items
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
