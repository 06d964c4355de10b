"""The baselines of the all-pairs objective: stochastic training and gradient descent.

Methods that users of two-tower models already know, run on the same
:class:`~.problem.AllPairsObjective` as the paper's methods so that all of
them are compared on the exact objective:

- :func:`stochastic`: SG or Adam (``torch.optim``) on minibatches of pairs
  drawn uniformly from all m n pairs, or on dense row x column blocks, with
  any towers. Each pair contributes its term of the objective (below),
  scaled so that the minibatch loss is an unbiased estimate of L. This is
  what training on all pairs costs without the paper's O(m + n) formulas:
  one epoch touches O(m n) pairs.
  The loop is :func:`~embedopt.optim.minibatch_train`, with a monitor that
  stops on the exact gradient norm.
- :func:`gradient_descent`: gradient descent with Armijo line search on the
  exact objective, plain or scaled by the Gauss-Newton diagonal.

The term of a pair (i, j) in ``L = sum_(i,j) t_ij + (lam / 2) ||theta||^2``
is, with ``w_ij = (omega / 2) a_i b_j (Ytilde_ij - Yhat_ij)^2``::

    t_ij = c_ij l(Y_ij, Yhat_ij) + [imputed == "all"] w_ij    (i, j) observed
    t_ij = w_ij                                              otherwise

(``c_ij``: the objective's ``sample_weight`` of the observed pair, 1
without one), so both solvers honour the confidences of the objective.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    InstanceOf,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    Registry,
    resolve_random_state,
    validated_params,
)
from .._core.docs import fill_doc
from ..linalg.points import Point, as_tuple, pack
from ..optim import (
    IterationState,
    SolverResult,
    armijo_gradient_descent,
    minibatch_train,
)
from ._run import _MONITORING, _OBJECTIVE, _check_point, _exact, _monitor
from .problem import AllPairsObjective, _gn_diagonal, _mean

__all__ = [
    "OPTIMIZERS",
    "STOCHASTIC_CONSTRAINTS",
    "block_loss",
    "gradient_descent",
    "sampled_pairs_loss",
    "stochastic",
]

_F64 = torch.float64

#: Torch optimizers of :func:`stochastic` by name.
OPTIMIZERS = Registry(
    "optimizer", {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}, owner="stochastic"
)

#: Constraints of :func:`stochastic`'s parameters (callers may check them early).
STOCHASTIC_CONSTRAINTS = {
    "objective": [_OBJECTIVE],
    "optimizer": [Options(OPTIMIZERS)],
    "sampling": [Options(["pairs", "blocks"])],
    "learning_rate": [Interval(float, 0, None, closed="neither")],
    "batch_size": [Interval(int, 1, None)],
    "block_shape": [InstanceOf(tuple, "a tuple (rows, cols) of ints >= 1"), None],
    "pairs_per_epoch": [Interval(int, 1, None), None],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "optimizer_options": [InstanceOf(dict, "a dict"), None],
    **_MONITORING,
}


# -- the terms of sampled pairs --------------------------------------------------
class _PairTerms:
    """The objective's per-pair data, looked up for sampled pairs.

    Observed pairs are found by binary search in the sorted keys ``i n + j``
    of O (CSR order is that order), so no m x n mask is ever formed; the
    constants are cast once to the towers' dtype.
    """

    def __init__(self, objective: AllPairsObjective, dtype: torch.dtype):
        self.objective = objective
        su, sv = objective.sides
        self.m, self.n = objective.shape
        pat = objective.pattern
        self.keys = pat.row_indices() * self.n + pat.col_indices()
        self.labels = objective.labels.to(dtype)
        conf = objective.sample_weight
        self.confidence = None if conf is None else conf.to(dtype)
        self.a, self.b = su.weights.to(dtype), sv.weights.to(dtype)
        self.tilde_u, self.tilde_v = su.tilde.to(dtype), sv.tilde.to(dtype)
        self.half_omega = 0.5 * objective.omega
        self.unobserved_only = objective.imputed == "unobserved"

    def _embed(self, x, users: torch.Tensor, items: torch.Tensor):
        out = []
        for side, params, ids in zip(
            self.objective.sides, self.objective.split(x), (users, items), strict=True
        ):
            out.append(side.function(ids)(*params))
        return out

    def _lookup(self, keys: torch.Tensor):
        """(observed mask, CSR position) of each key."""
        if self.keys.numel() == 0:
            hit = torch.zeros(keys.shape, dtype=torch.bool, device=keys.device)
            return hit, torch.zeros_like(keys)
        pos = torch.searchsorted(self.keys, keys.reshape(-1)).reshape(keys.shape)
        pos = pos.clamp_max(self.keys.numel() - 1)
        return self.keys[pos] == keys, pos

    def _total(self, x, users, items, scores, ytilde, weights, scale):
        hit, pos = self._lookup(users * self.n + items)
        obj = self.objective
        observed = obj.loss.value(self.labels[pos[hit]], scores[hit])
        if self.confidence is not None:
            observed = self.confidence[pos[hit]] * observed
        observed = observed.sum()
        imputed = weights * (ytilde - scores) ** 2
        if self.unobserved_only:
            imputed = torch.where(hit, 0.0, imputed)
        data = scale * (observed + self.half_omega * imputed.sum())
        if not obj.lam:
            return data
        return data + 0.5 * obj.lam * sum((p**2).sum() for p in x)

    def pairs(self, x, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        P, Q = self._embed(x, users, items)
        scores = (P * Q).sum(1)
        ytilde = (self.tilde_u[users] * self.tilde_v[items]).sum(1)
        weights = self.a[users] * self.b[items]
        scale = self.m * self.n / users.numel()
        return self._total(x, users, items, scores, ytilde, weights, scale)

    def block(self, x, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        P, Q = self._embed(x, rows, cols)
        scores = P @ Q.T
        ytilde = self.tilde_u[rows] @ self.tilde_v[cols].T
        weights = self.a[rows, None] * self.b[None, cols]
        scale = self.m * self.n / (rows.numel() * cols.numel())
        return self._total(
            x, rows[:, None], cols[None, :], scores, ytilde, weights, scale
        )


def _index_tensor(ids, size: int, what: str, device) -> torch.Tensor:
    t = torch.as_tensor(ids, device=device)
    if t.ndim != 1 or t.numel() == 0 or t.dtype.is_floating_point:
        raise DataValidationError(
            f"{what} must be a non-empty 1-D array of integer indices; got "
            f"shape {tuple(t.shape)} and dtype {t.dtype}."
        )
    t = t.long()
    if int(t.min()) < 0 or int(t.max()) >= size:
        raise DataValidationError(
            f"{what} must lie in [0, {size}); got values in "
            f"[{int(t.min())}, {int(t.max())}]."
        )
    return t


def _user_item_indices(
    objective: AllPairsObjective, users, items, names: tuple[str, str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The checked user and item index tensors on the objective's device
    (``names``: how the error messages call them)."""
    m, n = objective.shape
    dev = objective.device
    return (
        _index_tensor(users, m, names[0], dev),
        _index_tensor(items, n, names[1], dev),
    )


