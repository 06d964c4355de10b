"""Scikit-learn style estimators of :mod:`embedopt.sdp`.

:class:`KernelLearning` (NPKL, Sec. 4.1) and :class:`ColoredMVU` (CMVU,
Sec. 4.2).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike
from scipy.cluster.vq import kmeans2

from .._core import (
    RUN_CONSTRAINTS,
    BaseEstimator,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    Interval,
    InvalidParameterError,
    NotFittedError,
    NumericalInstabilityError,
    Options,
    RandomStateLike,
    as_array,
    check_is_fitted,
    check_param,
    fill_doc,
    resolve_random_state,
    to_numpy,
)
from ..metrics import nearest_neighbor_accuracy, rand_index
from ..optim import IterationState
from .graphs import edge_bandwidth, extend_by_neighbors, knn_laplacian, knn_pairs
from .problem import (
    CMVUProblem,
    NPKLProblem,
    check_pairs,
    one_hot_labels,
    sample_pairs,
)
from .solvers import SOLVERS, default_tol, resolve_solver, select_lam

__all__ = ["ColoredMVU", "KernelLearning"]

# Estimator parameters that only some solvers take (by canonical solver name).
_SOLVER_PARAMS = {"aagd": ("gamma",), "bm_agd": (), "bm_lbfgs": ()}


def _features(X, min_rows: int = 2, before: str = "fitting") -> np.ndarray:
    arr = X.toarray() if sp.issparse(X) else as_array(X, "X")
    if arr.dtype.kind not in "biuf":  # text, objects, complex numbers
        raise DataValidationError(
            f"X must be a 2-D array of real features; cannot read it as one (got "
            f"dtype {arr.dtype})."
        )
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or arr.shape[0] < min_rows or arr.shape[1] < 1:
        least = f"at least {min_rows} patterns (rows) and " if min_rows else ""
        raise DataValidationError(
            f"X must be a 2-D array with {least}1 feature (column) or more; got "
            f"shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        row = int(np.nonzero(~np.isfinite(arr).all(axis=1))[0][0])
        raise DataValidationError(
            f"X has NaN or infinite features (first in row {row}); impute or drop "
            f"them before {before}."
        )
    return arr


# The constraints of the parameters every sdp estimator passes to its solver.
_SOLVE_CONSTRAINTS = {
    "solver": [Options(["auto"]), Options(SOLVERS)],
    "gamma": [
        Options(["auto", "eq17"]),
        Interval(float, 0, None, closed="neither"),
    ],
    "max_iter": [Interval(int, 1, None)],
    "tol": [Interval(float, 0, None), None],
    "init_scale": [Interval(float, 0, None, closed="neither")],
    **RUN_CONSTRAINTS,
}


def _labels(y, n: int) -> np.ndarray:
    """Class labels, one per pattern: numbers (not NaN) or strings."""
    y = as_array(y, "y")
    if y.shape != (n,):
        raise DataValidationError(
            f"y must have one label per pattern, shape ({n},); got {y.shape}."
        )
    if y.dtype.kind not in "biufUS":
        raise DataValidationError(
            f"y must hold class labels (ints, floats or strings); got dtype {y.dtype}."
        )
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise DataValidationError(
            f"y has a NaN or infinite label (first at pattern {row}); drop the "
            "unlabelled patterns or give them a class."
        )
    return y


def _check_rank(estimator, n: int) -> None:
    if estimator.n_components > n:
        raise InvalidParameterError(
            f"The 'n_components' parameter of {type(estimator).__name__} must be an "
            f"int in [1, n] = [1, {n}]. Got {estimator.n_components}."
        )


def _start(estimator, X):
    """The prologue of both fits: checked parameters and context, the checked
    float64 features (a NumPy array), their number n, and n_components checked
    against it."""
    ctx = estimator._start_fit()
    feats = _features(X)
    n = feats.shape[0]
    _check_rank(estimator, n)
    return ctx, feats, n


def _solve(estimator, solver: str, problem, ctx, init=None):
    """The one solver call of an sdp estimator's fit: the resolved ``solver``
    with the estimator's parameters and context; ``init`` a starting factor,
    default a random one of rank ``n_components``."""
    extra = estimator._param_values(_SOLVER_PARAMS[solver])
    tol = default_tol(solver) if estimator.tol is None else estimator.tol
    try:
        return SOLVERS.get(solver)(
            problem,
            estimator.n_components if init is None else init,
            max_iter=estimator.max_iter,
            tol=tol,
            init_scale=estimator.init_scale,
            **ctx.run_options(estimator),
            **extra,
        )
    except (OverflowError, np.linalg.LinAlgError, torch.linalg.LinAlgError) as exc:
        # A starting factor or lam far beyond the scale of the data overflows
        # the step-size arithmetic (gamma, the quartic line search) before the
        # solver's own check of a non-finite objective sees it.
        raise NumericalInstabilityError(
            f"{type(estimator).__name__}: the {solver} solve overflowed "
            f"({' '.join(str(exc).split())[:200]}). init_scale="
            f"{estimator.init_scale!r} or lam={estimator.lam!r} is too large for "
            "the scale of the data; lower them or rescale X."
        ) from exc


#: The Parameters, Returns and Raises of both estimators' ``score``.
_SCORE_DOC = """\
Parameters
----------
X : array-like, shape (n, d)
    The patterns of the fit (only their number is checked).
