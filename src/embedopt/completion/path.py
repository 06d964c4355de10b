"""Regularization paths with warm starts and validation-based selection.

The paper picks lambda on a validation set; :func:`lambda_path` does that
loop: a decreasing geometric grid from lambda_max (the smallest lambda with an
all-zero solution), each solve warm-started from the previous solution at
its own lambda (the path is the continuation; only the first solve decays
lambda_t from lambda_max), the validation error recorded after
optional post-processing, and early stopping once the validation error stops
improving.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .._core import (
    DeviceLike,
    DtypeLike,
    InstanceOf,
    Interval,
    InvalidParameterError,
    Options,
    RandomStateLike,
    resolve_random_state,
    validate_params,
)
from ..data import ObservedEntries
from ..linalg.distributed import Communicator
from ..optim import SolverResult
from .binary import LossCentering, offset_problems
from .centering import Centering
from .distributed import distributed_problems
from .losses import Loss, SquareLoss
from .postprocess import postprocess as _postprocess
from .postprocess import refine as _refine
from .problem import (
    CompletionProblem,
    EntriesLike,
    Factors,
    _as_problem,
    problem_pair,
)
from .proximal import check_mode_weights, check_solver_options, proximal_completion
from .regularizers import Regularizer
from .solvers import SOLVERS, method_options

__all__ = [
    "REFINE_MAX_RANK",
    "CompletionFit",
    "PathResult",
    "completion_problems",
    "fit_path",
    "lambda_path",
    "refit_entries",
    "refit_sample_weight",
    "warm_refit",
]

#: Highest rank whose refinement ``postprocess="auto"`` scores: a sweep costs
#: O(|Omega| r^2 + (m + n) r^3), and at higher ranks the rank-r least squares
#: overfits what the nuclear norm's shrinkage holds back (MovieLens).
REFINE_MAX_RANK = 32


@dataclass
class PathResult:
    """Solutions along a lambda path.

    Attributes
    ----------
    lambdas : numpy.ndarray
        The lambdas solved, in decreasing order.
    scores : numpy.ndarray
        Validation metric at each lambda (RMSE, or accuracy for +/-1 losses),
        after post-processing when it was used.
    ranks : numpy.ndarray
    times : numpy.ndarray
        Solver seconds per lambda.
    postprocessed : numpy.ndarray of bool
        Whether the scored solution at each lambda is the post-processed one.
    factors : list of tuple
        ``(U, s, V)`` tensors per lambda (post-processed where
        ``postprocessed``).
    results : list of SolverResult
        Raw solver results per lambda.
    best_index : int
        Index of the best validation score.
    metric : str
        ``"rmse"`` (lower is better) or ``"accuracy"`` (higher is better).
    refined : numpy.ndarray of bool
        Whether the scored solution at each lambda is the rank-r refinement
        (:func:`~embedopt.completion.postprocess.refine`) of the raw one
        (then ``postprocessed`` is True too).
    """

    lambdas: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray
    times: np.ndarray
    postprocessed: np.ndarray
    factors: list = field(repr=False)
    results: list = field(repr=False)
    best_index: int
    metric: str
    refined: np.ndarray = None

    def __post_init__(self):
        if self.refined is None:
            self.refined = np.zeros(len(self.lambdas), dtype=bool)

    def summary(self) -> dict:
        """The per-lambda arrays and the metric (what the estimators keep)."""
        return dict(
            lambdas=self.lambdas,
            scores=self.scores,
            ranks=self.ranks,
            times=self.times,
            metric=self.metric,
            postprocessed=self.postprocessed,
            refined=self.refined,
        )

    @property
    def best_lambda(self) -> float:
        """The selected lambda."""
        return float(self.lambdas[self.best_index])

    @property
    def best_factors(self) -> Factors | list[Factors]:
        """``(U, s, V)`` at the selected lambda."""
        return self.factors[self.best_index]

    @property
    def best_result(self) -> SolverResult:
        """Solver result at the selected lambda."""
        return self.results[self.best_index]


_PATH_CONSTRAINTS = {
    "solver": [Options(SOLVERS), Options(["auto"])],
    "n_lambdas": [Interval(int, 1, None)],
    "lambda_min_ratio": [Interval(float, 0, 1, closed="neither")],
    "patience": [Interval(int, 1, None), None],
    "postprocess": ["boolean", Options(["auto"])],
}


def lambda_path(
    X: EntriesLike | CompletionProblem,
    validation: EntriesLike | None = None,
    *,
    lambdas: Sequence[float] | None = None,
    n_lambdas: int = 20,
    lambda_min_ratio: float = 1e-3,
    solver: str = "ais_impute",
    postprocess: bool | str = "auto",
    patience: int | None = 1,
    loss: str | Loss = "square",
    shape: tuple[int, ...] | None = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    mode_weights: Sequence[float] | None = None,
    regularizer: Regularizer | None = None,
    random_state: RandomStateLike = None,
    **solver_options,
) -> PathResult:
    """Solve along a decreasing lambda grid and select lambda on validation data.

    Parameters
    ----------
    X : ObservedEntries, scipy.sparse, tuple, dense array with NaN, or
        CompletionProblem
        Training entries (a CompletionProblem may already carry validation
        entries).
    validation : same types, optional
        Validation entries (required unless ``X`` is a CompletionProblem with
        validation entries).
    lambdas : array-like, optional
        Explicit grid (sorted decreasingly before use). Default: ``n_lambdas``
        values from ``lambda_max`` down to ``lambda_min_ratio * lambda_max``,
        geometrically spaced, lambda_max excluded.
    n_lambdas : int
    lambda_min_ratio : float
    solver : {"ais_impute", "ais_impute_exact", "soft_impute", "apg", "auto"}
        ``"auto"``: see :func:`~embedopt.completion.resolve_solver`.
    postprocess : bool or "auto"
        Refit singular values (Sec. 3.6) before scoring each lambda. ``"auto"``
        scores both the raw and the post-processed solution and keeps the
        better: post-processing removes the shrinkage bias (it wins at large
        lambda / low rank) but can overfit at small lambda / high rank; once
        the raw solution wins at a lambda other than the first, the smaller
        lambdas score the raw solution only. With
        the square loss on a matrix, "auto" also scores the rank-r refinement
        (:func:`~embedopt.completion.postprocess.refine`: the whole rank-r
        factorization refitted by alternating least squares) of each new rank
        up to 32 where the post-processed solution won, which fixes the
        subspaces that the singular-value refit keeps (Table III problem,
        m = 1000: test NMSE 0.037 -> 0.008). Only the raw / post-processed
        scores drive ``patience``: a refined candidate never ends the path
        early.
    patience : int or None
        Stop after this many consecutive lambdas without a better validation
        score (None: solve the whole grid); an accuracy (+/-1 losses) equal
        to the best one does not count. The default 1 stops at the first
        lambda that validates worse: the solves past the optimum are the
        expensive high-rank ones (MovieLens-1M: 546 of the 710 s of a
        patience-2 fit; ``benchmarks/completion/defaults.py``). Raise it when
        the validation set is small and its curve noisy.
    loss, shape, device, dtype
        See :class:`CompletionProblem`.
    mode_weights : sequence of float, optional
        Tensors: ``lambda_d = lam * mode_weights[d]`` (also scales the grid).
    regularizer : Regularizer, optional
        A nonconvex regularizer instead of the nuclear norm (None), with its
        weights recomputed at every iteration of each solve (see
        :func:`proximal_completion`); as its slope at 0 is 1, the grid from
        lambda_max is the nuclear norm's.
    random_state : None, int, numpy Generator or RandomState
    **solver_options
        ``max_iter``, ``tol``, ``lam_decay``, ``power_iters``, ``max_rank``,
        ``verbose``, ``callback`` of each solve (see :func:`ais_impute`;
        ``lam_decay`` acts in the first solve only, the others are
        warm-started at their own lambda).

    Returns
    -------
    PathResult
    """
    validate_params(
        "lambda_path",
        dict(
            solver=solver,
            n_lambdas=n_lambdas,
            lambda_min_ratio=lambda_min_ratio,
            patience=patience,
            postprocess=postprocess,
        ),
        _PATH_CONSTRAINTS,
    )
    check_solver_options("lambda_path", solver_options)
    problem = _path_problem(
        X, validation, mode_weights, loss=loss, shape=shape, device=device, dtype=dtype
    )
    rs = resolve_random_state(random_state, "lambda_path")
    grid = _grid(problem, lambdas, n_lambdas, lambda_min_ratio, mode_weights, rs)
    solves = _PathSolves(problem, solver, mode_weights, solver_options, regularizer)
    selection = _Patience(patience, higher_better=problem.loss.binary)
    path, refinements = _Path(), _Refinements(problem, postprocess)
    init, scoring = None, postprocess
    for lam in grid:
        res = solves.solve(lam, init, selection.best, rs.spawn())
        fac, score, used = _score(problem, res.x, scoring, selection.higher_better)
        if scoring == "auto" and path.lambdas and not used:
            # Once the raw solution validates better, it does so at every
            # smaller lambda (less shrinkage to undo, more rank to overfit):
            # stop paying for the refit (MovieLens-1M: three CG refits at
            # ranks 81-256, all lost, ~1 s each).
            scoring = False
        # Only where the singular-value refit already beat the raw solution:
        # shrinkage bias is then what limits the path (low-rank signal), and
        # on ratings, where it is not, the refinement never wins (MovieLens
        # latest-small: 2.2 of 4.7 s spent on refinements that lost).
        refined = refinements.better(res.x, score) if used else None
        path.add_scored(lam, res, fac, score, postprocessed=used, refined=refined)
        init = res.x
        # patience follows the path's own solutions, not their refinements
        if selection.stop(score):
            break
    return path.result(problem.metric_name, selection.higher_better)


def _path_problem(X, validation, mode_weights, **options) -> CompletionProblem:
    """The problem of a path, checked: it must carry validation entries."""
    problem = _as_problem(X, validation=validation, **options)
    check_mode_weights(mode_weights, problem.shape, "lambda_path")
    if problem.validation is None:
        raise InvalidParameterError(
            "lambda_path needs validation entries to select lambda: pass "
            "validation=... (e.g. from embedopt.data.split_entries)."
        )
    return problem


class _PathSolves:
    """The solve at each lambda of a path, warm-started from the previous one."""

    def __init__(
        self, problem: CompletionProblem, solver, mode_weights, options, regularizer
    ):
        self.problem, self.mode_weights = problem, mode_weights
        # only a nonconvex one is passed: the nuclear norm keeps its exact calls
        self.extra = {} if regularizer is None else {"regularizer": regularizer}
        self.method = method_options(solver)
        self.label = self.method.pop("name")
        self.options = dict(options)
        self.user_callback = self.options.pop("callback", None)

    def solve(self, lam, init, best, random_state) -> SolverResult:
        """Solve at ``lam`` from ``init``; stop early once past ``best``."""
        abort = _TurnedAway(
            f"val_{self.problem.metric_name}",
            best,
            self.problem.loss.binary,
            self.user_callback,
        )
        # A warm-started step starts at its own lambda: the path is the
        # continuation, and a second one inside each step (lambda_t decaying
        # from the previous grid point) only slows it down (MovieLens-1M:
        # 40 instead of 57 solver iterations, the same lambda and rank).
        return proximal_completion(
            self.problem,
            init,
            lam=float(lam),
            **self.method,
            mode_weights=self.mode_weights,
            random_state=random_state,
            name=f"{self.label} (lambda={lam:.4g})",
            callback=abort if abort.active else self.user_callback,
            **self.options,
            **self.extra,
        )


class _Patience:
    """Early stopping: ``patience`` lambdas in a row without a better score.

    An accuracy (``higher_better``) equal to the best one is a plateau, not
    a turn: it neither resets nor advances the count. Accuracy is a step
    function of the scores, and the first solutions of a +/-1 path (rank 1,
    shifting every score the same way) predict the majority sign at every
    validation entry, so their accuracies tie exactly; counting the tie
    ended the path there (Bitcoin Alpha, one of 5 splits: rank 1, test
    accuracy 0.937 instead of 0.955; ``benchmarks/completion/
    link_prediction.py``). RMSEs never tie in practice; the rule is kept to
    accuracies so that the square loss's paths are unchanged.
    """

    def __init__(self, patience: int | None, *, higher_better: bool):
        self.patience, self.higher_better = patience, higher_better
        self.best, self.stale = None, 0

    def stop(self, score: float) -> bool:
        """Record ``score``; whether the path should stop."""
        if self.best is None or (
            score > self.best if self.higher_better else score < self.best
        ):
            self.best, self.stale = score, 0
            return False
        if self.higher_better and score == self.best:
            return False
        self.stale += 1
        return self.patience is not None and self.stale >= self.patience


class _Path:
    """The solutions of a lambda path as they come, then its :class:`PathResult`."""

    def __init__(self):
        self.lambdas, self.scores, self.ranks, self.times = [], [], [], []
        self.factors, self.results, self.postprocessed, self.refined = [], [], [], []

    def add(self, lam, result, factors, score, *, postprocessed, refined) -> None:
        """Record the solution scored at ``lam`` (``result``: its raw solve)."""
        self.lambdas.append(float(lam))
        self.scores.append(score)
        self.ranks.append(_rank(factors))
        self.times.append(result.elapsed)
        self.factors.append(factors)
        self.results.append(result)
        self.postprocessed.append(postprocessed)
        self.refined.append(refined)

    def add_scored(self, lam, result, factors, score, *, postprocessed, refined):
        """Record the scored solution, or ``refined = (factors, score)`` if given."""
        if refined is None:
            self.add(
                lam, result, factors, score, postprocessed=postprocessed, refined=False
            )
        else:
            self.add(lam, result, *refined, postprocessed=True, refined=True)

    def result(self, metric: str, higher_better: bool) -> PathResult:
        """The path so far, with its best score selected."""
        scores = np.asarray(self.scores)
        best = int(np.argmax(scores) if higher_better else np.argmin(scores))
        return PathResult(
            np.asarray(self.lambdas),
            scores,
            np.asarray(self.ranks),
            np.asarray(self.times),
            np.asarray(self.postprocessed, dtype=bool),
            self.factors,
            self.results,
            best,
            metric,
            np.asarray(self.refined, dtype=bool),
        )


class _Refinements:
    """The rank-r refinements that ``postprocess="auto"`` scores along a path.

    Only with the square loss on a matrix, and once per rank up to
    :data:`REFINE_MAX_RANK`.
    """

    def __init__(self, problem: CompletionProblem, postprocess):
        self.problem = problem
        self.enabled = (
            postprocess == "auto"
            and isinstance(problem.loss, SquareLoss)
            and len(problem.unfoldings) == 1
            # refine's ALS has no data-parallel form here
            and not problem.distributed
        )
        self.tried: set[int] = set()

    def better(self, x, score: float):
        """The refinement of the raw solution ``x`` and its score, or None.

        None unless ``x`` has a rank not tried yet, up to
        :data:`REFINE_MAX_RANK`, and its refinement validates better than
        ``score``.
        """
        rank = _rank(x)
        if not self.enabled or not 0 < rank <= REFINE_MAX_RANK or rank in self.tried:
            return None
        self.tried.add(rank)
        candidate = _refine(self.problem, *x)
        candidate_score = self.problem.validation_score(candidate)
        return (candidate, candidate_score) if candidate_score < score else None


class _TurnedAway:
    """Callback that ends a path step once its validation score has turned away.

    A step past the validation optimum is the most expensive one of a path
    (its rank is the highest) and is solved only to be discarded. Its iterates
    show it early: their validation score is worse than the best lambda's and
    keeps getting worse. After ``window`` consecutive worsening iterations
    that end worse than the best score, the step stops (stop reason
    "callback") and is scored as it is; it still validates worse than the
    best step, so the selected lambda is the same. Two worsening iterations
    are enough: every selected lambda of the defaults benchmark
    (``benchmarks/completion/defaults.py``) is the same with a window of 3,
    2 or 1 (figures in ``benchmarks/completion/README.md``).
    """

    window = 2

    def __init__(self, key, best, higher_better, user=None):
        self.key, self.best, self.higher = key, best, higher_better
        self.user = user
        self.trace: list[float] = []
        # Nothing to compare with before the first score.
        self.active = best is not None

    def _worse(self, a: float, b: float) -> bool:
        return a < b if self.higher else a > b

    def __call__(self, state) -> bool:
        if self.user is not None and self.user(state):
            return True
        value = state.values.get(self.key)
        if value is None:
            return False
        self.trace.append(float(value))
        t = self.trace[-(self.window + 1) :]
        return (
            len(t) == self.window + 1
            and all(self._worse(b, a) for a, b in itertools.pairwise(t))
            and self._worse(t[-1], self.best)
        )


def _grid(problem, lambdas, n_lambdas, lambda_min_ratio, mode_weights, rs):
    """The decreasing lambda grid: the user's, or geometric below lambda_max."""
    if lambdas is not None:
        grid = np.sort(np.asarray(lambdas, dtype=float).ravel())[::-1]
        if grid.size == 0 or (grid <= 0).any():
            raise InvalidParameterError(
                "The 'lambdas' parameter of lambda_path must hold positive floats. "
                f"Got {lambdas!r}."
            )
        return grid
    lmax = problem.lambda_max(generator=rs.torch("cpu"))
    if problem.ndim > 2:
        # lambda_d = lam * w_d: the path starts where every mode is zero.
        w = check_mode_weights(mode_weights, problem.shape, "lambda_path")
        lmax = max(lm / wd for lm, wd in zip(lmax, w, strict=True))
    return lmax * np.geomspace(1.0, lambda_min_ratio, n_lambdas + 1)[1:]


