"""The paper's solvers for fixed embeddings: PQ with a rotation, by alternation.

Every solver of this package minimizes the distortion of :mod:`.problem`,
``(1/m) ||X - phi(X R) R^T||^2`` (the second term of eq. (1)), by alternating

1. k-means (Lloyd) iterations of the M codebooks on ``X R``, warm-started;
2. a rotation step with the codes fixed (:mod:`.rotation_learners`).

:func:`rotated_pq` is that alternation with any rotation step (none: plain
PQ); :func:`givens_descent` runs it with a few Givens coordinate descent
steps per outer iteration (Sec. 3.1 of the paper); :func:`fit_product_quantizer`
is what :class:`~embedopt.quantization.ProductQuantizer` runs: a rotation
method chosen by name from :data:`~.rotation_learners.ROTATIONS`, the
alternation, then a few Lloyd iterations with the rotation fixed. The paper's
comparison methods (OPQ, Cayley, unconstrained) are in :mod:`.baselines`.

All share one call shape, ``solver(X, init, *, max_iter, tol, random_state,
verbose, callback, n_subquantizers, n_centroids, <the method's own>)``, are
listed in :data:`SOLVERS` (look-up: :func:`get_solver`) and return a
:class:`~embedopt.optim.SolverResult` whose ``x`` is a
:class:`~.problem.RotatedPQ`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    RUN_CONSTRAINTS,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    FitContext,
    InstanceOf,
    Interval,
    Options,
    RandomStateLike,
    Registry,
    fill_doc,
    resolve_fit_context,
    validate_params,
)
from ..linalg.rotations import orthogonality_error, reorthogonalize
from ..optim import IterationMonitor, IterationState, SolverResult
from ..optim.givens import PairSelection
from ..optim.monitor import solver_monitor
from .codebooks import decode, kmeans_plusplus, lloyd, random_init, split
from .problem import RotatedPQ, as_vectors, check_sizes, distortion
from .rotation_learners import (
    ROTATION_INITS,
    ROTATIONS,
    GivensLearner,
    RotationLearner,
    initial_rotation,
    make_rotation_learner,
)

__all__ = [
    "KMEANS_INITS",
    "SOLVERS",
    "SOLVER_CONSTRAINTS",
    "fit_product_quantizer",
    "get_solver",
    "givens_descent",
    "rotated_pq",
]

#: Codebook seeding rules by name (``"k-means++"`` is spelled ``"k_means++"``
#: in the registry; both spellings work).
KMEANS_INITS = Registry(
    "k-means init",
    {"k_means++": kmeans_plusplus, "random": random_init},
    owner="embedopt.quantization",
)

#: Parameter constraints of the solvers of this package, under the solvers'
#: names (:class:`~embedopt.quantization.ProductQuantizer` calls ``init``
#: ``rotation_init`` and ``kmeans_init`` ``init``, and adds its own).
SOLVER_CONSTRAINTS = {
    "n_subquantizers": [Interval(int, 1, None)],
    "n_centroids": [Interval(int, 1, None)],
    "rotation": [Options(ROTATIONS)],
    "init": [
        # InstanceOf first: comparing an array with the option strings fails.
        InstanceOf((np.ndarray, torch.Tensor, list, tuple), "an (n, n) array"),
        Options(ROTATION_INITS),
    ],
    "max_iter": [Interval(int, 1, None)],
    "n_rotation_steps": [Interval(int, 1, None)],
    "learning_rate": [
        Interval(float, 0, math.inf, closed="neither"),
        Options(["auto"]),
    ],
    "step_rule": [Options(["gradient", "exact"])],
    "penalty": [Interval(float, 0, None)],
    "kmeans_iter": [Interval(int, 0, None)],
    "init_kmeans_iter": [Interval(int, 0, None)],
    "refine_iter": [Interval(int, 0, None)],
    "kmeans_init": [Options(KMEANS_INITS)],
    "tol": [Interval(float, 0, None)],
    **RUN_CONSTRAINTS,
}

#: The parameters every solver of this package documents alike (filled in
#: with ``@fill_doc(...)``; :mod:`.baselines` uses them too).
START_DOC = """\
X : array-like, shape (m, n)
    Training vectors.
init : {"identity", "random", "eigenvalue"} or array-like (n, n)
    Starting rotation (see :func:`~.rotation_learners.initial_rotation`)."""
RUN_DOC = """\
max_iter : int
    Outer iterations (one rotation step each).
tol : float
    Stop when the relative distortion change is at most ``tol`` (0 runs
    ``max_iter`` iterations).
