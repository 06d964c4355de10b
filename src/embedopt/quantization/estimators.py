"""scikit-learn style product quantizer with a learned rotation."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    RUN_PARAMETERS_DOC,
    BaseEstimator,
    DataValidationError,
    DeviceLike,
    DtypeLike,
    Interval,
    Options,
    RandomStateLike,
    as_array,
    check_is_fitted,
    check_param,
    fill_doc,
    to_numpy,
)
from ..optim import IterationState
from .codebooks import adc_search, decode, lloyd, split
from .problem import as_vectors
from .rotation_learners import ROTATIONS
from .solvers import SOLVER_CONSTRAINTS, fit_product_quantizer

__all__ = ["ROTATIONS", "ProductQuantizer"]

#: The estimator's names of the solver parameters it renames: the solvers'
#: start ``init`` is the estimator's ``rotation_init`` (an estimator's
#: ``init`` would be the start of its whole fit, docs/vocabulary.md).
_RENAMED = {"init": "rotation_init"}

#: The parameters ProductQuantizer hands to fit_product_quantizer: solver
#: name -> estimator name.
_SOLVER_PARAMS = {
    name: _RENAMED.get(name, name)
    for name in (
        "init",
        "n_subquantizers",
        "n_centroids",
        "rotation",
        "n_rotation_steps",
        "learning_rate",
        "step_rule",
        "refine_iter",
        "max_iter",
        "kmeans_iter",
        "init_kmeans_iter",
        "kmeans_init",
        "tol",
    )
}


def _codes_dtype(K: int):
    return np.uint8 if K <= 256 else np.uint16


@fill_doc(run_parameters=RUN_PARAMETERS_DOC)
class ProductQuantizer(BaseEstimator):
    """Product quantizer ``T(X) = phi(X R) R^T`` with a learned rotation R.

    ``fit`` (:func:`~embedopt.quantization.fit_product_quantizer`) alternates
    k-means on the M subspaces of ``X R`` and a rotation step: the SVD
    Procrustes step of OPQ, Givens coordinate descent (GCD-R/G/S, Jiang et
    al.), a Cayley or an unconstrained gradient baseline, or none. Then
    ``encode`` gives uint8 / uint16 codes, ``decode`` reconstructions, and
    ``search`` asymmetric-distance (ADC) top-k search for L2 or inner product,
    batched for large databases.

    Parameters
    ----------
    n_subquantizers : int
        M, the number of subspaces; must divide the dimension.
    n_centroids : int
        K, centroids per subspace (at most the number of training vectors;
        codes are uint8 for K <= 256, uint16 up to 65536).
    rotation : {"none", "opq", "gcd_r", "gcd_g", "gcd_s", "gcd_r_overlap", \
"gcd_g_overlap", "cayley", "unconstrained"}
        How R is learned (see :data:`ROTATIONS`); the hyphenated spellings
        (``"gcd-g"``) work too.
    rotation_init : {"eigenvalue", "identity", "random"} or array-like (n, n)
        Starting rotation; ``"eigenvalue"`` is OPQ's eigenvalue allocation
        (:func:`~embedopt.quantization.eigenvalue_allocation`), ``"identity"``
        the paper's start (with ``rotation="none"``: plain PQ).
    max_iter : int
        Outer iterations (one rotation step each).
    n_rotation_steps : int
        GCD / Cayley / unconstrained gradient steps per outer iteration
        (paper: 5).
    learning_rate : float or "auto"
        Step size of the gradient rotation steps (Cayley, unconstrained, and
        GCD with ``step_rule="gradient"``; see
        :class:`~embedopt.quantization.GivensLearner`).
    step_rule : {"exact", "gradient"}
        GCD angle: the exact minimizer of the distortion in each selected
        plane, or the paper's ``-lr * A_ij``.
    kmeans_iter : int
        Lloyd iterations per outer iteration.
    init_kmeans_iter : int
        Lloyd iterations of the initial codebooks.
    refine_iter : int
        Lloyd iterations with R fixed after the last outer iteration.
    kmeans_init : {"k-means++", "random"}
        Codebook seeding (scikit-learn's ``KMeans(init=...)``).
    metric : {"l2", "ip"}
        Default metric of :meth:`search`.
    tol : float
        Relative change of the training distortion between two outer
        iterations that stops the loop (0: run ``max_iter``).
    chunk_size : int
        Queries per block in :meth:`search` (database blocks are 8192 codes):
        bounds its memory, never changes its result.
    {run_parameters}

    Attributes
    ----------
    rotation_ : numpy.ndarray, shape (n, n)
        R.
    codebooks_ : numpy.ndarray, shape (M, K, n / M)
    rotation_tensor_, codebooks_tensor_ : torch.Tensor
        The same on the fitting device.
    n_features_in_ : int
    distortion_ : float
        Mean squared reconstruction error of the training vectors.
    objective_ : float
        The final objective: ``distortion_``.
    solver_ : str
        The rotation method that ran, as :data:`ROTATIONS` names it
        (``"gcd-g"`` -> ``"gcd_g"``).
    history_ : dict of numpy.ndarray
        ``objective`` (training distortion before the final ``refine_iter``
        Lloyd iterations), ``orthogonality_error``... per outer iteration.
    n_iter_ : int
    stop_reason_ : str

    Notes
    -----
    **Defaults.** GCD-G (``rotation="gcd-g"``) started from OPQ's eigenvalue
    allocation, turning each selected plane by its exact minimizing angle,
    stopped when an outer iteration changes the training distortion by less
    than 0.1 % (``tol=1e-3``). The paper's setting
    (``rotation_init="identity"``, ``step_rule="gradient"``) is no better
    than plain PQ on GloVe-6B-50d: one global step size must respect the
    stiffest plane, so the rotation hardly moves. The eigenvalue allocation
    gives most of the gain, and exact GCD-G then lowers the distortion as
    much as the SVD Procrustes step of OPQ (held-out 2.38 on GloVe-6B-50d,
    M=10, against 3.16 with the paper's setting).
    ``benchmarks/quantization/defaults.py`` compares the defaults with faiss
    OPQ's on five sets; ``benchmarks/quantization/README.md`` has the
    results and how the defaults were chosen. Set
    ``rotation_init="identity"`` with ``rotation="none"`` for plain PQ.

    Examples
    --------
    >>> import numpy as np
    >>> from embedopt.quantization import ProductQuantizer
    >>> X = np.random.default_rng(0).standard_normal((2000, 16)).astype("float32")
    >>> pq = ProductQuantizer(4, 16, rotation="gcd-g", max_iter=5, random_state=0)
    >>> codes = pq.fit(X).encode(X)
    >>> codes.dtype, codes.shape
    (dtype('uint8'), (2000, 4))
    >>> dist, ids = pq.search(X[:3], codes, k=5)
    """

    # fit takes a samples x features matrix (scikit-learn's two_d_array tag)
    _sklearn_2d_input: ClassVar[bool] = True

    _parameter_constraints: ClassVar[dict] = {
        **{_RENAMED.get(k, k): v for k, v in SOLVER_CONSTRAINTS.items()},
        # Codes are stored as uint8 or uint16.
        "n_centroids": [Interval(int, 1, 65536)],
        "metric": [Options(["l2", "ip"])],
        "chunk_size": [Interval(int, 1, None)],
    }

    def __init__(
        self,
        n_subquantizers: int = 8,
        n_centroids: int = 256,
        *,
        rotation: str = "gcd-g",
        rotation_init: str | ArrayLike | torch.Tensor = "eigenvalue",
        max_iter: int = 50,
        n_rotation_steps: int = 5,
        learning_rate: float | Literal["auto"] = "auto",
        step_rule: str = "exact",
        kmeans_iter: int = 4,
        init_kmeans_iter: int = 20,
        refine_iter: int = 10,
        kmeans_init: str = "k-means++",
        metric: str = "l2",
        tol: float = 1e-3,
        chunk_size: int = 64,
        random_state: RandomStateLike = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = "float32",
        verbose: int = 0,
        callback: Callable[[IterationState], bool | None] | None = None,
    ):
        self._store_params(locals())

    # -- fitting -----------------------------------------------------------------
    def fit(
        self,
        X: ArrayLike | torch.Tensor,
        y: ArrayLike | None = None,
        *,
        validation: ArrayLike | torch.Tensor | None = None,
    ) -> ProductQuantizer:
        """Learn the rotation and the codebooks.

        Parameters
        ----------
        X : array-like or torch.Tensor, shape (m, n)
            Training vectors (float; no NaN/inf).
        y : None
            Ignored.
        validation : array-like, shape (m_val, n), optional
            Held-out vectors whose distortion is recorded in ``history_``
            (``val_distortion``).

        Returns
        -------
        self
        """
        ctx = self._start_fit()
        result = fit_product_quantizer(
            X,
            **{name: getattr(self, own) for name, own in _SOLVER_PARAMS.items()},
            validation=validation,
            **ctx.run_options(self),
            name=f"ProductQuantizer[{self.rotation}]",
        )
        self._store_quantizer(result.x.rotation, result.x.codebooks)
        self.distortion_ = result.info["distortion"]
        self._store_result(
            result,
            solver=ROTATIONS.resolve_name(self.rotation),
            objective=self.distortion_,
        )
        return self

    def _store_quantizer(self, R: torch.Tensor, codebooks: torch.Tensor) -> None:
        # The fitted rotation and codebooks, as tensors on the fitting device
        # (for encode / search) and as NumPy arrays (for users).
        self.rotation_tensor_ = R
        self.codebooks_tensor_ = codebooks
        self.rotation_ = to_numpy(R)
        self.codebooks_ = to_numpy(codebooks)
        self.n_features_in_ = int(R.shape[0])

    # -- encoding ----------------------------------------------------------------
    def _vectors(self, X, name="X") -> torch.Tensor:
        check_is_fitted(self, "codebooks_tensor_")
        R = self.rotation_tensor_
        return as_vectors(
            X, name, device=R.device, dtype=R.dtype, n_features=self.n_features_in_
        )

    def encode(self, X: ArrayLike | torch.Tensor) -> np.ndarray:
        """PQ codes of ``X R``.

        Parameters
        ----------
        X : array-like, shape (m, n)
            Each row is rotated by R; each of its M sub-vectors is coded by
            the index of the nearest centroid of its codebook.

        Returns
        -------
        numpy.ndarray of uint8 (K <= 256) or uint16, shape (m, M)
        """
        codes = self._encode(self._vectors(X))
        return to_numpy(codes).astype(_codes_dtype(self.n_centroids))

    def _encode(self, Xt: torch.Tensor) -> torch.Tensor:
        # The codes of checked vectors, on the fitting device.
        _, codes, _, _ = lloyd(
            split(Xt @ self.rotation_tensor_, self.n_subquantizers),
            self.codebooks_tensor_,
            0,
        )
        return codes

    def _codes(self, codes) -> torch.Tensor:
        check_is_fitted(self, "codebooks_tensor_")
        c = as_array(codes, "codes")
        M, K = self.n_subquantizers, self.n_centroids
        if c.ndim != 2 or c.shape[1] != M:
            raise DataValidationError(f"codes must have shape (n, {M}); got {c.shape}.")
        if c.dtype.kind not in "iu":
            raise DataValidationError(
                f"codes must be integers (uint8/uint16); got dtype {c.dtype}."
            )
        if c.size and (int(c.min()) < 0 or int(c.max()) >= K):
            raise DataValidationError(
                f"codes must lie in [0, {K}); got values in [{int(c.min())}, "
                f"{int(c.max())}]."
            )
        # Compact on the device (uint8, or int32 for uint16 codes: torch's
        # uint16 supports few ops); search widens one database block at a time.
        small = np.uint8 if c.dtype == np.uint8 else np.int32
        return torch.as_tensor(
            c.astype(small, copy=False), device=self.rotation_tensor_.device
        )

    def decode(self, codes: ArrayLike | torch.Tensor) -> np.ndarray:
        """Reconstructions ``phi(X R) R^T`` from codes.

        Parameters
        ----------
        codes : array-like of int, shape (m, M)

        Returns
        -------
        numpy.ndarray, shape (m, n)
        """
        c = self._codes(codes)
        return to_numpy(decode(c, self.codebooks_tensor_) @ self.rotation_tensor_.T)

    def transform(self, X: ArrayLike | torch.Tensor) -> np.ndarray:
        """Quantized vectors ``T(X) = phi(X R) R^T`` (encode then decode).

        Parameters
        ----------
        X : array-like, shape (m, n)

        Returns
        -------
        numpy.ndarray, shape (m, n)
        """
        return self.decode(self.encode(X))

    def distortion(self, X: ArrayLike | torch.Tensor) -> float:
        """Mean squared reconstruction error ``mean_i ||x_i - T(x_i)||^2``.

        Parameters
        ----------
        X : array-like, shape (m, n)

        Returns
        -------
        float
        """
        Xt = self._vectors(X)
        # encode and decode on the device: X checked once, no NumPy round trip
        rec = decode(self._encode(Xt), self.codebooks_tensor_) @ self.rotation_tensor_.T
        return float(((Xt - rec).double() ** 2).sum(1).mean())

    def score(self, X: ArrayLike | torch.Tensor, y: ArrayLike | None = None) -> float:
        """Negative distortion (greater is better).

        Parameters
        ----------
        X : array-like, shape (m, n)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return -self.distortion(X)

    # -- search ------------------------------------------------------------------
    def search(
        self,
        queries: ArrayLike | torch.Tensor,
        codes: ArrayLike | torch.Tensor,
        k: int = 10,
        *,
        metric: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Asymmetric-distance search of ``queries`` among encoded vectors.

        Queries are rotated (``q R``) but not quantized; scores use the
        reconstructions of the database: ``||q - T(x)||^2`` (L2) or
        ``<q, T(x)>`` (inner product), accumulated from lookup tables in blocks
        so that millions of codes need only ``O(chunk_size * 8192)`` memory.
        With ``rotation="unconstrained"`` (R not orthogonal) the L2 scores are
        ``||q R - phi(x R)||^2``, which only approximate ``||q - T(x)||^2``.

        Parameters
        ----------
        queries : array-like, shape (nq, n)
        codes : array-like of int, shape (N, M)
            Output of :meth:`encode`.
        k : int
            Results per query (at most N).
        metric : {"l2", "ip"}, optional
            Default: the ``metric`` parameter.

        Returns
        -------
        scores : numpy.ndarray, shape (nq, k)
            Squared distances (ascending) or inner products (descending).
        ids : numpy.ndarray of int64, shape (nq, k)
            Row indices into ``codes``.
        """
        metric = self.metric if metric is None else metric
        owner = f"{type(self).__name__}.search"
        check_param(owner, "metric", metric, [Options(("l2", "ip"))])
        check_param(owner, "k", k, [Interval(int, 1, None)])
        Q = self._vectors(queries, "queries") @ self.rotation_tensor_
        c = self._codes(codes)
        if c.shape[0] == 0:
            raise DataValidationError("codes is empty: encode some vectors first.")
        s, i = adc_search(
            Q,
            c,
            self.codebooks_tensor_,
            int(k),
            metric=metric,
            query_batch=self.chunk_size,
        )
        return to_numpy(s), to_numpy(i)