def _rank(factors) -> int:
    """Rank of a matrix solution, or the sum of the per-mode ranks."""
    if isinstance(factors, tuple):
        return int(factors[1].numel())
    return sum(int(f[1].numel()) for f in factors)


def _score(problem: CompletionProblem, factors, postprocess, higher_better):
    """Validation score of the raw and/or post-processed solution; the better."""
    raw_score = None
    if postprocess is not True:
        raw_score = problem.validation_score(factors)
        if postprocess is False:
            return factors, raw_score, False
    pp = _postprocess_any(problem, factors)
    pp_score = problem.validation_score(pp)
    if raw_score is None:
        return pp, pp_score, True
    better = pp_score > raw_score if higher_better else pp_score < raw_score
    return (pp, pp_score, True) if better else (factors, raw_score, False)


def _postprocess_any(problem: CompletionProblem, factors):
    """Post-process a matrix ``(U, s, V)`` or a list of per-mode factors."""
    if isinstance(factors, tuple):
        return _postprocess(problem, *factors)
    return _postprocess(problem, factors)


@dataclass
class CompletionFit:
    """What :func:`fit_path` returns.

    Attributes
    ----------
    factors : tuple or list of tuple
        ``(U, s, V)`` tensors of the final solution (one per mode for tensors),
        post-processed or refined when that was chosen.
    result : SolverResult
        The final solve (the refit when there was one; the path's solve at
        the selected lambda when its refinement was selected, which is then
        refined again on the refit problem instead).
    lam : float
        The lambda used (the selected one with ``lam="auto"``).
    path : PathResult or None
        The lambda path, with ``lam="auto"``.
    refined : bool
        Whether ``factors`` is the rank-r refinement of the selected solution
        (see :func:`lambda_path`).
    """

    factors: object = field(repr=False)
    result: SolverResult = field(repr=False)
    lam: float
    path: PathResult | None = field(default=None, repr=False)
    refined: bool = False


