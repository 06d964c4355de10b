"""Solvers for fixed embeddings: PQ with a learned rotation, by alternation.

All solvers minimize the quantization distortion
``(1/m) ||X - phi(X R) R^T||^2`` (the second term of eq. (1); equal to
``(1/m) ||X R - phi(X R)||^2`` for orthogonal R) by alternating

1. k-means (Lloyd) iterations of the M codebooks on ``X R``, warm-started;
2. a rotation step with the codes fixed (:mod:`.rotation_learners`).

:func:`opq` uses the exact SVD Procrustes step (Ge et al. 2013);
:func:`givens_descent` replaces it by a few Givens coordinate descent steps
(Sec. 3.1 of the paper); :func:`cayley_descent` and :func:`unconstrained_descent`
are the gradient baselines. Each returns a :class:`~embedopt.optim.SolverResult`
whose ``x`` is a :class:`RotatedPQ`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._core import (
    DataValidationError,
    InvalidParameterError,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
)
from ..linalg.rotations import orthogonality_error, reorthogonalize
from ..optim import IterationMonitor, SolverResult
from ..optim.givens import PairSelection
from .codebooks import decode, kmeans_plusplus, lloyd, random_init, split
from .rotation_learners import (
    CayleyLearner,
    GivensLearner,
    ProcrustesLearner,
    RotationLearner,
    UnconstrainedLearner,
    initial_rotation,
)

__all__ = [
    "KMEANS_INITS",
    "RotatedPQ",
    "as_vectors",
    "cayley_descent",
    "givens_descent",
    "opq",
    "rotated_pq",
    "unconstrained_descent",
]

#: Codebook seeding rules by name.
KMEANS_INITS = {"k-means++": kmeans_plusplus, "random": random_init}


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
    import numpy as np

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
    return out


def _check_shapes(m: int, n: int, M: int, K: int) -> None:
    if n % M:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        raise InvalidParameterError(
            f"The 'n_subquantizers' parameter must divide the dimension {n}; got "
            f"{M}. Valid values: {divisors}."
        )
    if K > m:
        raise DataValidationError(
            f"n_centroids={K} exceeds the {m} training vectors: k-means needs at "
            "least one vector per centroid. Use more training vectors or fewer "
            "centroids."
        )


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
        Codebook seeding.
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
        Solver name in progress bars, logs and warnings.

    Returns
    -------
    SolverResult
        ``x`` is a :class:`RotatedPQ`; ``history`` has ``objective`` (training
        distortion), ``orthogonality_error``, ``empty_clusters``, the learner's
        values and ``val_distortion`` when ``validation`` is given;
        ``info["codes"]`` holds the training codes and ``info["init_distortion"]``
        the distortion before the first outer iteration.
    """
    dev = resolve_device(device)
    dt = resolve_dtype(dtype)
    rs = resolve_random_state(random_state, name)
    gen = rs.torch("cpu")
    if init not in KMEANS_INITS:
        raise InvalidParameterError(
            f"The 'init' parameter of {name} must be a str among "
            f"{{{', '.join(repr(k) for k in KMEANS_INITS)}}}. Got {init!r}."
        )
    X = as_vectors(X, device=dev, dtype=dt)
    m, n = X.shape
    M, K = int(n_subquantizers), int(n_centroids)
    _check_shapes(m, n, M, K)
    Xv = None
    if validation is not None:
        Xv = as_vectors(validation, "validation", device=dev, dtype=dt, n_features=n)
    R = initial_rotation(rotation_init, X, M, gen)
    if R.shape != (n, n):
        raise DataValidationError(
            f"rotation_init must be an ({n}, {n}) matrix; got {tuple(R.shape)}."
        )
    if learner is not None:
        learner.start(R)
    orthogonal = learner is None or learner.orthogonal

    def distortion(Z: torch.Tensor, R: torch.Tensor, cb: torch.Tensor) -> float:
        Zr = Z @ R
        _, codes, err, _ = lloyd(split(Zr, M), cb, 0)
        if orthogonal:
            return float(err.double().sum(1).mean())
        rec = decode(codes, cb) @ R.T
        return float(((Z - rec).double() ** 2).sum(1).mean())

    monitor = IterationMonitor(
        name,
        max_iter,
        tol,
        verbose=verbose,
        callback=callback,
        owner=name,
        nonfinite_hint="the data may be badly scaled or the learning rate too large",
    )
    monitor.start()
    Xs = split(X @ R, M)
    cb = KMEANS_INITS[init](Xs, K, gen)
    cb, codes, err, n_empty = lloyd(Xs, cb, init_kmeans_iter)
    init_distortion = float(err.double().sum(1).mean())
    for _ in monitor:
        if learner is not None:
            Y = decode(codes, cb)
            R = learner.step(X, Y, R)
            if not bool(torch.isfinite(R).all()):
                raise monitor.instability("the rotation became non-finite")
        with monitor.paused():
            orth_err = orthogonality_error(R)
            if orthogonal and learner is not None and orth_err > _REORTH_TOL:
                # Rounding R to float32 after every step lets R^T R drift like
                # sqrt(iterations) * 1e-7; one Newton-Schulz step squares the
                # error (as GivensOptimizer does), so it rarely runs.
                R = reorthogonalize(R)
                orth_err = orthogonality_error(R)
        Xs = split(X @ R, M)
        cb, codes, err, n_empty = lloyd(Xs, cb, kmeans_iter)
        if orthogonal:
            obj = float(err.double().sum(1).mean())
        else:
            rec = decode(codes, cb) @ R.T
            obj = float(((X - rec).double() ** 2).sum(1).mean())
        values = dict(objective=obj, empty_clusters=n_empty)
        if learner is not None:
            values.update(learner.info())
        values["orthogonality_error"] = orth_err
        with monitor.paused():
            if Xv is not None:
                values["val_distortion"] = distortion(Xv, R, cb)
        if monitor.record(RotatedPQ(R, cb), **values):
            break
    return monitor.result(
        RotatedPQ(R, cb), codes=codes, init_distortion=init_distortion
    )


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
    """
    _check_choice("step_rule", step_rule, ("gradient", "exact"), "givens_descent")
    _check_positive("n_rotation_steps", n_rotation_steps, "givens_descent")
    _check_lr(learning_rate, "givens_descent")
    rs = resolve_random_state(kwargs.pop("random_state", None), "givens_descent")
    learner = GivensLearner(
        selection, n_rotation_steps, learning_rate, step_rule, rs.torch("cpu")
    )
    kwargs.setdefault("name", f"givens_descent[{learner.selection.name}]")
    return rotated_pq(
        X, n_subquantizers, n_centroids, learner=learner, random_state=rs, **kwargs
    )


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
    """
    _check_positive("n_rotation_steps", n_rotation_steps, "cayley_descent")
    _check_lr(learning_rate, "cayley_descent")
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
    """
    _check_positive("n_rotation_steps", n_rotation_steps, "unconstrained_descent")
    _check_lr(learning_rate, "unconstrained_descent")
    if not (isinstance(penalty, (int, float)) and penalty >= 0):
        raise InvalidParameterError(
            "The 'penalty' parameter of unconstrained_descent must be a float in "
            f"[0, inf). Got {penalty!r}."
        )
    kwargs.setdefault("name", "unconstrained_descent")
    learner = UnconstrainedLearner(n_rotation_steps, learning_rate, penalty)
    return rotated_pq(X, n_subquantizers, n_centroids, learner=learner, **kwargs)


def _check_choice(param, value, options, owner) -> None:
    if value not in options:
        raise InvalidParameterError(
            f"The {param!r} parameter of {owner} must be a str among "
            f"{{{', '.join(repr(o) for o in options)}}}. Got {value!r}."
        )


def _check_positive(param, value, owner) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParameterError(
            f"The {param!r} parameter of {owner} must be an int in [1, inf). "
            f"Got {value!r}."
        )


def _check_lr(value, owner) -> None:
    ok = value == "auto" or (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )
    if not ok:
        raise InvalidParameterError(
            f"The 'learning_rate' parameter of {owner} must be a float in (0, inf) "
            f"or 'auto'. Got {value!r}."
        )
