"""Solvers for fixed embeddings: PQ with a learned rotation, by alternation.

All solvers minimize the quantization distortion
``(1/m) ||X - phi(X R) R^T||^2`` (the second term of eq. (1); equal to
``(1/m) ||X R - phi(X R)||^2`` for orthogonal R) by alternating

1. k-means (Lloyd) iterations of the M codebooks on ``X R``, warm-started;
2. a rotation step with the codes fixed (:mod:`.rotation_learners`).

:func:`opq` uses the exact SVD Procrustes step (Ge et al. 2013);
:func:`givens_descent` replaces it by a few Givens coordinate descent steps
(Sec. 3.1 of the paper); :func:`cayley_descent` and :func:`unconstrained_descent`
are the gradient baselines. :func:`fit_product_quantizer` is what
:class:`~embedopt.quantization.ProductQuantizer` runs: a rotation method chosen
by name from :data:`~.rotation_learners.ROTATIONS`, the alternation, then a few
Lloyd iterations with the rotation fixed. Each returns a
:class:`~embedopt.optim.SolverResult` whose ``x`` is a :class:`RotatedPQ`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from .._core import (
    RUN_CONSTRAINTS,
    DataValidationError,
    FitContext,
    InstanceOf,
    Interval,
    Options,
    Registry,
    resolve_fit_context,
    validate_params,
)
from ..linalg.rotations import orthogonality_error, reorthogonalize
from ..optim import IterationMonitor, SolverResult
from ..optim.givens import PairSelection
from ..optim.monitor import solver_monitor
from .codebooks import (
    check_n_subquantizers,
    decode,
    kmeans_plusplus,
    lloyd,
    random_init,
    split,
)
from .rotation_learners import (
    ROTATION_INITS,
    ROTATIONS,
    CayleyLearner,
    GivensLearner,
    ProcrustesLearner,
    RotationLearner,
    UnconstrainedLearner,
    initial_rotation,
    make_rotation_learner,
)

__all__ = [
    "KMEANS_INITS",
    "SOLVER_CONSTRAINTS",
    "RotatedPQ",
    "as_vectors",
    "cayley_descent",
    "fit_product_quantizer",
    "givens_descent",
    "opq",
    "rotated_pq",
    "unconstrained_descent",
]

#: Codebook seeding rules by name (``"k-means++"`` is spelled ``"k_means++"``
#: in the registry; both spellings work).
KMEANS_INITS = Registry(
    "k-means init",
    {"k_means++": kmeans_plusplus, "random": random_init},
    owner="embedopt.quantization",
)

#: Parameter constraints of the solvers of this module (and of
#: :class:`~embedopt.quantization.ProductQuantizer`, which adds its own).
SOLVER_CONSTRAINTS = {
    "n_subquantizers": [Interval(int, 1, None)],
    "n_centroids": [Interval(int, 1, None)],
    "rotation": [Options(ROTATIONS)],
    "rotation_init": [
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
    "init": [Options(KMEANS_INITS)],
    "tol": [Interval(float, 0, None)],
    **RUN_CONSTRAINTS,
}


#: ``max |R^T R - I|`` above which an orthogonal learner's R is re-orthogonalized.
_REORTH_TOL = 1e-6


@dataclass
class RotatedPQ:
    """A product quantizer with a rotation in front: ``T(X) = phi(X R) R^T``.

    Attributes
    ----------
    rotation : torch.Tensor, shape (n, n)
        R (orthogonal except for the unconstrained baseline).
    codebooks : torch.Tensor, shape (M, K, n / M)
    """

    rotation: torch.Tensor
    codebooks: torch.Tensor


def as_vectors(
    X,
    name: str = "X",
    *,
    device=None,
    dtype=None,
    n_features: int | None = None,
) -> torch.Tensor:
    """Validate and convert a 2-D float array of vectors to a tensor.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (m, n)
    name : str
        Named in error messages.
    device, dtype
        Target device and float dtype (resolved).
    n_features : int, optional
        Required number of columns.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    DataValidationError
        Not 2-D, empty, not a real floating/integer dtype, wrong width, or NaN /
        infinite entries (the first bad row is named).
    """
    if isinstance(X, torch.Tensor):
        t = X.detach()
        kind_ok = t.dtype.is_floating_point or not (
            t.dtype.is_complex or t.dtype == torch.bool
        )
        dtype_name = str(t.dtype)
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:
            raise DataValidationError(
                f"{name} must be a 2-D array of floats; could not convert "
                f"{type(X).__name__}."
            ) from exc
        kind_ok = arr.dtype.kind in "fiu"
        dtype_name = str(arr.dtype)
        t = torch.as_tensor(arr) if kind_ok else None
    if not kind_ok:
        raise DataValidationError(
            f"{name} must hold real numbers (float32/float64); got dtype "
            f"{dtype_name}. Convert it with np.asarray({name}, dtype=np.float32)."
        )
    if t.ndim != 2:
        raise DataValidationError(
            f"{name} must be 2-D (n_vectors, n_features); got shape "
            f"{tuple(t.shape)}. Use X.reshape(1, -1) for a single vector."
        )
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise DataValidationError(f"{name} is empty (shape {tuple(t.shape)}).")
    if n_features is not None and t.shape[1] != n_features:
        raise DataValidationError(
            f"{name} has {t.shape[1]} features but the quantizer was fitted on "
            f"{n_features}."
        )
    out = t.to(device=device, dtype=dtype)
    bad = ~torch.isfinite(out).all(1)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise DataValidationError(
            f"{name} has {int(bad.sum())} row(s) with NaN or infinite values; first "
            f"at row {row}. Remove or impute them before quantizing."
        )
    # Squared distances must be finite in the working dtype (k-means++ draws
    # with probabilities proportional to them; ADC sums them): bound them by
    # (2 max|x|)^2 n_features, computed in Python floats.
    top = float(out.abs().max())
    bound = 4.0 * top * top * out.shape[1]
    if not bound < float(torch.finfo(out.dtype).max):
        raise DataValidationError(
            f"{name} has values up to {top:.3g}: its squared distances overflow "
            f"{str(out.dtype).replace('torch.', '')}. Rescale the data (e.g. "
            "divide by its largest norm) or use dtype='float64'."
        )
    return out


def _training_data(
    X,
    validation,
    rotation_init,
    M: int,
    K: int,
    ctx: FitContext,
    generator: torch.Generator,
    owner: str,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Checked training and validation tensors, and the starting rotation."""
    X = as_vectors(X, device=ctx.device, dtype=ctx.dtype)
    m, n = X.shape
    check_n_subquantizers(owner, M, n)
    if K > m:
        raise DataValidationError(
            f"n_centroids={K} exceeds the {m} training vectors: k-means needs at "
            "least one vector per centroid. Use more training vectors or fewer "
            "centroids."
        )
    Xv = None
    if validation is not None:
        Xv = as_vectors(
            validation, "validation", device=ctx.device, dtype=ctx.dtype, n_features=n
        )
    R = initial_rotation(rotation_init, X, M, generator)
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
    """``n_iter`` Lloyd iterations on ``X R``, then the mean squared error.

    Returns the codebooks, the codes, the distortion ``mean ||x - T(x)||^2``
    and the number of repaired empty clusters. For orthogonal R the error is
    measured in the rotated space (equal, and free); otherwise the vectors are
    reconstructed with ``R^T``. Sums are accumulated in float64.
    """
    cb, codes, err, n_empty = lloyd(split(X @ R, M), codebooks, n_iter)
    if orthogonal:
        return cb, codes, float(err.double().sum(1).mean()), n_empty
    rec = decode(codes, cb) @ R.T
    return cb, codes, float(((X - rec).double() ** 2).sum(1).mean()), n_empty


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