_FIT_CONSTRAINTS = {
    "lam": [Interval(float, 0, None, closed="neither"), Options(["auto"])],
    "refit_problem": [InstanceOf(CompletionProblem, "a CompletionProblem"), None],
}


def fit_path(
    problem: CompletionProblem,
    *,
    lam: float | Literal["auto"] = "auto",
    refit_problem: CompletionProblem | None = None,
    solver: str = "ais_impute",
    postprocess: bool | str = "auto",
    n_lambdas: int = 20,
    lambda_min_ratio: float = 1e-3,
    patience: int | None = 1,
    mode_weights: Sequence[float] | None = None,
    regularizer: Regularizer | None = None,
    random_state: RandomStateLike = None,
    **solver_options,
) -> CompletionFit:
    """The whole fit of the completion estimators: path, refit, post-processing.

    With ``lam="auto"``: :func:`lambda_path` on ``problem`` (which must carry
    validation entries) selects lambda; with ``refit_problem`` (e.g. training
    plus validation entries) the selected solution is then refitted there,
    warm-started (so cheap), and post-processed if the path's selected
    solution was. With a float ``lam``: one solve at that lambda, then
    post-processing unless ``postprocess`` is False.

    Parameters
    ----------
    problem : CompletionProblem
    lam : float or "auto"
    refit_problem : CompletionProblem, optional
        Where to refit after the path (``lam="auto"`` only). A nonconvex
        ``regularizer`` is frozen there at the selected matrix solution (its
        weighted nuclear norm, see ``_frozen_regularizer``).
    solver : {"ais_impute", "ais_impute_exact", "soft_impute", "apg", "auto"}
    postprocess : bool or "auto"
        See :func:`lambda_path`; with a float ``lam``, "auto" means True.
    n_lambdas, lambda_min_ratio, patience
        The path (see :func:`lambda_path`).
    mode_weights : sequence of float, optional
        Tensors: ``lambda_d = lam * mode_weights[d]``.
    regularizer : Regularizer, optional
        Nonconvex regularizer of every solve (see :func:`lambda_path`);
        None: the nuclear norm.
    random_state : None, int, numpy Generator or RandomState
    **solver_options
        ``max_iter``, ``tol``, ``lam_decay``, ``power_iters``, ``max_rank``,
        ``verbose``, ``callback`` of :func:`proximal_completion`.

    Returns
    -------
    CompletionFit
    """
    validate_params(
        "fit_path", dict(lam=lam, refit_problem=refit_problem), _FIT_CONSTRAINTS
    )
    check_solver_options("fit_path", solver_options)
    rs = resolve_random_state(random_state, "fit_path")
    method = method_options(solver)
    if regularizer is not None:
        solver_options = {**solver_options, "regularizer": regularizer}
    if lam != "auto":
        result = proximal_completion(
            problem,
            lam=float(lam),
            **method,
            mode_weights=mode_weights,
            random_state=rs.spawn(),
            **solver_options,
        )
        factors = result.x
        if postprocess:
            factors = _postprocess_any(problem, factors)
        return CompletionFit(factors, result, float(lam))
    path = lambda_path(
        problem,
        solver=solver,
        postprocess=postprocess,
        n_lambdas=n_lambdas,
        lambda_min_ratio=lambda_min_ratio,
        patience=patience,
        mode_weights=mode_weights,
        random_state=rs.spawn(),
        **solver_options,
    )
    result, factors = path.best_result, path.best_factors
    if refit_problem is not None and path.refined[path.best_index]:
        # The selected solution is a refined factorization: refine it on the
        # refit entries too (a nuclear-norm solve would undo the refinement).
        factors = _refine(refit_problem, *factors)
    elif refit_problem is not None:
        result = proximal_completion(
            refit_problem,
            result.x,
            lam=path.best_lambda,
            **method,
            mode_weights=mode_weights,
            random_state=rs.spawn(),
            **_frozen_regularizer(solver_options, result.x, path.best_lambda),
        )
        factors = result.x
        if path.postprocessed[path.best_index]:
            factors = _postprocess_any(refit_problem, factors)
    refined = bool(path.refined[path.best_index])
    return CompletionFit(factors, result, path.best_lambda, path, refined)