def _point_dtype(objective: AllPairsObjective, x) -> torch.dtype:
    params = [p for part in objective.split(x) for p in part]
    return params[0].dtype if params else torch.get_default_dtype()


#: The Returns of both loss estimates.
_LOSS_RETURNS_DOC = """\
Returns
-------
torch.Tensor
    A scalar in the towers' dtype."""


@fill_doc(returns=_LOSS_RETURNS_DOC)
def sampled_pairs_loss(
    objective: AllPairsObjective, x: Point, users: ArrayLike, items: ArrayLike
) -> torch.Tensor:
    """Unbiased estimate of ``L(x)`` from pairs drawn uniformly from all m n.

    ``(m n / B) sum_b t_(i_b, j_b) + (lam / 2) ||x||^2`` over the B pairs
    ``(users[b], items[b])``, with the pair terms ``t_ij`` of the module
    docstring: its expectation over pairs drawn independently and uniformly
    (with replacement) is exactly ``L(x)``.

    Parameters
    ----------
    objective : AllPairsObjective
    x : tuple of torch.Tensor
        A point (see :meth:`AllPairsObjective.initial_point`); the result is
        differentiable with respect to it.
    users, items : array-like of int, shape (B,)
        The sampled pairs.

    {returns}

    Raises
    ------
    DataValidationError
        If the indices are not 1-D integers of one length within (m, n).
    """
    u, v = _user_item_indices(objective, users, items, ("users", "items"))
    if u.numel() != v.numel():
        raise DataValidationError(
            f"users and items must have the same length; got {u.numel()} and "
            f"{v.numel()}."
        )
    return _PairTerms(objective, _point_dtype(objective, x)).pairs(tuple(x), u, v)