random_state : None, int or numpy Generator
verbose : int
callback : callable, optional
    ``callback(state) -> bool``; ``state.x`` is the current
    :class:`~.problem.RotatedPQ`.
n_subquantizers : int
    M (divides n).
n_centroids : int
    K per subspace (at most m)."""
OPTIONS_DOC = """\
**options
    The other options of :func:`rotated_pq`: ``kmeans_iter``,
    ``init_kmeans_iter``, ``kmeans_init``, ``validation``, ``device``,
    ``dtype``, ``name``."""

#: ``max |R^T R - I|`` above which an orthogonal learner's R is re-orthogonalized.
_REORTH_TOL = 1e-6


def _training_data(
    X: ArrayLike | torch.Tensor,
    validation,
    init,
    M: int,
    K: int,
    ctx: FitContext,
    generator: torch.Generator,
    owner: str,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Checked training and validation tensors, and the starting rotation."""
    X = as_vectors(X, device=ctx.device, dtype=ctx.dtype)
    n = X.shape[1]
    check_sizes(owner, X, M, K)
    Xv = None
    if validation is not None:
        Xv = as_vectors(
            validation, "validation", device=ctx.device, dtype=ctx.dtype, n_features=n
        )
    R = initial_rotation(init, X, M, generator)
    if R.shape != (n, n):
        raise DataValidationError(
            f"rotation_init must be an ({n}, {n}) matrix; got {tuple(R.shape)}."
        )
    return X, Xv, R


def _quantize(
    X: torch.Tensor,
    R: torch.Tensor,
    codebooks: torch.Tensor,
    M: int,
    n_iter: int,
    orthogonal: bool,
) -> tuple[torch.Tensor, torch.Tensor, float, int]:
    """``n_iter`` Lloyd iterations on ``X R``, then the distortion.

    Returns the codebooks, the codes, :func:`~.problem.distortion` and the
    number of repaired empty clusters.
    """
    cb, codes, err, n_empty = lloyd(split(X @ R, M), codebooks, n_iter)
    return cb, codes, distortion(X, R, cb, codes, err, orthogonal=orthogonal), n_empty


def _rotation_step(
    monitor: IterationMonitor,
    learner: RotationLearner | None,
    X: torch.Tensor,
    R: torch.Tensor,
    codebooks: torch.Tensor,
    codes: torch.Tensor,
) -> tuple[torch.Tensor, float]:
    """One rotation step with the codes fixed; R and its orthogonality error."""
    if learner is not None:
        R = learner.step(X, decode(codes, codebooks), R)
        if not bool(torch.isfinite(R).all()):
            raise monitor.instability("the rotation became non-finite")
    with monitor.paused():
        orth_err = orthogonality_error(R)
        if learner is not None and learner.orthogonal and orth_err > _REORTH_TOL:
            # Rounding R to float32 after every step lets R^T R drift like
            # sqrt(iterations) * 1e-7; one Newton-Schulz step squares the
            # error (as GivensOptimizer does), so it rarely runs.
            R = reorthogonalize(R)
            orth_err = orthogonality_error(R)
    return R, orth_err