def _frozen_regularizer(solver_options: dict, start, lam: float) -> dict:
    """``solver_options`` with a nonconvex regularizer frozen at ``start``.

    A refit starts from a solution the validation entries chose, then solves
    on more entries. With a nonconvex penalty reweighted at every iteration
    it does not stay near that solution: the penalty stops shrinking every
    singular value that grows past ``theta``, and the refit can descend far
    into a lower-objective, overfitted one (MCP on latest-small, 80/20 seed
    1: test RMSE 0.911 after the refit, 0.859 before it, 0.857 frozen;
    ``benchmarks/completion/libmf_peer.py --seed 1 --variants
    '{"regularizer": "mcp"}'``). Frozen, the refit solves the convex-step
    problem of the selected solution: the weighted nuclear norm with the
    weights ``rbar'(sigma_i)`` of the start's singular values (one DC /
    IRNN linearization), whose minimizer stays where validation looked.
    Matrices only: a tensor's modes would each need their own weights, so a
    tensor refit keeps reweighting.
    """
    reg = solver_options.get("regularizer")
    if reg is None or reg.convex or not isinstance(start, tuple):
        return solver_options
    options = {k: v for k, v in solver_options.items() if k != "regularizer"}
    return {**options, "weights": reg.at(lam).weights(start[1])}


