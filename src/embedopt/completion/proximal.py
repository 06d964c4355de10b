"""The one accelerated proximal loop that every completion solver configures.

All four named solvers solve ``min_X sum_{(i,j) in Omega} l(X_ij, O_ij) +
lambda ||X||_*`` with the same proximal-gradient loop, the same continuation of
lambda and the same objective bookkeeping, and differ only in two strategy
pieces:

============================  ====================  ===========================
method                        momentum              SVT of ``Z_t``
============================  ====================  ===========================
``ais_impute``                Nesterov + restart    power method, Alg. 2
``ais_impute_exact``          Nesterov + restart    exact partial SVD (Lanczos)
``soft_impute``               none                  exact partial SVD (Lanczos)
``apg``                       Nesterov + restart    exact partial SVD of the
                                                    *dense* Z_t (no structure)
============================  ====================  ===========================

The first three never form an m x n matrix: ``Z_t = Y_t - mu S_t`` is kept as a
sparse matrix on Omega plus low-rank factors (Sec. 3.2), and products with it
cost ``O(|Omega| k + (m + n) r k)``. :func:`proximal_completion` is that loop
(:func:`embedopt.optim.accelerated_proximal_gradient` with the SVT step of this
module); :mod:`.solvers` and :mod:`.baselines` name its configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .._core import (
    PROGRESS_CONSTRAINTS,
    Interval,
    InvalidParameterError,
    RandomStateLike,
    resolve_random_state,
    validate_params,
)
from ..optim import (
    GeometricContinuation,
    IterationState,
    SolverResult,
    accelerated_proximal_gradient,
)
from .problem import CompletionProblem, Factors, _as_factor_list, _as_problem
from .regularizers import Regularizer
from .svt import SVT_METHODS, _Iterate

__all__ = [
    "check_mode_weights",
    "check_solver_options",
    "default_mode_weights",
    "proximal_completion",
]


def _penalty(it: _Iterate, weights, linear) -> float:
    """Regularizer value: ``sum_i w_i s_i - tr(A^T X B)`` (w = 1, no A/B: ||X||_*)."""
    s = it.s.double()
    if weights is None:
        val = float(s.sum())
    else:
        w = weights.double().to(s.device)
        if w.numel() < s.numel():
            w = torch.cat([w, w[-1:].expand(s.numel() - w.numel())])
        val = float((w[: s.numel()] * s).sum())
    if linear is not None and it.rank:
        A, B = linear
        val -= float((((A.T @ it.U) * (B.T @ it.V)).sum(0).double() * s).sum())
    return val


def default_mode_weights(shape: Sequence[int]) -> list[float]:
    """Scaled-latent-norm weights ``w_d = sqrt(max_k I_k / I_d)`` of a tensor.

    Proportional to the ``1 / sqrt(I_d)`` of the scaled latent nuclear norm, and
    equal to Yao & Kwok's ``(1, 1, sqrt(m / 3))`` for m x m x 3 tensors.

    Parameters
    ----------
    shape : sequence of int
        ``(I_1, ..., I_D)``, the tensor's size along each mode.

    Returns
    -------
    list of float
        One weight per mode; the largest mode gets 1.
    """
    big = max(shape)
    return [(big / i) ** 0.5 for i in shape]


def check_mode_weights(
    mode_weights: Sequence[float] | None, shape: Sequence[int], owner: str
) -> list[float]:
    """The per-component weights ``lambda_d = lam * w_d`` as checked floats.

    Parameters
    ----------
    mode_weights : sequence of float or None
        None: ``[1.0]`` for a matrix, :func:`default_mode_weights` for a
        tensor.
    shape : tuple of int
        Shape of the matrix or tensor.
    owner : str
        Named in the error message.

    Returns
    -------
    list of float

    Raises
    ------
    InvalidParameterError
        Unless there is one positive finite weight per component (1 for a
        matrix, one per mode for a tensor).
    """
    n = 1 if len(shape) == 2 else len(shape)
    if mode_weights is None:
        return [1.0] if n == 1 else default_mode_weights(shape)
    try:
        w = [float(v) for v in np.asarray(mode_weights, dtype=object).ravel()]
    except (TypeError, ValueError):
        w = None
    if w is None or len(w) != n or not all(np.isfinite(w)) or min(w) <= 0:
        raise InvalidParameterError(
            f"The 'mode_weights' parameter of {owner} must be {n} positive finite "
            f"float(s), one per {'mode' if n > 1 else 'matrix'}. Got {mode_weights!r}."
        )
    return w


def _check_init(init, owner: str) -> None:
    """Refuse a start that is no factorization (a lam passed positionally)."""
    if init is not None and not isinstance(init, tuple | list):
        raise InvalidParameterError(
            f"The 'init' parameter of {owner} must be a tuple (U, s, V) or a list "
            f"of them (tensors). Got {init!r}. lam is keyword-only: pass lam=..."
        )


class _CompletionStep:
    """The SVT step of AIS-Impute and its baselines, for the shared APG loop.

    An iterate is a list with one :class:`_Iterate` per mode (one for a
    matrix) plus the summed values on Omega. The step forms ``Z_t = Y_t -
    mu S_t`` per mode as sparse plus low rank (eq. (20), (33)-(34)) and
    thresholds it with the SVT strategy; ``weight`` is lambda_t in the units
    of ``lam`` (mode d uses ``weight * mode_weights[d]``).
    """

    step_name = "SVT"

    def __init__(
        self,
        problem: CompletionProblem,
        svt,
        *,
        step_size: float,
        mode_weights: list[float],
        weights=None,
        linear=None,
        regularizers: list[Regularizer] | None = None,
    ):
        self.problem = problem
        self.svt = svt
        self.mu = step_size
        self.mode_weights = mode_weights
        self.weights = weights
        self.linear = linear
        self.regularizers = regularizers  # one per mode, at its lambda_d
        self._metric_key = f"val_{problem.metric_name}"

    # -- setup ---------------------------------------------------------------------
    def initial(self, init) -> tuple[list[_Iterate], torch.Tensor]:
        """``X_0`` from ``init`` factors, or zero."""
        dev, dt = self.problem.device, self.problem.dtype
        unfoldings = self.problem.unfoldings
        if init is not None:
            its = []
            for unf, fac in zip(unfoldings, _as_factor_list(init), strict=True):
                U0, s0, V0 = (
                    torch.as_tensor(
                        np.asarray(a) if not torch.is_tensor(a) else a, dtype=dt
                    ).to(dev)
                    for a in fac
                )
                its.append(_Iterate(U0, s0, V0, unf.values(U0, s0, V0)))
        else:
            its = [
                _Iterate(
                    torch.zeros((a, 0), dtype=dt, device=dev),
                    torch.zeros(0, dtype=dt, device=dev),
                    torch.zeros((b, 0), dtype=dt, device=dev),
                    torch.zeros_like(self.problem.y),
                )
                for a, b in (unf.shape for unf in unfoldings)
            ]
        return its, self._total(its)

    def default_start(self, lam: float, lam_decay: float, rs) -> float:
        """``lambda_hat = lam + nu (lambda_max - lam)``: a nonzero first iterate."""
        lmax = self.problem.lambda_max(generator=rs.torch("cpu"))
        lmax = [lmax] if len(self.mode_weights) == 1 else lmax
        # In units of lam: mode d's zero-solution threshold is lmax_d / w_d.
        top = max(lm / w for lm, w in zip(lmax, self.mode_weights, strict=True))
        return lam + lam_decay * (top - lam) if top > lam else lam

    def _total(self, its) -> torch.Tensor:
        return its[0].x if len(its) == 1 else sum(it.x for it in its)

    # -- the protocol of accelerated_proximal_gradient -----------------------------
    def smooth(self, x) -> float:
        """The (sample-weighted) loss on Omega."""
        return self.problem.loss_total(x[1])

    def penalty(self, x, weight: float) -> float:
        """``sum_d lambda_d ||X_d||_*`` (weighted / linearized / nonconvex)."""
        its = x[0]
        if self.regularizers is not None:
            return sum(
                weight * w * reg.value(it.s)
                for w, reg, it in zip(
                    self.mode_weights, self.regularizers, its, strict=True
                )
            )
        return sum(
            weight * w * _penalty(it, self.weights, self.linear)
            for w, it in zip(self.mode_weights, its, strict=True)
        )

    def step(self, x, x_prev, theta: float, weight: float):
        """Thresholded ``Z_t`` per mode (Algorithm 3 steps 5-8 / Algorithm 4)."""
        (cur, x_cur), (prev, x_old) = x, x_prev
        mu = self.mu
        # Y_t on Omega and the sparse part -mu S_t of Z_t (eq. (20), (33)-(34));
        # with sample weights S_t is w * l' on Omega (the same O(|Omega|) work).
        # Every O(|Omega|) temporary is freed as soon as it is used: at 10^7
        # entries each one is 40 MB (float32), and the peak of an iteration
        # is the number of them alive at once (the same numbers either way).
        if theta == 0:
            y_omega = x_cur
        else:
            y_omega = (1 + theta) * x_cur
            y_omega.sub_(theta * x_old)
        grad = self.problem.loss_grad(y_omega)
        del y_omega
        sparse_vals = -mu * grad
        del grad
        svts, self._k_total = [], 0
        for d, unf in enumerate(self.problem.unfoldings):
            c, p = cur[d], prev[d]
            lam_d = weight * self.mode_weights[d]
            terms = [(1 + theta, c.Us, c.V), (-theta, p.Us, p.V)]
            if self.linear is not None:
                terms.append((mu * lam_d, self.linear[0], self.linear[1]))
            op = self.problem.operator(unf, sparse_vals, terms)
            w = (
                self.regularizers[d].weights(c.s)
                if self.regularizers is not None
                else self.weights
            )
            threshold = mu * lam_d if w is None else mu * lam_d * w
            U, s, V, k = self.svt(op, threshold, c, p, mode=d)
            svts.append((U, s, V))
            self._k_total += k
        del sparse_vals, op
        new = [
            _Iterate(U, s, V, unf.values(U, s, V))
            for unf, (U, s, V) in zip(self.problem.unfoldings, svts, strict=True)
        ]
        return new, self._total(new)

    def describe(self, x, weight: float) -> dict:
        """lambda_t of the first mode, ranks and SVT basis sizes."""
        its = x[0]
        out = {
            "lam": weight * self.mode_weights[0],
            "rank": sum(it.rank for it in its),
            "svd_rank": self._k_total,
        }
        if len(its) > 1:
            out.update({f"rank_{d}": it.rank for d, it in enumerate(its)})
        return out

    def solution(self, x):
        """``(U, s, V)`` (a list of them, one per mode, for tensors)."""
        factors = [(it.U, it.s, it.V) for it in x[0]]
        return factors[0] if len(factors) == 1 else factors

    def monitor_values(self, solution) -> dict:
        """The validation metric, when there are validation entries."""
        if self.problem.validation is None:
            return {}
        return {self._metric_key: self.problem.validation_score(solution)}

    @property
    def truncated(self) -> bool:
        """Whether an adaptive rank cap truncated the last SVT."""
        return bool(self.svt.binding)

    def refine(self) -> None:
        """Grow the binding rank caps (the truncated iteration has converged)."""
        self.svt.expand()


def proximal_completion(
    problem: CompletionProblem,
    init: Factors | list[Factors] | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    lam: float,
    svt: str = "approx",
    momentum: str = "nesterov_restart",
    lam_decay: float = 0.85,
    lam_start: float | None = None,
    power_iters: int = 3,
    max_rank: int | None = None,
    adaptive_rank: bool = True,
    weights: torch.Tensor | None = None,
    linear: tuple[torch.Tensor, torch.Tensor] | None = None,
    regularizer: Regularizer | None = None,
    mode_weights: Sequence[float] | None = None,
    step_size: float | None = None,
    name: str = "AIS-Impute",
) -> SolverResult:
    """The shared accelerated proximal loop (Algorithms 3 and 4 with pluggable pieces).

    For a matrix this is Algorithm 3. For a D-way tensor it is Algorithm 4: the
    scaled latent nuclear norm ``sum_d lambda_d ||X^d_<d>||_*`` with one
    low-rank component per mode, each kept as the SVD of its mode-d unfolding
    and thresholded separately (Proposition 4.1) on a sparse-plus-low-rank
    ``Z^d_t`` (Sec. 4.3).

    Parameters
    ----------
    problem : CompletionProblem
    init : tuple (U, s, V) or list of them (tensors), optional
        Warm start ``X_0 = X_1``.
    max_iter, tol
        As in :func:`~embedopt.completion.ais_impute` (``tol`` is tested once
        the continuation has ended).
    random_state : None, int or numpy Generator
    verbose : int
    callback : callable, optional
    lam : float
        Regularization weight lambda > 0 (``lambda_d = lam * mode_weights[d]``
        for tensors): an option of the method, keyword-only.
    svt : {"approx", "exact", "dense"}
        SVT strategy (see :data:`~embedopt.completion.SVT_METHODS`).
    momentum : {"nesterov_restart", "none"}
        Momentum schedule (see :data:`embedopt.optim.MOMENTUM`).
    lam_decay, power_iters, max_rank, adaptive_rank
        As in :func:`~embedopt.completion.ais_impute` (``max_rank`` caps every
        mode).
    lam_start : float, optional
        lambda_hat, in the units of ``lam`` (for tensors mode d continues from
        ``lam_start * mode_weights[d]``, i.e. Algorithm 4's single lambda_hat is
        scaled per mode like lambda_d). Default:
        ``lam + nu (lambda_max - lam)`` with lambda_max the largest singular
        value of the (unfolded, weight-scaled) loss gradient at the initial
        point, so the first iterate is already nonzero; with ``init`` given, no
        continuation unless set.
    weights : torch.Tensor, optional
        Per-index weights of a weighted nuclear norm (nondecreasing); the SVT
        thresholds become ``mu lambda_t w_i`` (Lemma 3.6). Matrices only.
    linear : tuple (A, B), optional
        Adds ``- lambda tr(A^T X B)`` to the objective (the linearized truncated
        nuclear norm, eq. (26)-(27)). Matrices only.
    regularizer : Regularizer, optional
        A (nonconvex) regularizer whose supergradient weights are recomputed
        from the current iterate at every iteration (iteratively reweighted
        nuclear norm, IRNN); the objective is then ``f + lambda r(X)``
        (``sum_d lambda_d r(X^d_<d>)`` for tensors, each mode's regularizer
        at its own lambda_d: :meth:`~.regularizers.Regularizer.at`).
        Excludes ``weights`` and ``linear``.
    mode_weights : sequence of float, optional
        Tensors: ``lambda_d = lam * mode_weights[d]`` (see
        :func:`~embedopt.completion.ais_impute`).
    step_size : float, optional
        mu. Default: the paper's ``1 / rho`` for matrices (Proposition 3.1) and
        ``1 / (sqrt(D) rho)`` for D-way tensors (Algorithm 4, Proposition 4.2),
        although f in (31) is ``D rho``-smooth in the worst case: below
        ``2 / L`` for D <= 4, guarded by the restart test (fewer iterations
        than the provably safe ``1 / (D rho)``; see the tensor benchmark).
        With sample weights (``problem.weight``) the loss is ``max(w)
        rho``-smooth and rho becomes ``max(w) rho`` in both.
    name : str
        Solver name in history, progress bars and warnings.

    Returns
    -------
    SolverResult
        ``x = (U, s, V)`` tensors of the final iterate (a list of them, one per
        mode, for tensors). ``history`` columns: iteration, time, objective (at
        the target lambda), lam (lambda_t of the first mode), rank (summed over
        modes; ``rank_d`` per mode for tensors), svd_rank (columns of the SVT
        bases), theta, restart and, with validation entries, ``val_rmse`` or
        ``val_accuracy``.
    """
    _check_init(init, name)
    rs = resolve_random_state(random_state, name)
    D = len(problem.unfoldings)
    if D > 1 and (weights is not None or linear is not None):
        raise InvalidParameterError(
            f"{name}: weights and linear apply to matrix problems only."
        )
    mode_weights = check_mode_weights(mode_weights, problem.shape, name)
    regularizers = (
        None if regularizer is None else [regularizer.at(lam * w) for w in mode_weights]
    )
    step = _CompletionStep(
        problem,
        SVT_METHODS.get(svt)(
            power_iters=power_iters,
            max_rank=max_rank,
            adaptive_rank=adaptive_rank,
            generator=rs.torch(problem.device),
            random_state=rs.numpy,
        ),
        step_size=step_size if step_size is not None else _default_step(problem),
        mode_weights=mode_weights,
        weights=weights,
        linear=linear,
        regularizers=regularizers,
    )
    x0 = step.initial(init)
    if lam_start is None:
        lam_start = lam if init is not None else step.default_start(lam, lam_decay, rs)
    res = accelerated_proximal_gradient(
        step,
        x0,
        momentum=momentum,
        continuation=GeometricContinuation(lam, lam_start, lam_decay),
        max_iter=max_iter,
        tol=tol,
        name=name,
        verbose=verbose,
        callback=callback,
        nonfinite_hint=(
            "the step size 1/rho may be too large for this loss, or the "
            "data badly scaled (try centering/standardizing them)"
            + (
                ""
                if problem.weight is None
                else ", or the sample weights too large for the dtype (rescale "
                "them, e.g. w / w.max() with lam scaled the same way, or use "
                "dtype='float64')"
            )
        ),
    )
    res.info.update(
        lam=lam, lams=[lam * w for w in step.mode_weights], loss=res.info.pop("smooth")
    )
    return res


def _default_step(problem: CompletionProblem) -> float:
    """``1 / (sqrt(D) rho)``, and ``1 / (sqrt(D) max(w) rho)`` with sample weights."""
    D = len(problem.unfoldings)
    if problem.weight is None:
        return 1.0 / (D**0.5 * problem.loss.rho)
    return 1.0 / (D**0.5 * problem.loss.rho * problem.max_weight)


#: The loop configuration of each named solver: (SVT strategy, momentum, label).
_METHODS = {
    "ais_impute": ("approx", "nesterov_restart", "AIS-Impute"),
    "ais_impute_exact": ("exact", "nesterov_restart", "AIS-Impute (exact)"),
    "soft_impute": ("exact", "none", "Soft-Impute"),
    "apg": ("dense", "nesterov_restart", "APG"),
}


_COMMON_CONSTRAINTS = {
    "lam": [Interval(float, 0, None, closed="neither")],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None)],
    "lam_decay": [Interval(float, 0, 1, closed="neither")],
    "lam_start": [Interval(float, 0, None, closed="neither"), None],
    "power_iters": [Interval(int, 0, None)],
    "max_rank": [Interval(int, 1, None), None],
    "adaptive_rank": ["boolean"],
    **PROGRESS_CONSTRAINTS,
    "random_state": ["random_state"],
}

#: Options of :func:`proximal_completion` that a named solver fixes.
_CONFIGURATION = ("svt", "momentum", "exact_svt", "name")


#: Options of each solve that the path functions pass through.
_PASSED_OPTIONS = (
    "max_iter",
    "tol",
    "lam_decay",
    "power_iters",
    "max_rank",
    "adaptive_rank",
    "verbose",
    "callback",
)


def check_solver_options(owner: str, options: dict) -> None:
    """Validate options passed through to each solve, before any work.

    Parameters
    ----------
    owner : str
        The function receiving them (named in errors).
    options : dict
        ``max_iter``, ``tol``, ``lam_decay``, ``power_iters``, ``max_rank``,
        ``adaptive_rank``, ``verbose``, ``callback``.

    Raises
    ------
    InvalidParameterError
        For an unknown option or an invalid value.
    """
    for key in options:
        if key not in _PASSED_OPTIONS:
            raise InvalidParameterError(
                f"{owner} got an unexpected option {key!r}; the options passed "
                f"to each solve are {', '.join(_PASSED_OPTIONS)}."
            )
    validate_params(owner, options, _COMMON_CONSTRAINTS)


def _run(
    solver: str,
    X,
    init=None,
    *,
    lam,
    loss="square",
    validation=None,
    shape=None,
    device="auto",
    dtype=None,
    **options,
) -> SolverResult:
    """Validate, build the problem, run a named configuration of the loop.

    ``solver`` is a canonical name of :data:`_METHODS`; ``options`` are the
    keyword options of :func:`proximal_completion`.
    """
    fixed = [key for key in _CONFIGURATION if key in options]
    if fixed:
        raise InvalidParameterError(
            f"{solver} got {', '.join(map(repr, fixed))}: the solver's name fixes "
            "its SVT and momentum. Pick the solver that has them (ais_impute, "
            "ais_impute_exact, soft_impute, apg), or call proximal_completion "
            "to set them."
        )
    validate_params(solver, dict(lam=lam, **options), _COMMON_CONSTRAINTS)
    _check_init(init, solver)
    problem = _as_problem(
        X, loss=loss, validation=validation, shape=shape, device=device, dtype=dtype
    )
    svt, momentum, label = _METHODS[solver]
    return proximal_completion(
        problem, init, lam=float(lam), svt=svt, momentum=momentum, name=label, **options
    )
