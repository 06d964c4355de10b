"""``TwoTowerModel``: all-pairs two-tower similarity learning as an estimator."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
from torch import nn

from .._core import (
    RUN_CONSTRAINTS,
    BaseEstimator,
    DataValidationError,
    InstanceOf,
    Interval,
    InvalidParameterError,
    Options,
    as_array,
    check_is_fitted,
    check_memory,
    check_param,
    few_threads,
    resolve_fit_context,
    to_numpy,
)
from ..data import Interactions, as_interactions, as_side_features
from ..linalg import top_k_inner_products
from ..metrics import (
    average_precision_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from ..nn import EmbeddingTower, MLPTower, SumTower
from .distributed import DistributedAllPairsObjective, _group_rank0
from .losses import LOSSES
from .objective import AllPairsObjective, popularity_weights
from .solvers import SOLVERS

__all__ = ["TwoTowerModel"]

_TOWERS = ("auto", "embedding", "mlp", "hybrid")
#: ALS defaults, measured on MovieLens-100K and -1M (see TwoTowerModel's
#: Notes): 3 CG steps per half-step reach the exact half-steps' P@10 per
#: iteration at a tenth of the time; a relative objective decrease of 2e-4
#: per iteration is where P@10 stops moving, within 20 iterations.
_ALS_CG_STEPS = 3
_ALS_TOL = 2e-4
#: Gauss-Newton stops when one iteration lowers the objective by less than
#: 1e-3 of it: with hybrid towers on MovieLens-100K the relative gradient
#: test (1e-4) was never met in 20 iterations (a ConvergenceWarning with the
#: defaults), while the objective test stops after 17 at P@10 0.350 (0.351
#: after the 20 iterations of the gradient test), without a warning.
_GN_TOL = 1e-3
#: Gauss-Newton in the estimator: at most 10 CG iterations per step and 60
#: outer iterations. With hybrid towers (ALS warm start), 50 CG iterations
#: per step (the solver's bound) took 87 s on MovieLens-1M for validation
#: P@10 0.1511 and 18.6 s on MovieLens-100K for 0.1446; 10 took 5.9 s for
#: 0.1518 (4 iterations) and 8.2 s for 0.1473 (46 iterations; 20 were not
#: enough to pass the objective test there), measured on a validation split
#: inside the training pairs. Early-truncated steps generalize as well as
#: the long solves on these sets.
_GN_CG_MAX_ITER = 10
#: ``max_iter`` when left at None: outer iterations of each solver.
_DEFAULT_MAX_ITER = {"gauss_newton": 60}
_MAX_ITER = 20
#: Solvers that run on a process group: every process takes the same step
#: from the group's sums (ALS and the stochastic solvers work on the local
#: data structures of one process).
_GROUP_SOLVERS = ("gauss_newton", "gradient_descent")
#: Fits with at most this many embedding entries ((m + n) k) and observed
#: pairs run on one torch / BLAS thread (see ``fit``).
_SMALL = 2**16
#: The class of a process group, where this build of torch has one.
_PROCESS_GROUP = getattr(dist, "ProcessGroup", None) if dist.is_available() else None


def _ranking_metrics(ids: np.ndarray, relevant, k: int) -> dict:
    return {
        f"precision@{k}": precision_at_k(ids, relevant, k),
        f"recall@{k}": recall_at_k(ids, relevant, k),
        f"ndcg@{k}": ndcg_at_k(ids, relevant, k),
        f"map@{k}": average_precision_at_k(ids, relevant, k),
    }


class TwoTowerModel(BaseEstimator):
    """Two-tower similarity learning from all m x n pairs at O(m + n) cost.

    Fits a user tower f and an item tower g (``p_i = f(u_i)``, ``q_j =
    g(v_j)`` in R^k) so that ``p_i^T q_j`` matches the observed labels and,
    for every other pair, an imputed label (0 for implicit feedback: what a
    user did not interact with counts as weak evidence of dislike), with the
    objective of :class:`~embedopt.similarity.AllPairsObjective` (Yuan et
    al., KDD 2021, eq. 5 + 7). No m x n matrix is ever formed, in training
    or in :meth:`recommend`.

    Parameters
    ----------
    n_components : int
        Embedding dimension k.
    user_tower, item_tower : {"auto", "embedding", "mlp", "hybrid"} or torch.nn.Module
        ``"embedding"``: a learned row per id (matrix factorization);
        ``"mlp"``: a two-layer MLP over the side features; ``"hybrid"``: the
        sum of both, an id embedding plus an MLP of the features
        (:class:`~embedopt.nn.SumTower`); ``"auto"``:
        ``"hybrid"`` when that side has features, else ``"embedding"``. A
        module is used as is: it receives the ids (int64) of a batch of
        entities and returns their (batch, k) embeddings.
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
        A name of :data:`~embedopt.similarity.SOLVERS`. ``"auto"``: ALS
        (alternating least squares, the classic linear case) when both
        towers are embedding tables and the loss is square -- it reaches
        the objective of 20 Gauss-Newton iterations at a fraction of the
        time there -- and Gauss-Newton-CG otherwise (MLP towers, other
        losses). With hybrid towers and the square loss, ``"auto"`` first
        fits the id tables by ALS and zeroes the MLPs' output layers, so
        Gauss-Newton starts from the matrix-factorization solution and
        learns what the side features add.
    max_iter : int, optional
        Outer iterations of the solver. None: 60 for Gauss-Newton (whose
        steps are truncated at 10 CG iterations by default, see Notes), 20
        for the others (ALS, also as the warm start of ``"auto"``).
    tol : float, optional
        Tolerance of the solver's stopping test: for ALS and Gauss-Newton
        the relative objective decrease of one iteration (``stop_on=
        "objective"`` of :func:`~embedopt.similarity.als` and
        :func:`~embedopt.similarity.gauss_newton`), for the other solvers
        the relative gradient norm. None: 2e-4 for ALS, 1e-3 for
        Gauss-Newton, 1e-4 for the others (see Notes).
    solver_options : dict, optional
        Further keyword arguments of the solver (e.g. ``cg_rtol``,
        ``preconditioner`` of :func:`~embedopt.similarity.gauss_newton`;
        ``cg_steps``, ``stop_on`` of :func:`~embedopt.similarity.als`).
    chunk_size : int, optional
        Entities per tower pass (bounds activation memory; see
        :class:`~embedopt.similarity.AllPairsObjective`).
    eval_k : int
        Cut-off of the ranking metrics recorded per iteration when a
        validation set is given.
    random_state : None, int or numpy.random.Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
        The towers' dtype (sums are accumulated in float64 regardless).
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool | None`` once per outer iteration.
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
    history_ : dict of numpy.ndarray
        Per iteration: objective, grad_norm, time and the solver's own
        columns (cg_iter for Gauss-Newton); with ``validation``, also
        ``precision@k``, ``recall@k``, ``ndcg@k``, ``map@k``.
    n_iter_ : int
    stop_reason_ : str
    solver_ : str
        The solver that ran (``"auto"`` resolved).
    warm_start_history_ : dict of numpy.ndarray or None
        With ``solver="auto"``, hybrid towers and the square loss: the
        history of the ALS fit of the id tables that Gauss-Newton started
        from (see Notes).
    shape_ : tuple of int
        ``(m, n)``.

    Notes
    -----
    Default choices (the paper's text stops before its experiments): k = 64,
    imputation 0 over the unobserved pairs, uniform weights, at most 20
    outer iterations of ALS and 60 of Gauss-Newton (steps of at most 10 CG
    iterations: see ``_GN_CG_MAX_ITER``), and omega = 0.2, lam = 10: the best
    held-out P@10 of a small grid (omega 0.01 to 1, lam 0.1 to 10) with
    embedding towers on MovieLens-100K implicit feedback, per-user 80/20
    split (P@10 0.341 after 10 iterations; omega 0.01: 0.236, omega 0.05:
    0.288, lam 0.1: 0.259; see ``benchmarks/similarity/README.md``).
    k = 64 is the best of k in {32, 64, 96, 128} (omega 0.2, lam 10) on a
    validation split inside the MovieLens-1M training pairs (P@10 0.1466,
    0.1504, 0.1503, 0.1481; the split holds an eighth of the training
    pairs, hence the low values) and is no worse on MovieLens-100K (0.1458
    vs 0.1453); omega 0.1 / 0.5, lam 3 / 30 and popularity weights were
    lower there. It doubles the fit time of k = 32.

    ALS runs inexact half-steps by default, 3 conjugate-gradient steps per
    row from the current tables (``cg_steps=3``; ``solver_options=
    {"cg_steps": None}`` gives exact half-steps), and stops when one
    iteration lowers the objective by less than 2e-4 of its value.
    Measured with k = 32 (the earlier default), embedding towers, one
    thread, per-user 80/20 split, seed 0, fit time in a warm process (with
    k = 64: MovieLens-1M 17 iterations, 3.1 s, P@10 0.3779, MAP@10 0.2858;
    MovieLens-100K 10 iterations, 0.2 s, P@10 0.3590; 2 or 4 CG steps gave
    the same validation P@10 as 3): on MovieLens-1M the defaults stop after
    18 iterations in 2.1 s (P@10 0.3655, MAP@10 0.2757; exact half-steps
    pass the same test at the same iteration), where 20 exact iterations
    stopped by the gradient test took 13 s (P@10 0.3654, MAP@10
    0.2755) and ended with a ConvergenceWarning; implicit's iALS, one
    thread, takes 1.4 s with its best grid point (P@10 0.3637, MAP@10
    0.2771) and 2.8 s with its defaults (P@10 0.3233). On MovieLens-100K:
    10 iterations, 0.14 s, P@10 0.3569 (20 exact iterations: 2.2 s,
    0.3585). One CG step per half-step is too few (ML-1M, 20 iterations:
    P@10 0.3548), two lose a little (0.3644 in 19 iterations, 1.7 s), four
    gain nothing (0.3655 in 18, 2.5 s).

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
    >>> model.recommend([0, 1], k=5).shape
    (2, 5)
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
        **RUN_CONSTRAINTS,
        "process_group": [
            None,
            Options(["default"]),
            *(
                [InstanceOf(_PROCESS_GROUP, "a torch.distributed.ProcessGroup")]
                if _PROCESS_GROUP is not None
                else []
            ),
        ],
    }

    def __init__(
        self,
        n_components: int = 64,
        *,
        user_tower="auto",
        item_tower="auto",
        hidden: int = 64,
        loss="square",
        omega: float = 0.2,
        lam: float = 10.0,
        imputation=0.0,
        imputed: str = "unobserved",
        weights: str = "uniform",
        solver: str = "auto",
        max_iter: int | None = None,
        tol: float | None = None,
        solver_options: dict | None = None,
        chunk_size: int | None = None,
        eval_k: int = 10,
        random_state=None,
        device="auto",
        dtype="float32",
        verbose: int = 0,
        callback=None,
        process_group=None,
    ):
        self._store_params(locals())

    # -- building --------------------------------------------------------------
    def _tower(self, spec, n: int, features, ctx, side: str) -> nn.Module:
        if isinstance(spec, nn.Module):
            return spec
        if spec == "auto":
            spec = "hybrid" if features is not None else "embedding"
        if spec in ("mlp", "hybrid") and features is None:
            raise InvalidParameterError(
                f"The '{side}_tower' parameter of {type(self).__name__} is "
                f"{spec!r}, which needs {side}_features; pass them to fit, or "
                "use 'embedding'."
            )
        common = dict(generator=ctx.generator(), device=ctx.device, dtype=ctx.dtype)
        k = self.n_components
        if spec == "embedding":
            return EmbeddingTower(n, k, std=0.1, **common)
        if spec == "mlp":
            return MLPTower(features, k, hidden=self.hidden, normalize=False, **common)
        # "hybrid": the id's own row plus what its features predict (the sum of
        # both towers); matrix factorization is the case of a zero MLP.
        return SumTower(
            EmbeddingTower(n, k, std=0.1, **common),
            MLPTower(features, k, hidden=self.hidden, normalize=False, **common),
        )

    def _group(self):
        """``(distributed, group)`` from ``process_group``, checked before any work."""
        if self.process_group is None:
            return False, None
        owner = type(self).__name__
        if not (dist.is_available() and dist.is_initialized()):
            raise InvalidParameterError(
                f"{owner}(process_group={self.process_group!r}) trains on a "
                "torch.distributed process group, but none is initialized in this "
                "process: call torch.distributed.init_process_group first (torchrun "
                "sets up its environment), or leave process_group=None."
            )
        if self.solver != "auto" and SOLVERS.resolve_name(self.solver) not in (
            _GROUP_SOLVERS
        ):
            raise InvalidParameterError(
                f"{owner}: solver={self.solver!r} runs in one process only; with a "
                f"process_group use one of {', '.join(map(repr, _GROUP_SOLVERS))} "
                "or 'auto'."
            )
        return True, None if self.process_group == "default" else self.process_group

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

    def _resolve_solver(self, user_tower, item_tower, distributed: bool) -> str:
        if self.solver != "auto":
            return SOLVERS.resolve_name(self.solver)
        if distributed:
            return "gauss_newton"
        tables = all(
            isinstance(t, EmbeddingTower) and not t.normalize
            for t in (user_tower, item_tower)
        )
        return "als" if tables and self.loss == "square" else "gauss_newton"

    def _warm_start(self, objective_options, user_tower, item_tower, data, ctx):
        """ALS on the id tables of sum towers, then the MLPs start at zero.

        With ``solver="auto"`` and towers that have an id table (embedding
        or hybrid towers) and the square loss, Gauss-Newton starts from the
        exact matrix-factorization solution of the same objective restricted
        to the tables: the MLPs' output layers are zeroed, so the start *is*
        that solution, and Gauss-Newton only has to learn what the side
        features add. Returns the ALS history (None when not applicable).
        """
        parts = [_table_part(t) for t in (user_tower, item_tower)]
        if None in parts or self.loss != "square":
            return None
        tables = AllPairsObjective(*parts, data, **objective_options)
        warm = SOLVERS.get("als")(
            tables,
            tables.initial_point(),
            max_iter=self._max_iter("als"),
            **self._stopping("als", {}),
            random_state=ctx.random_state,
            verbose=self.verbose,
        )
        tables.load(warm.x)
        with torch.no_grad():
            for tower in (user_tower, item_tower):
                if isinstance(tower, SumTower):
                    for part in tower.towers[1:]:
                        last = [m for m in part.modules() if isinstance(m, nn.Linear)]
                        last[-1].weight.zero_()
                        last[-1].bias.zero_()
        return {key: np.asarray(v) for key, v in dict(warm.history).items()}

    def _max_iter(self, solver: str) -> int:
        if self.max_iter is not None:
            return self.max_iter
        return _DEFAULT_MAX_ITER.get(solver, _MAX_ITER)

    def _stopping(self, solver: str, options: dict) -> dict:
        """``tol`` and, for ALS and Gauss-Newton, their defaults (inexact CG
        steps, the objective test), each overridden by what the user set."""
        if solver == "gauss_newton":
            return {
                "tol": _GN_TOL if self.tol is None else self.tol,
                "stop_on": "objective",
                "cg_max_iter": _GN_CG_MAX_ITER,
                **options,
            }
        if solver != "als":
            return {"tol": 1e-4 if self.tol is None else self.tol, **options}
        return {
            "tol": _ALS_TOL if self.tol is None else self.tol,
            "cg_steps": _ALS_CG_STEPS,
            "stop_on": "objective",
            **options,
        }

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
        held = as_interactions(validation, self.shape_)
        users, relevant = _by_user(held)
        k = self.eval_k
        user_callback = self.callback

        def callback(state):
            P, Q = objective.embeddings(state.x)
            ids, _ = top_k_inner_products(P[users], Q, k, exclude=self._seen[users])
            records.append(_ranking_metrics(ids, relevant, k))
            return user_callback(state) if user_callback is not None else None

        return callback

    def fit(
        self, interactions, user_features=None, item_features=None, validation=None
    ) -> TwoTowerModel:
        """Train both towers on all pairs.

        Parameters
        ----------
        interactions : scipy.sparse matrix, tuple or Interactions
            The observed (user, item) pairs: a sparse m x n matrix (stored
            entries are pairs, their values the labels), a tuple (users,
            items[, labels]), or an :class:`~embedopt.data.Interactions`.
            Pairs without labels are labelled 1 (implicit feedback).
        user_features, item_features : dict of arrays or SideFeatures, optional
            Side features, one row per user / item (see
            :func:`~embedopt.data.as_side_features`); they fix m and n.
        validation : same types as ``interactions``, optional
            Held-out pairs: P@k, recall@k, nDCG@k and MAP@k
            (k = ``eval_k``, training pairs excluded) are recorded in
            ``history_`` after every iteration.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            A bad parameter.
        DataValidationError
            Indices out of range, NaN labels or features, feature rows that
            do not match the matrix, an empty matrix.
        """
        self._validate_params()
        distributed, group = self._group()
        ctx = self._group_context(group) if distributed else resolve_fit_context(self)
        shape = None
        if sp.issparse(interactions):
            shape = interactions.shape
        uf, vf = user_features, item_features
        counts = [
            _rows(f, side) if f is not None else None
            for f, side in ((uf, "user"), (vf, "item"))
        ]
        if shape is None and None not in counts:
            shape = tuple(counts)
        data = as_interactions(interactions, shape)
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
        _check_size(type(self).__name__, (m, n), self.n_components, ctx)
        uf = as_side_features(uf, m, "user") if uf is not None else None
        vf = as_side_features(vf, n, "item") if vf is not None else None
        self.shape_ = (m, n)
        self._seen = sp.csr_matrix(
            (np.ones(len(data)), (data.users, data.items)), shape=(m, n)
        )
        user_tower = self._tower(self.user_tower, m, uf, ctx, "user")
        item_tower = self._tower(self.item_tower, n, vf, ctx, "item")
        widths = {
            side: _probe_tower(tower, size, ctx, side, type(self).__name__)
            for side, tower, size in (("user", user_tower, m), ("item", item_tower, n))
        }
        if widths["user"] != widths["item"]:
            raise InvalidParameterError(
                f"The towers of {type(self).__name__} must return embeddings of "
                f"one width; the user tower returns {widths['user']} columns, the "
                f"item tower {widths['item']}."
            )
        objective_options = self._objective_options(data, m, n)
        make, where = AllPairsObjective, {}
        if distributed:
            make, where = DistributedAllPairsObjective, {"process_group": group}
        objective = make(
            user_tower, item_tower, data, loss=self.loss, **objective_options, **where
        )
        records: list[dict] = []
        callback = self.callback
        if validation is not None:
            callback = self._validation_callback(objective, validation, records)
        options = dict(self.solver_options or {})
        self.solver_ = self._resolve_solver(user_tower, item_tower, distributed)
        _check_solver_options(self.solver_, options, type(self).__name__)
        # Small problems run on one thread: their tensors gain nothing from
        # more, and on a busy machine every parallel region then waits for a
        # descheduled thread (the example of examples/ took 59 s with two
        # threads beside one busy core, 5.9 s with one).
        k = widths["user"]
        small = ctx.device.type == "cpu" and max((m + n) * k, len(data)) <= _SMALL
        with few_threads(1, enabled=small):
            self.warm_start_history_ = None
            if self.solver == "auto" and self.solver_ == "gauss_newton":
                self.warm_start_history_ = self._warm_start(
                    objective_options, user_tower, item_tower, data, ctx
                )
                if distributed:  # bitwise one start, whatever each process's rounding
                    objective.broadcast_parameters()
            result = SOLVERS.get(self.solver_)(
                objective,
                objective.initial_point(),
                max_iter=self._max_iter(self.solver_),
                random_state=ctx.random_state,
                verbose=self.verbose,
                callback=callback,
                **self._stopping(self.solver_, options),
            )
        objective.load(result.x)
        P, Q = objective.embeddings(result.x)
        self.user_tower_, self.item_tower_ = user_tower, item_tower
        self._P, self._Q = P.detach(), Q.detach()
        self.user_embeddings_, self.item_embeddings_ = to_numpy(P), to_numpy(Q)
        value = float(objective.value(result.x))
        history = {key: np.asarray(v) for key, v in dict(result.history).items()}
        if records and len(records) == result.n_iter:
            for key in records[0]:
                history[key] = np.array([r[key] for r in records])
        self._store_result(result, history, objective=value)
        return self

    # -- using -----------------------------------------------------------------
    def _ids(self, ids, side: int, name: str) -> np.ndarray:
        arr = as_array(ids, name)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise DataValidationError(
                f"{name} must be integer indices; got {arr.dtype}."
            )
        arr = arr.astype(np.int64).ravel()
        limit = self.shape_[side]
        if arr.size and (arr.min() < 0 or arr.max() >= limit):
            raise DataValidationError(
                f"{name} must lie in [0, {limit}); got min {int(arr.min())}, "
                f"max {int(arr.max())}."
            )
        return arr

    def score(self, users, items) -> np.ndarray:
        """Predicted similarities ``p_u^T q_i`` of (user, item) pairs.

        Parameters
        ----------
        users, items : array-like of int, same shape

        Returns
        -------
        numpy.ndarray of float
        """
        check_is_fitted(self, "user_tower_")
        u = self._ids(users, 0, "users")
        i = self._ids(items, 1, "items")
        if u.shape != i.shape:
            raise DataValidationError(
                f"users and items must have the same length; got {u.size} and {i.size}."
            )
        ut = torch.as_tensor(u, device=self._P.device)
        it = torch.as_tensor(i, device=self._Q.device)
        return to_numpy((self._P[ut] * self._Q[it]).sum(1))

    def recommend(self, users, k: int = 10, *, exclude_seen: bool = True) -> np.ndarray:
        """Top-k items of each user by predicted similarity, over all items.

        Parameters
        ----------
        users : array-like of int
        k : int
        exclude_seen : bool
            Never recommend a training pair.

        Returns
        -------
        numpy.ndarray of int64, shape (len(users), k)
            Item ids by decreasing score; -1 pads rows that run out of items.
        """
        check_is_fitted(self, "user_tower_")
        _check_k(k, type(self).__name__)
        owner = f"{type(self).__name__}.recommend"
        check_param(owner, "exclude_seen", exclude_seen, ["boolean"])
        u = self._ids(users, 0, "users")
        exclude = self._seen[u] if exclude_seen else None
        ut = torch.as_tensor(u, device=self._P.device)
        return top_k_inner_products(self._P[ut], self._Q, k, exclude=exclude)[0]

    def similar_items(self, items, k: int = 10) -> np.ndarray:
        """The k items whose embeddings have the largest inner product with each.

        Parameters
        ----------
        items : array-like of int
        k : int

        Returns
        -------
        numpy.ndarray of int64, shape (len(items), k)
            The item itself is excluded.
        """
        check_is_fitted(self, "user_tower_")
        _check_k(k, type(self).__name__)
        i = self._ids(items, 1, "items")
        self_pairs = sp.csr_matrix(
            (np.ones(i.size), (np.arange(i.size), i)), shape=(i.size, self.shape_[1])
        )
        it = torch.as_tensor(i, device=self._Q.device)
        return top_k_inner_products(self._Q[it], self._Q, k, exclude=self_pairs)[0]

    def evaluate(self, test, *, k: int = 10, exclude_seen: bool = True) -> dict:
        """Ranking metrics of held-out pairs: P@k, recall@k, nDCG@k, MAP@k.

        Parameters
        ----------
        test : scipy.sparse matrix, tuple or Interactions
            Held-out positive pairs; every user with one is a query.
        k : int
        exclude_seen : bool
            Remove training pairs from the rankings.

        Returns
        -------
        dict
            ``precision@k``, ``recall@k``, ``ndcg@k``, ``map@k``, ``n_users``.
        """
        check_is_fitted(self, "user_tower_")
        _check_k(k, type(self).__name__)
        owner = f"{type(self).__name__}.evaluate"
        check_param(owner, "exclude_seen", exclude_seen, ["boolean"])
        held = as_interactions(test, self.shape_)
        users, relevant = _by_user(held)
        ids = self.recommend(users, k, exclude_seen=exclude_seen)
        return {**_ranking_metrics(ids, relevant, k), "n_users": int(users.size)}