def warm_refit(
    problem: CompletionProblem,
    init: Factors | list[Factors],
    *,
    lam: float,
    solver: str = "ais_impute",
    finish: Literal["none", "postprocess", "refine"] = "postprocess",
    mode_weights: Sequence[float] | None = None,
    regularizer: Regularizer | None = None,
    random_state: RandomStateLike = None,
    **solver_options,
) -> CompletionFit:
    """One solve at a known lambda from a warm start, finished as a fit was.

    What ``partial_fit(refit="all")`` runs: the fitted model's factors
    (grown by new rows) are the start, ``lam`` is the fitted lambda, and the
    solution is post-processed (``finish="postprocess"``) or refined
    (``"refine"``: the start itself refined on ``problem``, as
    :func:`fit_path` refits a refined selection) the way the fit's was.

    Parameters
    ----------
    problem : CompletionProblem
    init : tuple (U, s, V) or list of them
        The start, an SVD per unfolding (orthonormal columns).
    lam : float
    solver : {"ais_impute", "ais_impute_exact", "soft_impute", "apg", "auto"}
    finish : {"none", "postprocess", "refine"}
    mode_weights : sequence of float, optional
    regularizer : Regularizer, optional
        The fit's nonconvex regularizer (None: the nuclear norm); on a
        matrix its weights are frozen at the start's singular values, as in
        :func:`fit_path`'s refit.
    random_state : None, int, numpy Generator or RandomState
    **solver_options
        ``max_iter``, ``tol``, ``lam_decay``, ``power_iters``, ``max_rank``,
        ``verbose``, ``callback`` of :func:`proximal_completion`.

    Returns
    -------
    CompletionFit
        ``result`` is the warm solve (with ``"refine"`` too, for its
        objective and history).
    """
    check_solver_options("warm_refit", solver_options)
    rs = resolve_random_state(random_state, "warm_refit")
    if regularizer is not None:
        # Frozen at the start as fit_path's refit is (see _frozen_regularizer).
        solver_options = {**solver_options, "regularizer": regularizer}
        solver_options = _frozen_regularizer(solver_options, init, lam)
    result = proximal_completion(
        problem,
        init,
        lam=float(lam),
        **method_options(solver),
        mode_weights=mode_weights,
        random_state=rs.spawn(),
        **solver_options,
    )
    factors = result.x
    if finish == "refine":
        factors = _refine(problem, *init)
    elif finish == "postprocess":
        factors = _postprocess_any(problem, factors)
    return CompletionFit(factors, result, float(lam), refined=finish == "refine")


