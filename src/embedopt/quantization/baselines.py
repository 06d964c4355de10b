"""The paper's comparison methods: OPQ, Cayley and unconstrained rotation steps.

Each runs the alternation of :func:`~.solvers.rotated_pq` with another rotation
step in place of Givens coordinate descent: :func:`opq` the exact SVD
Procrustes step (Ge et al. 2013), :func:`cayley_descent` gradient steps on the
Cayley parameterization, :func:`unconstrained_descent` gradient steps on a
free matrix with a soft orthogonality penalty (the relaxation of Sec. 1.2).
They share the call shape of :mod:`.solvers` and are registered in its
:data:`~.solvers.SOLVERS` when this module is imported.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from numpy.typing import ArrayLike

from .._core import RandomStateLike, fill_doc
from ..optim import IterationState, SolverResult
from .rotation_learners import CayleyLearner, ProcrustesLearner, UnconstrainedLearner
from .solvers import (
    OPTIONS_DOC,
    RUN_DOC,
    SOLVERS,
    START_DOC,
    _run_options,
    _solver_context,
    rotated_pq,
)

__all__ = ["cayley_descent", "opq", "unconstrained_descent"]


@fill_doc(start=START_DOC, run=RUN_DOC, options=OPTIONS_DOC)
def opq(
    X: ArrayLike | torch.Tensor,
    init: str | ArrayLike | torch.Tensor = "identity",
    *,
    max_iter: int = 50,
    tol: float = 1e-5,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    n_subquantizers: int,
    n_centroids: int = 256,
    **options,
) -> SolverResult:
    """Optimized PQ (Ge et al. 2013): alternate k-means and SVD Procrustes.

    Parameters
    ----------
    {start}
    {run}
    {options}

    Returns
    -------
    SolverResult
        As :func:`~.solvers.rotated_pq`.
    """
    options.setdefault("name", "opq")
    return rotated_pq(
        X,
        init=init,
        **_run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids),
        random_state=random_state,
        learner=ProcrustesLearner(),
        **options,
    )


@fill_doc(start=START_DOC, run=RUN_DOC, options=OPTIONS_DOC)
def cayley_descent(
    X: ArrayLike | torch.Tensor,
    init: str | ArrayLike | torch.Tensor = "identity",
    *,
    max_iter: int = 50,
    tol: float = 1e-5,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    n_subquantizers: int,
    n_centroids: int = 256,
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    **options,
) -> SolverResult:
    """PQ with the rotation learned through the Cayley transform (baseline).

    Parameters
    ----------
    {start}
    {run}
    n_rotation_steps : int
        Gradient steps on the Cayley parameter per outer iteration.
    learning_rate : float or "auto"
        See :class:`~.rotation_learners.CayleyLearner`.
    {options}

    Returns
    -------
    SolverResult
        As :func:`~.solvers.rotated_pq`; ``history["learning_rate"]`` is the
        step size on the Cayley parameter.
    """
    _solver_context(
        "cayley_descent",
        options,
        random_state,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
    )
    options.setdefault("name", "cayley_descent")
    return rotated_pq(
        X,
        init=init,
        **_run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids),
        learner=CayleyLearner(n_rotation_steps, learning_rate),
        **options,
    )


@fill_doc(start=START_DOC, run=RUN_DOC, options=OPTIONS_DOC)
def unconstrained_descent(
    X: ArrayLike | torch.Tensor,
    init: str | ArrayLike | torch.Tensor = "identity",
    *,
    max_iter: int = 50,
    tol: float = 1e-5,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    n_subquantizers: int,
    n_centroids: int = 256,
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    penalty: float = 1.0,
    **options,
) -> SolverResult:
    """PQ with a free (non-orthogonal) transform learned by gradient (baseline).

    Parameters
    ----------
    {start}
    {run}
    n_rotation_steps : int
    learning_rate : float or "auto"
    penalty : float
        Weight of ``||W^T W - I||^2`` (see
        :class:`~.rotation_learners.UnconstrainedLearner`).
    {options}

    Returns
    -------
    SolverResult
        As :func:`~.solvers.rotated_pq`, but ``x.rotation`` is a free matrix
        W, and the objective is computed on the reconstructions
        ``phi(X W) W^T``.
    """
    _solver_context(
        "unconstrained_descent",
        options,
        random_state,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
        penalty=penalty,
    )
    options.setdefault("name", "unconstrained_descent")
    return rotated_pq(
        X,
        init=init,
        **_run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids),
        learner=UnconstrainedLearner(n_rotation_steps, learning_rate, penalty),
        **options,
    )


SOLVERS.add("opq", opq)
SOLVERS.add("cayley_descent", cayley_descent)
SOLVERS.add("unconstrained_descent", unconstrained_descent)
