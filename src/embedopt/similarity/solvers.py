"""Solvers of the all-pairs objective: the paper's Newton-type method, ALS
(what ``solver="auto"`` picks for embedding tables and the square loss), the
registry of every solver, and the estimator's policy (the ``"auto"`` rule,
tuned defaults, the ALS warm start, the thread rule), all on the O(m + n)
oracles of :class:`~embedopt.similarity.AllPairsObjective`.

=======================  ===================================================
``gauss_newton``         truncated Gauss-Newton: CG on ``(G + mu I) s = -g``
                         with Levenberg-Marquardt damping, optional diagonal
                         preconditioner, Armijo line search on the exact
                         objective (Sec. 4; the notes' "Methods")
``als``                  alternating least squares, the linear case (both
                         towers plain embedding tables, square loss): each
                         half-step solves the row-wise normal equations with
                         the all-pairs term folded in through k x k Gramians
                         (Pan & Scholz, 2009; Hu et al., 2008), at
                         ``O(|O| k^2 + (m + n) k^3)`` per sweep
``gradient_descent``     baselines (:mod:`embedopt.similarity.baselines`):
``adam``, ``sgd``        gradient descent with Armijo line search, plain or
                         scaled by the Gauss-Newton diagonal; stochastic
                         training on sampled pairs or blocks
=======================  ===================================================

Every solver takes ``(objective, x0, **options)`` and returns a
:class:`~embedopt.optim.SolverResult` whose history has one row per outer
iteration with the exact objective (never an estimate), the gradient norm
and the time; Gauss-Newton adds the CG iterations per step.

Diagonal estimates: the Gauss-Newton diagonal ``diag(J^T D J)`` has no cheap
closed form for general towers, so it is estimated from Gauss-Newton
products with Rademacher probes (Hutchinson), each as costly as a gradient.
A diagonal preconditioner therefore pays ``n_probes`` products per outer
iteration; it helps when the towers' parameters have very different
curvature (embedding tables with popular and rare ids).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch

from .._core import (
    DataValidationError,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    Registry,
    resolve_random_state,
    validated_params,
)
from ..linalg import sparse_normal_equations, sparse_normal_equations_cg
from ..linalg.points import Point, as_tuple, pack
from ..nn import EmbeddingTower, MLPTower, SumTower
from ..optim import IterationState, SolverResult, newton_cg
from ._run import _MONITORING, _OBJECTIVE, _check_point, _exact, _monitor
from .baselines import gradient_descent, stochastic
from .losses import SquareLoss
from .problem import AllPairsObjective, _gn_diagonal, _mean, table_parameter

__all__ = ["ALS_CONSTRAINTS", "SOLVERS", "als", "gauss_newton", "get_solver"]

_F64 = torch.float64

#: Default relative damping: mu starts at this fraction of the mean
#: Gauss-Newton diagonal at x0 (scale-free, unlike an absolute mu).
DEFAULT_DAMPING = 1e-3


@validated_params(
    {
        "max_iter": [Interval(int, 1, None)],
        "tol": [Interval(float, 0, None)],
        "cg_rtol": [Interval(float, 0, 1, closed="neither")],
        "cg_max_iter": [Interval(int, 1, None), None],
        "damping": [Interval(float, 0, None)],
        "preconditioner": [None, Options(["diagonal"])],
        "n_probes": [Interval(int, 1, None)],
        "stop_on": [Options(["grad_norm", "objective"])],
    },
    owner="gauss_newton",
)
def gauss_newton(
    objective: AllPairsObjective,
    x0: Point,
    *,
    max_iter: int = 100,
    tol: float = 1e-5,
    cg_rtol: float = 0.1,
    cg_max_iter: int | None = 50,
    damping: float = DEFAULT_DAMPING,
    preconditioner: str | None = None,
    n_probes: int = 4,
    stop_on: str = "grad_norm",
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
) -> SolverResult:
    """Truncated Gauss-Newton-CG with Levenberg-Marquardt damping.

    Each outer iteration solves ``(G + mu I) s = -grad L`` by CG (G the
    Gauss-Newton matrix, applied by ``objective.gnvp``), takes an Armijo step
    along s on the exact objective and adapts mu from the ratio of actual
    to predicted decrease (:func:`~embedopt.optim.newton_cg`).

    Parameters
    ----------
    objective : AllPairsObjective
        Or any object with ``value``, ``value_and_grad`` and ``gnvp``.
    x0 : Point
        Starting point (``objective.initial_point()``).
    max_iter : int
        Newton iterations at most.
    tol : float
        Stop when ``||grad L|| <= tol ||grad L(x0)||``, or with
        ``stop_on="objective"`` when one iteration lowers L by less than
        ``tol`` relative to it.
    cg_rtol : float
        Relative residual of each CG solve (0.1 is the inexact-Newton
        forcing term of Lin & Moré's TRON).
    cg_max_iter : int, optional
        CG iterations per Newton step at most (None: CG's own limit).
    damping : float
        Initial mu, relative to the mean Gauss-Newton diagonal at x0 (so it
        does not depend on the scale of the data); 0 turns damping off.
    preconditioner : {None, "diagonal"}
        ``"diagonal"``: Jacobi preconditioner ``diag(G) + mu`` from a
        Hutchinson estimate with ``n_probes`` products, once per Newton
        iteration.
    n_probes : int
        Probes of the diagonal estimates (also used once for the damping
        scale).
    stop_on : {"grad_norm", "objective"}
        Which test ``tol`` applies to.
    random_state : None, int or numpy.random.Generator
        Draws of the probes.
    verbose, callback
        As every solver (see :class:`~embedopt.optim.IterationMonitor`).

    Returns
    -------
    SolverResult
        History: iteration, time, objective, grad_norm, cg_iter, step,
        damping. ``info["n_products"]``: Gauss-Newton products in the CG
        solves.
    """
    gen = resolve_random_state(random_state, "gauss_newton").torch()
    mu0 = _initial_damping(objective, x0, damping, gen)
    pre = None
    if preconditioner == "diagonal":

        def pre(x, mu):
            diag = _gn_diagonal(objective, x, n_probes, gen)
            return pack(diag, [a + mu for a in as_tuple(diag)])

    return newton_cg(
        objective,
        x0,
        max_iter=max_iter,
        tol=tol,
        use="gauss_newton",
        cg_rtol=cg_rtol,
        cg_max_iter=cg_max_iter,
        damping=mu0,
        preconditioner=pre,
        stop_on=stop_on,
        verbose=verbose,
        callback=callback,
        name="Gauss-Newton",
        owner="gauss_newton",
    )


def _initial_damping(objective, x0, relative: float, generator) -> float:
    if relative == 0:
        return 0.0
    return relative * _mean(_gn_diagonal(objective, x0, 1, generator))


#: Constraints of :func:`als`'s parameters.
ALS_CONSTRAINTS = {
    "objective": [_OBJECTIVE],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "chunk_size": [Interval(int, 1, None), None],
    "cg_steps": [Interval(int, 1, None), None],
    "stop_on": [Options(["grad_norm", "objective"])],
    **_MONITORING,
}


# -- alternating least squares -----------------------------------------------------
class _ALSSide:
    """One side's view of O as a compressed sparse matrix (entities x other
    side): CSR for the users, CSC for the items."""

    def __init__(self, own, other, c, r, n_entities, table_ids, position):
        self.other, self.c, self.r = other, c, r
        counts = torch.bincount(own, minlength=n_entities)
        self.ptr = torch.zeros(n_entities + 1, dtype=torch.int64, device=own.device)
        self.ptr[1:] = torch.cumsum(counts, 0)
        self.ids = table_ids  # row of the table of each entity
        self.position = position  # index of the table in the point


class _ALS:
    """The precomputed data of ALS on one objective (validated on creation)."""

    def __init__(self, objective: AllPairsObjective, owner: str):
        if not isinstance(objective.loss, SquareLoss):
            raise InvalidParameterError(
                f"{owner} solves the square loss only (loss='square'); got the "
                f"{getattr(objective.loss, 'name', type(objective.loss).__name__)!r}"
                " loss. Use a Gauss-Newton or gradient solver for other losses."
            )
        self.objective = objective
        m, n = objective.shape
        pat = objective.pattern
        rows, cols = pat.row_indices(), pat.col_indices()
        w = objective.omega * objective.pair_weights
        conf = objective.sample_weight  # None: all 1
        labels = objective.labels if conf is None else conf * objective.labels
        if objective.imputed == "unobserved":
            # The imputed term of an observed pair is not in L: take it back
            # out of the all-pairs Gramian terms (eq. 10-11).
            c = 1.0 - w if conf is None else conf - w
            r = labels - w * objective.ytilde
        else:
            c = torch.ones_like(w) if conf is None else conf.clone()
            r = labels
        n_user = len(objective.sides[0].names)
        ids = [
            self._table_ids(side, owner) for side in objective.sides
        ]  # validates both towers
        csc = pat.transposed_structure()[2]  # column-major order of the pairs
        self.sides = (
            _ALSSide(rows, cols, c, r, m, ids[0], 0),
            _ALSSide(cols[csc], rows[csc], c[csc], r[csc], n, ids[1], n_user),
        )

    @staticmethod
    def _table_ids(side, owner: str) -> torch.Tensor:
        pname = table_parameter(side.tower)
        if pname is None:
            raise InvalidParameterError(
                f"{owner} needs both towers to be plain embedding tables "
                "(EmbeddingTower with normalize=False, or torch.nn.Embedding "
                f"without max_norm); the {side.name} tower is a "
                f"{type(side.tower).__name__}"
                + (
                    " with normalize=True"
                    if isinstance(side.tower, EmbeddingTower)
                    else ""
                )
                + ". Use a Gauss-Newton, gradient or stochastic solver for "
                "other towers."
            )
        if side.names != [pname]:
            raise InvalidParameterError(
                f"{owner} updates the table '{pname}' of the {side.name} tower, "
                f"which must be its only trainable parameter; got {side.names}."
            )
        ids = side.inputs
        n_ids = side.tower.weight.shape[0]
        if (
            ids.ndim != 1
            or ids.dtype.is_floating_point
            or (ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n_ids))
            or torch.unique(ids).numel() != ids.numel()
        ):
            raise DataValidationError(
                f"{owner} needs the {side.name} inputs to be distinct row ids of "
                f"the table (1-D integers in [0, {n_ids})): each entity must own "
                "one row."
            )
        return ids.long()

    def half_step(
        self, x: list, s: int, chunk_size: int | None, cg_steps: int | None = None
    ) -> None:
        """Replace the table of side ``s`` in ``x`` by its exact minimizer, or
        by ``cg_steps`` conjugate-gradient steps towards it from where it is."""
        obj = self.objective
        me, you = self.sides[s], self.sides[1 - s]
        side_me, side_you = obj.sides[s], obj.sides[1 - s]
        F = x[you.position][you.ids].to(_F64)  # the other side's embeddings
        wF = F.T * side_you.weights
        G = wF @ F  # G_Q = Q^T B Q (or G_P)
        C = wF @ side_you.tilde  # C_Q = Q^T B Qtilde (or C_P)
        omega, lam = obj.omega, obj.lam
        wa = omega * side_me.weights

        def tilde_rhs(a, b):
            # omega a_i C_Q ptilde_i, the imputed part of rhs_i
            return wa[a:b, None] * (side_me.tilde[a:b] @ C.T)

        # A_i = sum_{j in O_i} c_ij q_j q_j^T + omega a_i G_Q + lam I,
        # rhs_i = sum_{j in O_i} r_ij q_j + omega a_i C_Q ptilde_i
        system = dict(ridge=lam, gram=G, gram_weights=wa, rhs_extra=tilde_rhs)
        old = x[me.position]
        if cg_steps is None:
            E = sparse_normal_equations(
                me.ptr, me.other, me.c, me.r, F, chunk_size=chunk_size, **system
            )
        else:
            E = sparse_normal_equations_cg(
                me.ptr,
                me.other,
                me.c,
                me.r,
                F,
                x0=old[me.ids],
                n_steps=cg_steps,
                dtype=old.dtype,
                **system,
            )
        # Table rows no entity uses only carry lam/2 ||w||^2: 0 minimizes it.
        table = old.detach().clone() if not lam else torch.zeros_like(old)
        table[me.ids] = E.to(old.dtype)
        x[me.position] = table


@validated_params(ALS_CONSTRAINTS, owner="als")
def als(
    objective: AllPairsObjective,
    x0: Point,
    *,
    max_iter: int = 20,
    tol: float = 1e-5,
    chunk_size: int | None = None,
    cg_steps: int | None = None,
    stop_on: str = "grad_norm",
    evaluate: Callable[[Point], Mapping[str, Any]] | None = None,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str = "ALS",
    owner: str | None = None,
) -> SolverResult:
    """Alternating least squares on the all-pairs objective of two embedding tables.

    With both towers plain tables (``p_i``, ``q_j`` free rows), the square
    loss and ``theta = (P, Q)``, L is a least-squares problem in P for fixed
    Q and in Q for fixed P. One iteration solves both in turn, exactly, row
    by row. For user i (items symmetric, with A, P, Ptilde in place of B, Q,
    Qtilde)::

        (sum_{j in O_i} c_ij q_j q_j^T + omega a_i G_Q + lam I) p_i
            = sum_{j in O_i} r_ij q_j + omega a_i C_Q ptilde_i

        G_Q = Q^T B Q,   C_Q = Q^T B Qtilde,
        "unobserved":  c_ij = w_ij - omega a_i b_j,
                       r_ij = w_ij Y_ij - omega a_i b_j Ytilde_ij
        "all":         c_ij = w_ij,   r_ij = w_ij Y_ij

    i.e. the stationarity condition of L in p_i: the Gramian term charges
    all n items, and ``c_ij``, ``r_ij`` remove the imputed term of the
    observed ones when it is not part of L (``w_ij``: the objective's
    ``sample_weight``, 1 without one). The observed sums of all users
    are one sparse product ``C_O W`` (row j of W: the upper triangle of
    ``q_j q_j^T``), and the k x k systems are solved in batches of entities
    by batched Cholesky: ``O(|O| k^2 + (m + n) k^3)`` per iteration, with
    memory bounded by ``chunk_size``. Each half-step
    minimizes L over one table, so L never increases.

    iALS (Hu et al., 2008) with uniform confidence ``1 + alpha`` on the
    observed pairs is this objective with implicit labels (all 1), constant
    imputation 0, ``imputed="unobserved"``, ``omega = 1 / (1 + alpha)`` and
    ``lam = omega lambda_iALS`` (the two objectives differ by the factor
    omega); iALS with per-pair confidence ``c_ij = 1 + alpha r_ij`` is
    ``sample_weight = c``, ``omega = 1`` and ``lam = lambda_iALS`` (half the
    iALS objective); popularity weights ``b`` give eALS-style (He et al., 2016)
    weighting of the unobserved pairs.

    Parameters
    ----------
    objective : AllPairsObjective
        Square loss; both towers :class:`~embedopt.nn.EmbeddingTower`
        (``normalize=False``) or :class:`torch.nn.Embedding` (no
        ``max_norm``), the table their only trainable parameter, and inputs
        that give every entity its own row (the default ids do). Any
        weights, imputation, ``imputed`` and ``lam``.
    x0 : tuple of torch.Tensor
        Starting point (the two tables); only the item table matters, since
        the first half-step recomputes the user table.
    max_iter : int
        Iterations (user then item half-step) at most.
    tol : float
        Tolerance of the ``stop_on`` test. 0 runs exactly ``max_iter``
        iterations (a fixed budget: no :class:`~embedopt.ConvergenceWarning`).
    chunk_size : int, optional
        Entities per batch of normal equations; default about 2^23 / k^2
        (32 MiB of the float64 triangles of their systems).
    cg_steps : int, optional
        None: exact half-steps. An int: inexact half-steps, that many
        conjugate-gradient steps on every row's system from the current
        table (Takacs et al., 2011; as ``implicit``'s iALS), by
        :func:`~embedopt.linalg.sparse_normal_equations_cg` in the tables'
        dtype: ``O(cg_steps (|O| k + (m + n) k^2))`` per iteration instead
        of ``O(|O| k^2 + (m + n) k^3)``. Each half-step still never
        increases L (CG from the current point decreases the row's
        quadratic). On MovieLens-1M 3 steps cost an eighth of an exact
        iteration and reach its P@10 from the 6th iteration on
        (``benchmarks/similarity/README.md``, "ALS with CG half-steps").
    stop_on : {"grad_norm", "objective"}
        ``"grad_norm"``: stop when ``||grad L(x)|| <= tol ||grad L(x0)||``
        (as the Gauss-Newton and gradient solvers). ``"objective"``: stop
        when ``L(x_{t-1}) - L(x_t) <= tol L(x_{t-1})``, the relative
        decrease of one iteration; it suits ALS, whose small random start
        has a small gradient (the ``"grad_norm"`` test then asks for far
        more than the ranking needs) and whose objective decreases
        monotonically.
    evaluate : callable, optional
        ``evaluate(x) -> dict`` of extra history values, off the clock.
    random_state : None, int or numpy.random.Generator
        Unused (ALS is deterministic); accepted so that every solver of the
        all-pairs objective takes the same arguments.
    verbose, callback, name, owner
        As in :func:`stochastic` (the callback is called once per iteration).

    Returns
    -------
    SolverResult
        ``x``: the final point (the tables, in x0's dtype). ``history`` per
        iteration: iteration, time (the exact objective, gradient and
        ``evaluate``, which ALS does not need beyond the ``tol`` test,
        excluded), objective, grad_norm, plus what ``evaluate`` returns.
        ``info``: ``initial_objective``, ``initial_grad_norm``.

    Raises
    ------
    InvalidParameterError
        If the loss is not the square loss or a tower is not a plain
        embedding table.
    DataValidationError
        If a tower's inputs do not give each entity its own table row.

    Notes
    -----
    The systems are positive semidefinite (``sum_{O_i} q q^T + omega a_i
    sum_{j not in O_i} b_j q_j q_j^T + lam I`` for ``"unobserved"``); a
    singular one (possible only with ``lam = 0``) gets its minimum-norm
    least-squares solution. Everything is computed in float64 and stored
    in the tables' dtype.

    Examples
    --------
    >>> import torch
    >>> from embedopt.nn import EmbeddingTower
    >>> g = torch.Generator().manual_seed(0)
    >>> obj = AllPairsObjective(
    ...     EmbeddingTower(20, 4, generator=g, dtype=torch.float64),
    ...     EmbeddingTower(30, 4, generator=g, dtype=torch.float64),
    ...     ([0, 1, 2, 3], [4, 5, 6, 7]), omega=0.1, lam=0.01)
    >>> res = als(obj, obj.initial_point(), max_iter=10, tol=0)
    >>> bool(res.history["objective"][-1] < res.info["initial_objective"])
    True
    """
    x0 = _check_point(objective, x0, name)
    solver = _ALS(objective, name)
    start: dict = {}
    monitor = _monitor(
        name,
        max_iter,
        tol,
        verbose,
        callback,
        owner,
        "the data or the imputation contain huge values",
        start,
        stop_on,
    )
    x = [p.detach().clone() for p in x0]
    monitor.start()
    with monitor.paused():
        start.update(_exact(objective, tuple(x), None))
    for _ in monitor:
        for s in (0, 1):
            solver.half_step(x, s, chunk_size, cg_steps)
        with monitor.paused():
            point = tuple(x)
            exact = _exact(objective, point, evaluate)
        if monitor.record(point, **exact):
            break
    return monitor.result(
        tuple(x),
        initial_objective=start["objective"],
        initial_grad_norm=start["grad_norm"],
    )


#: Solvers of the all-pairs objective by name: ``solver(objective, x0, **options)``.
#: ``"adam"`` / ``"sgd"`` are :func:`~embedopt.similarity.stochastic` with that
#: optimizer; ``"als"`` needs embedding-table towers and the square loss.
SOLVERS = Registry(
    "solver",
    {
        "gauss_newton": gauss_newton,
        "gradient_descent": gradient_descent,
        "als": als,
        "adam": partial(stochastic, optimizer="adam"),
        "sgd": partial(stochastic, optimizer="sgd"),
    },
    owner="similarity",
)
get_solver = SOLVERS.get


# -- the estimator's policy -------------------------------------------------------
# What TwoTowerModel decides before it runs a solver; the figures behind each
# default are in benchmarks/similarity/README.md ("Defaults of TwoTowerModel").

#: ALS in the estimator: 3 CG steps per half-step (they reach the exact
#: half-steps' P@10 at a tenth of the time) and the objective test at 2e-4.
ALS_CG_STEPS = 3
ALS_TOL = 2e-4
#: Gauss-Newton in the estimator: the objective test at 1e-3 (the gradient
#: test was never met in 20 iterations with hybrid towers) and at most 10 CG
#: iterations per step (as good on held-out pairs as 50, 15x faster on ML-1M).
GN_TOL = 1e-3
GN_CG_MAX_ITER = 10
#: ``max_iter`` when the estimator's is None: outer iterations of each solver.
DEFAULT_MAX_ITER = {"gauss_newton": 60}
MAX_ITER = 20
#: Solvers that run on a process group: every process takes the same step
#: from the group's sums (ALS and the stochastic solvers work on the local
#: data structures of one process).
GROUP_SOLVERS = ("gauss_newton", "gradient_descent")
#: Fits with at most this many embedding entries ((m + n) k) and observed
#: pairs run on one torch / BLAS thread (:func:`one_thread`).
SMALL = 2**16
#: Solver arguments the estimator sets itself (not through solver_options).
SET_BY_FIT = ("max_iter", "tol", "random_state", "verbose", "callback")


def table_part(tower):
    """The id table of a built-in embedding or hybrid (sum) tower, else None."""
    if isinstance(tower, EmbeddingTower) and not tower.normalize:
        return tower
    if isinstance(tower, SumTower) and isinstance(tower.towers[0], EmbeddingTower):
        others_mlp = all(isinstance(t, MLPTower) for t in tower.towers[1:])
        return tower.towers[0] if others_mlp else None
    return None


def resolve_solver(
    solver: str, user_tower, item_tower, loss, distributed: bool = False
) -> str:
    """The registry name of the solver ``solver="auto"`` means for these towers.

    ALS when both towers are plain embedding tables and the loss is square
    (the classic linear case, where it reaches the objective of 20
    Gauss-Newton iterations at a fraction of the time); Gauss-Newton
    otherwise, and always on a process group. Any other name is resolved
    in :data:`SOLVERS` (``"gauss-newton"`` finds ``"gauss_newton"``).

    Parameters
    ----------
    solver : str
    user_tower, item_tower : torch.nn.Module
    loss : str or loss object
    distributed : bool

    Returns
    -------
    str
    """
    if solver != "auto":
        return SOLVERS.resolve_name(solver)
    if distributed:
        return "gauss_newton"
    tables = all(table_part(t) is t for t in (user_tower, item_tower))
    return "als" if tables and loss == "square" else "gauss_newton"


def solver_settings(
    solver: str, max_iter: int | None, tol: float | None, options: dict | None
) -> dict:
    """``max_iter``, ``tol`` and the estimator's tuned defaults for ``solver``.

    None takes the defaults above (ALS: inexact CG half-steps and the
    objective test; Gauss-Newton: truncated CG steps and the objective test;
    the others: the gradient test at 1e-4); ``options`` (the estimator's
    ``solver_options``) override the tuned keys.

    Parameters
    ----------
    solver : str
        A registry name.
    max_iter : int or None
    tol : float or None
    options : dict or None

    Returns
    -------
    dict
        Keyword arguments of the solver.
    """
    options = dict(options or {})
    out = {"max_iter": max_iter or DEFAULT_MAX_ITER.get(solver, MAX_ITER)}
    if solver == "gauss_newton":
        tuned = {"tol": GN_TOL, "stop_on": "objective", "cg_max_iter": GN_CG_MAX_ITER}
    elif solver == "als":
        tuned = {"tol": ALS_TOL, "cg_steps": ALS_CG_STEPS, "stop_on": "objective"}
    else:
        tuned = {"tol": 1e-4}
    if tol is not None:
        tuned["tol"] = tol
    return {**out, **tuned, **options}


def check_solver_options(solver: str, options: dict, owner: str) -> None:
    """Refuse solver_options keys that the solver does not take."""
    signature = inspect.signature(SOLVERS.get(solver))
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = list(signature.parameters.values())
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return
    # the first two (objective, start point) are passed by fit
    takes = {p.name for p in params[2:] if p.kind in kinds} - set(SET_BY_FIT)
    unknown = sorted(str(key) for key in options if key not in takes)
    if unknown:
        raise InvalidParameterError(
            f"The 'solver_options' parameter of {owner} has key(s) {unknown} that "
            f"the {solver!r} solver does not take; it takes {sorted(takes)} "
            f"({', '.join(SET_BY_FIT)} are parameters of {owner})."
        )


def one_thread(device, m: int, n: int, k: int, n_pairs: int) -> bool:
    """Whether a fit is small enough to run on one thread.

    Small problems gain nothing from more threads, and on a busy machine
    every parallel region then waits for a descheduled thread (10x on the
    example of ``examples/``).
    """
    return torch.device(device).type == "cpu" and max((m + n) * k, n_pairs) <= SMALL


def warm_start(
    user_tower,
    item_tower,
    data,
    objective_options: dict,
    *,
    max_iter: int | None = None,
    tol: float | None = None,
    random_state=None,
    verbose: int = 0,
    callback=None,
) -> SolverResult | None:
    """ALS on the id tables of the towers, then the MLPs' outputs start at zero.

    With ``solver="auto"``, towers that have an id table (embedding or
    hybrid towers) and the square loss, Gauss-Newton starts from the exact
    matrix-factorization solution of the same objective restricted to the
    tables: the MLPs' output layers are zeroed, so the start *is* that
    solution, and Gauss-Newton only has to learn what the side features add.

    Parameters
    ----------
    user_tower, item_tower : torch.nn.Module
        Modified in place (their tables trained, MLP output layers zeroed).
    data : Interactions
    objective_options : dict
        Keywords of :class:`AllPairsObjective` (square loss).
    max_iter, tol : optional
        As the estimator's (None: the ALS defaults).
    random_state, verbose, callback
        As every solver.

    Returns
    -------
    SolverResult or None
        The ALS run; None when a tower has no id table.
    """
    parts = [table_part(t) for t in (user_tower, item_tower)]
    if None in parts:
        return None
    tables = AllPairsObjective(*parts, data, **objective_options)
    warm = SOLVERS.get("als")(
        tables,
        tables.initial_point(),
        **solver_settings("als", max_iter, tol, None),
        random_state=random_state,
        verbose=verbose,
        callback=callback,
    )
    tables.load(warm.x)
    with torch.no_grad():
        for tower in (user_tower, item_tower):
            for part in getattr(tower, "towers", [])[1:]:
                last = [m for m in part.modules() if isinstance(m, torch.nn.Linear)]
                last[-1].weight.zero_()
                last[-1].bias.zero_()
    return warm
