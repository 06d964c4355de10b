"""The paper's solvers of non-convex ordinal embedding, what "auto" picks, the policy.

All solve ``min_X (1/|Q|) sum_q ell_q(X)`` over the embedding X (eq. (5))
and share one budget unit (Ma et al., Sec. 5.1): an *epoch* costs
``|Q| + 2m`` gradient evaluations of single comparisons, what an SVRG epoch
with update frequency m costs (``3 |Q|`` for the paper's ``m = |Q|``).

=================  ======================================================
``svrg_sbb``       Algorithm 1: SVRG with stabilized BB steps (eq. (17));
                   ``epsilon = 0`` is SVRG-SBB_0
``svrg_sbb_pl``    Algorithm 2: modules of Algorithm 1 restarted from their
                   random iterate (linear rate under the PL inequality)
``lbfgs``          full-batch L-BFGS (SciPy's L-BFGS-B on the torch
                   objective), what ``solver="auto"`` runs on small problems
=================  ======================================================

The paper's comparison methods (SVRG with a fixed step, SGD, batch gradient
descent, the convex Gram-matrix baseline) are in
:mod:`embedopt.ordinal.baselines`; :data:`SOLVERS` names them all. Every
solver has one call shape: ``(comparisons, n_components, *, init, max_iter,
tol, random_state, device, dtype, verbose, callback, <its own options>)``.
Every inner step of the stochastic solvers costs O(b p), independent of the
number of objects (lazy full-gradient term, see :mod:`embedopt.optim.svrg`).

The policy of :class:`~embedopt.ordinal.OrdinalEmbedding` lives here too, in
named functions: :func:`resolve_solver` (``solver="auto"``),
:func:`resolve_lam` (``lam="auto"``), :func:`resolve_n_init`
(``n_init="auto"``), :func:`solver_defaults` (the parameters left at None)
and :func:`lbfgs_threads` (the thread limit of small L-BFGS fits). Why each
default is what it is, with the runs that chose it: ``benchmarks/ordinal/
README.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from numpy.typing import ArrayLike

from .._core import (
    DeviceLike,
    DtypeLike,
    Interval,
    InvalidParameterError,
    RandomStateLike,
    Registry,
    few_threads,
    validate_params,
)
from ..data import Comparisons
from ..optim import (
    LBFGS_CONSTRAINTS,
    SVRG_CONSTRAINTS,
    IterationState,
    SolverResult,
)
from ..optim import lbfgs as _lbfgs
from ..optim import svrg as _svrg
from .losses import OrdinalLoss
from .problem import OrdinalProblem, setup, setup_options

__all__ = [
    "AUTO_LBFGS_MAX_COMPARISONS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EPSILON",
    "DEFAULT_INIT_SCALE",
    "DEFAULT_LBFGS_TOL",
    "SOLVERS",
    "get_solver",
    "lbfgs",
    "lbfgs_threads",
    "resolve_lam",
    "resolve_n_init",
    "resolve_solver",
    "solver_defaults",
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
#: Default tolerance of :func:`lbfgs`: change per iteration relative to the
#: first objective (see its ``tol``; ``benchmarks/ordinal/README.md`` has the
#: runs that chose it).
DEFAULT_LBFGS_TOL = 1e-5
#: ``solver="auto"`` runs full-batch L-BFGS up to this many comparisons and
#: SVRG-SBB above: with the compiled inner steps, default STE fits by
#: SVRG-SBB (m = |Q| / 4) overtake L-BFGS between 5 x 10^4 and 10^5
#: comparisons (``benchmarks/ordinal/threshold.py`` re-measures the crossing
#: for three losses; the figures are in ``benchmarks/ordinal/README.md``).
AUTO_LBFGS_MAX_COMPARISONS = 100_000


# -- policy: the estimator's "auto" rules and per-solver defaults --------------------
#: Solvers that take ``lam`` (the ridge ``lam ||X||^2`` = ``lam tr(G)``).
RIDGE_SOLVERS = ("cvx", "lbfgs")
#: Losses that are negative log-likelihoods, for which ``lam="auto"`` is a
#: standard normal prior on the coordinates.
LIKELIHOOD_LOSSES = ("ste", "ckl")
#: ``max_iter`` left at None: L-BFGS counts iterations (one full pass or a few
#: each), the others epochs.
_DEFAULT_MAX_ITER = {"lbfgs": 1000}
#: ``tol`` left at None: L-BFGS stops on a finer relative change than the
#: noisy epoch-to-epoch objective of the stochastic solvers allows; SVRG-SBB
#: on 1e-3, which large problems meet within the default epochs (1e-4 was
#: never met in 100 epochs at 10^6 triplets).
_DEFAULT_TOL = {"lbfgs": DEFAULT_LBFGS_TOL, "svrg_sbb": 1e-3}
#: SVRG-SBB samples this fraction of |Q| per epoch unless told otherwise, above
#: AUTO_LBFGS_MAX_COMPARISONS comparisons (where ``solver="auto"`` picks it):
#: the snapshot and the SBB step are refreshed four times as often per
#: gradient pass. On small problems the paper's m = |Q| stays: there the SBB
#: steps of quarter epochs overshoot.
_DEFAULT_UPDATE_FRACTION = {"svrg_sbb": 0.25}
#: ``dtype`` left at None: SciPy's L-BFGS-B works in float64 and its line
#: search needs f and its gradient to that precision near the end; the
#: stochastic solvers keep float32, twice as fast per inner step.
_DEFAULT_DTYPE = {"lbfgs": torch.float64}
#: ``init_scale`` left at None: N(0, I) for L-BFGS, the start of cblearn and
#: of SOE's authors; the stochastic solvers keep DEFAULT_INIT_SCALE.
_DEFAULT_INIT_SCALE = {"lbfgs": 1.0}


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


def resolve_lam(
    lam: float | Literal["auto"],
    solver: str,
    loss: OrdinalLoss,
    n_comparisons: float,
) -> float:
    """The ridge weight of a fit: ``lam`` with ``"auto"`` resolved.

    ``"auto"`` is ``1 / (2 |Q|)`` for the likelihood losses (STE, CKL) under
    a solver with a ridge term (:data:`RIDGE_SOLVERS`): the MAP estimate
    under a standard normal prior on every coordinate. It is 0 for the other
    losses and solvers. With weighted comparisons ``|Q|`` is the sum of the
    weights: a weight counts as that many repetitions of the comparison, in
    the likelihood as in the objective.

    Parameters
    ----------
    lam : float or "auto"
    solver : str
        The resolved solver name.
    loss : OrdinalLoss
    n_comparisons : float
        |Q|, or the sum of the weights of weighted comparisons.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameterError
        A nonzero ``lam`` for a solver without a ridge term.
    """
    if lam != "auto":
        if lam and solver not in RIDGE_SOLVERS:
            raise InvalidParameterError(
                f"lam={lam!r} needs solver='lbfgs' or 'cvx'; the "
                f"{solver!r} solver has no ridge term. Pass one of those "
                "solvers, or lam='auto'."
            )
        return float(lam)
    if solver in RIDGE_SOLVERS and loss.name in LIKELIHOOD_LOSSES:
        return 1.0 / (2.0 * n_comparisons)
    return 0.0


def resolve_n_init(
    n_init: int | Literal["auto"],
    loss: OrdinalLoss,
    n_components: int,
    init: ArrayLike | torch.Tensor | None,
) -> int:
    """The random starts of a fit: ``n_init`` with ``"auto"`` resolved.

    ``"auto"`` is 3 for SOE in at most 2 dimensions, whose hinge has poor
    local minima in the plane, and 1 otherwise (always 1 with an ``init``).

    Parameters
    ----------
    n_init : int or "auto"
    loss : OrdinalLoss
    n_components : int
    init : array-like or None
        The start given to ``fit``.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        Several starts asked for together with an ``init``.
    """
    if n_init != "auto":
        if n_init > 1 and init is not None:
            raise InvalidParameterError(
                f"n_init={n_init!r} asks for random starts, but fit got an "
                "init: pass n_init=1 (or 'auto') with an initial embedding."
            )
        return int(n_init)
    if init is None and loss.name == "soe" and n_components <= 2:
        return 3
    return 1


def solver_defaults(
    solver: str,
    n_comparisons: int,
    *,
    max_iter: int | None = None,
    tol: float | None = None,
    init_scale: float | None = None,
    dtype: DtypeLike = None,
    update_frequency: int | None = None,
) -> dict:
    """The run options of ``solver`` with the ones left at None filled in.

    Parameters
    ----------
    solver : str
        The resolved solver name.
    n_comparisons : int
    max_iter, tol, init_scale, dtype, update_frequency
        The values given (None: the solver's default).

    Returns
    -------
    dict
        ``max_iter``, ``tol``, ``init_scale``, ``dtype`` and, where the
        default differs from the solver's own (SVRG-SBB above
        :data:`AUTO_LBFGS_MAX_COMPARISONS` comparisons: ``|Q| / 4``),
        ``update_frequency``.
    """
    out = {
        "max_iter": max_iter or _DEFAULT_MAX_ITER.get(solver, 100),
        "tol": _DEFAULT_TOL.get(solver, 1e-4) if tol is None else tol,
        "init_scale": init_scale or _DEFAULT_INIT_SCALE.get(solver, DEFAULT_INIT_SCALE),
        "dtype": dtype or _DEFAULT_DTYPE.get(solver, torch.float32),
    }
    if (
        update_frequency is None
        and solver in _DEFAULT_UPDATE_FRACTION
        and n_comparisons > AUTO_LBFGS_MAX_COMPARISONS
    ):
        fraction = _DEFAULT_UPDATE_FRACTION[solver]
        out["update_frequency"] = max(1, int(fraction * n_comparisons))
    return out


def lbfgs_threads(problem: OrdinalProblem) -> int | None:
    """Threads of an L-BFGS run: 1 on a CPU up to AUTO_LBFGS_MAX_COMPARISONS.

    A full pass over that few comparisons is too short for two threads to
    pay off, and on a busy machine they contend (a fit of 10^4 triplets took
    seconds with two threads each, hundredths with one).

    Parameters
    ----------
    problem : OrdinalProblem

    Returns
    -------
    int or None
        The torch and BLAS thread limit, None for no limit.
    """
    small = (
        problem.device.type == "cpu" and problem.n_samples <= AUTO_LBFGS_MAX_COMPARISONS
    )
    return 1 if small else None


# -- shared pieces of the stochastic solvers (also used by the baselines) --------------
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


# -- the paper's solvers and L-BFGS ---------------------------------------------------
def svrg_sbb(
    comparisons: Comparisons | ArrayLike,
    n_components: int = 2,
    *,
    init: ArrayLike | torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float32",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    loss: str | OrdinalLoss = "ste",
    epsilon: float = DEFAULT_EPSILON,
    relative_epsilon: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    update_frequency: int | None = None,
    learning_rate: float | Literal["auto"] = "auto",
    output: str = "last",
    module_epochs: int | None = None,
    step_size: str = "sbb",
    lazy: bool = True,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation: Comparisons | ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Ordinal embedding by SVRG with stabilized Barzilai-Borwein steps (Algorithm 1).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
        Oriented triplets ``(i, j, k)`` / quadruplets ``(i, j, l, k)``: the
        first pair is the closer one.
    n_components : int
        p, the embedding dimension.
    init : array-like, shape (n_objects, n_components), optional
        Initial embedding; default i.i.d. ``N(0, init_scale^2)``. All rows
        equal (all zeros) is refused: a saddle point of every ordinal loss.
    max_iter : int
        Epochs S.
    tol : float
        Relative change of the objective between epochs that stops the run.
    random_state : None, int or numpy Generator
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    verbose : int
    callback : callable, optional
        ``callback(state) -> bool`` once per epoch; True stops.
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
    output : {"last", "random"}
        The last snapshot, or Algorithm 1's uniformly drawn inner iterate.
    module_epochs : int, optional
        Run Algorithm 2 with modules of this many epochs (see
        :func:`svrg_sbb_pl`); None runs Algorithm 1.
    step_size : {"sbb", "bb", "constant"}
        Step rule of the epochs: stabilized Barzilai-Borwein (Algorithm 1),
        plain Barzilai-Borwein, or the fixed ``learning_rate`` of the SVRG
        baseline (:func:`~embedopt.ordinal.svrg`).
    lazy : bool
        O(b p) inner steps; False runs the dense O(n p) update (for testing).
    init_scale : float
    n_objects : int, optional
        Number of objects (default: max index + 1).
    validation : Comparisons or array-like, optional
        Held-out comparisons; their triplet error is recorded each epoch in
        ``history["val_error"]`` (off the clock).
    sample_weight : array-like of float, shape (m,), optional
        One finite weight >= 0 per comparison (e.g. the reliability of the
        worker who answered it): the objective becomes the weighted mean
        ``(1 / sum w) sum_q w_q ell_q``. Comparisons are still drawn
        uniformly, each drawn term carrying its weight, so the stochastic
        gradients stay unbiased (see :mod:`embedopt.ordinal.problem`).
        None: all equal.

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
    data = setup_options(locals())
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
    comparisons: Comparisons | ArrayLike,
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
        Every other parameter of :func:`svrg_sbb` (``init``, the run options,
        the method's own).

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


def lbfgs(
    comparisons: Comparisons | ArrayLike,
    n_components: int = 2,
    *,
    init: ArrayLike | torch.Tensor | None = None,
    max_iter: int = 1000,
    tol: float = DEFAULT_LBFGS_TOL,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float64",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    loss: str | OrdinalLoss = "ste",
    history_size: int = 10,
    lam: float = 0.0,
    init_scale: float = 1.0,
    n_objects: int | None = None,
    validation: Comparisons | ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Ordinal embedding by full-batch L-BFGS.

    SciPy's L-BFGS-B (:func:`~embedopt.optim.lbfgs`) on the mean loss,
    whose value and gradient are one vectorized pass over the comparisons
    in torch (on the device). What cblearn runs, with a faster pass; the
    hinge losses (GNMDS, SOE) are not smooth, but L-BFGS handles them in
    practice as it does in cblearn. On small problems it finishes sooner
    than the stochastic solvers (see :data:`AUTO_LBFGS_MAX_COMPARISONS`).
    Up to :data:`AUTO_LBFGS_MAX_COMPARISONS` comparisons on a CPU the run
    uses one torch and one BLAS thread (:func:`lbfgs_threads`).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    init : array-like, shape (n_objects, n_components), optional
        As in :func:`svrg_sbb`.
    max_iter : int
        L-BFGS iterations (one history row each).
    tol : float
        Stop when an iteration changes the objective by at most ``tol``
        times its value after the first iteration
        (:class:`~embedopt.optim.RelativeChange` with
        ``relative_to="first"``). Relative to the current value, as the
        stochastic solvers test, the hinge losses never stop: on separable
        triplets they decay to 0 geometrically.
    random_state, device, verbose, callback
        As in :func:`svrg_sbb`.
    dtype : {"float64", "float32"}
        float64, SciPy's own precision: its line search needs f and the
        gradient to it near the end.
    loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss
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
        Standard deviation of the random start: N(0, I) as in cblearn.
    n_objects, validation, sample_weight
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
    data = setup_options(locals())
    s = _prepare(comparisons, n_components, data, run, "L-BFGS", LBFGS_CONSTRAINTS)
    threads = lbfgs_threads(s.problem)
    with few_threads(threads or 1, enabled=threads is not None):
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


#: Solvers by name (the estimator's ``solver`` parameter): these and the
#: baselines of :mod:`embedopt.ordinal.baselines`, which add themselves
#: ("svrg", "sgd", "gd", "cvx": the convex Gram-matrix baseline).
SOLVERS = Registry(
    "solver",
    {"svrg_sbb": svrg_sbb, "svrg_sbb_pl": svrg_sbb_pl, "lbfgs": lbfgs},
    owner="embedopt.ordinal",
)


#: ``get_solver(name)``: the solver function of that name (any accepted
#: spelling); an unknown name raises InvalidParameterError listing the valid ones.
get_solver = SOLVERS.get