def refit_entries(
    entries: ObservedEntries, validation: ObservedEntries | None
) -> ObservedEntries:
    """The entries of the refit after a path: ``entries`` plus new ``validation`` ones.

    The refit uses every entry a fit was given: the training entries and,
    when they came separately, the validation entries (a held-out part of
    ``entries`` is in ``entries`` already; pass ``validation=None`` then).

    Parameters
    ----------
    entries : ObservedEntries
    validation : ObservedEntries or None

    Returns
    -------
    ObservedEntries
        ``entries`` itself when ``validation`` adds no position (or when the
        positions are too many to number in int64).
    """
    keep = _added(entries, validation)
    if keep is None:
        return entries
    return ObservedEntries(
        np.concatenate([entries.indices, validation.indices[keep]]),
        np.concatenate([entries.values, validation.values[keep]]),
        entries.shape,
        validate=False,
    )


def refit_sample_weight(
    entries: ObservedEntries,
    validation: ObservedEntries | None,
    sample_weight: np.ndarray | None,
) -> np.ndarray | None:
    """The weights of :func:`refit_entries`' entries: ``sample_weight``, then 1s.

    Parameters
    ----------
    entries, validation : ObservedEntries
        As in :func:`refit_entries`.
    sample_weight : numpy.ndarray of shape (entries.nnz,) or None
        The weights of ``entries``.

    Returns
    -------
    numpy.ndarray or None
        None without ``sample_weight``; otherwise ``sample_weight`` followed
        by weight 1 for each entry that ``validation`` adds (validation
        entries given apart from the training entries carry no weights).
    """
    if sample_weight is None:
        return None
    keep = _added(entries, validation)
    if keep is None:
        return sample_weight
    return np.concatenate([sample_weight, np.ones(int(keep.sum()))])


