"""Solvers of non-convex ordinal embedding: SVRG-SBB and its baselines.

All solve ``min_X (1/|Q|) sum_q ell_q(X)`` over the embedding X (eq. (5))
and share one budget unit (Ma et al., Sec. 5.1): an *epoch* costs
``|Q| + 2m`` gradient evaluations of single comparisons, what an SVRG epoch
with update frequency m costs (``3 |Q|`` for the paper's ``m = |Q|``).

=================  ======================================================
``svrg_sbb``       Algorithm 1: SVRG with stabilized BB steps (eq. (17));
                   ``epsilon = 0`` is SVRG-SBB_0
``svrg_sbb_pl``    Algorithm 2: modules of Algorithm 1 restarted from their
                   random iterate (linear rate under the PL inequality)
``svrg``           SVRG with a fixed step (Johnson & Zhang)
``sgd``            mini-batch SGD with a decaying step, ``|Q| + 2m``
                   comparisons per epoch
``batch_gd``       gradient descent with a fixed step, ``(|Q| + 2m) / |Q|``
                   steps per epoch
``lbfgs``          full-batch L-BFGS (SciPy's L-BFGS-B on the torch
                   objective), the fastest on small problems
=================  ======================================================

``solver="auto"`` of the estimator (:func:`resolve_solver`) picks ``lbfgs``
up to :data:`AUTO_LBFGS_MAX_COMPARISONS` comparisons and ``svrg_sbb`` above.

The convex Gram-matrix baseline is :func:`~embedopt.ordinal.projected_gd`.
Every inner step of the stochastic solvers costs O(b p), independent of the
number of objects (lazy full-gradient term, see :mod:`embedopt.optim.svrg`).
"""

from __future__ import annotations

import torch

from .._core import (
    Interval,
    InvalidParameterError,
    Registry,
    few_threads,
    renamed_parameters,
    validate_params,
)
from ..optim import (
    GD_CONSTRAINTS,
    LBFGS_CONSTRAINTS,
    SGD_CONSTRAINTS,
    SVRG_CONSTRAINTS,
    SolverResult,
    gradient_descent,
)
from ..optim import lbfgs as _lbfgs
from ..optim import sgd as _sgd
from ..optim import svrg as _svrg
from .convex import projected_gd
from .problem import batch_steps_per_epoch, epoch_samples, setup, setup_options

__all__ = [
    "AUTO_LBFGS_MAX_COMPARISONS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EPSILON",
    "DEFAULT_INIT_SCALE",
    "SOLVERS",
    "batch_gd",
    "get_solver",
    "lbfgs",
    "resolve_solver",
    "sgd",
    "svrg",
    "svrg_sbb",
    "svrg_sbb_pl",
]

#: Default SBB epsilon, relative to the curvature scale r / n_objects of the
#: mean loss (see ``relative_epsilon``): 0.03 is an absolute epsilon of 9e-4
#: for the 100 objects of Sec. 5.1, 6e-3 for 15 and 9e-6 for 10^4. Chosen on
#: the synthetic problems of the tests and benchmarks (15 to 10^4 objects).
DEFAULT_EPSILON = 0.03
#: Default mini-batch size b (capped at the comparisons sampled per epoch).
DEFAULT_BATCH_SIZE = 100
#: Standard deviation of the random initial embedding.
DEFAULT_INIT_SCALE = 0.1


#: ``solver="auto"`` runs full-batch L-BFGS up to this many comparisons and
#: SVRG-SBB above. Measured (STE, planted 10-d points, 1 thread): at 10^5
#: triplets of 10^3 objects L-BFGS converged in 1.2 s (held-out error 0.052)
#: while SVRG-SBB ran its 100 default epochs in 13 s, both reaching 0.1
#: after 0.5 s; at 10^6 triplets of 10^4 objects SVRG-SBB (m = |Q| / 4)
#: reached 0.2 in 2.9 s and L-BFGS in 6.9 s (a float64 full pass: 0.27 s).
AUTO_LBFGS_MAX_COMPARISONS = 100_000