@fill_doc(returns=_LOSS_RETURNS_DOC)
def block_loss(
    objective: AllPairsObjective, x: Point, rows: ArrayLike, cols: ArrayLike
) -> torch.Tensor:
    """Unbiased estimate of ``L(x)`` from the dense block ``rows x cols``.

    ``(m n / (|I| |J|)) sum_(i in I, j in J) t_ij + (lam / 2) ||x||^2``:
    the scores of the block are one |I| x |J| product of the towers'
    outputs. Its expectation is exactly ``L(x)`` when I is a uniformly random
    subset of the m rows of a fixed size, and J one of the n columns, drawn
    independently (each pair is then in the block with probability
    ``|I| |J| / (m n)``).

    Parameters
    ----------
    objective : AllPairsObjective
    x : tuple of torch.Tensor
        A point; the result is differentiable with respect to it.
    rows : array-like of int, shape (|I|,)
        User indices.
    cols : array-like of int, shape (|J|,)
        Item indices.

    {returns}

    Raises
    ------
    DataValidationError
        If the indices are not 1-D integers within (m, n).
    """
    r, c = _user_item_indices(objective, rows, cols, ("rows", "cols"))
    return _PairTerms(objective, _point_dtype(objective, x)).block(tuple(x), r, c)


# -- samplers ----------------------------------------------------------------------
class _PermutationStream:
    """Consecutive slices of random permutations of ``range(n)``.

    Each slice is a uniformly random subset of its size (which keeps every
    block estimate unbiased), and the slices of one permutation are disjoint,
    so a row sweep covers every row once before repeating any; a new
    permutation is drawn when the current one has too few rows left.
    """

    def __init__(self, n: int, size: int, generator, device):
        self.n, self.size = n, size
        self.generator, self.device = generator, device
        self.perm = None
        self.pos = n

    def __call__(self) -> torch.Tensor:
        if self.pos + self.size > self.n:
            self.perm = torch.randperm(
                self.n, generator=self.generator, device=self.device
            )
            self.pos = 0
        out = self.perm[self.pos : self.pos + self.size]
        self.pos += self.size
        return out


def _block_shape(block_shape, batch_size: int, m: int, n: int, owner: str):
    if block_shape is None:
        # A square block of about batch_size pairs, clipped to the matrix.
        side = max(1, round(batch_size**0.5))
        return min(side, m), min(side, n)
    ok = len(block_shape) == 2 and all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in block_shape
    )
    if not ok or block_shape[0] > m or block_shape[1] > n:
        raise InvalidParameterError(
            f"The 'block_shape' parameter of {owner} must be a tuple (rows, cols) "
            f"of ints with 1 <= rows <= m = {m} and 1 <= cols <= n = {n}. Got "
            f"{block_shape!r}."
        )
    return block_shape