def _added(entries: ObservedEntries, validation: ObservedEntries | None):
    """Mask of the ``validation`` entries at positions new to ``entries``, or None.

    None when there are none (or the positions are too many to number).
    """
    if validation is None or validation is entries:
        return None
    try:
        have = np.ravel_multi_index(tuple(entries.indices.T), entries.shape)
        new = np.ravel_multi_index(tuple(validation.indices.T), entries.shape)
    except ValueError:  # more positions than int64 can number: keep entries
        return None
    keep = ~np.isin(new, have)
    return keep if keep.any() else None


def completion_problems(
    centering: Centering,
    train: ObservedEntries,
    validation: ObservedEntries | None,
    refit: ObservedEntries | None = None,
    *,
    loss: str | Loss = "square",
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    sample_weight: np.ndarray | None = None,
    validation_weight: np.ndarray | None = None,
    refit_weight: np.ndarray | None = None,
    process_group: Communicator | None = None,
) -> tuple[CompletionProblem, CompletionProblem | None]:
    """The problems a fit solves, on the centered scale: path (or solve) and refit.

    Parameters
    ----------
    centering : Centering
        Fitted; applied to every set of entries.
    train, validation : ObservedEntries
        The problem that :func:`fit_path` solves (validation may be None).
    refit : ObservedEntries, optional
        The entries of the refit problem (see :func:`refit_entries`).
    loss, device, dtype
        As in :class:`CompletionProblem`.
    sample_weight, validation_weight, refit_weight : numpy.ndarray, optional
        The weights of ``train``, ``validation`` and ``refit`` entries (see
        :class:`CompletionProblem`).
    process_group : Communicator, optional
        Build :class:`~embedopt.completion.DistributedCompletionProblem`
        over its processes, the two with the same rows per process.

    Returns
    -------
    problem, refit_problem : CompletionProblem, CompletionProblem or None
    """
    options = {"loss": loss, "device": device, "dtype": dtype}
    if process_group is not None:
        return distributed_problems(
            centering,
            train,
            validation,
            refit,
            process_group,
            **options,
            sample_weight=sample_weight,
            validation_weight=validation_weight,
            refit_weight=refit_weight,
        )
    if isinstance(centering, LossCentering) and centering.center != "none":
        weights = dict(
            sample_weight=sample_weight,
            validation_weight=validation_weight,
            refit_weight=refit_weight,
        )
        return offset_problems(
            centering, train, validation, refit, **options, **weights
        )

    def make(entries, validation=None, **weights):
        held = None if validation is None else centering.transform(validation)
        return CompletionProblem(
            centering.transform(entries), validation=held, **weights, **options
        )

    return problem_pair(
        make,
        (train, validation, refit),
        (sample_weight, validation_weight, refit_weight),
    )