y : array-like, shape (n,)
    Their class labels (required).

Returns
-------
float

Raises
------
DataValidationError
    X with another number of rows than the fit, or no labels."""


#: The Parameters ``gamma`` to ``init_scale`` of both estimators (those of
#: :data:`_SOLVE_CONSTRAINTS` that :func:`_solve` hands to the solver).
_SOLVE_PARAMS_DOC = """\
gamma : {"auto", "eq17"} or float
    Penalty of AAGD (:func:`~embedopt.sdp.estimate_gamma`); used only
    when the solver that runs is ``"aagd"``.
max_iter : int
    Solver iterations.
tol : float, optional
    Relative objective change that stops the solver (for
    ``"bm_lbfgs"``, SciPy's ``ftol`` and ``gtol``). Default None:
    :func:`~embedopt.sdp.default_tol`, 1e-7, and 1e-8 for
    ``"bm_lbfgs"``, whose SciPy tests at 1e-7 sometimes stop on one
    short step above AAGD's objective (benchmarks/sdp/README.md,
    "Estimator defaults").
init_scale : float
    Row norm of the random starting factor."""

#: The Parameters ``device`` to ``callback`` of both estimators.
_RUN_PARAMS_DOC = """\
device : {"auto", "cpu", "cuda"} or torch.device
dtype : {"float64", "float32"}
    float64 by default: the objective is certified to 1e-6 relative.
verbose : int
callback : callable, optional
    ``callback(state) -> bool | None`` once per solver iteration."""

#: The fitted attributes every sdp estimator ends its Attributes with.
_FITTED_DOC = """\
solver_ : str
    The solver that ran (``"auto"`` resolved).
history_ : dict of numpy.ndarray
n_iter_ : int
stop_reason_ : str"""

#: The Returns of both ``fit`` and the first error they raise.
_FIT_RETURNS_DOC = """\
Returns
-------
self

