"""Solvers of the all-pairs objective: the paper's Newton-type method and the
gradient baselines, all on the O(m + n) oracles of
:class:`~embedopt.similarity.AllPairsObjective`.

=======================  ===================================================
``gauss_newton``         truncated Gauss-Newton: CG on ``(G + mu I) s = -g``
                         with Levenberg-Marquardt damping, optional diagonal
                         preconditioner, Armijo line search on the exact
                         objective (Sec. 4; the notes' "Methods")
``gradient_descent``     gradient descent with Armijo line search, plain or
                         scaled by the Gauss-Newton diagonal
``adam``, ``sgd``        stochastic baselines on sampled pairs or blocks
                         (:mod:`embedopt.similarity.baselines`)
``als``                  alternating least squares, the linear case
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

from functools import partial

from .._core import Interval, Options, Registry, resolve_random_state, validated_params
from ..linalg import hutchinson_diagonal
from ..linalg.points import Point, as_tuple, pack
from ..optim import SolverResult, armijo_gradient_descent, newton_cg
from .baselines import als, stochastic

__all__ = ["SOLVERS", "gauss_newton", "get_solver", "gradient_descent"]

#: Default relative damping: mu starts at this fraction of the mean
#: Gauss-Newton diagonal at x0 (scale-free, unlike an absolute mu).
DEFAULT_DAMPING = 1e-3


def _gn_diagonal(objective, x, n_probes: int, generator, floor: float = 1e-8):
    """Hutchinson estimate of ``diag(G(x))``, clipped to a positive floor."""
    est = hutchinson_diagonal(
        lambda v: objective.gnvp(x, v), x, n_probes=n_probes, generator=generator
    )
    parts = as_tuple(est)
    scale = sum(float(a.abs().sum()) for a in parts) / max(
        sum(a.numel() for a in parts), 1
    )
    # Estimates of small diagonal entries can come out <= 0; a floor relative
    # to the mean keeps the scaling positive definite.
    low = max(floor * scale, 1e-300)
    return pack(est, [a.clamp_min(low) for a in parts])


def _mean(point) -> float:
    parts = as_tuple(point)
    return sum(float(a.sum()) for a in parts) / max(sum(a.numel() for a in parts), 1)


def _initial_damping(objective, x0, relative: float, generator) -> float:
    if relative == 0:
        return 0.0
    return relative * _mean(_gn_diagonal(objective, x0, 1, generator))


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
    objective,
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
    random_state=None,
    verbose: int = 0,
    callback=None,
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
    objective,
    x0: Point,
    *,
    max_iter: int = 1000,
    tol: float = 1e-5,
    scaling: str | None = None,
    refresh: int = 10,
    n_probes: int = 4,
    random_state=None,
    verbose: int = 0,
    callback=None,
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
