"""AIS-Impute (Algorithms 3-4 of Yao & Kwok), the solver registry and ``"auto"``.

:func:`ais_impute` is the paper's method and the solver ``solver="auto"``
resolves to (:func:`resolve_solver`); :data:`SOLVERS` also names the
baselines of :mod:`.baselines`. Every solver has one call shape: the data (or
a :class:`~embedopt.completion.CompletionProblem`), an optional start
``init``, the run options (``max_iter``, ``tol``, ``random_state``,
``verbose``, ``callback``), then the method's own, keyword-only, among them
``lam``. All are configurations of :func:`~embedopt.completion.proximal_completion`
(see :mod:`.proximal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal

import torch.distributed as dist

from .._core import (
    DeviceLike,
    DtypeLike,
    InvalidParameterError,
    RandomStateLike,
    Registry,
)
from ..optim import IterationState, SolverResult
from .baselines import ais_impute_exact, apg, soft_impute
from .distributed import ais_impute_on_group
from .losses import Loss
from .problem import CompletionProblem, EntriesLike, Factors
from .proximal import _METHODS, _run

__all__ = [
    "SOLVERS",
    "ais_impute",
    "get_solver",
    "method_options",
    "resolve_solver",
]


def ais_impute(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    loss: str | Loss = "square",
    exact_svt: bool = False,
    validation: EntriesLike | None = None,
    shape: tuple[int, ...] | None = None,
    lam_decay: float = 0.85,
    lam_start: float | None = None,
    power_iters: int = 3,
    max_rank: int | None = None,
    adaptive_rank: bool = True,
    mode_weights: Sequence[float] | None = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    process_group: Literal["default"] | dist.ProcessGroup | None = None,
) -> SolverResult:
    """AIS-Impute: accelerated inexact Soft-Impute (Algorithms 3-4 of Yao & Kwok).

    Solves ``min_X sum_{Omega} l(X_ij, O_ij) + lam ||X||_*`` by accelerated
    proximal gradient with step ``1 / rho``, momentum ``theta_t = (c-1)/(c+2)``
    restarted when the objective increases, continuation of lambda, and an
    approximate SVT by the power method warm-started from the last two
    iterates, on the sparse-plus-low-rank ``Z_t`` (never densified).

    Parameters
    ----------
    X : ObservedEntries, scipy.sparse, tuple (rows, cols, values), dense array
        with NaN, or CompletionProblem
        Observed training entries of a matrix, or of a tensor (then problem
        (30) with the scaled latent nuclear norm is solved).
    init : tuple (U, s, V), optional
        Warm start (a list of them, one per mode, for tensors).
    max_iter : int
    tol : float
        Relative change of the objective between iterations (paper: 1e-4).
    random_state : None, int or numpy Generator
    verbose : int
        1: progress bar; 2: also one log record per iteration.
    callback : callable, optional
        ``callback(state) -> bool``; True stops.
    lam : float
        lambda > 0, keyword-only: an option of the method, not of the data.
        The objective is a *sum* over observed entries, so lambda scales with
        the data; :func:`~embedopt.completion.lambda_path` chooses it on a
        validation set.
    loss : {"square", "logistic", "squared_hinge"} or Loss
    exact_svt : bool
        Use an exact partial SVD (Lanczos) instead of the power method: the
        paper's "AIS-Impute (exact)" baseline
        (:func:`~embedopt.completion.ais_impute_exact`).
    validation : same types as X, optional
        Held-out entries; their RMSE (accuracy for +/-1 losses) is recorded
        every iteration (excluded from the timing).
    shape : tuple of int, optional
        Matrix shape for COO input.
    lam_decay : float
        nu of the continuation ``lambda_t = (lambda_hat - lambda) nu^(t-1) +
        lambda`` (the authors' experiments use 0.85).
    lam_start : float, optional
        lambda_hat (see :func:`~embedopt.completion.proximal_completion`).
    power_iters : int
        J (paper: 3).
    max_rank : int, optional
        Cap on the rank of the iterates.
    adaptive_rank : bool
        Cap the power method's basis at a rank that starts at
        ``max(10, 2 rank(init))`` and grows while it is below twice the
        iterate's rank (see :class:`~embedopt.completion.svt.ApproxSVT`);
        False uses the pseudo-code's ``QR([V_t, V_{t-1}])``, whose rank can
        double every iteration in mid-continuation. Same fixed point, about
        10x faster on the Table III problem at m = 4000 (``benchmarks/
        completion/synthetic.py``). Ignored with ``exact_svt=True``.
    mode_weights : sequence of float, optional
        Tensors (entries with 3 or more modes, Algorithm 4): ``lambda_d = lam *
        mode_weights[d]`` in the scaled latent nuclear norm; default
        ``sqrt(max_k I_k / I_d)`` (see
        :func:`~embedopt.completion.default_mode_weights`).
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    process_group : None, "default" or torch.distributed.ProcessGroup
        Data-parallel AIS-Impute on a matrix: every process of the group
        (``"default"``: of ``torch.distributed.init_process_group``) calls
        ``ais_impute`` with the same data and options; each keeps a block of
        rows with their entries, the sums over Omega are all-reduced, and
        every process returns the same solution (all of ``U``), equal to the
        one-process solution up to rounding (see
        :mod:`embedopt.completion.distributed`). A ``random_state`` that is
        not an int is replaced by a seed drawn on the group's first process.
        Not with ``exact_svt``.

    Returns
    -------
    SolverResult
        ``x = (U, s, V)``: the solution ``U diag(s) V^T`` as tensors.

    Examples
    --------
    >>> from embedopt.data import make_low_rank_matrix
    >>> prob = make_low_rank_matrix(200, rank=3, random_state=0)
    >>> res = ais_impute(prob.observed, lam=5.0, random_state=0)
    >>> U, s, V = res.x
    """
    if process_group is not None:
        if exact_svt:
            raise InvalidParameterError(
                "ais_impute(exact_svt=True) runs in one process only: its Lanczos "
                "SVD has no data-parallel form here. Drop process_group or "
                "exact_svt."
            )
        solve = partial(
            ais_impute_on_group,
            process_group=process_group,
            run=partial(_run, "ais_impute"),
        )
    else:
        solve = partial(_run, "ais_impute_exact" if exact_svt else "ais_impute")
    return solve(
        X,
        init,
        max_iter=max_iter,
        tol=tol,
        random_state=random_state,
        verbose=verbose,
        callback=callback,
        lam=lam,
        loss=loss,
        validation=validation,
        shape=shape,
        lam_decay=lam_decay,
        lam_start=lam_start,
        power_iters=power_iters,
        max_rank=max_rank,
        adaptive_rank=adaptive_rank,
        mode_weights=mode_weights,
        device=device,
        dtype=dtype,
    )


#: The completion solvers by name: ``SOLVERS.get(name)(X, init, *, ..., lam=...)``;
#: their loop configurations are given by :func:`method_options`.
SOLVERS = Registry(
    "solver",
    {
        "ais_impute": ais_impute,
        "ais_impute_exact": ais_impute_exact,
        "soft_impute": soft_impute,
        "apg": apg,
    },
    owner="embedopt.completion",
)


#: ``get_solver(name)``: the solver function of that name (any accepted
#: spelling); an unknown name raises InvalidParameterError listing the valid ones.
get_solver = SOLVERS.get


def resolve_solver(solver: str) -> str:
    """The registry name that ``solver`` stands for (``"auto"`` resolved).

    ``"auto"`` is always :func:`ais_impute`, the paper's method: it is the
    fastest of the four on every problem of the paper (matrices and tensors,
    any smooth loss, Tables III-V and Sec. 5.6) and never forms an m x n
    matrix; the others are the comparison methods.

    Parameters
    ----------
    solver : str
        ``"auto"`` or a name of :data:`SOLVERS` (any accepted spelling).

    Returns
    -------
    str
        The canonical name, e.g. ``"soft_impute"`` for ``"Soft-Impute"``.

    Raises
    ------
    InvalidParameterError
        If ``solver`` names no solver.
    """
    return "ais_impute" if solver == "auto" else SOLVERS.resolve_name(solver)


def method_options(solver: str) -> dict:
    """The :func:`~embedopt.completion.proximal_completion` options of a solver.

    Parameters
    ----------
    solver : {"auto", "ais_impute", "ais_impute_exact", "soft_impute", "apg"}
        A name of :data:`SOLVERS` (any accepted spelling), or ``"auto"``
        (see :func:`resolve_solver`).

    Returns
    -------
    dict
        ``svt``, ``momentum`` and ``name`` (the display name), e.g.
        ``proximal_completion(problem, lam=lam, **method_options("soft_impute"))``.

    Raises
    ------
    InvalidParameterError
        If ``solver`` names no solver.
    """
    svt, momentum, label = _METHODS[resolve_solver(solver)]
    return {"svt": svt, "momentum": momentum, "name": label}