def resolve_solver(name: str, n_comparisons: int) -> str:
    """The solver that ``name`` stands for on ``n_comparisons`` comparisons.

    Parameters
    ----------
    name : str
        A solver name of :data:`SOLVERS` (any accepted spelling) or
        ``"auto"``.
    n_comparisons : int

    Returns
    -------
    str
        ``"lbfgs"`` or ``"svrg_sbb"`` for ``"auto"`` (see
        :data:`AUTO_LBFGS_MAX_COMPARISONS`), else the canonical name.
    """
    if name != "auto":
        return SOLVERS.resolve_name(name)
    return "lbfgs" if n_comparisons <= AUTO_LBFGS_MAX_COMPARISONS else "svrg_sbb"


#: Constraints of the ordinal-level options of sgd / batch_gd.
_SGD_OWN = {
    "learning_rate_decay": [Interval(float, 0, None)],
    "update_frequency": [Interval(int, 1, None), None],
}


#: Solver names of svrg_sbb's step rules (progress, warnings).
_SVRG_NAMES = {"sbb": "SVRG-SBB", "bb": "SVRG-BB", "constant": "SVRG"}


def _default_batch(batch_size: int, per_epoch: int) -> int:
    """The default b, capped at the comparisons sampled per epoch.

    Small problems (fewer than 100 comparisons per epoch) get full-batch
    steps without a word; a larger b the user chose is clipped by the optim
    solver, with a warning (:func:`~embedopt.optim.finite_sum.clip_batch_size`).
    """
    if batch_size == DEFAULT_BATCH_SIZE:
        return min(batch_size, per_epoch)
    return batch_size


def _prepare(comparisons, n_components, data: dict, run: dict, owner, constraints):
    """Check the solver's ``run`` options, then set up the ``data`` problem.

    The solver's own parameters are checked before the (possibly large)
    comparisons are validated and moved to the device.
    """
    validate_params(owner, run, constraints)
    return setup(comparisons, n_components, **data, owner=owner)


def _run_svrg(comparisons, n_components, name, data, run, *, step_size, epsilon=0.0):
    run = {**run, "epsilon": epsilon}
    s = _prepare(comparisons, n_components, data, run, name, SVRG_CONSTRAINTS)
    run["batch_size"] = _default_batch(
        run["batch_size"], run["update_frequency"] or s.problem.n_samples
    )
    relative = run.pop("relative_epsilon", False)
    if relative:
        run["epsilon"] *= s.problem.curvature_scale
    return _svrg(
        s.problem,
        s.x0,
        step_size=step_size,
        evaluate=s.evaluate,
        random_state=s.rs,
        name=name,
        **run,
    )