def _table_part(tower):
    """The id table of a built-in embedding or hybrid (sum) tower, else None."""
    if isinstance(tower, EmbeddingTower) and not tower.normalize:
        return tower
    if isinstance(tower, SumTower) and isinstance(tower.towers[0], EmbeddingTower):
        others_mlp = all(isinstance(t, MLPTower) for t in tower.towers[1:])
        return tower.towers[0] if others_mlp else None
    return None


def _by_user(data) -> tuple[np.ndarray, list]:
    order = np.argsort(data.users, kind="stable")
    u, i = data.users[order], data.items[order]
    users = np.unique(u)
    return users, np.split(i, np.searchsorted(u, users[1:]))


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
        "give it): drop the stray pairs, or remap the ids "
        "(np.unique(ids, return_inverse=True)).",
    )


#: Solver arguments the estimator sets itself (not through solver_options).
_SET_BY_FIT = ("max_iter", "tol", "random_state", "verbose", "callback")


def _check_solver_options(solver: str, options: dict, owner: str) -> None:
    """Refuse solver_options keys that the solver does not take."""
    signature = inspect.signature(SOLVERS.get(solver))
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = list(signature.parameters.values())
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return
    # the first two (objective, start point) are passed by fit
    takes = {p.name for p in params[2:] if p.kind in kinds} - set(_SET_BY_FIT)
    unknown = sorted(str(key) for key in options if key not in takes)
    if unknown:
        raise InvalidParameterError(
            f"The 'solver_options' parameter of {owner} has key(s) {unknown} that "
            f"the {solver!r} solver does not take; it takes {sorted(takes)} "
            f"({', '.join(_SET_BY_FIT)} are parameters of {owner})."
        )


def _check_k(k, owner: str) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameterError(f"k of {owner} must be an int >= 1; got {k!r}.")