def rotated_pq(
    X,
    n_subquantizers: int,
    n_centroids: int = 256,
    *,
    learner: RotationLearner | None = None,
    rotation_init="identity",
    max_iter: int = 50,
    kmeans_iter: int = 4,
    init_kmeans_iter: int = 20,
    init: str = "k-means++",
    tol: float = 1e-5,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float32",
    verbose: int = 0,
    callback=None,
    name: str = "rotated_pq",
) -> SolverResult:
    """Alternating minimization of the PQ distortion over codebooks and rotation.

    Parameters
    ----------
    X : array-like, shape (m, n)
        Training vectors.
    n_subquantizers : int
        M (divides n).
    n_centroids : int
        K per subspace (at most m).
    learner : RotationLearner, optional
        The rotation step; None keeps the initial rotation (plain PQ when it is
        the identity).
    rotation_init : {"identity", "random", "eigenvalue"} or array-like (n, n)
        Starting rotation (see :func:`~.rotation_learners.initial_rotation`).
    max_iter : int
        Outer iterations (one rotation step each).
    kmeans_iter : int
        Lloyd iterations per outer iteration (faiss' OPQ: ``niter_pq=4``).
    init_kmeans_iter : int
        Lloyd iterations of the initial codebooks.
    init : {"k-means++", "random"}
        Codebook seeding (see :data:`KMEANS_INITS`).
    tol : float
        Stop when the relative distortion change is at most ``tol`` (0 runs
        ``max_iter`` iterations).
    validation : array-like, shape (m_val, n), optional
        Held-out vectors whose distortion is recorded each iteration
        (``val_distortion``; not timed).
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool``; ``state.x`` is the current
        :class:`RotatedPQ`.
    name : str
        Solver name in progress bars, logs, warnings and error messages.

    Returns
    -------
    SolverResult
        ``x`` is a :class:`RotatedPQ`; ``history`` has ``objective`` (training
        distortion), ``orthogonality_error``, ``empty_clusters``, the learner's
        values and ``val_distortion`` when ``validation`` is given;
        ``info["codes"]`` holds the training codes and ``info["init_distortion"]``
        the distortion before the first outer iteration.
    """
    params = {
        "n_subquantizers": n_subquantizers,
        "n_centroids": n_centroids,
        "rotation_init": rotation_init,
        "max_iter": max_iter,
        "kmeans_iter": kmeans_iter,
        "init_kmeans_iter": init_kmeans_iter,
        "init": init,
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
    X, Xv, R = _training_data(X, validation, rotation_init, M, K, ctx, gen, name)
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
    cb = KMEANS_INITS.get(init)(Xs, K, gen)
    cb, codes, err, _ = lloyd(Xs, cb, init_kmeans_iter)
    init_distortion = float(err.double().sum(1).mean())
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


def fit_product_quantizer(
    X,
    n_subquantizers: int,
    n_centroids: int = 256,
    *,
    rotation: str = "gcd_g",
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    step_rule: str = "exact",
    refine_iter: int = 10,
    **kwargs,
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
    X : array-like, shape (m, n)
        Training vectors.
    n_subquantizers, n_centroids : int
        M (divides n) and K (at most m).
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
    **kwargs
        Options of :func:`rotated_pq`: ``rotation_init`` (here default
        ``"eigenvalue"``), ``max_iter``, ``kmeans_iter``, ``init_kmeans_iter``,
        ``init``, ``tol`` (here default ``1e-3``), ``validation``,
        ``random_state``, ``device``, ``dtype``, ``verbose``, ``callback`` and
        ``name`` (default ``"fit_product_quantizer"``).

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`, with the refined codebooks in ``x`` and
        ``info["codes"]``, and ``info["distortion"]``, the mean squared
        reconstruction error of the training vectors after refinement.
    """
    kwargs.setdefault("name", "fit_product_quantizer")
    kwargs.setdefault("rotation_init", "eigenvalue")
    kwargs.setdefault("tol", 1e-3)
    ctx = _solver_context(
        kwargs["name"],
        kwargs,
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
        n_subquantizers=n_subquantizers,
        n_centroids=n_centroids,
        learner=learner,
        **kwargs,
    )
    R = result.x.rotation
    orthogonal = learner is None or learner.orthogonal
    cb, codes, distortion, _ = _quantize(
        X, R, result.x.codebooks, int(n_subquantizers), refine_iter, orthogonal
    )
    info = {**result.info, "codes": codes, "distortion": distortion}
    return replace(result, x=RotatedPQ(R, cb), info=info)


def opq(X, n_subquantizers: int, n_centroids: int = 256, **kwargs) -> SolverResult:
    """Optimized PQ (Ge et al. 2013): alternate k-means and SVD Procrustes.

    Parameters
    ----------
    X : array-like, shape (m, n)
    n_subquantizers, n_centroids : int
    **kwargs
        Options of :func:`rotated_pq` (``rotation_init``, ``max_iter``,
        ``kmeans_iter``, ``validation``, ``random_state``...).

    Returns
    -------
    SolverResult
    """
    kwargs.setdefault("name", "opq")
    return rotated_pq(
        X, n_subquantizers, n_centroids, learner=ProcrustesLearner(), **kwargs
    )


def givens_descent(
    X,
    n_subquantizers: int,
    n_centroids: int = 256,
    *,
    selection: str | PairSelection = "greedy",
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    step_rule: str = "gradient",
    **kwargs,
) -> SolverResult:
    """PQ with the rotation learned by Givens coordinate descent (Sec. 3.1).

    OPQ's SVD step is replaced by ``n_rotation_steps`` iterations of
    Algorithm 2 on the distortion with the codes fixed.

    Parameters
    ----------
    X : array-like, shape (m, n)
    n_subquantizers, n_centroids : int
    selection : {"random", "greedy", "steepest", "random_overlap", \
"greedy_overlap"} or PairSelection
        GCD-R, GCD-G (Algorithm 1), GCD-S, or the overlapping ablations.
    n_rotation_steps : int
        GCD iterations per outer iteration (paper: 5).
    learning_rate : float or "auto"
        lambda (see :class:`~.rotation_learners.GivensLearner`).
    step_rule : {"gradient", "exact"}
        Paper's gradient angle, or exact minimization in each selected plane.
    **kwargs
        Options of :func:`rotated_pq`.

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`; ``history["learning_rate"]`` is the GCD step
        size of each outer iteration (NaN with ``step_rule="exact"``).
    """
    ctx = _solver_context(
        "givens_descent",
        kwargs,
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
    kwargs.setdefault("name", f"givens_descent[{learner.selection.name}]")
    return rotated_pq(X, n_subquantizers, n_centroids, learner=learner, **kwargs)


def cayley_descent(
    X,
    n_subquantizers: int,
    n_centroids: int = 256,
    *,
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    **kwargs,
) -> SolverResult:
    """PQ with the rotation learned through the Cayley transform (baseline).

    Parameters
    ----------
    X : array-like, shape (m, n)
    n_subquantizers, n_centroids : int
    n_rotation_steps : int
        Gradient steps on the Cayley parameter per outer iteration.
    learning_rate : float or "auto"
        See :class:`~.rotation_learners.CayleyLearner`.
    **kwargs
        Options of :func:`rotated_pq`.

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`; ``history["learning_rate"]`` is the step size
        on the Cayley parameter.
    """
    _solver_context(
        "cayley_descent",
        kwargs,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
    )
    kwargs.setdefault("name", "cayley_descent")
    learner = CayleyLearner(n_rotation_steps, learning_rate)
    return rotated_pq(X, n_subquantizers, n_centroids, learner=learner, **kwargs)


def unconstrained_descent(
    X,
    n_subquantizers: int,
    n_centroids: int = 256,
    *,
    n_rotation_steps: int = 5,
    learning_rate: float | str = "auto",
    penalty: float = 1.0,
    **kwargs,
) -> SolverResult:
    """PQ with a free (non-orthogonal) transform learned by gradient (baseline).

    Parameters
    ----------
    X : array-like, shape (m, n)
    n_subquantizers, n_centroids : int
    n_rotation_steps : int
    learning_rate : float or "auto"
    penalty : float
        Weight of ``||W^T W - I||^2`` (see
        :class:`~.rotation_learners.UnconstrainedLearner`).
    **kwargs
        Options of :func:`rotated_pq`.

    Returns
    -------
    SolverResult
        As :func:`rotated_pq`, but ``x.rotation`` is a free matrix W, and the
        objective is measured on the reconstructions ``phi(X W) W^T``.
    """
    _solver_context(
        "unconstrained_descent",
        kwargs,
        n_rotation_steps=n_rotation_steps,
        learning_rate=learning_rate,
        penalty=penalty,
    )
    kwargs.setdefault("name", "unconstrained_descent")
    learner = UnconstrainedLearner(n_rotation_steps, learning_rate, penalty)
    return rotated_pq(X, n_subquantizers, n_centroids, learner=learner, **kwargs)


def _solver_context(owner: str, kwargs: dict, **settings) -> FitContext:
    # The common start of the solvers above: check their rotation settings,
    # then resolve random_state / device / dtype once and hand them on to
    # rotated_pq resolved (the learner and the solver share one generator).
    validate_params(owner, settings, SOLVER_CONSTRAINTS)
    ctx = resolve_fit_context(
        random_state=kwargs.pop("random_state", None),
        device=kwargs.pop("device", "auto"),
        dtype=kwargs.pop("dtype", "float32"),
        owner=owner,
    )
    kwargs.update(random_state=ctx.random_state, device=ctx.device, dtype=ctx.dtype)
    return ctx