# -- stochastic training -----------------------------------------------------------
@validated_params(STOCHASTIC_CONSTRAINTS, owner="stochastic")
def stochastic(
    objective: AllPairsObjective,
    x0: Point,
    *,
    optimizer: str = "adam",
    sampling: str = "pairs",
    learning_rate: float = 1e-2,
    batch_size: int = 4096,
    block_shape: tuple[int, int] | None = None,
    pairs_per_epoch: int | None = None,
    max_iter: int = 20,
    tol: float = 0.0,
    optimizer_options: dict | None = None,
    evaluate: Callable[[Point], Mapping[str, Any]] | None = None,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    name: str | None = None,
    owner: str | None = None,
) -> SolverResult:
    """Train both towers by SG or Adam on unbiased minibatch estimates of L.

    Each step draws a minibatch, evaluates its estimate of the objective
    (:func:`sampled_pairs_loss` or :func:`block_loss`: every sampled pair
    contributes its term, scaled by m n over the number of pairs, plus the
    whole regularizer once), back-propagates through the towers and steps a
    ``torch.optim`` optimizer. Because the estimate is unbiased, so is its
    gradient: this is plain stochastic gradient on the exact objective, the
    baseline whose epochs cost O(m n) pair evaluations.

    An epoch is ``pairs_per_epoch`` scored pairs (default m n: one pass over
    all pairs in expectation), i.e. ``round(pairs_per_epoch / pairs per
    step)`` steps (at least one). After each epoch the exact objective and
    gradient norm (``objective.value_and_grad``, which the method itself
    does not use) are recorded off the clock.

    Parameters
    ----------
    objective : AllPairsObjective
        Its towers may be any modules; they are not modified (the towers are
        called with the iterate's parameters).
    x0 : tuple of torch.Tensor
        Starting point (see :meth:`AllPairsObjective.initial_point`).
    optimizer : {"adam", "sgd"}
        :class:`torch.optim.Adam` or :class:`torch.optim.SGD`
        (:data:`OPTIMIZERS`).
    sampling : {"pairs", "blocks"}
        ``"pairs"``: ``batch_size`` pairs (i, j) drawn independently and
        uniformly from all m n (with replacement); observed pairs come up
        with probability ``|O| / (m n)``. ``"blocks"``: a dense block of
        ``block_shape`` rows x columns, both uniformly random subsets, taken
        as consecutive slices of a random permutation of the rows (and one
        of the columns), so that successive blocks sweep all rows before
        any repeats.
    learning_rate : float
        The optimizer's ``lr``. The minibatch loss estimates L itself (a sum
        over m n pairs, not a mean), so SG needs a step of the order of one
        over the curvature of L, far below Adam's (which is invariant to the
        scale of the loss).
    batch_size : int
        Pairs per step with ``sampling="pairs"``; with ``"blocks"`` and no
        ``block_shape``, the block is about ``sqrt(batch_size)`` square.
    block_shape : tuple (rows, cols), optional
        Block size for ``sampling="blocks"``; ``rows <= m``, ``cols <= n``.
    pairs_per_epoch : int, optional
        Scored pairs per epoch; default m n. Pass ``objective.n_observed``
        to count epochs in passes over the observed pairs instead.
    max_iter : int
        Epochs at most.
    tol : float
        Stop after the first epoch with ``||grad L(x)|| <= tol ||grad
        L(x0)||`` (exact gradient, as the Gauss-Newton and gradient
        solvers). 0 runs exactly ``max_iter`` epochs (a fixed budget: no
        :class:`~embedopt.ConvergenceWarning`).
    optimizer_options : dict, optional
        Further keyword arguments of the optimizer (``betas``, ``momentum``,
        ``nesterov``...). Its ``weight_decay`` would add to ``lam``: set the
        regularization through the objective instead.
    evaluate : callable, optional
        ``evaluate(x) -> dict`` of extra history values (e.g. test P@k),
        called after each epoch off the clock.
    random_state : None, int or numpy.random.Generator
        Source of the samples.
    verbose : int
        0 silent, 1 progress bar, 2 also one log record per epoch.
    callback : callable, optional
        ``callback(state) -> bool | None`` once per epoch; True stops.
    name : str, optional
        Solver name in progress bars, logs and errors; default e.g.
        ``"Adam-pairs"``.
    owner : str, optional
        Who owns ``max_iter`` / ``tol`` in the ConvergenceWarning.

    Returns
    -------
    SolverResult
        ``x``: the final point (tuple of tensors, like ``x0``). ``history``
        per epoch: iteration, time (seconds of steps, the exact objective
        and ``evaluate`` excluded), objective and grad_norm (exact),
        minibatch_objective (mean of the epoch's estimates), steps, pairs
        (scored so far) and passes (``pairs / (m n)``), plus what
        ``evaluate`` returns.
        ``stop_reason``: ``"tol"``, ``"max_iter"`` or ``"callback"``.
        ``info``: ``initial_objective`` and ``initial_grad_norm`` (at x0),
        ``steps_per_epoch``, ``pairs_per_step``.

    Raises
    ------
    InvalidParameterError
        On a bad parameter, before any work.
    NumericalInstabilityError
        If the objective becomes NaN or infinite (learning rate too large).

    Examples
    --------
    >>> import torch
    >>> from embedopt.nn import EmbeddingTower
    >>> g = torch.Generator().manual_seed(0)
    >>> obj = AllPairsObjective(
    ...     EmbeddingTower(20, 4, generator=g), EmbeddingTower(30, 4, generator=g),
    ...     ([0, 1, 2, 3], [4, 5, 6, 7]), omega=0.1, lam=0.01)
    >>> res = stochastic(obj, obj.initial_point(), max_iter=5, random_state=0)
    >>> bool(res.history["objective"][-1] < res.info["initial_objective"])
    True
    """
    owner_name = name or f"{'Adam' if optimizer == 'adam' else 'SG'}-{sampling}"
    x0 = _check_point(objective, x0, owner_name)
    m, n = objective.shape
    params = [p.detach().clone().requires_grad_(True) for p in x0]
    opt = _optimizer(optimizer, params, learning_rate, optimizer_options, owner_name)
    terms = _PairTerms(objective, _point_dtype(objective, x0))
    generator = resolve_random_state(random_state, owner_name).torch(objective.device)
    sampler, step, per_step = _sampling(
        sampling, terms, params, batch_size, block_shape, generator, owner_name
    )
    steps = max(1, round((pairs_per_epoch or m * n) / per_step))

    def point():
        return tuple(p.detach() for p in params)

    def report(means: dict, done: int) -> dict:
        return {
            "minibatch_objective": means["objective"],
            "steps": done,
            "pairs": done * per_step,
            "passes": done * per_step / (m * n),
            **_exact(objective, point(), evaluate),
        }

    start: dict = {}
    monitor = _monitor(
        owner_name, max_iter, tol, verbose, callback, owner, _HINT, start
    )
    monitor.start()
    with monitor.paused():
        start.update(_exact(objective, point(), None))
    res = minibatch_train(
        step,
        sampler,
        opt,
        n_steps=max_iter * steps,
        log_every=steps,
        name=owner_name,
        monitor=monitor,
        report=report,
        point=point,
    )
    res.info = dict(
        initial_objective=start["objective"],
        initial_grad_norm=start["grad_norm"],
        steps_per_epoch=steps,
        pairs_per_step=per_step,
    )
    return res


