"""The two-tower retrieval estimator with a trainable PQ index (Sec. 3.2).

:class:`TwoTowerRetrieval` validates its parameters and data, trains through
:func:`~.two_tower.train_two_tower_index`, and retrieves through the index:
the top-k items of a user are found by inner-product ADC search over the
items' PQ codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    BaseEstimator,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    InvalidParameterError,
    Options,
    RandomStateLike,
    check_is_fitted,
)
from ..data import (
    UNKNOWN_POLICIES,
    InteractionsLike,
    SideFeatures,
    as_interactions,
)
from ..linalg import top_k_inner_products
from ..linalg.codebooks import decode
from ..nn import RetrievalMixin
from ..optim import IterationState
from .two_tower import INDEX_ROTATIONS, TWO_TOWER_CONSTRAINTS, train_two_tower_index

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


class TwoTowerRetrieval(RetrievalMixin, BaseEstimator):
    """Two-tower retrieval model with a trainable PQ index (Jiang et al., Sec. 3.2).

    Fitting calls :func:`train_two_tower_index`; ``recommend``,
    ``similar_items``, ``evaluate`` and ``score`` (those of every two-tower
    model, :class:`~embedopt.nn.RetrievalMixin`) search the items' PQ codes
    by inner-product ADC; ``predict`` scores pairs exactly.

    Parameters
    ----------
    n_components : int
        Embedding dimension (paper: 512; we default to 64 for CPU budgets).
    hidden : int
        Hidden width of each tower.
    n_subquantizers, n_centroids : int
        M and K of the indexing layer.
    rotation : str
        How R evolves after the OPQ warm start: a name of
        :data:`~embedopt.quantization.ROTATIONS` (the rotation methods of
        :class:`~embedopt.quantization.ProductQuantizer` too) with a
        gradient form, ``"none"`` (R fixed: the baseline), ``"gcd_r"``,
        ``"gcd_g"``, ``"gcd_s"``, ``"gcd_r_overlap"``, ``"gcd_g_overlap"``,
        ``"cayley"`` or ``"unconstrained"`` (not ``"opq"``); hyphenated
        spellings (``"gcd-g"``) are accepted.
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
        Steps with the indexing layer (a fixed budget, never cut short: not
        ``max_iter``, which means outer iterations stopped by ``tol``, see
        ``docs/vocabulary.md``).
    distortion_weight : float
        Weight of the distortion term of eq. (1).
    warm_start_samples : int
        Training pairs whose item embeddings warm-start OPQ (paper: 8192).
    warm_start_iter : int
        OPQ iterations of the warm start (paper: 200).
    log_every : int
        Steps per history row.
    unknown : {"raise", "nan", "fallback"}
        What ``recommend``, ``similar_items``, ``predict`` and ``evaluate``
        do with an unknown id, as in :class:`~embedopt.similarity.TwoTowerModel`
        (``"fallback"``: the popularity ranking of the training items).
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
        0 silent, 1 a progress bar per phase, 2 also a log record per
        history row.
    callback : callable, optional
        ``callback(state) -> bool | None`` after each history row of each
        training phase; True ends the whole fit (during the warm-up, the
        index keeps its OPQ warm start and the index phase does not run).

    Attributes
    ----------
    net_ : TwoTowerNet
    shape_ : tuple of int
        ``(n_users, n_items)``.
    user_ids_, item_ids_ : numpy.ndarray or None
        The users' and items' ids in code order (int64 or str) where ``fit``
        mapped them; None for positions.
    history_ : dict of numpy.ndarray
        Index phase (``objective``, ``retrieval_loss``, ``distortion``), or
        the warm-up's where a callback ended the fit there.
    warmup_history_ : dict of numpy.ndarray
    warm_state_ : dict
        Towers after warm-up and the OPQ warm start (for ``warm_start_from``).
    warm_start_distortion_ : float
        OPQ distortion of the warm-start sample.
    n_iter_ : int
    stop_reason_ : str
        ``"n_steps"`` or ``"callback"``.
    solver_ : str
        The rotation method that trained R (its :data:`ROTATIONS` name).
    objective_ : float
        Mean training loss of the last history row.

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
        "unknown": [Options(UNKNOWN_POLICIES)],
        "random_state": ["random_state"],
        "device": ["device"],
        "dtype": ["dtype"],
    }

    def __init__(
        self,
        n_components: int = 64,
        *,
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
        unknown: str = "raise",
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float32",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    def fit(
        self,
        X: InteractionsLike,
        y: ArrayLike | None = None,
        *,
        shape: tuple[int, int] | None = None,
        user_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
        item_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
        warm_start_from: TwoTowerRetrieval | None = None,
        sample_weight: None = None,
    ) -> TwoTowerRetrieval:
        """Train the towers and the index (warm-up, OPQ warm start, index phase).

        Phase 1 trains the towers alone for ``warmup_steps``; phase 2 fits
        OPQ to the item embeddings of ``warm_start_samples`` training pairs;
        phase 3 takes ``n_steps`` steps with the indexing layer on (retrieval
        loss plus ``distortion_weight`` times the distortion), the rotation
        kept or trained as ``rotation`` says.

        Parameters
        ----------
        X : DataFrame, ObservedEntries or tuple (users, items[, values])
            Positive interactions (values, if any, are ignored). A DataFrame
            holds two columns, users then items (read by position), whose
            ids are mapped to codes 0..n-1 in sorted order and kept
            (``user_ids_``, ``item_ids_``), as are string columns of a tuple;
            ``recommend``, ``predict``... then take and return those ids.
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
        sample_weight : None
            Not supported: only None is accepted (the argument exists so that
            a weighted call fails with a clear error). Each in-batch loss
            scores a positive pair against the other pairs of its batch,
            drawn uniformly from the positives; a weight could scale a pair's
            own term but not its part as a negative of the other rows, nor
            the uniform sample of the OPQ warm start. To weight pairs, draw
            them in proportion to their weights (repeat a pair ``w`` times,
            or ``rng.choice(n_pairs, size, p=w / w.sum())``) before ``fit``:
            that changes both parts alike.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            If ``sample_weight`` is not None.
        DataValidationError
            Bad pairs or features, or a ``warm_start_from`` that is not fitted.
        """
        if sample_weight is not None:
            raise InvalidParameterError(
                f"{type(self).__name__}.fit does not take sample_weight: its "
                "in-batch losses use every pair of a batch as a negative of the "
                "others, so a per-pair weight has no single meaning there. "
                "Resample the pairs in proportion to their weights instead "
                "(np.random.default_rng().choice(n_pairs, size, p=w / w.sum())), "
                "or use TwoTowerModel, whose fit takes sample_weight."
            )
        ctx = self._start_fit()
        data = as_interactions(self._map_pairs(X, shape), shape)
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
        self._remember_seen(data)
        self._item_codes = self._compact(self.item_codes())
        self._store_result(res, solver=INDEX_ROTATIONS.resolve_name(self.rotation))
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

    # -- the retrieval hooks (RetrievalMixin) ---------------------------------------
    _fitted_attr = "net_"
    _weight_hint = (
        "this model takes no weights (see fit's sample_weight): resample the "
        "pairs in proportion to them, or use TwoTowerModel."
    )

    @torch.no_grad()
    def _user_vectors(self, users: np.ndarray) -> torch.Tensor:
        net = self.net_
        ids = torch.as_tensor(users, device=net.device)
        if ids.numel() == 0:
            return net.users(ids)
        # in batches of 512 users, as the searches run
        return torch.cat([net.users(ids[a : a + 512]) for a in range(0, len(ids), 512)])

    @torch.no_grad()
    def _item_vectors(self, items: np.ndarray | None) -> torch.Tensor:
        """Item embeddings before the index (the queries of ``similar_items``)."""
        net = self.net_
        if items is None:
            items = np.arange(self.shape_[1])
        return net.items(torch.as_tensor(items, device=net.device))

    def _compact(self, codes: torch.Tensor) -> torch.Tensor:
        """Codes in the smallest integer dtype that holds ``n_centroids``."""
        return codes.to(torch.uint8 if self.n_centroids <= 256 else torch.int32)

    @torch.no_grad()
    def _search(self, queries, k, exclude, candidates):
        """Inner-product search of the queries among the PQ codes of the
        candidate items (positions among them, as ``RetrievalMixin._search``).

        The items' codes are those ``fit`` stored (``item_codes()`` at the
        end of the fit), not encoded again per call. They are decoded into
        the rotated space and scored with one matrix product per block of
        queries: ``<q R, phi(x R)>`` is exactly the ADC estimate of the
        lookup tables (equal to rounding), and on the CPU a matrix product
        over the decoded items is faster than table gathers at every
        catalogue size measured (``benchmarks/recommend.py``). Items with the
        same PQ code have equal scores; their order is unspecified (see
        Notes of the class).
        """
        codes = getattr(self, "_item_codes", None)
        if codes is None:  # a model saved before the codes were kept
            codes = self.item_codes()
        if candidates is not None:
            codes = codes[torch.as_tensor(candidates, device=codes.device)]
        index = self.net_.index
        items = decode(codes, index.codebooks)
        return top_k_inner_products(
            queries @ index.rotation_matrix(), items, k, exclude=exclude
        )
