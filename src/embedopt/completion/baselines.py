"""The convex comparison methods of Yao & Kwok (Sec. 5.1, Tables III and V).

Each is a configuration of the one proximal loop
(:func:`~embedopt.completion.proximal_completion`) with the call shape of
:func:`~embedopt.completion.ais_impute`: the data, an optional start, the run
options, then the method's own (``lam`` among them, keyword-only):

- :func:`soft_impute` -- Soft-Impute (Mazumder et al.), no acceleration, exact
  SVT of the sparse-plus-low-rank matrix;
- :func:`apg` -- accelerated proximal gradient on the *dense* ``Z_t`` (Toh &
  Yun), the method that does not use the structure;
- :func:`ais_impute_exact` -- "AIS-Impute (exact)", the paper's ablation with
  an exact instead of an approximate SVT.

The factorization and Frank-Wolfe peers of Table V (ALT-Impute, LMaFit,
active subspace, ...) solve other problems or need other machinery; the
benchmarks run them from their own packages where they exist
(``benchmarks/completion/fancyimpute_peer.py``). The nonconvex baselines
(IRNN, TNNR(APG)) sit with the nonconvex extension in :mod:`.nonconvex`.
"""

from __future__ import annotations

from collections.abc import Callable

from .._core import InvalidParameterError, RandomStateLike
from ..optim import IterationState, SolverResult
from .problem import CompletionProblem, EntriesLike, Factors
from .proximal import _run

__all__ = ["ais_impute_exact", "apg", "soft_impute"]

#: Options of the power method, which the exact-SVD baselines do not take.
_POWER_METHOD_OPTIONS = ("exact_svt", "power_iters", "adaptive_rank")


def _exact_baseline(solver: str, X, init, options: dict) -> SolverResult:
    for key in _POWER_METHOD_OPTIONS:
        if key in options:
            raise InvalidParameterError(
                f"{solver} has no '{key}' parameter: it computes exact SVDs "
                "(the power-method options belong to ais_impute)."
            )
    return _run(solver, X, init, **options)


def soft_impute(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    **options,
) -> SolverResult:
    """Soft-Impute (Mazumder, Hastie & Tibshirani), the unaccelerated baseline.

    ``X_{t+1} = SVT_lambda(P_Omega(O - X_t) + X_t)`` (generalized to any smooth
    loss as ``X_t - S_t / rho``) with an exact partial SVD (Lanczos) of the
    sparse-plus-low-rank matrix, and the same continuation as
    :func:`~embedopt.completion.ais_impute`. Converges as O(1/T).

    Parameters
    ----------
    X, init, max_iter, tol, random_state, verbose, callback
        See :func:`~embedopt.completion.ais_impute`.
    lam : float
        lambda > 0, keyword-only (an option of the method).
    **options
        The other keyword options of :func:`~embedopt.completion.ais_impute`
        except those of the power method (``exact_svt``, ``power_iters``,
        ``adaptive_rank``).

    Returns
    -------
    SolverResult
    """
    run = dict(max_iter=max_iter, tol=tol, random_state=random_state)
    run.update(verbose=verbose, callback=callback, lam=lam)
    return _exact_baseline("soft_impute", X, init, {**run, **options})


def apg(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    **options,
) -> SolverResult:
    """Accelerated proximal gradient without the sparse-plus-low-rank structure.

    The APG baseline of Yao & Kwok (Toh & Yun's method): the same accelerated
    loop as :func:`~embedopt.completion.ais_impute`, but ``Z_t`` is formed as a
    dense m x n matrix and its SVT computed by an exact partial SVD. Costs
    O(mn) memory and time per iteration: for comparison on small matrices
    only.

    Parameters
    ----------
    X, init, max_iter, tol, random_state, verbose, callback, lam, **options
        As in :func:`soft_impute`.

    Returns
    -------
    SolverResult
    """
    run = dict(max_iter=max_iter, tol=tol, random_state=random_state)
    run.update(verbose=verbose, callback=callback, lam=lam)
    return _exact_baseline("apg", X, init, {**run, **options})


def ais_impute_exact(
    X: EntriesLike | CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    **options,
) -> SolverResult:
    """AIS-Impute with an exact partial SVD: ``ais_impute(..., exact_svt=True)``.

    The paper's "AIS-Impute (exact)" baseline, under its own solver name.

    Parameters
    ----------
    X, init, max_iter, tol, random_state, verbose, callback, lam
        As in :func:`soft_impute`.
    **options
        The other keyword options of :func:`~embedopt.completion.ais_impute`
        (except ``exact_svt``; the power-method options are accepted and
        unused).

    Returns
    -------
    SolverResult
    """
    return _run(
        "ais_impute_exact",
        X,
        init,
        max_iter=max_iter,
        tol=tol,
        random_state=random_state,
        verbose=verbose,
        callback=callback,
        lam=lam,
        **options,
    )