def svrg_sbb(
    comparisons,
    n_components: int = 2,
    *,
    loss="ste",
    epsilon: float = DEFAULT_EPSILON,
    relative_epsilon: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    update_frequency: int | None = None,
    learning_rate="auto",
    max_iter: int = 100,
    tol: float = 1e-4,
    output: str = "last",
    module_epochs: int | None = None,
    step_size: str = "sbb",
    lazy: bool = True,
    init=None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float32",
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """Ordinal embedding by SVRG with stabilized Barzilai-Borwein steps (Algorithm 1).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
        Oriented triplets ``(i, j, k)`` / quadruplets ``(i, j, l, k)``: the
        first pair is the closer one.
    n_components : int
        p, the embedding dimension.
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
        See :mod:`embedopt.ordinal.losses`.
    epsilon : float
        SBB epsilon of eq. (14)/(17); 0 gives SVRG-SBB_0.
    relative_epsilon : bool
        True: ``epsilon`` is in units of the curvature scale ``r / n_objects``
        of the mean loss (r = 3 for triplets, 4 for quadruplets): the rule
        uses ``epsilon r / n_objects`` and the steps stay below
        ``n_objects / (r epsilon)``. The curvature of a mean over comparisons
        shrinks like 1 / n_objects, so an absolute epsilon that suits 100
        objects freezes the steps at 10^4; this keeps one default valid. False:
        ``epsilon`` is the absolute epsilon of eq. (17) (Ma et al. use 0.02 to
        0.1), and the steps stay below ``1 / epsilon`` (eq. (15)).
    batch_size : int
        b, comparisons per inner step, drawn with replacement; at most m (the
        default is capped at m, a larger given b is clipped with a warning:
        one inner step of b > m comparisons would move b / m times too far).
    update_frequency : int, optional
        m, comparisons sampled per epoch (``ceil(m / b)`` inner steps);
        default |Q| as in the paper. A smaller m (e.g. |Q| / 4) refreshes the
        snapshot and the SBB step more often per gradient pass and was faster
        to a given held-out error in our benchmarks.
    learning_rate : float or "auto"
        Step of the first epoch (Algorithm 1's eta_0 times m); ``"auto"``
        measures the curvature along the first gradient (one extra gradient
        pass, counted in the budget).
    max_iter : int
        Epochs S.
    tol : float
        Relative change of the objective between epochs that stops the run.
    output : {"last", "random"}
        The last snapshot, or Algorithm 1's uniformly drawn inner iterate.
    module_epochs : int, optional
        Run Algorithm 2 with modules of this many epochs (see
        :func:`svrg_sbb_pl`); None runs Algorithm 1.
    step_size : {"sbb", "bb", "constant"}
        Step rule of the epochs: stabilized Barzilai-Borwein (Algorithm 1),
        plain Barzilai-Borwein, or the fixed ``learning_rate`` of the SVRG
        baseline (:func:`svrg`).
    lazy : bool
        O(b p) inner steps; False runs the dense O(n p) update (for testing).
    init : array-like, shape (n_objects, n_components), optional
        Initial embedding; default i.i.d. ``N(0, init_scale^2)``. All rows
        equal (all zeros) is refused: a saddle point of every ordinal loss.
    init_scale : float
    n_objects : int, optional
        Number of objects (default: max index + 1).
    validation : Comparisons or array-like, optional
        Held-out comparisons; their triplet error is recorded each epoch in
        ``history["val_error"]`` (off the clock).
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool`` once per epoch; True stops.

    Returns
    -------
    SolverResult
        ``x``: the embedding (tensor, n_objects x p); history per epoch:
        iteration, time, objective, step_size, grad_evals, passes,
        grad_norm, and val_error with validation.
    """
    run = {
        "relative_epsilon": relative_epsilon,
        "batch_size": batch_size,
        "update_frequency": update_frequency,
        "learning_rate": learning_rate,
        "max_iter": max_iter,
        "tol": tol,
        "output": output,
        "module_epochs": module_epochs,
        "lazy": lazy,
        "verbose": verbose,
        "callback": callback,
    }
    data = setup_options(
        loss, n_objects, init, init_scale, validation, random_state, device, dtype
    )
    return _run_svrg(
        comparisons,
        n_components,
        _SVRG_NAMES.get(step_size, "SVRG"),
        data,
        run,
        step_size=step_size,
        epsilon=epsilon,
    )


def svrg_sbb_pl(
    comparisons,
    n_components: int = 2,
    *,
    module_epochs: int = 5,
    output: str = "random",
    **kwargs,
) -> SolverResult:
    """SVRG-SBB for objectives with the PL property (Algorithm 2).

    Runs modules of ``module_epochs`` epochs of Algorithm 1; each module
    returns a uniformly drawn inner iterate, which starts the next module
    (Theorem 3: linear convergence under the Polyak-Lojasiewicz inequality
    (26)). ``max_iter`` counts epochs over all modules (K = max_iter /
    module_epochs modules). The SBB step carries over between modules.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    module_epochs : int
        S, epochs per module.
    output : {"last", "random"}
        "random": the current module's drawn iterate when the run stops.
    **kwargs
        Every other parameter of :func:`svrg_sbb`.

    Returns
    -------
    SolverResult
    """
    return svrg_sbb(
        comparisons,
        n_components,
        module_epochs=module_epochs,
        output=output,
        **kwargs,
    )


def svrg(comparisons, n_components: int = 2, **options) -> SolverResult:
    """Ordinal embedding by SVRG with a fixed step (the paper's "SVRG" baseline).

    :func:`svrg_sbb` with ``step_size="constant"``: inner steps move
    ``b / m`` of the fixed ``learning_rate`` (full-gradient units;
    ``"auto"`` measures the curvature at the start once).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    **options
        The keyword options of :func:`svrg_sbb` except the step rule's
        (``step_size``, ``epsilon``, ``relative_epsilon``, ``module_epochs``).

    Returns
    -------
    SolverResult
    """
    for key in ("step_size", "epsilon", "relative_epsilon", "module_epochs"):
        if key in options:
            raise InvalidParameterError(
                f"svrg has no '{key}' parameter: its step is fixed (use svrg_sbb "
                "for Barzilai-Borwein steps)."
            )
    return svrg_sbb(
        comparisons,
        n_components,
        step_size="constant",
        epsilon=0.0,
        relative_epsilon=False,
        **options,
    )


@renamed_parameters(decay="learning_rate_decay")
def sgd(
    comparisons,
    n_components: int = 2,
    *,
    loss="ste",
    learning_rate="auto",
    learning_rate_decay: float = 1.0,
    batch_size: int = DEFAULT_BATCH_SIZE,
    update_frequency: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    init=None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float32",
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """Ordinal embedding by mini-batch SGD with a decaying step.

    Epoch k draws ``|Q| + 2m`` comparisons (an SVRG epoch's budget) and
    steps with ``alpha_k = learning_rate / (1 + learning_rate_decay k)``.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
    learning_rate : float or "auto"
        alpha_0 (full-gradient units).
    learning_rate_decay : float
    batch_size : int
        At most ``|Q| + 2m``, the comparisons of an epoch (see
        :func:`svrg_sbb`).
    update_frequency : int, optional
        m of the SVRG epoch whose budget an epoch matches (default |Q|).
    max_iter, tol, init, init_scale, n_objects, validation, random_state,
    device, dtype, verbose, callback
        As in :func:`svrg_sbb`.

    Returns
    -------
    SolverResult
    """
    run = {
        "learning_rate": learning_rate,
        # optim.sgd's step rule calls the learning-rate decay "decay".
        "decay": learning_rate_decay,
        "batch_size": batch_size,
        "max_iter": max_iter,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params(
        "SGD",
        {
            "learning_rate_decay": learning_rate_decay,
            "update_frequency": update_frequency,
        },
        _SGD_OWN,
    )
    data = setup_options(
        loss, n_objects, init, init_scale, validation, random_state, device, dtype
    )
    s = _prepare(comparisons, n_components, data, run, "SGD", SGD_CONSTRAINTS)
    per_epoch = epoch_samples(s.problem.n_samples, update_frequency)
    run["batch_size"] = _default_batch(run["batch_size"], per_epoch)
    return _sgd(
        s.problem,
        s.x0,
        samples_per_epoch=per_epoch,
        evaluate=s.evaluate,
        random_state=s.rs,
        name="SGD",
        **run,
    )


def batch_gd(
    comparisons,
    n_components: int = 2,
    *,
    loss="ste",
    learning_rate="auto",
    update_frequency: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    init=None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float32",
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """Ordinal embedding by batch gradient descent with a fixed step ("ncvx Batch").

    One epoch makes ``round((|Q| + 2m) / |Q|)`` gradient steps (3 for the
    paper's m = |Q|), the budget of an SVRG epoch.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
    learning_rate : float or "auto"
        The fixed step; ``"auto"`` measures the curvature at the start once.
    update_frequency : int, optional
        m of the SVRG epoch whose budget an epoch matches (default |Q|).
    max_iter, tol, init, init_scale, n_objects, validation, random_state,
    device, dtype, verbose, callback
        As in :func:`svrg_sbb`.

    Returns
    -------
    SolverResult
    """
    run = {
        "learning_rate": learning_rate,
        "max_iter": max_iter,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params("Batch GD", {"update_frequency": update_frequency}, _SGD_OWN)
    data = setup_options(
        loss, n_objects, init, init_scale, validation, random_state, device, dtype
    )
    s = _prepare(comparisons, n_components, data, run, "Batch GD", GD_CONSTRAINTS)
    return gradient_descent(
        s.problem,
        s.x0,
        steps_per_iteration=batch_steps_per_epoch(
            s.problem.n_samples, update_frequency
        ),
        evaluate=s.evaluate,
        name="Batch GD",
        **run,
    )


#: Default tolerance of :func:`lbfgs`: change per iteration relative to the
#: first objective (see its ``tol``; the measurements that chose it are in
#: :class:`~embedopt.ordinal.OrdinalEmbedding`).
DEFAULT_LBFGS_TOL = 1e-5


def lbfgs(
    comparisons,
    n_components: int = 2,
    *,
    loss="ste",
    max_iter: int = 1000,
    tol: float = DEFAULT_LBFGS_TOL,
    history_size: int = 10,
    lam: float = 0.0,
    init=None,
    init_scale: float = 1.0,
    n_objects: int | None = None,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float64",
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """Ordinal embedding by full-batch L-BFGS.

    SciPy's L-BFGS-B (:func:`~embedopt.optim.lbfgs`) on the mean loss,
    whose value and gradient are one vectorized pass over the comparisons
    in torch (on the device). What cblearn runs, with a faster pass; the
    hinge losses (GNMDS, SOE) are not smooth, but L-BFGS handles them in
    practice as it does in cblearn. On small problems every stochastic
    solver loses to it: their inner steps cost about 100 us of Python each.
    Up to :data:`AUTO_LBFGS_MAX_COMPARISONS` comparisons on a CPU the run
    uses one torch and one BLAS thread (:func:`~embedopt._core.few_threads`:
    on a busy 2-core machine a fit of 10^4 triplets took 4-5 s with two
    threads each, 0.06 s with one).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
    max_iter : int
        L-BFGS iterations (one history row each).
    tol : float
        Stop when an iteration changes the objective by at most ``tol``
        times its value after the first iteration
        (:class:`~embedopt.optim.RelativeChange` with
        ``relative_to="first"``). Relative to the current value, as the
        stochastic solvers test, the hinge losses never stop: on separable
        triplets they decay to 0 geometrically (GNMDS on the Table I
        problem: a relative change of 2-10 % per iteration long after the
        held-out error is flat).
    history_size : int
        Correction pairs kept by L-BFGS.
    lam : float
        Weight of the ridge ``lam ||X||_F^2`` added to the mean loss: the
        trace regularizer ``lam tr(G)`` of the convex solver
        (:func:`~embedopt.ordinal.projected_gd`) on the factor ``G = X X^T``.
        For a likelihood loss (STE, CKL), ``lam = 1 / (2 |Q|)`` makes the fit
        the MAP estimate under a standard normal prior on the coordinates
        (what :class:`~embedopt.ordinal.OrdinalEmbedding` uses by default).
    init_scale : float
        Standard deviation of the random start: N(0, I) as in cblearn (see
        :class:`~embedopt.ordinal.OrdinalEmbedding` for the measurements).
    dtype : {"float64", "float32"}
        float64, SciPy's own precision: its line search needs f and the
        gradient to it near the end.
    init, n_objects, validation, random_state, device, verbose, callback
        As in :func:`svrg_sbb` (``validation`` is evaluated every iteration).

    Returns
    -------
    SolverResult
        History per iteration: iteration, time, objective, grad_norm and,
        with validation, val_error.
    """
    run = {
        "max_iter": max_iter,
        "tol": tol,
        "history_size": history_size,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params("lbfgs", dict(lam=lam), {"lam": [Interval(float, 0, None)]})
    data = setup_options(
        loss, n_objects, init, init_scale, validation, random_state, device, dtype
    )
    s = _prepare(comparisons, n_components, data, run, "L-BFGS", LBFGS_CONSTRAINTS)
    small = (
        s.problem.device.type == "cpu"
        and s.problem.n_samples <= AUTO_LBFGS_MAX_COMPARISONS
    )
    with few_threads(1, enabled=small):
        return _lbfgs(
            _with_ridge(s.problem.value_and_grad, lam),
            s.x0,
            stop="initial_objective",
            evaluate=s.evaluate,
            name="L-BFGS",
            **run,
        )


def _with_ridge(value_and_grad, lam: float):
    """``X -> (f(X) + lam ||X||^2, grad f(X) + 2 lam X)`` (f itself if lam is 0)."""
    if not lam:
        return value_and_grad

    def penalized(X):
        f, g = value_and_grad(X)
        f += lam * float(torch.sum(X * X, dtype=torch.float64))
        return f, g.add(X, alpha=2.0 * lam)

    return penalized


#: Solvers by name (the estimator's ``solver`` parameter; "cvx" is the convex
#: Gram-matrix baseline :func:`~embedopt.ordinal.projected_gd`).
SOLVERS = Registry(
    "solver",
    {
        "svrg_sbb": svrg_sbb,
        "svrg_sbb_pl": svrg_sbb_pl,
        "svrg": svrg,
        "sgd": sgd,
        "gd": batch_gd,
        "cvx": projected_gd,
        "lbfgs": lbfgs,
    },
    owner="embedopt.ordinal",
)


#: ``get_solver(name)``: the solver function of that name (any accepted
#: spelling); an unknown name raises InvalidParameterError listing the valid ones.
get_solver = SOLVERS.get