_HINT = "lower the learning rate"


def _optimizer(name, params, learning_rate, optimizer_options, owner):
    """The torch optimizer of :func:`stochastic`, its options checked."""
    options = dict(optimizer_options or {})
    if "lr" in options or "params" in options:
        raise InvalidParameterError(
            f"The 'optimizer_options' parameter of {owner} must not set 'lr' "
            "or 'params'; pass learning_rate instead."
        )
    try:
        return OPTIMIZERS.get(name)(params, lr=learning_rate, **options)
    except (TypeError, ValueError) as err:
        raise InvalidParameterError(
            f"The 'optimizer_options' parameter of {owner} was refused by "
            f"the {name!r} optimizer: {err}"
        ) from None


def _sampling(sampling, terms, params, batch_size, block_shape, generator, owner):
    """``(sampler, step, pairs per step)`` of :func:`stochastic`: the sampler
    draws a batch (pairs, or a block's rows and columns), the step scores it."""
    objective = terms.objective
    m, n = objective.shape
    dev = objective.device
    if sampling == "pairs":

        def pairs():
            u = torch.randint(0, m, (batch_size,), generator=generator, device=dev)
            v = torch.randint(0, n, (batch_size,), generator=generator, device=dev)
            return u, v

        return pairs, lambda b: terms.pairs(params, *b), batch_size
    rows, cols = _block_shape(block_shape, batch_size, m, n, owner)
    next_rows = _PermutationStream(m, rows, generator, dev)
    next_cols = _PermutationStream(n, cols, generator, dev)

    def block():
        return next_rows(), next_cols()

    return block, lambda b: terms.block(params, *b), rows * cols


# -- gradient descent -----------------------------------------------------------
@validated_params(
    {
        "max_iter": [Interval(int, 1, None)],
        "tol": [Interval(float, 0, None)],
        "scaling": [None, Options(["diagonal"])],
        "refresh": [Interval(int, 1, None)],
        "n_probes": [Interval(int, 1, None)],
    },
    owner="gradient_descent",
)
def gradient_descent(
    objective: AllPairsObjective,
    x0: Point,
    *,
    max_iter: int = 1000,
    tol: float = 1e-5,
    scaling: str | None = None,
    refresh: int = 10,
    n_probes: int = 4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
) -> SolverResult:
    """Gradient descent with Armijo line search, plain or diagonally scaled.

    Parameters
    ----------
    objective : AllPairsObjective
        Or any object with ``value_and_grad`` (and ``gnvp`` for scaling).
    x0 : Point
    max_iter : int
    tol : float
        Stop when ``||grad L|| <= tol ||grad L(x0)||``.
    scaling : {None, "diagonal"}
        ``"diagonal"``: directions ``-D^{-1} grad`` with D the Gauss-Newton
        diagonal (Hutchinson, ``n_probes`` products) plus 1e-3 of its mean,
        re-estimated every ``refresh`` iterations.
    refresh : int
    n_probes : int
    random_state : None, int or numpy.random.Generator
    verbose, callback
        As every solver.

    Returns
    -------
    SolverResult
        History: iteration, time, objective, grad_norm, step, n_evals.
    """
    scale = None
    if scaling == "diagonal":
        gen = resolve_random_state(random_state, "gradient_descent").torch()
        cache = {"age": refresh, "diag": None}

        def scale(x):
            if cache["age"] >= refresh:
                diag = _gn_diagonal(objective, x, n_probes, gen)
                shift = 1e-3 * _mean(diag)
                cache["diag"] = pack(diag, [a + shift for a in as_tuple(diag)])
                cache["age"] = 0
            cache["age"] += 1
            return cache["diag"]

    return armijo_gradient_descent(
        objective,
        x0,
        max_iter=max_iter,
        tol=tol,
        preconditioner=scale,
        verbose=verbose,
        callback=callback,
        name="GD" if scaling is None else "scaled GD",
        owner="gradient_descent",
    )