Raises
------
InvalidParameterError
    A bad parameter, or ``n_components`` larger than n."""


def _score_labels(estimator, X, y) -> np.ndarray:
    """The checked labels of ``score``: X must be the fitted patterns (n rows)."""
    check_is_fitted(estimator, "embedding_")
    n = estimator.embedding_.shape[0]
    name = type(estimator).__name__
    rows = _features(X).shape[0]
    if rows != n:
        raise DataValidationError(
            f"{name}.score is transductive: X must be the {n} patterns of the fit; "
            f"got {rows} rows. To judge new patterns, place them with transform "
            "and score a classifier on their rows (a Pipeline of the embedding and "
            "a classifier)."
        )
    if y is None:
        raise DataValidationError(
            f"{name}.score needs the class labels y of the fitted patterns."
        )
    return _labels(y, n)


def _keep_features(estimator, feats: np.ndarray, edges: np.ndarray, bandwidth):
    """Store what :meth:`transform` needs: the patterns of the fit, their
    number of features, and the heat-kernel width (``bandwidth``, else the
    mean squared distance over the ``edges`` of the fit's graph)."""
    estimator.X_fit_ = feats
    estimator.n_features_in_ = int(feats.shape[1])
    estimator.bandwidth_ = (
        edge_bandwidth(feats, edges) if bandwidth is None else float(bandwidth)
    )


def _place(estimator, X) -> np.ndarray:
    """The rows of new patterns X (:meth:`KernelLearning.transform`)."""
    check_is_fitted(estimator, "embedding_")
    if not hasattr(estimator, "X_fit_"):  # a model file from before transform
        raise NotFittedError(
            f"This {type(estimator).__name__} was saved without the patterns of "
            "its fit, which transform needs; fit it again (or load a file saved "
            "by this version)."
        )
    feats = _features(X, min_rows=0, before="transforming")
    d = estimator.n_features_in_
    if feats.shape[1] != d:
        raise DataValidationError(
            f"X has {feats.shape[1]} features (columns); {type(estimator).__name__} "
            f"was fitted on {d}. Give the new patterns the features of the fit, in "
            "the same order."
        )
    return extend_by_neighbors(
        estimator.X_fit_,
        estimator.embedding_,
        feats,
        estimator.n_neighbors,
        estimator.bandwidth_,
    )


#: The description of both estimators' ``transform``.
_TRANSFORM_DOC = """Each new pattern x gets the mean of the rows of its ``n_neighbors``
nearest patterns of the fit (Euclidean, in feature space), weighted
by the heat kernel ``exp(-||x - x_j||^2 / bandwidth_)`` of the kNN
graph the fit smoothed over; a pattern equal to one of the fit gets
its own row of ``embedding_``. Chosen over a Nystrom-style extension
(kernel regression of the rows on an RBF base kernel), which placed
held-out digits less well for both estimators and costs a dense
n x n solve (benchmarks/sdp/transform_digits.py). Cost
``O(m n d)`` in blocks of rows, no fit.

Parameters
----------
X : array-like or scipy.sparse matrix, shape (m, d)
    New patterns with the features of the fit; m may be 0.

Returns
-------
numpy.ndarray, shape (m, n_components)

Raises
------
NotFittedError
    Before :meth:`fit`.
DataValidationError
    Not a 2-D array of real numbers, NaN or infinite features, or
    another number of features than the fit's."""

#: The fitted attributes that :meth:`transform` reads.
_TRANSFORM_ATTRS_DOC = """X_fit_ : numpy.ndarray, shape (n, d)
    The patterns of the fit (float64), whose neighbours place new ones.
n_features_in_ : int
bandwidth_ : float
    Heat-kernel width of :meth:`transform`'s weights"""


@fill_doc(
    solve_params=_SOLVE_PARAMS_DOC,
    run_params=_RUN_PARAMS_DOC,
    fitted=_FITTED_DOC,
    transform_attrs=_TRANSFORM_ATTRS_DOC,
)
class KernelLearning(BaseEstimator):
    """Nonparametric kernel learning from pairwise constraints (NPKL, eq. 13).

    Learns a PSD kernel ``K = V V^T`` (V: n x r, ``r = n_components``) of the
    n training patterns that minimizes
    ``1/2 sum_{{i,j} in Omega} (K_ij - T_ij)^2 + lam tr(K Lap)`` over the
    must-links (``T = 1``), cannot-links (``T = 0``) and the diagonal
    (``T = 1``), with ``Lap`` the normalized Laplacian of the symmetric
    ``n_neighbors``-NN graph with heat-kernel weights
    (:func:`~embedopt.sdp.knn_laplacian`), or a Laplacian given to
    :meth:`fit`. The SDP is solved on factors (:data:`~embedopt.sdp.SOLVERS`:
    Burer-Monteiro with L-BFGS on the CPU, AAGD, Algorithm 1, on CUDA; see
    ``solver``); memory is ``O((|Omega| + nnz(Lap) + n) r)``.

    Parameters
    ----------
    n_components : int
        Rank r of the learned kernel (the factor's columns); at most n.
    lam : float or "auto"
        Weight lambda of the smoothness term ``tr(K Lap)`` (default 1).
        ``"auto"`` chooses it on held-out pairs: 20 % of the must-links and
        of the cannot-links are held out, eq. 13 is solved on the rest for
        lambda = 1, 0.1, 0.01, 0.001 (each solve warm-started from the one
        before; the path stops at the first lambda whose held-out error is
        not lower), the lambda with the lowest held-out squared error of
        ``K_ij`` against its target (1 / 0) is kept, and the kernel is refit
        on all pairs from that solution; with fewer than 5 held-out pairs of
        a kind it takes lambda = 1 (:func:`~embedopt.sdp.select_lam`). The
        held-out error and the Rand index of :meth:`cluster` fall and rise
        together along the grid; ``"auto"`` is not the default because it
        costs about 15x the time of one fit and small lambdas converge
        slowly (benchmarks/sdp/README.md, "Rand index"). The paper fixes
        lambda = 10 for its Laplacian, whose scale it does not state.
    n_neighbors : int
        Neighbours of the kNN graph.
    bandwidth : float, optional
        Heat-kernel width t of ``exp(-||x_i - x_j||^2 / t)``; default the mean
        squared kNN distance.
    solver : {"auto", "aagd", "bm_lbfgs", "bm_agd"}
        ``"auto"`` or a name of :data:`~embedopt.sdp.SOLVERS`. ``"auto"``
        runs ``"bm_lbfgs"`` on the CPU and ``"aagd"`` (the paper's method)
        on CUDA (:func:`~embedopt.sdp.resolve_solver`); ``solver_`` says
        which ran. On the CPU, with every other parameter at its default,
        BM-L-BFGS is faster than AAGD (1.24x on the digits) and ends closer
        to the optimum, with the same Rand index of :meth:`cluster`
        (benchmarks/sdp/estimator_defaults.py). On CUDA, AAGD runs wholly
        on the device, while L-BFGS-B goes through SciPy on the CPU every
        iteration.
    n_pairs : int, optional
        Must-links and cannot-links (of each kind) sampled from ``y`` when
        :meth:`fit` gets labels instead of pairs; default ``n // 2``.
    {solve_params}
    random_state : None, int or numpy Generator
        Seeds the starting factor, the pair sampling and :meth:`cluster`.
    {run_params}

    Attributes
    ----------
    embedding_ : numpy.ndarray, shape (n, n_components)
        The factor V of the learned kernel ``K = V V^T``.
    embedding_tensor_ : torch.Tensor
        The same factor on the fit device, for further torch work.
    objective_ : float
        ``f(V V^T)`` (eq. 13).
    must_link_, cannot_link_ : numpy.ndarray, shape (m, 2)
        The pairs used (given or sampled), ordered ``i < j``.
    lam_ : float
        The lambda of the fit (``lam``, or the one ``"auto"`` chose).
    lam_path_ : dict or None
        With ``lam="auto"``: ``lambdas`` tried and their ``heldout_error``
        (mean squared error of ``K_ij`` on the held-out pairs); else None.
    {transform_attrs}
        (``bandwidth``, else the mean squared distance over the edges of
        the fit's graph).
    {fitted}

    Notes
    -----
    The kernel is learned for the n patterns of the fit; :meth:`transform`
    places new patterns by their neighbours among them (the rows extend
    the kernel: ``<transform(x), v_j>``), so a
    :class:`~sklearn.pipeline.Pipeline` of the embedding and a classifier
    predicts, and cross-validates, on held-out patterns. :meth:`score`
    (the kernel's clustering of the fitted patterns) needs the patterns of
    the fit, so ``cross_val_score`` of the estimator alone does not apply.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat([0, 1], 10)
    >>> X = np.random.default_rng(0).normal(size=(20, 2)) + 2 * y[:, None]
    >>> est = KernelLearning(n_components=3, random_state=0).fit(X, y=y)
    >>> est.cluster(2).shape
    (20,)
    >>> est.transform(X[:4] + 0.1).shape  # new patterns
    (4, 3)
    """

    # fit takes a samples x features matrix (scikit-learn's two_d_array tag)
    _sklearn_2d_input: ClassVar[bool] = True

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(int, 1, None)],
        "lam": [Interval(float, 0, None), Options(["auto"])],
        "n_neighbors": [Interval(int, 1, None)],
        "bandwidth": [Interval(float, 0, None, closed="neither"), None],
        "n_pairs": [Interval(int, 1, None), None],
        **_SOLVE_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components: int = 10,
        *,
        lam: float | str = 1.0,
        n_neighbors: int = 5,
        bandwidth: float | None = None,
        solver: str = "auto",
        n_pairs: int | None = None,
        gamma: float | Literal["auto", "eq17"] = "auto",
        max_iter: int = 1000,
        tol: float | None = None,
        init_scale: float = 1.0,
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float64",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    @fill_doc(fit_returns=_FIT_RETURNS_DOC)
    def fit(
        self,
        X: ArrayLike | sp.spmatrix | sp.sparray,
        y: ArrayLike | None = None,
        *,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
        laplacian: sp.spmatrix | sp.sparray | None = None,
    ) -> KernelLearning:
        """Learn the kernel of the patterns X.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, shape (n, d)
            Features, used for the kNN graph (unless ``laplacian`` is given).
        y : array-like, shape (n,), optional
            Class labels to sample ``n_pairs`` pairs of each kind from, when
            no pairs are given (the paper's protocol); ignored otherwise.
        must_link, cannot_link : array-like of int, shape (m, 2), optional
            Pairs of patterns in the same / different classes.
        laplacian : scipy.sparse matrix, shape (n, n), optional
            A symmetric graph Laplacian replacing the kNN one.

        {fit_returns}
        DataValidationError
            NaN features, pairs out of range, self-pairs, duplicate pairs, a
            pair both must-link and cannot-link, no pairs and no labels.
        """
        ctx, feats, n = _start(self, X)
        # the pairs are checked before the kNN graph, the first real work
        ml, cl = self._pairs(n, y, must_link, cannot_link, ctx)
        if laplacian is None:
            laplacian = knn_laplacian(
                feats, n_neighbors=self.n_neighbors, bandwidth=self.bandwidth
            )
        solver = resolve_solver(self.solver, NPKLProblem, ctx.device)
        lam, init, self.lam_path_ = self._lam(n, ml, cl, laplacian, solver, ctx)
        problem = NPKLProblem(
            n, ml, cl, laplacian, lam=lam, device=ctx.device, dtype=ctx.dtype
        )
        result = _solve(self, solver, problem, ctx, init=init)
        V = result.x
        self.lam_, self.must_link_, self.cannot_link_ = lam, ml, cl
        self.embedding_tensor_, self.embedding_ = V, to_numpy(V)
        upper = sp.triu(laplacian, k=1).tocoo()
        _keep_features(self, feats, np.c_[upper.row, upper.col], self.bandwidth)
        self._store_result(result, solver=solver, objective=problem.value(V, V))
        return self

    def _pairs(self, n, y, must_link, cannot_link, ctx):
        """The checked (must-links, cannot-links): given, or sampled from y."""
        if must_link is None and cannot_link is None:
            if y is None:
                raise DataValidationError(
                    "Give pairwise constraints (must_link and/or cannot_link) or "
                    "class labels y to sample them from."
                )
            y = _labels(y, n)
            n_pairs = self.n_pairs if self.n_pairs is not None else max(n // 2, 1)
            must_link, cannot_link = sample_pairs(
                y, n_pairs=n_pairs, random_state=ctx.random_state
            )
        ml, cl = check_pairs(must_link, cannot_link, n)
        if len(ml) + len(cl) == 0:
            raise DataValidationError(
                "No pairwise constraints: must_link and cannot_link are both empty. "
                "Give at least one pair, or class labels y to sample them from."
            )
        return ml, cl

    def _lam(self, n, ml, cl, laplacian, solver, ctx):
        """(lambda, its warm start or None, the ``lam="auto"`` path or None)."""
        if self.lam != "auto":
            return float(self.lam), None, None

        def solve(problem, init):
            return _solve(self, solver, problem, ctx, init=init)

        return select_lam(
            solve,
            n,
            ml,
            cl,
            laplacian,
            rng=ctx.random_state.numpy,
            device=ctx.device,
            dtype=ctx.dtype,
        )

    @fill_doc(score_doc=_SCORE_DOC)
    def score(
        self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike | None = None
    ) -> float:
        """Rand index of kernel k-means on the learned kernel against labels y.

        The kernel is learned for the patterns of the fit (:meth:`transform`
        only places new ones by their neighbours) and its objective depends
        on ``lam``, so the quality that compares fits is
        the paper's: how well the kernel separates the classes, as the Rand
        index (:func:`~embedopt.metrics.rand_index`, in [0, 1], higher is
        better) of :meth:`cluster` with one cluster per class of y.

        {score_doc}
        """
        y = _score_labels(self, X, y)
        return rand_index(self.cluster(len(np.unique(y))), y)

    @fill_doc(transform_doc=_TRANSFORM_DOC)
    def transform(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Place new patterns in the learned embedding: rows of the kernel's factor.

        {transform_doc}
        """
        return _place(self, X)

    def fit_transform(
        self,
        X: ArrayLike | sp.spmatrix | sp.sparray,
        y: ArrayLike | None = None,
        *,
        must_link: ArrayLike | None = None,
        cannot_link: ArrayLike | None = None,
        laplacian: sp.spmatrix | sp.sparray | None = None,
    ) -> np.ndarray:
        """Fit, then return ``embedding_`` (the factor V of the fitted patterns).

        Parameters
        ----------
        X, y, must_link, cannot_link, laplacian
            See :meth:`fit`.

        Returns
        -------
        numpy.ndarray, shape (n, n_components)
        """
        return self.fit(
            X, y, must_link=must_link, cannot_link=cannot_link, laplacian=laplacian
        ).embedding_

    def kernel(self, i: ArrayLike, j: ArrayLike) -> np.ndarray:
        """Learned kernel values ``K_ij = <v_i, v_j>`` on demand.

        Parameters
        ----------
        i, j : array-like of int
            Pattern indices (broadcast together).

        Returns
        -------
        numpy.ndarray
            ``K[i, j]``, in the shape of the broadcast indices.
        """
        check_is_fitted(self, "embedding_")
        V = self.embedding_
        i, j = as_array(i, "i"), as_array(j, "j")
        try:
            i, j = np.broadcast_arrays(i, j)
        except ValueError:
            raise DataValidationError(
                f"Kernel indices i and j must broadcast together; got shapes "
                f"{i.shape} and {j.shape}."
            ) from None
        n = V.shape[0]
        for name, idx in (("i", i), ("j", j)):
            if not np.issubdtype(idx.dtype, np.integer) or (
                idx.size and (idx.min() < 0 or idx.max() >= n)
            ):
                raise DataValidationError(
                    f"Kernel index {name} must hold ints in [0, {n}) (out of range)."
                )
        return np.einsum("...k,...k->...", V[i], V[j])

    def cluster(
        self, n_clusters: int, *, n_init: int = 10, random_state: RandomStateLike = None
    ) -> np.ndarray:
        """Kernel k-means on the learned kernel: k-means on the rows of V.

        With ``K = V V^T`` the feature-space distance is
        ``||phi_i - phi_j||^2 = K_ii + K_jj - 2 K_ij = ||v_i - v_j||^2``, so
        k-means on the factor's rows is kernel k-means on K, at
        ``O(n r n_clusters)`` per iteration instead of ``O(n^2)``.

        Parameters
        ----------
        n_clusters : int
        n_init : int
            Restarts (k-means++ seeding); the one with the smallest
            within-cluster sum of squares is kept.
        random_state : None, int or numpy Generator, optional
            Default: the estimator's ``random_state``.

        Returns
        -------
        numpy.ndarray of int, shape (n,)
            Cluster labels.
        """
        check_is_fitted(self, "embedding_")
        seed = self.random_state if random_state is None else random_state
        return _kernel_kmeans(
            self.embedding_, n_clusters, n_init, seed, "KernelLearning.cluster"
        )


def kernel_kmeans(
    V: ArrayLike,
    n_clusters: int,
    *,
    n_init: int = 10,
    random_state: RandomStateLike = None,
) -> np.ndarray:
    """Kernel k-means on ``K = V V^T``: k-means on the rows of the factor V.

    ``||phi_i - phi_j||^2 = K_ii + K_jj - 2 K_ij = ||v_i - v_j||^2``, so
    Lloyd's k-means (SciPy's ``kmeans2``, k-means++ seeding) on V's rows is
    kernel k-means on K at ``O(n r n_clusters)`` per iteration.

    Parameters
    ----------
    V : array-like, shape (n, r)
        A factor of the kernel (e.g. ``KernelLearning().embedding_``).
    n_clusters : int
    n_init : int
        Restarts; the one with the smallest within-cluster sum of squares is
        kept (a restart that empties a cluster simply loses).
    random_state : None, int or numpy Generator

    Returns
    -------
    numpy.ndarray of int, shape (n,)
        Cluster labels.
    """
    return _kernel_kmeans(V, n_clusters, n_init, random_state, "kernel_kmeans")


def _kernel_kmeans(V, n_clusters, n_init, random_state, owner: str) -> np.ndarray:
    """:func:`kernel_kmeans`, its arguments checked in the name of ``owner``."""
    V = np.asarray(V, dtype=np.float64)
    check_param(owner, "n_clusters", n_clusters, [Interval(int, 1, len(V))])
    check_param(owner, "n_init", n_init, [Interval(int, 1, None)])
    rng = resolve_random_state(random_state, owner).numpy
    best, best_inertia = None, np.inf
    for _ in range(int(n_init)):
        with warnings.catch_warnings():  # an empty cluster: another restart
            warnings.simplefilter("ignore", UserWarning)
            centers, labels = kmeans2(V, int(n_clusters), minit="++", seed=rng)
        inertia = float(((V - centers[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels, inertia
    return best


@fill_doc(
    solve_params=_SOLVE_PARAMS_DOC,
    run_params=_RUN_PARAMS_DOC,
    fitted=_FITTED_DOC,
    transform_attrs=_TRANSFORM_ATTRS_DOC,
)
class ColoredMVU(BaseEstimator):
    """Colored maximum variance unfolding (CMVU, eq. 23) as an embedding.

    Finds a PSD ``Z = V V^T`` (V: n x r, ``r = n_components``) minimizing
    ``1/2 sum_{{i,j} in N} (Z_ii + Z_jj - 2 Z_ij - d_ij)^2 - lam tr(H Z H K)``
    over the ``n_neighbors``-NN pairs N (joined into one connected graph,
    :func:`~embedopt.sdp.knn_pairs`) with their squared distances ``d_ij``:
    the embedding keeps the local distances while its dependence on the
    labels (``K = Y Y^T`` for the one-hot labels Y) is maximized. Without
    labels ``K = I``: plain maximum variance unfolding. The SDP is solved on
    factors (:data:`~embedopt.sdp.SOLVERS`; Burer-Monteiro with L-BFGS by
    default, see ``solver``) in memory ``O((|N| + n c) r)``
    (:class:`~embedopt.sdp.CMVUProblem`).

    Parameters
    ----------
    n_components : int
        Dimension r of the embedding (the factor's columns); at most n.
    n_neighbors : int
        Neighbours per pattern whose distances are preserved (the paper uses
        1 % of n).
    lam : float
        Trade-off lambda of the label term (the paper's default 1); relative
        to the scale of the features (the distance term grows like its
        fourth power, the label term like its square).
    solver : {"auto", "aagd", "bm_lbfgs", "bm_agd"}
        ``"auto"`` or a name of :data:`~embedopt.sdp.SOLVERS`. ``"auto"``
        runs ``"bm_lbfgs"`` on every device
        (:func:`~embedopt.sdp.resolve_solver`); ``solver_`` says which ran.
        With every other parameter at its default, AAGD stops at
        ``max_iter`` (a ConvergenceWarning) above the best rank-2 objective
        found (10 % above on all digits), which BM-L-BFGS reaches several
        times faster (benchmarks/sdp/estimator_defaults.py). AAGD's
        iterations, not their cost, are what is missing (CMVU's large
        gradient forces a large gamma), so a faster device would not close
        the gap.
    {solve_params}
    random_state : None, int or numpy Generator
        Seeds the starting factor.
    {run_params}

    Attributes
    ----------
    embedding_ : numpy.ndarray, shape (n, n_components)
        The centered factor in principal axes (columns by decreasing
        variance): ``embedding_ @ embedding_.T = H Z H``.
    embedding_tensor_ : torch.Tensor
        The same on the fit device.
    objective_ : float
        f at the solution (eq. 23).
    pairs_ : numpy.ndarray, shape (m, 2)
        The neighbour pairs N.
    {transform_attrs}
        (the mean squared distance over the pairs N).
    {fitted}

    Notes
    -----
    The embedding is fitted to the n patterns of the fit; :meth:`transform`
    places new patterns by their neighbours among them, so a
    :class:`~sklearn.pipeline.Pipeline` of the embedding and a classifier
    predicts, and cross-validates, on held-out patterns. :meth:`score`
    (leave-one-out 1-NN among the fitted patterns) needs the patterns of
    the fit, so ``cross_val_score`` of the estimator alone does not apply.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat([0, 1], 10)
    >>> X = np.random.default_rng(0).normal(size=(20, 3)) + 3 * y[:, None]
    >>> ColoredMVU(n_components=2, random_state=0).fit_transform(X, y).shape
    (20, 2)
    """

    # fit takes a samples x features matrix (scikit-learn's two_d_array tag)
    _sklearn_2d_input: ClassVar[bool] = True

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(int, 1, None)],
        "n_neighbors": [Interval(int, 1, None)],
        "lam": [Interval(float, 0, None)],
        **_SOLVE_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        n_neighbors: int = 5,
        lam: float = 1.0,
        solver: str = "auto",
        gamma: float | Literal["auto", "eq17"] = "auto",
        max_iter: int = 1000,
        tol: float | None = None,
        init_scale: float = 1.0,
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float64",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    @fill_doc(fit_returns=_FIT_RETURNS_DOC)
    def fit(
        self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike | None = None
    ) -> ColoredMVU:
        """Embed the patterns X, coloured by the labels y.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, shape (n, d)
        y : array-like, shape (n,), optional
            Class labels (label kernel ``K = Y Y^T``); None for plain MVU.

        {fit_returns}
        DataValidationError
            NaN features, y not of length n, ``n_neighbors >= n``.
        """
        ctx, feats, n = _start(self, X)
        labels = None if y is None else one_hot_labels(_labels(y, n))
        pairs, sqdist = knn_pairs(
            feats, n_neighbors=self.n_neighbors, device=ctx.device
        )
        problem = CMVUProblem(
            n, pairs, sqdist, labels, lam=self.lam, device=ctx.device, dtype=ctx.dtype
        )
        solver = resolve_solver(self.solver, CMVUProblem, ctx.device)
        result = _solve(self, solver, problem, ctx)
        V = result.x
        objective = problem.value(V, V)
        self.embedding_tensor_ = _principal_axes(V)
        self.embedding_ = to_numpy(self.embedding_tensor_)
        self.pairs_ = pairs
        _keep_features(self, feats, pairs, None)
        self._store_result(result, solver=solver, objective=objective)
        return self

    @fill_doc(score_doc=_SCORE_DOC)
    def score(
        self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike | None = None
    ) -> float:
        """Leave-one-out 1-NN accuracy of the embedding against labels y.

        The embedding is fitted to the patterns of the fit (:meth:`transform`
        only places new ones by their neighbours) and the objective depends
        on ``lam`` and the scale of X, so
        the quality that compares fits is how well the embedding keeps the
        classes apart: the leave-one-out 1-nearest-neighbour accuracy
        (:func:`~embedopt.metrics.nearest_neighbor_accuracy`, in [0, 1],
        higher is better), the measure of the paper's Figure 3.

        {score_doc}
        """
        y = _score_labels(self, X, y)
        return nearest_neighbor_accuracy(self.embedding_, y)

    def fit_transform(
        self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike | None = None
    ) -> np.ndarray:
        """Fit, then return ``embedding_``.

        Parameters
        ----------
        X, y
            See :meth:`fit`.

        Returns
        -------
        numpy.ndarray, shape (n, n_components)
        """
        return self.fit(X, y).embedding_

    @fill_doc(transform_doc=_TRANSFORM_DOC)
    def transform(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Place new patterns in the embedding (its principal axes).

        {transform_doc}
        """
        return _place(self, X)


def _principal_axes(V: torch.Tensor) -> torch.Tensor:
    """The centered factor in principal axes: Z's translation is free and its
    rotation arbitrary, so report the embedding PCA would show."""
    centered = V - V.mean(0, keepdim=True)
    U, S, _ = torch.linalg.svd(centered, full_matrices=False)
    return U * S
