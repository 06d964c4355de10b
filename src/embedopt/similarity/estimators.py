"""``TwoTowerModel``: all-pairs two-tower similarity learning as an estimator."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
from numpy.typing import ArrayLike
from torch import nn

from .._core import (
    RUN_CONSTRAINTS,
    BaseEstimator,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    InstanceOf,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    as_array,
    check_is_fitted,
    check_memory,
    check_param,
    few_threads,
    resolve_fit_context,
    to_numpy,
)
from ..data import (
    UNKNOWN_POLICIES,
    Interactions,
    InteractionsLike,
    SideFeatures,
    as_interactions,
    as_side_features,
)
from ..data.frames import decode_ids
from ..linalg import Communicator, top_k_inner_products
from ..linalg.distributed import PROCESS_GROUP_CONSTRAINT
from ..nn import (
    FEATURE_TOWERS,
    TOWERS,
    RetrievalMixin,
    build_tower,
    pairs_by_user,
    ranking_metrics,
)
from ..optim import IterationState, SolverResult
from ._fold_in import (
    encoders,
    feature_embeddings,
    grow_tower,
    new_pairs,
    permute_tower,
    solvable,
    solve_rows,
)
from .distributed import DistributedAllPairsObjective, _group_rank0
from .losses import LOSSES, LossLike, get_loss
from .problem import (
    AllPairsObjective,
    Imputation,
    _sample_weight,
    popularity_weights,
)
from .solvers import (
    GROUP_SOLVERS,
    SOLVERS,
    check_solver_options,
    one_thread,
    resolve_solver,
    solver_settings,
    warm_start,
)

__all__ = ["TwoTowerModel"]

_TOWERS = ("auto", *TOWERS)
#: The class of a process group, where this build of torch has one.


class TwoTowerModel(RetrievalMixin, BaseEstimator):
    """Two-tower similarity learning from all m x n pairs at O(m + n) cost.

    Fits a user tower f and an item tower g (``p_i = f(u_i)``, ``q_j =
    g(v_j)`` in R^k) so that ``p_i^T q_j`` matches the observed labels and,
    for every other pair, an imputed label (0 for implicit feedback: what a
    user did not interact with counts as weak evidence of dislike), with the
    objective of :class:`~embedopt.similarity.AllPairsObjective` (Yuan et
    al., KDD 2021, eq. 5 + 7). No m x n matrix is ever formed, in training
    or in :meth:`recommend` (:class:`~embedopt.nn.RetrievalMixin`).

    Parameters
    ----------
    n_components : int
        Embedding dimension k.
    user_tower, item_tower : {"auto", "embedding", "mlp", "hybrid"} or torch.nn.Module
        A name of :data:`~embedopt.nn.TOWERS` (:func:`~embedopt.nn.build_tower`).
        ``"embedding"``: a learned row per id (matrix factorization);
        ``"mlp"``: a two-layer MLP over the side features; ``"hybrid"``: the
        sum of both, an id embedding plus an MLP of the features
        (:class:`~embedopt.nn.SumTower`); ``"auto"``:
        ``"hybrid"`` when that side has features, else ``"embedding"``. A
        module is used as is (trained in place), moved to the estimator's
        ``device`` first: it receives the ids (int64) of a batch of entities
        and returns their (batch, k) embeddings.
    hidden : int
        Hidden width of the built-in MLP towers.
    loss : {"square", "logistic"} or loss object
        Loss on the observed pairs (see :func:`~embedopt.similarity.get_loss`).
    omega : float
        Weight of the imputed (unobserved) pairs.
    lam : float
        Weight of the regularizer ``||theta||^2 / 2``.
    imputation : float or tuple (Ptilde, Qtilde)
        The imputed label of the unobserved pairs: a constant or a prior
        model's factors.
    imputed : {"unobserved", "all"}
        The imputation term covers the unobserved pairs (paper eq. 7) or all.
    weights : {"uniform", "popularity"}
        ``a_i``, ``b_j``: ones, or growing with the number of interactions
        (:func:`~embedopt.similarity.popularity_weights`, exponent 0.5).
    solver : "auto" or str
        A name of :data:`~embedopt.similarity.SOLVERS`. ``"auto"``
        (:func:`~embedopt.similarity.solvers.resolve_solver`): ALS
        (alternating least squares, the classic linear case) when both
        towers are embedding tables and the loss is square, Gauss-Newton-CG
        otherwise (MLP towers, other losses). With hybrid towers and the
        square loss, ``"auto"`` first fits the id tables by ALS and zeroes
        the MLPs' output layers (:func:`~embedopt.similarity.solvers.warm_start`),
        so Gauss-Newton starts from the matrix-factorization solution and
        learns what the side features add.
    max_iter : int, optional
        Outer iterations of the solver. None: 60 for Gauss-Newton (whose
        steps are truncated at 10 CG iterations by default), 20 for the
        others (ALS, also as the warm start of ``"auto"``).
    tol : float, optional
        Tolerance of the solver's stopping test: for ALS and Gauss-Newton
        the relative objective decrease of one iteration (``stop_on=
        "objective"`` of :func:`~embedopt.similarity.als` and
        :func:`~embedopt.similarity.gauss_newton`), for the other solvers
        the relative gradient norm. None: 2e-4 for ALS, 1e-3 for
        Gauss-Newton, 1e-4 for the others
        (:func:`~embedopt.similarity.solvers.solver_settings`).
    solver_options : dict, optional
        Further keyword arguments of the solver (e.g. ``cg_rtol``,
        ``preconditioner`` of :func:`~embedopt.similarity.gauss_newton`;
        ``cg_steps``, ``stop_on`` of :func:`~embedopt.similarity.als`).
    chunk_size : int, optional
        Entities per tower pass (bounds activation memory; see
        :class:`~embedopt.similarity.AllPairsObjective`).
    eval_k : int
        Cut-off of the ranking metrics recorded per iteration when a
        validation set is given, and of :meth:`score` (precision@eval_k).
    unknown : {"raise", "nan", "fallback"}
        What ``recommend``, ``similar_items``, ``predict`` and ``evaluate``
        do with an id unseen at fit (a position beyond ``shape_`` on a model
        fitted on positions): raise a DataValidationError naming it; ``"nan"``:
        NaN scores (and -1 / "" ids in a recommended row); ``"fallback"``:
        the popularity ranking of the training items for an unknown user or
        item (nothing excluded; the scores are the items' training counts),
        and for ``predict`` the mean embedding of the fitted users (items) in
        place of the unknown one (:class:`~embedopt.nn.RetrievalMixin`).
    random_state : None, int or numpy.random.Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
        The towers' dtype (sums are accumulated in float64 regardless).
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool | None`` once per outer iteration, of the
        ALS warm start too; True ends the whole fit.
    process_group : None, "default" or torch.distributed.ProcessGroup
        Data-parallel training (see Notes): None trains in this process;
        ``"default"`` spreads the work over the default process group
        (``torch.distributed.init_process_group``, e.g. under ``torchrun``),
        a group object over that group. Every process of the group calls
        ``fit`` with the same data and parameters.

    Attributes
    ----------
    user_tower_, item_tower_ : torch.nn.Module
        The trained towers.
    user_embeddings_, item_embeddings_ : numpy.ndarray, shapes (m, k), (n, k)
        Their outputs on all users / items.
    objective_ : float
        Final objective value.
    solver_ : str
        The solver that ran (``"auto"`` resolved; ``"als"`` when a callback
        ended the fit during the warm start).
    history_ : dict of numpy.ndarray
        Per iteration: objective, grad_norm, time and the solver's own
        columns (cg_iter for Gauss-Newton); with ``validation``, also
        ``precision@k``, ``recall@k``, ``ndcg@k``, ``map@k``.
    n_iter_ : int
    stop_reason_ : str
    warm_start_history_ : dict of numpy.ndarray or None
        With ``solver="auto"``, hybrid towers and the square loss: the
        history of the ALS fit of the id tables that Gauss-Newton started
        from (see ``solver``).
    shape_ : tuple of int
        ``(m, n)``.
    user_ids_, item_ids_ : numpy.ndarray or None
        The users' and items' ids in code order (sorted; int64 or str) where
        ``fit`` mapped them (a DataFrame, string ids); None for positions.

    Notes
    -----
    Default choices (the paper's text stops before its experiments): k = 64,
    omega = 0.2, lam = 10 (the best held-out P@10 of a small grid on
    MovieLens-100K), imputation 0 over the unobserved pairs, uniform
    weights; ALS with 3 CG steps per half-step and the objective test at
    2e-4, Gauss-Newton with at most 10 CG iterations per step and the
    objective test at 1e-3. ``benchmarks/similarity/README.md`` ("Defaults
    of TwoTowerModel") holds the measurements behind them, and
    ``benchmarks/similarity/ranking.py`` re-measures the held-out metrics.

    With ``process_group``, the objective is a
    :class:`~embedopt.similarity.DistributedAllPairsObjective`: each process
    runs the towers on its shard of users and items and the pairs of its
    users, and the value, gradient and Gauss-Newton products are summed over
    the group, so every process takes the same steps and ends with the same
    towers and embeddings (equal, up to rounding, to a one-process fit). Only
    Gauss-Newton and gradient descent run on a group; ``solver="auto"`` then
    means Gauss-Newton, after the ALS warm start of the id tables where the
    towers have them (ALS has no data-parallel form here: every process runs
    the same warm start, and the first process's result is broadcast). A
    ``random_state`` that is not an int is replaced by a seed drawn on the
    group's first process, so that the solvers' random probes agree.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> pairs = (rng.integers(0, 30, 200), rng.integers(0, 20, 200))
    >>> model = TwoTowerModel(4, max_iter=3, random_state=0).fit(pairs)
    >>> ids, scores = model.recommend([0, 1], k=5)
    >>> ids.shape, scores.shape
    ((2, 5), (2, 5))
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(int, 1, None)],
        "user_tower": [Options(_TOWERS), InstanceOf(nn.Module, "a torch.nn.Module")],
        "item_tower": [Options(_TOWERS), InstanceOf(nn.Module, "a torch.nn.Module")],
        "hidden": [Interval(int, 1, None)],
        "loss": [Options(LOSSES), "callable", InstanceOf(object, "a loss object")],
        "omega": [Interval(float, 0, None)],
        "lam": [Interval(float, 0, None)],
        "imputation": [Interval(float, None, None), InstanceOf(tuple, "a tuple")],
        "imputed": [Options(["unobserved", "all"])],
        "weights": [Options(["uniform", "popularity"])],
        "solver": [Options(["auto", *SOLVERS])],
        "max_iter": [Interval(int, 1, None), None],
        "tol": [Interval(float, 0, None), None],
        "solver_options": [InstanceOf(dict, "a dict"), None],
        "chunk_size": [Interval(int, 1, None), None],
        "eval_k": [Interval(int, 1, None)],
        "unknown": [Options(UNKNOWN_POLICIES)],
        **RUN_CONSTRAINTS,
        "process_group": PROCESS_GROUP_CONSTRAINT,
    }

    def __init__(
        self,
        n_components: int = 64,
        *,
        user_tower: str | nn.Module = "auto",
        item_tower: str | nn.Module = "auto",
        hidden: int = 64,
        loss: LossLike = "square",
        omega: float = 0.2,
        lam: float = 10.0,
        imputation: Imputation = 0.0,
        imputed: str = "unobserved",
        weights: str = "uniform",
        solver: str = "auto",
        max_iter: int | None = None,
        tol: float | None = None,
        solver_options: dict | None = None,
        chunk_size: int | None = None,
        eval_k: int = 10,
        unknown: str = "raise",
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float32",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
        process_group: Literal["default"] | dist.ProcessGroup | None = None,
    ):
        self._store_params(locals())

    # -- fit ---------------------------------------------------------------------
    def fit(
        self,
        X: InteractionsLike,
        y: ArrayLike | None = None,
        *,
        user_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
        item_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
        validation: InteractionsLike | None = None,
        sample_weight: ArrayLike | sp.spmatrix | None = None,
    ) -> TwoTowerModel:
        """Train both towers on all pairs.

        Parameters
        ----------
        X : DataFrame, scipy.sparse matrix, tuple or Interactions
            The observed (user, item) pairs: a sparse m x n matrix (stored
            entries are pairs, their values the labels), a tuple (users,
            items[, labels]), or an :class:`~embedopt.data.Interactions`.
            Pairs without labels are labelled 1 (implicit feedback). A pandas
            DataFrame holds two columns, read by position: users, items
            (another column is refused); its ids are mapped to codes
            0..n-1 in sorted order and kept (``user_ids_``, ``item_ids_``),
            as are the columns of strings of a tuple (integer columns stay
            positions); ``recommend``, ``predict``... then take and return
            those ids, and side features hold one row per distinct id in
            that order.
        y : None
            Ignored.
        user_features, item_features : dict of arrays or SideFeatures, optional
            Side features, one row per user / item (see
            :func:`~embedopt.data.as_side_features`); they fix m and n.
        validation : same types as ``X``, optional
            Held-out pairs: P@k, recall@k, nDCG@k and MAP@k
            (k = ``eval_k``, training pairs excluded) are recorded in
            ``history_`` after every iteration.
        sample_weight : array-like of shape (n_pairs,) or sparse matrix, optional
            The confidence of each observed pair (iALS's ``1 + alpha r``):
            finite, non-negative, not all zero. It multiplies the pair's
            loss; the imputed term of the unobserved pairs is unchanged
            (:class:`~embedopt.similarity.AllPairsObjective`). An array
            follows the order of the pairs: that of a tuple ``X``; for a
            sparse ``X``, row-major order with duplicates summed (``.data``
            of ``X.tocsr()`` after ``sum_duplicates()``). A sparse matrix
            (with a sparse ``X``) holds each pair's weight at the pair's
            position and stores the same entries as ``X``. None: all 1.
            Every solver honours it.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            A bad parameter.
        DataValidationError
            Indices out of range, NaN labels or features, feature rows that
            do not match the matrix, an empty matrix; a ``sample_weight`` of
            the wrong length, negative, NaN or infinite, or all zero.
        """
        vars(self).pop("item_index_", None)  # built on the old item vectors
        self._validate_params()
        distributed, group = self._group()
        ctx = self._group_context(group) if distributed else resolve_fit_context(self)
        owner = type(self).__name__
        X = self._map_pairs(X)
        data = _fit_data(X, user_features, item_features)
        _check_mapped_rows(data.shape, self.user_ids_, self.item_ids_)
        weight = _fit_weights(sample_weight, X, data, f"{owner}.fit")
        self.shape_ = (m, n) = data.shape
        _check_size(owner, (m, n), self.n_components, ctx)
        uf, vf = _side_features(user_features, item_features, m, n)
        self._remember_seen(data)
        self._training = _training_pairs(data, weight)
        towers, k = self._build_towers(uf, vf, ctx)
        options = self._objective_options(data, m, n)
        options["sample_weight"] = weight
        objective = self._objective(towers, data, options, distributed, group)
        records: list[dict] = []
        callback = self._validation_callback(objective, validation, records)
        self.solver_ = resolve_solver(self.solver, *towers, self.loss, distributed)
        check_solver_options(self.solver_, dict(self.solver_options or {}), owner)
        settings = solver_settings(
            self.solver_, self.max_iter, self.tol, self.solver_options
        )
        with few_threads(1, enabled=one_thread(ctx.device, m, n, k, len(data))):
            warm = self._warm_start(towers, data, options, ctx)
            if distributed and self.solver == "auto":  # one start on every process
                objective.broadcast_parameters()
            if warm is not None and warm.stop_reason == "callback":
                self.solver_, result = "als", _stopped_in_warm_start(warm, objective)
            else:
                result = SOLVERS.get(self.solver_)(
                    objective,
                    objective.initial_point(),
                    random_state=ctx.random_state,
                    verbose=self.verbose,
                    callback=callback,
                    **settings,
                )
        self._store_fit(objective, towers, result, records)
        return self

    def _build_towers(self, user_features, item_features, ctx):
        """The two towers (user first: seeded draws in a fixed order) and k."""
        m, n = self.shape_
        sides = (
            ("user", self.user_tower, m, user_features),
            ("item", self.item_tower, n, item_features),
        )
        towers = tuple(
            self._tower(spec, size, f, ctx, side) for side, spec, size, f in sides
        )
        widths = [
            _probe_tower(tower, size, ctx, side, type(self).__name__)
            for (side, _, size, _), tower in zip(sides, towers, strict=True)
        ]
        if widths[0] != widths[1]:
            raise InvalidParameterError(
                f"The towers of {type(self).__name__} must return embeddings of "
                f"one width; the user tower returns {widths[0]} columns, the "
                f"item tower {widths[1]}."
            )
        return towers, widths[0]

    def _tower(self, spec, n: int, features, ctx, side: str) -> nn.Module:
        if isinstance(spec, nn.Module):
            # a module built on the CPU (the default of torch and build_tower)
            # meets ids on the fit's device; Module.to moves it in place
            return spec.to(device=ctx.device)
        if spec == "auto":
            spec = "hybrid" if features is not None else "embedding"
        if spec in FEATURE_TOWERS and features is None:
            raise InvalidParameterError(
                f"The '{side}_tower' parameter of {type(self).__name__} is "
                f"{spec!r}, which needs {side}_features; pass them to fit, or "
                "use 'embedding'."
            )
        return build_tower(
            spec,
            n,
            self.n_components,
            features,
            hidden=self.hidden,
            generator=ctx.generator(),
            device=ctx.device,
            dtype=ctx.dtype,
        )

    def _objective(self, towers, data, options, distributed, group):
        if not distributed:
            return AllPairsObjective(*towers, data, loss=self.loss, **options)
        return DistributedAllPairsObjective(
            *towers, data, loss=self.loss, **options, process_group=group
        )

    def _warm_start(self, towers, data, options, ctx) -> SolverResult | None:
        """The ALS warm start of ``solver="auto"`` before Gauss-Newton (square
        loss, towers with id tables); its history is ``warm_start_history_``."""
        self.warm_start_history_ = None
        if not (
            self.solver == "auto"
            and self.solver_ == "gauss_newton"
            and self.loss == "square"
        ):
            return None
        warm = warm_start(
            *towers,
            data,
            options,
            max_iter=self.max_iter,
            tol=self.tol,
            random_state=ctx.random_state,
            verbose=self.verbose,
            callback=self.callback,
        )
        if warm is not None:
            self.warm_start_history_ = _arrays(warm.history)
        return warm

    def _store_fit(self, objective, towers, result, records) -> None:
        objective.load(result.x)
        P, Q = objective.embeddings(result.x)
        self.user_tower_, self.item_tower_ = towers
        self._P, self._Q = P.detach(), Q.detach()
        self.user_embeddings_, self.item_embeddings_ = to_numpy(P), to_numpy(Q)
        history = _arrays(result.history)
        if records and len(records) == result.n_iter:
            for key in records[0]:
                history[key] = np.array([r[key] for r in records])
        value = float(objective.value(result.x))
        self._store_result(result, history, solver=self.solver_, objective=value)

    def _group(self):
        """``(distributed, group)`` from ``process_group``, checked before any work."""
        if self.process_group is None:
            return False, None
        owner = type(self).__name__
        group = Communicator(self.process_group, owner).group  # initialized?
        if self.solver != "auto" and SOLVERS.resolve_name(self.solver) not in (
            GROUP_SOLVERS
        ):
            raise InvalidParameterError(
                f"{owner}: solver={self.solver!r} runs in one process only; with a "
                f"process_group use one of {', '.join(map(repr, GROUP_SOLVERS))} "
                "or 'auto'."
            )
        return True, group

    def _group_context(self, group):
        """The fit context with one int seed on every process of ``group``.

        The solvers draw random probes; processes that drew different ones
        would take different steps and wait on each other's collectives.
        """
        ctx = resolve_fit_context(self)
        seed = self.random_state
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return ctx
        device = "cuda" if dist.get_backend(group) == "nccl" else "cpu"
        drawn = ctx.random_state.numpy.integers(2**62)
        value = torch.tensor([int(drawn)], dtype=torch.int64, device=device)
        dist.broadcast(value, src=_group_rank0(group), group=group)
        return resolve_fit_context(
            random_state=int(value.item()),
            device=ctx.device,
            dtype=ctx.dtype,
            owner=type(self).__name__,
        )

    def _objective_options(self, data, m: int, n: int) -> dict:
        """The objective's keywords that the parameters set, but the loss (the
        warm start fits the same objective with the square loss)."""
        a = b = None
        if self.weights != "uniform":
            a = popularity_weights(np.bincount(data.users, minlength=m))
            b = popularity_weights(np.bincount(data.items, minlength=n))
        return {
            "omega": self.omega,
            "lam": self.lam,
            "user_weights": a,
            "item_weights": b,
            "imputation": self.imputation,
            "imputed": self.imputed,
            "chunk_size": self.chunk_size,
        }

    def _validation_callback(self, objective, validation, records):
        """Ranking metrics of the validation pairs after every iteration."""
        user_callback = self.callback
        if validation is None:
            return user_callback
        held = self._pairs(validation)
        users, relevant = pairs_by_user(held)
        k = self.eval_k
        seen = self._seen[users]

        def callback(state):
            P, Q = objective.embeddings(state.x)
            ids, _ = top_k_inner_products(P[users], Q, k, exclude=seen)
            records.append(ranking_metrics(ids, relevant, k))
            return user_callback(state) if user_callback is not None else None

        return callback

    # -- adding data after the fit -------------------------------------------------
    def partial_fit(
        self,
        X: InteractionsLike,
        y: ArrayLike | None = None,
        *,
        refit: str = "new",
        sample_weight: ArrayLike | sp.spmatrix | None = None,
        user_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
        item_features: Mapping[str, ArrayLike] | SideFeatures | None = None,
    ) -> TwoTowerModel:
        """Add pairs to a fitted model: fold in new users and items, or refit.

        On a model not fitted yet it is :meth:`fit` (as in scikit-learn).

        Users and items never seen (ids outside ``user_ids_`` /
        ``item_ids_``; positions beyond ``shape_`` for a model fitted on
        positions) get rows with everything else fixed. With an embedding
        tower, a new user's row is the exact minimizer of the all-pairs
        objective over that row given the item embeddings (one ALS
        half-step of the fitted loss, ``omega``, ``lam``, imputation and
        weights; the rows decouple, so this is what the full objective asks
        of them); new users are placed first, against the known items, then
        new items against all users. With a tower over side features
        (``"mlp"``, ``"hybrid"``) a new row is the tower's output on the
        features given here; the id table of a hybrid tower starts at 0
        for it (as :meth:`recommend_for_features` embeds a cold user).
        Pairs of known users and items are added to the training pairs:
        ``recommend`` excludes them from now on, and ``refit="all"`` trains
        on them.

        Parameters
        ----------
        X : DataFrame, tuple, scipy.sparse matrix or Interactions
            The new (user, item) pairs, in the form ``fit`` took: ids for a
            model fitted with ids (a DataFrame or a tuple), positions for
            one fitted on positions.
        y : None
            Ignored.
        refit : {"new", "all"}
            ``"new"``: only the new rows are computed (milliseconds; the
            known rows do not move). ``"all"``: then the whole model is
            trained again on the old plus new pairs, warm-started from the
            current towers, with the fit's solver, ``max_iter`` and ``tol``.
        sample_weight : array-like of shape (n_pairs,) or sparse matrix, optional
            The confidence of each new pair, as in :meth:`fit`.
        user_features, item_features : dict of arrays or SideFeatures, optional
            The side features of the new users / items, one row per new id in
            code order: the sorted order of the new ids (positions: ``m,
            m + 1, ...``), with the features and categories of the fit.
            Needed by a tower over features when its side gains ids.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            A bad ``refit``; a ``process_group``; new ids for a tower the
            model cannot grow (a user's own module), or for an embedding
            tower under a loss other than square with ``refit="new"``;
            features for a side whose tower reads none.
        DataValidationError
            No pairs, pairs in another form than the fit's ids, features of
            the wrong number of rows, columns or categories.
        """
        vars(self).pop("item_index_", None)  # new or refitted items outdate it
        owner = f"{type(self).__name__}.partial_fit"
        check_param(owner, "refit", refit, [Options(["new", "all"])])
        if not hasattr(self, self._fitted_attr):  # scikit-learn: acts as fit
            return self.fit(
                X,
                y,
                sample_weight=sample_weight,
                user_features=user_features,
                item_features=item_features,
            )
        if self.process_group is not None or getattr(self, "_training", None) is None:
            raise InvalidParameterError(
                f"{owner} runs in one process on a model fitted by this version "
                "of embedopt (it keeps its training pairs); refit with fit."
            )
        data, new_ids = self._added_pairs(X, owner)
        weight = _fit_weights(sample_weight, X, data, owner)
        features = self._new_features(user_features, item_features, data, owner)
        old = Interactions(
            self._training["users"],
            self._training["items"],
            self.shape_,
            self._training["values"],
        )
        self._training = _concat_pairs(self._training, data, weight)
        self._fold_in(old, data, weight, features, refit, owner)
        if refit == "all":
            self._refit_all()
        self._sort_codes(new_ids)
        return self

    def recommend_for_features(
        self,
        user_features: Mapping[str, ArrayLike] | SideFeatures,
        k: int = 10,
        *,
        items: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k items for users known only by their side features (cold start).

        The user tower embeds the features (its id table, if any, at 0: no
        interactions yet) and the items are ranked by inner product, exactly
        as :meth:`recommend` ranks them for a known user. Needs a user tower
        over features (``user_tower="mlp"`` or ``"hybrid"``, the default
        ``"auto"`` with ``user_features`` at fit). Nothing is excluded: the
        users have no history. To keep such a user, add its pairs and
        features with :meth:`partial_fit`.

        Parameters
        ----------
        user_features : dict of arrays or SideFeatures
            One row per user, with the features and categories of the fit.
        k : int
            Items per user (at most the number of candidate items).
        items : array-like, optional
            Candidate items (ids as ``recommend`` takes them); default all.

        Returns
        -------
        ids : numpy.ndarray, shape (n_users, k)
            Item ids by decreasing score.
        scores : numpy.ndarray of float64, shape (n_users, k)

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidParameterError
            A user tower that reads no features, a bad ``k``.
        DataValidationError
            Features of other columns or categories than the fit's, no rows.
        """
        check_is_fitted(self, self._fitted_attr)
        owner = f"{type(self).__name__}.recommend_for_features"
        check_param(owner, "k", k, [Interval(int, 1, None)])
        rows = _rows(user_features, "user")
        if rows == 0:
            raise DataValidationError(f"{owner}: user_features hold no rows.")
        features = as_side_features(user_features, rows, "user")
        queries = feature_embeddings(self.user_tower_, features, "user", owner)
        candidates, n = self._catalogue(items, None)
        queries = queries.to(self._Q.dtype)
        ids, scores = self._top_k(queries, min(k, n), None, candidates)
        return decode_ids(ids, self.item_ids_), scores

    def _added_pairs(self, X, owner: str):
        """partial_fit's pairs in the grown code space, and the new ids."""
        raw = self._raw_pairs(X)
        shape = X.shape if sp.issparse(X) else (0, 0)
        if raw is None:
            if any(m is not None for m in self._maps()):
                raise DataValidationError(
                    f"{owner}: this model was fitted with ids; give the new pairs "
                    "as a DataFrame or a tuple (users, items) of ids."
                )
            given = as_interactions(X)
            rest = () if given.values is None else (given.values,)
            raw = [given.users, given.items], rest
        ids = (self.user_ids_, self.item_ids_)
        codes, new_ids, grown = new_pairs(raw[0], self._maps(), ids, self.shape_, owner)
        if codes[0].size == 0:
            raise DataValidationError(f"{owner}: X holds no pairs.")
        grown = tuple(max(a, b) for a, b in zip(grown, shape, strict=True))
        _check_size(owner, grown, self.n_components, resolve_fit_context(self))
        return as_interactions((*codes, *raw[1]), grown), new_ids

    def _new_features(self, user_features, item_features, data, owner: str):
        """The side features of the new rows of each side, checked."""
        out = []
        for s, side, given in ((0, "user", user_features), (1, "item", item_features)):
            tower = (self.user_tower_, self.item_tower_)[s]
            n_new = data.shape[s] - self.shape_[s]
            reads = bool(encoders(tower))
            if given is not None and not reads:
                raise InvalidParameterError(
                    f"{owner}: {side}_features were given but the {side} tower "
                    f"({type(tower).__name__}) reads no side features."
                )
            if reads and n_new and given is None:
                raise DataValidationError(
                    f"{owner}: X holds {n_new} new {side}(s) and the {side} tower "
                    f"reads side features: pass {side}_features, one row per new "
                    f"{side} in the sorted order of their ids."
                )
            if given is not None and _rows(given, side) != n_new:
                raise DataValidationError(
                    f"{owner}: {side}_features have {_rows(given, side)} rows but X "
                    f"holds {n_new} new {side}(s); give one row per new {side}."
                )
            out.append(None if given is None else as_side_features(given, n_new, side))
        return out

    def _fold_in(self, old, data, weight, features, refit: str, owner: str) -> None:
        """Grow the towers and embeddings by the new rows (see partial_fit)."""
        square = getattr(get_loss(self.loss), "name", None) == "square"
        embeddings = [self._P, self._Q]
        for s, side in enumerate(("user", "item")):
            start, stop = old.shape[s], data.shape[s]
            if stop == start:
                continue
            tower = (self.user_tower_, self.item_tower_)[s]
            grow_tower(tower, stop - start, features[s], side, owner)
            if solvable(tower) and not square and refit == "new":
                raise InvalidParameterError(
                    f"{owner}: new {side}s of an embedding tower are solved by "
                    "least squares, which needs loss='square'; use refit='all'."
                )
            if solvable(tower) and square:
                rows = self._solved_rows(s, old, data, weight, embeddings, owner)
                with torch.no_grad():
                    tower.weight[start:] = rows
            with torch.no_grad():
                ids = torch.arange(start, stop, device=embeddings[s].device)
                embeddings[s] = torch.cat([embeddings[s], tower(ids).detach()])
        self._set_embeddings(*embeddings)
        self.shape_ = data.shape

    def _solved_rows(self, s: int, old, data, weight, embeddings, owner: str):
        """The ALS rows of side ``s``'s new entities against the other side's
        current embeddings (pairs with entities not placed yet left out)."""
        start, stop = old.shape[s], data.shape[s]
        fixed = embeddings[1 - s]
        mine, other = (data.users, data.items)[s], (data.items, data.users)[s]
        keep = (mine >= start) & (other < fixed.shape[0])
        cols = (mine[keep] - start, other[keep])
        shape = (stop - start, fixed.shape[0])
        if s == 1:
            cols, shape = cols[::-1], shape[::-1]
        values = None if data.values is None else data.values[keep]
        counts = np.bincount((old.items, old.users)[s], minlength=fixed.shape[0])
        options = self._objective_options(old, *old.shape)
        w = None if weight is None else weight[keep]
        pairs = Interactions(*cols, shape, values)
        return solve_rows(fixed, pairs, s, options, counts, w, owner)

    def _set_embeddings(self, P: torch.Tensor, Q: torch.Tensor) -> None:
        self._P, self._Q = P, Q
        self.user_embeddings_, self.item_embeddings_ = to_numpy(P), to_numpy(Q)

    def _refit_all(self) -> None:
        """The fit's solver on all training pairs from the current towers."""
        t = self._training
        data = Interactions(t["users"], t["items"], self.shape_, t["values"])
        ctx = resolve_fit_context(self)
        towers = (self.user_tower_, self.item_tower_)
        options = self._objective_options(data, *self.shape_)
        options["sample_weight"] = t["weight"]
        objective = AllPairsObjective(*towers, data, loss=self.loss, **options)
        settings = solver_settings(
            self.solver_, self.max_iter, self.tol, self.solver_options
        )
        k, (m, n) = self.n_components, self.shape_
        with few_threads(1, enabled=one_thread(ctx.device, m, n, k, len(data))):
            result = SOLVERS.get(self.solver_)(
                objective,
                objective.initial_point(),
                random_state=ctx.random_state,
                verbose=self.verbose,
                callback=self.callback,
                **settings,
            )
        self._store_fit(objective, towers, result, [])

    def _sort_codes(self, new_ids) -> None:
        """Put the codes of id-mapped sides back in the sorted order of the ids,
        and the seen pairs (``recommend``'s exclusions) in step."""
        embeddings = [self._P, self._Q]
        for s, side in enumerate(("user", "item")):
            fresh = new_ids[s]
            if fresh is None or fresh.size == 0:
                continue
            known = getattr(self, f"{side}_ids_")
            ids = np.concatenate([known.astype(object), fresh.astype(object)])
            ids = ids.astype(np.int64) if known.dtype.kind in "iu" else ids.astype(str)
            order = np.argsort(ids, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            permute_tower((self.user_tower_, self.item_tower_)[s], order)
            embeddings[s] = embeddings[s][torch.as_tensor(order)]
            key = ("users", "items")[s]
            self._training[key] = rank[self._training[key]]
            setattr(self, f"{side}_ids_", ids[order])
        self._set_embeddings(*embeddings)
        t = self._training
        self._remember_seen(Interactions(t["users"], t["items"], self.shape_))

    # -- the retrieval hooks (RetrievalMixin) ----------------------------------------
    _fitted_attr = "user_tower_"

    @property
    def _score_k(self) -> int:
        return self.eval_k

    def _user_vectors(self, users: np.ndarray) -> torch.Tensor:
        return self._P[torch.as_tensor(users, device=self._P.device)]

    def _item_vectors(self, items: np.ndarray | None) -> torch.Tensor:
        if items is None:
            return self._Q
        return self._Q[torch.as_tensor(items, device=self._Q.device)]


def _training_pairs(data: Interactions, weight) -> dict:
    """The training pairs a later ``partial_fit(refit="all")`` trains on."""
    return {
        "users": data.users,
        "items": data.items,
        "values": data.values,
        "weight": weight,
    }


def _concat_pairs(old: dict, data: Interactions, weight) -> dict:
    """Old plus new training pairs (ones where one part has no values/weights)."""
    out = {
        "users": np.concatenate([old["users"], data.users]),
        "items": np.concatenate([old["items"], data.items]),
    }
    for key, new in (("values", data.values), ("weight", weight)):
        a = old[key]
        if a is None and new is None:
            out[key] = None
            continue
        a = np.ones(old["users"].size) if a is None else a
        b = np.ones(data.users.size) if new is None else new
        out[key] = np.concatenate([a, b])
    return out


def _arrays(history) -> dict:
    return {key: np.asarray(v) for key, v in dict(history).items()}


def _stopped_in_warm_start(warm: SolverResult, objective) -> SolverResult:
    """The fit's result when the callback ended it during the ALS warm start:
    the towers as the warm start left them."""
    return SolverResult(
        x=objective.initial_point(),
        n_iter=warm.n_iter,
        stop_reason="callback",
        history=warm.history,
        elapsed=warm.elapsed,
        info=dict(warm.info),
    )


def _fit_data(X, user_features, item_features):
    """The interactions with their shape (from a sparse matrix, the side
    features or the largest ids), checked against the side features' rows."""
    shape = X.shape if sp.issparse(X) else None
    uf, vf = user_features, item_features
    counts = [
        _rows(f, side) if f is not None else None
        for f, side in ((uf, "user"), (vf, "item"))
    ]
    if shape is None and None not in counts:
        shape = tuple(counts)
    data = as_interactions(X, shape)
    m, n = data.shape
    reach = (int(data.users.max()) + 1, int(data.items.max()) + 1)
    for side, count, size, top in zip(
        ("user", "item"), counts, (m, n), reach, strict=True
    ):
        if count is not None and (top > count or (size != count and shape)):
            raise DataValidationError(
                f"The interactions have {size} {side}s (index {top - 1} "
                f"used) but the {side} features have {count} rows."
            )
    if counts[0] is not None or counts[1] is not None:
        m, n = counts[0] or m, counts[1] or n
        data = Interactions(data.users, data.items, (m, n), data.values)
    return data


def _check_mapped_rows(shape, user_ids, item_ids) -> None:
    """Side features of a side of ids hold one row per distinct id."""
    for side, ids, size in (("user", user_ids, shape[0]), ("item", item_ids, shape[1])):
        if ids is not None and size != ids.size:
            raise DataValidationError(
                f"The {side} features have {size} rows but the {side} ids were "
                f"mapped to {ids.size} codes: give one row per distinct {side} id, "
                f"in the sorted order of {side}_ids_."
            )


def _fit_weights(sample_weight, X, data, owner: str) -> np.ndarray | None:
    """``sample_weight`` checked, one float per pair of ``data`` in its order
    (a sparse matrix read at the pairs of the sparse ``X``)."""
    if sample_weight is None:
        return None
    if sp.issparse(sample_weight):
        W = sp.csr_matrix(sample_weight, copy=True)
        W.sum_duplicates()  # also sorts the indices: data's row-major order
        rows = np.repeat(np.arange(W.shape[0]), np.diff(W.indptr))
        if not (
            sp.issparse(X)
            and W.shape == X.shape
            and np.array_equal(rows, data.users)
            and np.array_equal(W.indices, data.items)
        ):
            raise DataValidationError(
                f"A sparse sample_weight of {owner} must store the same entries "
                "as the sparse matrix X (its weight at each pair); give a sparse "
                "X, or one weight per pair as a 1-D array."
            )
        sample_weight = W.data
    order = np.arange(len(data))
    return _sample_weight(sample_weight, order, owner, "cpu").numpy()


def _side_features(user_features, item_features, m: int, n: int):
    uf = (
        as_side_features(user_features, m, "user")
        if user_features is not None
        else None
    )
    vf = (
        as_side_features(item_features, n, "item")
        if item_features is not None
        else None
    )
    return uf, vf


def _rows(features, side: str) -> int:
    """Rows of side features (those of their first entry; checked in full
    by ``as_side_features``)."""
    if hasattr(features, "n"):
        return int(features.n)
    if not isinstance(features, Mapping):
        raise DataValidationError(
            f"{side}_features must be a dict of arrays (name -> one row per "
            f"{side}); got {type(features).__name__}."
        )
    for key, values in features.items():
        a = as_array(values, f"{side} feature {key!r}")
        if a.ndim == 0:
            raise DataValidationError(
                f"{side} feature {key!r} must hold one row per {side}; got a scalar."
            )
        return int(a.shape[0])
    return 0


def _probe_tower(tower: nn.Module, n: int, ctx, side: str, owner: str) -> int:
    """The width of the embeddings ``tower`` returns, once a probe on the ids
    of the first entities showed that it maps a batch of ids to a batch of
    rows: a custom module that does not fails here, naming its parameter,
    rather than inside a solver."""
    try:
        where = next(tower.parameters()).device
    except StopIteration:
        where = ctx.device
    ids = torch.arange(min(n, 2), device=where)
    training = tower.training
    tower.eval()  # no batch-norm statistics or dropout from the probe
    try:
        with torch.no_grad():
            out = tower(ids)
    except Exception as exc:  # any error of a user module, reported as such
        raise InvalidParameterError(
            f"The '{side}_tower' parameter of {owner} is a module that failed on "
            f"a probe: tower(ids) with int64 ids {ids.tolist()} raised "
            f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        ) from exc
    finally:
        tower.train(training)
    if not (
        isinstance(out, torch.Tensor)
        and out.is_floating_point()
        and out.ndim == 2
        and out.shape[0] == ids.numel()
    ):
        got = (
            f"a {out.dtype} tensor of shape {tuple(out.shape)}"
            if isinstance(out, torch.Tensor)
            else type(out).__name__
        )
        raise InvalidParameterError(
            f"The '{side}_tower' parameter of {owner} must map a batch of b ids "
            f"(int64) to a (b, k) float tensor of embeddings; on {ids.numel()} ids "
            f"it returned {got}."
        )
    return int(out.shape[1])


def _check_size(owner: str, shape, k: int, ctx) -> None:
    """Refuse, before any allocation, m and n whose embeddings cannot fit:
    every fit holds the k-dimensional embeddings of all m users and n items
    (and 8 bytes of index per row)."""
    m, n = shape
    itemsize = torch.empty((), dtype=ctx.dtype).element_size()
    check_memory(
        owner,
        (m + n) * (k * itemsize + 8),
        ctx.device,
        f"the {k}-dimensional embeddings of {m} users and {n} items",
        "A stray index or ids never remapped to 0..n-1 are the usual cause (the "
        "shape is max index + 1 unless the side features or a sparse matrix "
        "give it): drop the stray pairs, or pass a DataFrame to map the ids "
        "to 0..n-1 (the model keeps the map; or np.unique(ids, "
        "return_inverse=True) by hand).",
    )
