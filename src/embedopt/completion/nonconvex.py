"""Nonconvex low-rank regularization (Sec. 3.7 and 5.4 of Yao & Kwok).

Two solvers for ``min_X f(X) + lambda r(X)`` with the regularizers of
:mod:`embedopt.completion.regularizers`:

- :func:`dc_completion` -- the paper's DC scheme: at outer step tau the concave
  regularizer is replaced by its linearization at ``X_tau`` (a weighted nuclear
  norm, eq. (28)-(29), or for the truncated nuclear norm the ``tr(A^T X B)``
  term of eq. (24)-(27)), and the convex subproblem is solved by AIS-Impute
  (``DC(AIS-Impute)``) or by APG (``TNNR(APG)``, Hu et al.'s solver), warm
  started from ``X_tau``.
- :func:`irnn` -- the iteratively reweighted nuclear norm baseline (Lu et al.):
  a single proximal-gradient loop whose weights are recomputed from the current
  iterate at every step, with exact SVT.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .._core import (
    ConvergenceWarning,
    DeviceLike,
    DtypeLike,
    Interval,
    Options,
    RandomStateLike,
    canonical_name,
    resolve_random_state,
    validate_params,
)
from ..optim import IterationMonitor, IterationState, SolverResult
from .losses import Loss
from .problem import CompletionProblem, EntriesLike, Factors, _as_problem
from .proximal import _check_init, check_solver_options, proximal_completion
from .regularizers import Regularizer, TruncatedNuclearNorm, get_regularizer
from .solvers import SOLVERS, method_options

__all__ = ["dc_completion", "irnn"]

_CONSTRAINTS = {
    "lam": [Interval(float, 0, None, closed="neither")],
    "solver": [Options(SOLVERS)],
    "max_outer_iter": [Interval(int, 1, None)],
    "outer_tol": [Interval(float, 0, None)],
}


def dc_completion(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_outer_iter: int = 20,
    outer_tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    regularizer: str | Regularizer = "tnn",
    rank: int = 5,
    theta: float = 1.0,
    solver: str = "ais_impute",
    loss: str | Loss = "square",
    validation: EntriesLike | None = None,
    shape: tuple[int, ...] | None = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    **inner_options,
) -> SolverResult:
    """Nonconvex completion by DC programming with a convex inner solver.

    Parameters
    ----------
    X : ObservedEntries, scipy.sparse, tuple, dense array with NaN, or
        CompletionProblem
        Training entries.
    init : tuple (U, s, V), optional
        ``X_0``; default: the nuclear-norm solution at the same lambda.
    max_outer_iter, outer_tol : int, float
        DC iterations and the relative change of the nonconvex objective that
        stops them (the run options of the outer loop: ``max_iter`` and
        ``tol`` are those of each inner solve).
    random_state, verbose, callback
        See :func:`~embedopt.completion.ais_impute`; the callback is called
        per outer iteration.
    lam : float
        lambda > 0, keyword-only (an option of the method).
    regularizer : {"tnn", "capped_l1", "lsp", "mcp", "nuclear"} or Regularizer
        ``"tnn"``: truncated nuclear norm with ``rank`` free singular values;
        ``"capped_l1"`` / ``"lsp"`` / ``"mcp"``: with scale ``theta`` (an
        instance may give it as ``gamma * lam`` instead).
    rank : int
        Free singular values of the truncated nuclear norm.
    theta : float
        Scale of capped-l1 / log-sum penalty / MCP.
    solver : {"ais_impute", "ais_impute_exact", "soft_impute", "apg"}
        Inner solver: ``"ais_impute"`` is DC(AIS-Impute), ``"apg"`` TNNR(APG).
    loss, validation, shape, device, dtype
        See :class:`~embedopt.completion.CompletionProblem`.
    **inner_options
        ``max_iter``, ``tol``, ``lam_decay``, ``power_iters``, ``max_rank`` of
        each inner solve (see :func:`ais_impute`).

    Returns
    -------
    SolverResult
        ``x = (U, s, V)``; history per outer iteration: objective
        (``f + lambda r(X)``), rank, inner_iterations, and the validation
        metric when validation entries are given.
    """
    validate_params(
        "dc_completion",
        dict(
            lam=lam, solver=solver, max_outer_iter=max_outer_iter, outer_tol=outer_tol
        ),
        _CONSTRAINTS,
    )
    check_solver_options("dc_completion", inner_options)
    _check_init(init, "dc_completion")
    problem = _as_problem(
        X, loss=loss, validation=validation, shape=shape, device=device, dtype=dtype
    )
    reg = get_regularizer(regularizer, **_reg_params(regularizer, rank, theta))
    reg = reg.at(lam)  # theta = gamma * lam for a relative scale
    rs = resolve_random_state(random_state, "dc_completion")
    method = method_options(solver)
    label = method.pop("name")
    inner = {**method, **inner_options}
    monitor = IterationMonitor(
        f"DC({label})",
        max_outer_iter,
        outer_tol,
        verbose=verbose,
        callback=callback,
        owner="dc_completion",
    )
    with warnings.catch_warnings():
        # Inner solves are warm-started subproblems; the outer loop reports.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if init is None:
            init = proximal_completion(
                problem, lam=lam, random_state=rs.spawn(), name=label, **inner
            ).x
        U, s, V = init
        for _ in monitor:
            res = proximal_completion(
                problem,
                (U, s, V),
                lam=lam,
                lam_start=lam,
                random_state=rs.spawn(),
                name=label,
                **inner,
                **_linearization(reg, U, s, V),
            )
            U, s, V = res.x
            x = problem.values_at(problem.pattern, U, s, V)
            record = dict(
                objective=problem.loss_total(x) + lam * reg.value(s),
                rank=int(s.numel()),
                inner_iterations=res.n_iter,
            )
            if problem.validation is not None:
                with monitor.paused():
                    record[f"val_{problem.metric_name}"] = problem.validation_score(
                        U, s, V
                    )
            if monitor.record((U, s, V), **record):
                break
    return monitor.result((U, s, V), lam=lam, regularizer=repr(reg))


def irnn(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    regularizer: str | Regularizer = "lsp",
    rank: int = 5,
    theta: float = 1.0,
    solver: str = "soft_impute",
    loss: str | Loss = "square",
    validation: EntriesLike | None = None,
    shape: tuple[int, ...] | None = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    **options,
) -> SolverResult:
    """Iteratively reweighted nuclear norm (IRNN, Lu et al.): the nonconvex baseline.

    One proximal-gradient loop on ``f(X) + lambda r(X)``; at every iteration the
    weights ``rbar'(sigma_i(X_t))`` are recomputed and the weighted SVT of
    Lemma 3.6 applied. With the default ``solver="soft_impute"`` this is IRNN
    as published (no acceleration, exact SVT); other solvers give accelerated /
    approximate variants.

    Parameters
    ----------
    X, init, random_state, lam, regularizer, rank, theta, solver, loss,
    validation, shape, device, dtype
        As in :func:`dc_completion`.
    max_iter, tol, verbose, callback
        Of the single loop (see :func:`~embedopt.completion.ais_impute`).
    **options
        ``lam_decay``, ``power_iters``, ``max_rank`` of
        :func:`~embedopt.completion.proximal_completion`.

    Returns
    -------
    SolverResult
        History: objective ``f + lambda r(X)`` per iteration, rank, ...
    """
    validate_params("irnn", dict(lam=lam, solver=solver), _CONSTRAINTS)
    run = dict(max_iter=max_iter, tol=tol, verbose=verbose, callback=callback)
    options = {**run, **options}
    check_solver_options("irnn", options)
    problem = _as_problem(
        X, loss=loss, validation=validation, shape=shape, device=device, dtype=dtype
    )
    reg = get_regularizer(regularizer, **_reg_params(regularizer, rank, theta))
    method = method_options(solver)
    del method["name"]
    return proximal_completion(
        problem,
        init,
        lam=lam,
        **method,
        random_state=random_state,
        regularizer=reg,
        name=f"IRNN[{reg.name}]",
        **options,
    )


def _linearization(reg, U, s, V) -> dict:
    """The convex surrogate of one DC step at ``X = U diag(s) V^T``.

    The truncated nuclear norm becomes ``||X||_* - tr(A^T X B)`` with the top
    singular vectors (eq. (26)-(27)); the other concave penalties a weighted
    nuclear norm with weights ``rbar'(sigma_i)`` (Lemma 3.6).
    """
    if isinstance(reg, TruncatedNuclearNorm):
        k = min(reg.rank, s.numel())
        return {"linear": (U[:, :k], V[:, :k])}
    return {"weights": reg.weights(s)}


def _reg_params(regularizer, rank, theta) -> dict:
    if isinstance(regularizer, Regularizer):
        return {}
    name = canonical_name(regularizer)
    if name == "tnn":
        return {"rank": rank}
    if name in ("capped_l1", "lsp", "mcp"):
        return {"theta": theta}
    return {}