@fill_doc(start=START_DOC, run=RUN_DOC)
def rotated_pq(
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
    learner: RotationLearner | None = None,
    kmeans_iter: int = 4,
    init_kmeans_iter: int = 20,
    kmeans_init: str = "k-means++",
    validation: ArrayLike | torch.Tensor | None = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float32",
    name: str = "rotated_pq",
) -> SolverResult:
    """Alternating minimization of the PQ distortion over codebooks and rotation.

    Parameters
    ----------
    {start}
    {run}
    learner : RotationLearner, optional
        The rotation step; None keeps the initial rotation (plain PQ when it is
        the identity).
    kmeans_iter : int
        Lloyd iterations per outer iteration (faiss' OPQ: ``niter_pq=4``).
    init_kmeans_iter : int
        Lloyd iterations of the initial codebooks.
    kmeans_init : {"k-means++", "random"}
        Codebook seeding (see :data:`KMEANS_INITS`).
    validation : array-like, shape (m_val, n), optional
        Held-out vectors whose distortion is recorded each iteration
        (``val_distortion``; not timed).
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    name : str
        Solver name in progress bars, logs, warnings and error messages.

    Returns
    -------
    SolverResult
        ``x`` is a :class:`~.problem.RotatedPQ`; ``history`` has ``objective``
        (training distortion), ``orthogonality_error``, ``empty_clusters``, the
        learner's values and ``val_distortion`` when ``validation`` is given;
        ``info["codes"]`` holds the training codes and
        ``info["init_distortion"]`` the distortion before the first outer
        iteration.
    """
    params = {
        "n_subquantizers": n_subquantizers,
        "n_centroids": n_centroids,
        "init": init,
        "max_iter": max_iter,
        "kmeans_iter": kmeans_iter,
        "init_kmeans_iter": init_kmeans_iter,
        "kmeans_init": kmeans_init,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params(name, params, SOLVER_CONSTRAINTS)
    ctx = resolve_fit_context(
        random_state=random_state, device=device, dtype=dtype, owner=name
    )
    # One CPU generator for the draws of k-means seeding and random rotations,
    # so that results do not depend on the device (fit_product_quantizer and
    # givens_descent hand the same one to the GCD learner).
    gen = ctx.random_state.torch("cpu")
    M, K = int(n_subquantizers), int(n_centroids)
    X, Xv, R = _training_data(X, validation, init, M, K, ctx, gen, name)
    if learner is not None:
        learner.start(R)
    monitor = solver_monitor(
        name,
        max_iter,
        tol,
        verbose,
        callback,
        name,
        "the data may be badly scaled or the learning rate too large",
    )
    monitor.start()
    Xs = split(X @ R, M)
    cb = KMEANS_INITS.get(kmeans_init)(Xs, K, gen)
    cb, codes, err, _ = lloyd(Xs, cb, init_kmeans_iter)
    init_distortion = distortion(X, R, cb, codes, err, orthogonal=True)
    R, cb, codes = _alternate(monitor, learner, X, Xv, R, cb, codes, kmeans_iter)
    return monitor.result(
        RotatedPQ(R, cb), codes=codes, init_distortion=init_distortion
    )


def _alternate(
    monitor: IterationMonitor,
    learner: RotationLearner | None,
    X: torch.Tensor,
    Xv: torch.Tensor | None,
    R: torch.Tensor,
    cb: torch.Tensor,
    codes: torch.Tensor,
    kmeans_iter: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The outer loop of :func:`rotated_pq`: rotation step, then k-means."""
    M = cb.shape[0]
    orthogonal = learner is None or learner.orthogonal
    for _ in monitor:
        R, orth_err = _rotation_step(monitor, learner, X, R, cb, codes)
        cb, codes, obj, n_empty = _quantize(X, R, cb, M, kmeans_iter, orthogonal)
        values = dict(objective=obj, empty_clusters=n_empty)
        if learner is not None:
            values.update(learner.info())
        values["orthogonality_error"] = orth_err
        with monitor.paused():
            if Xv is not None:
                values["val_distortion"] = _quantize(Xv, R, cb, M, 0, orthogonal)[2]
        if monitor.record(RotatedPQ(R, cb), **values):
            break
    return R, cb, codes


@fill_doc(start=START_DOC, run=RUN_DOC, options=OPTIONS_DOC)
def givens_descent(
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
    selection: str | PairSelection = "greedy",
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    step_rule: str = "gradient",
    **options,
) -> SolverResult:
    """PQ with the rotation learned by Givens coordinate descent (Sec. 3.1).

    OPQ's SVD step is replaced by ``n_rotation_steps`` iterations of
    Algorithm 2 on the distortion with the codes fixed.

    Parameters
    ----------
    {start}
    {run}
    selection : {"random", "greedy", "steepest", "random_overlap", \
"greedy_overlap"} or PairSelection
        GCD-R, GCD-G (Algorithm 1), GCD-S, or the overlapping ablations.
    n_rotation_steps : int
        GCD iterations per outer iteration (paper: 5).
    learning_rate : float or "auto"
        lambda (see :class:`~.rotation_learners.GivensLearner`).
    step_rule : {"gradient", "exact"}
        Paper's gradient angle, or exact minimization in each selected plane.
    {options}

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`; ``history["learning_rate"]`` is the GCD step
        size of each outer iteration (NaN with ``step_rule="exact"``).
    """
    ctx = _solver_context(
        "givens_descent",
        options,
        random_state,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
        step_rule=step_rule,
    )
    learner = GivensLearner(
        selection,
        n_rotation_steps,
        learning_rate,
        step_rule,
        generator=ctx.random_state.torch("cpu"),
    )
    options.setdefault("name", f"givens_descent[{learner.selection.name}]")
    return rotated_pq(
        X,
        init=init,
        **_run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids),
        learner=learner,
        **options,
    )


@fill_doc(start=START_DOC, run=RUN_DOC, options=OPTIONS_DOC)
def fit_product_quantizer(
    X: ArrayLike | torch.Tensor,
    init: str | ArrayLike | torch.Tensor = "eigenvalue",
    *,
    max_iter: int = 50,
    tol: float = 1e-3,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    n_subquantizers: int,
    n_centroids: int = 256,
    rotation: str = "gcd_g",
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    step_rule: str = "exact",
    refine_iter: int = 10,
    **options,
) -> SolverResult:
    """PQ with a rotation method chosen by name, then codebook refinement.

    What :class:`~embedopt.quantization.ProductQuantizer` fits: the rotation
    step of ``rotation`` (:func:`~.rotation_learners.make_rotation_learner`),
    :func:`rotated_pq`'s alternation, then ``refine_iter`` Lloyd iterations
    with the rotation fixed. Its defaults are the estimator's (exact GCD-G
    angles from OPQ's eigenvalue allocation, ``tol=1e-3``; see the Notes of
    :class:`~embedopt.quantization.ProductQuantizer`), not those of the
    paper's :func:`givens_descent`.

    Parameters
    ----------
    {start}
    {run}
    rotation : str
        A name of :data:`~.rotation_learners.ROTATIONS` (``"none"``,
        ``"opq"``, ``"gcd_g"``...; ``"gcd-g"`` works too).
    n_rotation_steps : int
        Gradient steps per outer iteration (GCD, Cayley, unconstrained).
    learning_rate : float or "auto"
        Step size of those steps.
    step_rule : {"exact", "gradient"}
        GCD angle (see :class:`~.rotation_learners.GivensLearner`).
    refine_iter : int
        Lloyd iterations with R fixed after the alternation.
    {options}
        (``name`` defaults to ``"fit_product_quantizer"``).

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`, with the refined codebooks in ``x`` and
        ``info["codes"]``, and ``info["distortion"]``, the mean squared
        reconstruction error of the training vectors after refinement.
    """
    options.setdefault("name", "fit_product_quantizer")
    ctx = _solver_context(
        options["name"],
        options,
        random_state,
        rotation=rotation,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
        step_rule=step_rule,
        refine_iter=refine_iter,
    )
    X = as_vectors(X, device=ctx.device, dtype=ctx.dtype)
    learner = make_rotation_learner(
        rotation,
        n_steps=n_rotation_steps,
        learning_rate=learning_rate,
        step_rule=step_rule,
        generator=ctx.random_state.torch("cpu"),
    )
    result = rotated_pq(
        X,
        init=init,
        **_run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids),
        learner=learner,
        **options,
    )
    R = result.x.rotation
    orthogonal = learner is None or learner.orthogonal
    cb, codes, final, _ = _quantize(
        X, R, result.x.codebooks, int(n_subquantizers), refine_iter, orthogonal
    )
    info = {**result.info, "codes": codes, "distortion": final}
    return replace(result, x=RotatedPQ(R, cb), info=info)


def _run_options(max_iter, tol, verbose, callback, n_subquantizers, n_centroids):
    """The shared run options and problem sizes a solver hands on, by name.

    ``random_state`` is not among them: a solver resolves it once (with
    ``device`` and ``dtype``, :func:`_solver_context`) and hands on the
    resolved one.

    Parameters
    ----------
    max_iter, tol, verbose, callback, n_subquantizers, n_centroids
        The solver's parameters of those names.

    Returns
    -------
    dict
    """
    return {
        "max_iter": max_iter,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
        "n_subquantizers": n_subquantizers,
        "n_centroids": n_centroids,
    }


def _solver_context(owner: str, options: dict, random_state, **settings) -> FitContext:
    # The common start of the solvers: check their rotation settings, then
    # resolve random_state / device / dtype once and hand them on to
    # rotated_pq resolved (the learner and the solver share one generator).
    validate_params(owner, settings, SOLVER_CONSTRAINTS)
    ctx = resolve_fit_context(
        random_state=random_state,
        device=options.pop("device", "auto"),
        dtype=options.pop("dtype", "float32"),
        owner=owner,
    )
    options.update(random_state=ctx.random_state, device=ctx.device, dtype=ctx.dtype)
    return ctx


#: The solvers of this package by name (``SOLVERS.get(name)(X, init, ...)``,
#: one call shape); :mod:`.baselines` adds the comparison methods when it is
#: imported (the package imports it).
SOLVERS = Registry(
    "solver",
    {
        "rotated_pq": rotated_pq,
        "givens_descent": givens_descent,
        "fit_product_quantizer": fit_product_quantizer,
    },
    owner="embedopt.quantization",
)

#: ``get_solver(name)``: the solver function of that name (any accepted
#: spelling); an unknown name raises InvalidParameterError listing the valid ones.
get_solver = SOLVERS.get
