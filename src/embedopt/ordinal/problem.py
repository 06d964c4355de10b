"""The ordinal-embedding objective as a finite sum over comparisons (eq. (5), (9)).

``f(X) = (1/|Q|) sum_{q in Q} ell(d_near(q), d_far(q))`` over the embedding
``X`` (n_objects x p, one row per object). :class:`OrdinalProblem`
implements :class:`~embedopt.optim.FiniteSum`, so the generic SVRG / SGD /
gradient-descent loops of :mod:`embedopt.optim` solve it.

With one weight ``w_q >= 0`` per comparison (``sample_weight``; e.g. the
reliability of the crowd worker who answered it) the objective is the
weighted mean ``(1 / sum_q w_q) sum_q w_q ell_q``: an integer weight k counts
a comparison k times, a weight 0 removes it, and scaling every weight by the
same factor changes nothing. The problem drops the comparisons of weight 0
and scales the others to mean 1, ``w'_q = w_q |Q| / sum w``, so that
``f = (1/|Q|) sum_q f_q`` with ``f_q = w'_q ell_q`` stays a finite sum of the
same form: the stochastic solvers keep drawing comparisons uniformly and
each drawn term carries its weight, so every mini-batch gradient (and
SVRG's variance-reduced one) remains an unbiased estimate of the full
weighted gradient, and the Barzilai-Borwein steps still work off full
gradients. Weights all 1 give bit-identical values and gradients.

:class:`GramProblem` is the same objective as a function of the Gram matrix
``G = X X^T`` (centered, ``G 1 = 0``): the squared distances are linear in G,
``d_ij = g_ii - 2 g_ij + g_jj`` (eq. (41)), so every loss that is convex in
the distances (GNMDS, STE, CKL... but not t-STE) gives a convex problem over
the PSD cone (eq. (8), (45), (50)), the one the convex baseline
:func:`~embedopt.ordinal.projected_gd` solves.

:func:`setup` is the preparation every solver shares (data, loss, start,
held-out tracking).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    DeviceLike,
    DtypeLike,
    InvalidParameterError,
    RandomStateLike,
    as_array,
    check_sample_weight,
    check_tensor_memory,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
)
from ..data import Comparisons, as_comparisons
from ..linalg import csr_tensor
from ._kernels import step_kernel
from .losses import OrdinalLoss, get_loss

__all__ = ["GramProblem", "OrdinalProblem", "comparison_weights", "setup"]

_CHUNK = 1 << 19  # comparisons per chunk of a full pass (bounds the memory)

#: A full pass goes through all n^2 pairwise differences when ``n_objects^2
#: <= _DENSE_RATIO * |Q|`` (and n_objects <= _DENSE_MAX, which bounds that
#: n^2 p buffer): it then costs O(n^2 p) plus a gather and a scatter of |Q|
#: scalars, 0.25-0.5 ms instead of 0.55 (float32) / 0.8 ms (float64) for the
#: sparse pair-incidence products, on the 10^4 triplets of 100 objects.
_DENSE_RATIO = 2
_DENSE_MAX = 1024


def comparison_weights(
    sample_weight: ArrayLike | None,
    given: Comparisons | ArrayLike,
    comps: Comparisons,
    owner: str,
) -> np.ndarray | None:
    """One checked weight per comparison of ``comps``; None without weights.

    Parameters
    ----------
    sample_weight : array-like of float, shape (m,), or None
        One weight per row of ``given``.
    given : Comparisons or array-like
        The comparisons as passed by the user.
    comps : Comparisons
        ``as_comparisons(given, ...)``: the weights of the degenerate rows it
        dropped are dropped with them.
    owner : str
        Named in error messages.

    Returns
    -------
    numpy.ndarray of float64, shape (len(comps),), or None
        The weights as given (zeros kept).

    Raises
    ------
    DataValidationError
        Weights that are not real numbers, not one per comparison, negative,
        NaN or infinite, or all 0.
    """
    if sample_weight is None:
        return None
    if isinstance(given, Comparisons):
        n_rows, kept = len(comps), None
    else:
        n_rows, kept = len(comps) + comps.n_dropped, comps.kept
    w = check_sample_weight(sample_weight, n_rows, owner=owner, unit="comparison")
    w = w if kept is None else w[kept]
    if not (w > 0).any():
        raise DataValidationError(
            f"{owner}: sample_weight is 0 for every comparison left after the "
            "degenerate ones were dropped, which leaves nothing to fit; give at "
            "least one of them a positive weight."
        )
    return w


def _mean_one(w: np.ndarray) -> np.ndarray:
    """Positive weights scaled to mean 1 (exactly 1 where all are equal to 1).

    Divided by their maximum first, so that weights near the float64 limit
    do not overflow the sum.
    """
    w = w / w.max()
    return w * (w.size / w.sum())


class OrdinalProblem:
    """Comparisons and a loss on one device, with the finite-sum interface.

    Parameters
    ----------
    comparisons : Comparisons or array-like, shape (m, 3) or (m, 4)
    loss : OrdinalLoss or str
    n_objects : int, optional
        Rows of the embedding (default: the comparisons' n_objects).
    device : torch.device or str
    dtype : torch.dtype or str
    sample_weight : array-like of float, shape (m,), optional
        One weight >= 0 per comparison (see the module docstring); None: all
        equal.

    Attributes
    ----------
    quadruplets : torch.Tensor of int64, shape (m, 4)
        ``(i, j, l, k)`` on the device (triplets as ``(i, j, i, k)``); the
        comparisons of weight 0 are left out.
    n_samples : int
        m = |Q|, the comparisons kept.
    n_objects : int
    loss : OrdinalLoss
    sample_weight : torch.Tensor of float64, shape (n_samples,) or None
        The weights of the comparisons kept, scaled to mean 1.
    """

    def __init__(
        self,
        comparisons: Comparisons | ArrayLike,
        loss: str | OrdinalLoss = "ste",
        *,
        n_objects: int | None = None,
        device: DeviceLike = "cpu",
        dtype: DtypeLike = "float32",
        sample_weight: ArrayLike | None = None,
    ):
        comps = as_comparisons(comparisons, n_objects=n_objects)
        w = comparison_weights(sample_weight, comparisons, comps, "OrdinalProblem")
        if w is not None and not (w > 0).all():
            comps = comps.subset(w > 0)
            w = w[w > 0]
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        self.n_objects = int(comps.n_objects)
        self.loss = get_loss(loss)
        # contiguous: the incidence matrices B^T index a view of it
        self.quadruplets = torch.as_tensor(
            comps.as_quadruplets(), device=self.device
        ).contiguous()
        self.n_samples = int(self.quadruplets.shape[0])
        self.objects_per_comparison = 3 if comps.kind == "triplet" else 4
        self._chunks: dict = {}
        self._buffers: dict = {}
        self._pairs = None
        self.sample_weight = (
            None if w is None else torch.as_tensor(_mean_one(w), device=self.device)
        )
        self._cast_weights: dict = {}
        self.dense = (
            self.n_objects <= _DENSE_MAX
            and self.n_objects**2 <= _DENSE_RATIO * self.n_samples
        )

    # -- FiniteSum ---------------------------------------------------------------
    def _incidence(self, dtype: torch.dtype):
        """Per chunk of comparisons, the sparse pair-incidence matrices B and B^T.

        Column 2q (2q + 1) of the n x 2c matrix B has +1 at object i (l) and
        -1 at j (k), so the pair differences are ``B^T X`` and the gradient
        ``B (2 coef * B^T X)``: one CSR product accumulates all |Q|
        contributions, 5-15x faster than a scatter-add with many repeated
        rows on a CPU. B^T (two entries per row) is a CSR over the
        quadruplets themselves (its column indices are a view of them), and
        ``B^T X`` costs about half of gathering the four rows and
        subtracting (0.11 vs 0.21 ms for 10^4 triplets, p = 10).
        """
        chunks = self._chunks.get(dtype)
        if chunks is None:
            chunks = self._chunks[dtype] = []
            n = self.n_objects
            flat = self.quadruplets.reshape(-1)  # a view: contiguous
            for s in range(0, self.n_samples, _CHUNK):
                q = flat[4 * s : 4 * (s + _CHUNK)]
                dev = q.device
                pairs = q.numel() // 2
                vals = torch.tensor([1.0, -1.0], dtype=dtype, device=dev)
                vals = vals.repeat(pairs)
                Bt = csr_tensor(
                    torch.arange(0, 2 * pairs + 1, 2, device=dev),
                    q,
                    vals,
                    (pairs, n),
                )
                cols = torch.arange(q.numel(), device=dev) // 2
                order = torch.argsort(q, stable=True)
                crow = torch.zeros(n + 1, dtype=torch.int64, device=dev)
                crow[1:] = torch.cumsum(torch.bincount(q, minlength=n), 0)
                itype = torch.int32 if q.numel() < 2**31 - 1 else torch.int64
                B = csr_tensor(
                    crow.to(itype), cols[order].to(itype), vals[order], (n, pairs)
                )
                chunks.append((B, Bt))
        return chunks

    def _workspace(self, pairs: int, p: int, like: torch.Tensor) -> tuple:
        """Buffers for the pair differences and their squares, reused by every pass.

        A fresh 2c x p temporary per pass came from fresh pages of the
        allocator on every call at times (glibc returns large blocks to the
        system), which tripled the cost of a pass over 10^4 triplets
        (0.7 -> 2.2 ms) in L-BFGS runs; the buffers keep it steady.
        """
        key = (like.dtype, like.device, p)
        buf = self._buffers.get(key)
        if buf is None or buf[0].shape[0] < pairs:
            e = torch.empty((pairs, p), dtype=like.dtype, device=like.device)
            buf = self._buffers[key] = (e, torch.empty_like(e))
        return buf[0][:pairs], buf[1][:pairs]

    def value_and_grad(self, X: torch.Tensor) -> tuple[float, torch.Tensor]:
        """(Weighted) mean loss (accumulated in float64) and its gradient, O(|Q| p).

        Parameters
        ----------
        X : torch.Tensor, shape (n_objects, p)
            The embedding, a row per object.

        Returns
        -------
        value : float
        grad : torch.Tensor, shape (n_objects, p)
        """
        if self.dense:
            return self._dense_value_and_grad(X)
        grad = torch.zeros_like(X)
        total = torch.zeros((), dtype=torch.float64, device=X.device)
        p = X.shape[1]
        X = X.contiguous()
        for s, (B, Bt) in enumerate(self._incidence(X.dtype)):
            pairs = Bt.shape[0]
            e, sq = self._workspace(pairs, p, X)
            torch.mm(Bt, X, out=e)  # rows: x_i - x_j, x_l - x_k, ...
            d = torch.mul(e, e, out=sq).sum(-1).view(-1, 2)
            v, ac = self._weighted(d[:, 0], d[:, 1], s * _CHUNK)
            total += v.sum(dtype=torch.float64)
            e.view(-1, 2, p).mul_((2.0 * ac).unsqueeze(-1))
            grad.addmm_(B, e)
        m = self.n_samples
        return float(total) / m, grad.div_(m)

    def _dense_value_and_grad(self, X: torch.Tensor) -> tuple[float, torch.Tensor]:
        """The full pass of few objects, through all n^2 differences at once.

        ``E[i, j] = x_i - x_j`` and ``D = ||E||^2`` cost O(n^2 p); each
        comparison reads its two distances by flat index ``i n + j``. The
        partials of pair (i, j) are summed into W[i, j], and with ``S = W +
        W^T`` the gradient row i is ``2 sum_j S_ij E[i, j]``: the sum of
        ``2 w (x_i - x_j)`` over pairs, as exact as the sparse pass (the
        shorter ``2 (diag(S 1) - S) X`` loses everything to cancellation when
        two points coincide and their weight is 1 / eps).
        """
        n, p = X.shape
        if self._pairs is None:
            q = self.quadruplets
            self._pairs = (q[:, 0::2] * n + q[:, 1::2]).reshape(-1).contiguous()
        E, _ = self._workspace(n * n, p, X)
        E = torch.sub(X.unsqueeze(1), X.unsqueeze(0), out=E.view(n, n, p))
        D = torch.linalg.vecdot(E, E).view(-1)
        W = torch.zeros(n * n, dtype=X.dtype, device=X.device)
        total = torch.zeros((), dtype=torch.float64, device=X.device)
        for s in range(0, self._pairs.numel(), 2 * _CHUNK):
            idx = self._pairs[s : s + 2 * _CHUNK]
            d = D.index_select(0, idx).view(-1, 2)
            v, ac = self._weighted(d[:, 0], d[:, 1], s // 2)
            total += v.sum(dtype=torch.float64)
            W.index_add_(0, idx, ac.view(-1))
        W = W.view(n, n)
        S = (W + W.T).mul_(2.0 / self.n_samples)
        grad = torch.bmm(S.unsqueeze(1), E).view(n, p)
        return float(total) / self.n_samples, grad

    def _weights(self, dtype: torch.dtype) -> torch.Tensor | None:
        """The mean-one weights in ``dtype`` (cached), None without weights."""
        if self.sample_weight is None:
            return None
        w = self._cast_weights.get(dtype)
        if w is None:
            w = self._cast_weights[dtype] = self.sample_weight.to(dtype)
        return w

    def _weighted(self, d_near, d_far, start: int) -> tuple:
        """Loss values and partials of the comparisons from ``start`` on, weighted.

        Returns ``w ell`` and the stacked partials ``w (a, c)``, shape (k, 2),
        of the ``k = len(d_near)`` comparisons from position ``start`` (three
        products more than the unweighted ones, returned without weights).
        """
        a, c = self.loss.partials(d_near, d_far)
        v = self.loss.value(d_near, d_far)
        w = self._weights(d_near.dtype)
        if w is None:
            return v, torch.stack((a, c), 1)
        w = w[start : start + d_near.shape[0]]
        # weighting a and c before the stack: 1.3x cheaper than a broadcast
        # product of the stacked (k, 2) partials with w[:, None]
        return v * w, torch.stack((a * w, c * w), 1)

    def rows(self, batches: torch.Tensor) -> torch.Tensor:
        """Rows ``(i, j, l, k)`` of each sampled comparison, shape (k, 4 b)."""
        flat = self.quadruplets.index_select(0, batches.reshape(-1))
        return flat.view(batches.shape[0], -1)

    def row_gradients(
        self, Z: torch.Tensor, batch: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """``sum_s weights[s] grad_rows sum_{q in batch} ell_q(Z[:, s])``.

        Parameters
        ----------
        Z : torch.Tensor, shape (4 b, S, p)
            The rows of :meth:`rows` at S points.
        batch : torch.Tensor of int64, shape (b,)
            The sampled comparisons, whose weights (if any) scale their terms.
        weights : torch.Tensor, shape (S,)

        Returns
        -------
        torch.Tensor, shape (4 b, p)
        """
        b = Z.shape[0] // 4
        p = Z.shape[-1]
        Zq = Z.view(b, 2, 2, Z.shape[1], p)  # (b, pair, member, point, p)
        e = Zq[:, :, 0] - Zq[:, :, 1]  # (b, pair, point, p)
        d = (e * e).sum(-1)  # (b, pair, point)
        a, c = self.loss.partials(d[:, 0], d[:, 1])  # (b, point) each
        coef = torch.stack((a, c), 1) * (2.0 * weights)  # (b, pair, point)
        w = self._weights(coef.dtype)
        if w is not None:  # each sampled term carries its comparison's weight
            coef.mul_(w.index_select(0, batch).view(-1, 1, 1))
        g = (coef.unsqueeze(-1) * e).sum(2)  # (b, pair, p)
        return torch.stack((g, -g), 2).view(4 * b, p)

    def step_kernel(self, x: torch.Tensor) -> Callable | None:
        """Compiled inner steps of SVRG / SGD for iterates like ``x`` (CPU, numba).

        The steps of :func:`~embedopt.optim.svrg`'s torch loop through
        :meth:`rows` and :meth:`row_gradients`, run in compiled code on the
        mini-batches the solver draws (see
        :func:`~embedopt.optim.finite_sum.step_kernel`), for the five losses
        of :data:`~embedopt.ordinal.LOSSES`, triplets and quadruplets,
        weighted or not.

        Parameters
        ----------
        x : torch.Tensor, shape (n_objects, p)

        Returns
        -------
        callable or None
            None on a GPU, for a loss of another class, without numba, or
            with ``EMBEDOPT_COMPILED=0`` in the environment: the solvers then
            run their torch loop.
        """
        return step_kernel(self.quadruplets, self.loss, self._weights(x.dtype), x)

    # -- helpers -----------------------------------------------------------------
    @property
    def curvature_scale(self) -> float:
        """Typical curvature of the mean loss along one object's row, up to the loss.

        An object takes part in ``r |Q| / n`` of the |Q| comparisons (r = 3
        for triplets, 4 for quadruplets), so the mean loss weighs its row by
        ``r / n``: the curvature of f, and the inverse of good step sizes,
        shrink like 1 / n_objects.
        """
        return self.objects_per_comparison / self.n_objects

    def error(self, X: torch.Tensor, comparisons: torch.Tensor | None = None) -> float:
        """Triplet error of ``X`` on ``comparisons`` (default: the training ones).

        Parameters
        ----------
        X : torch.Tensor, shape (n_objects, p)
        comparisons : torch.Tensor of int64, shape (m, 4), optional
            Quadruplets on the device.

        Returns
        -------
        float
        """
        Q = self.quadruplets if comparisons is None else comparisons
        wrong = 0
        for s in range(0, Q.shape[0], _CHUNK):
            q = Q[s : s + _CHUNK]
            e = X[q[:, 0::2]] - X[q[:, 1::2]]
            d = (e * e).sum(-1)
            wrong += int((d[:, 0] >= d[:, 1]).sum())
        return wrong / Q.shape[0]


class GramProblem:
    """The loss of eq. (7) as a function of the Gram matrix G (n x n).

    Parameters
    ----------
    problem : OrdinalProblem
        Comparisons and loss.
    lam : float
        Weight of the trace regularizer ``lam tr(G)`` (GNMDS, eq. (45) in its
        usual regularized form; 0 for none), added to the (weighted) mean
        loss.

    Attributes
    ----------
    n_samples : int
    """

    def __init__(self, problem: OrdinalProblem, lam: float = 0.0):
        self.problem = problem
        self.loss: OrdinalLoss = problem.loss
        self.lam = float(lam)
        self.n_samples = problem.n_samples

    def value_and_grad(self, G: torch.Tensor) -> tuple[float, torch.Tensor]:
        """Objective and gradient in G, O(|Q|) plus O(n) for the trace term.

        The gradient of ``d_ij`` is ``E_ii + E_jj - E_ij - E_ji`` (the
        ``W_q`` of eq. (44)), so a comparison adds its partials ``a`` and
        ``c`` at eight entries.

        Parameters
        ----------
        G : torch.Tensor, shape (n, n)
            The Gram matrix ``X X^T`` of an embedding X.

        Returns
        -------
        value : float
        grad : torch.Tensor, shape (n, n)
        """
        n = G.shape[0]
        flat = G.reshape(-1)
        diag = torch.diagonal(G)
        grad = torch.zeros_like(flat)
        total = torch.zeros((), dtype=torch.float64, device=G.device)
        Q = self.problem.quadruplets
        for s in range(0, Q.shape[0], _CHUNK):
            i, j, l, k = Q[s : s + _CHUNK].unbind(1)
            d_near = diag[i] + diag[j] - 2 * flat[i * n + j]
            d_far = diag[l] + diag[k] - 2 * flat[l * n + k]
            v, ac = self.problem._weighted(d_near, d_far, s)
            a, c = ac.unbind(1)
            total += v.sum(dtype=torch.float64)
            pos = torch.cat(
                (i * n + i, j * n + j, i * n + j, j * n + i,
                 l * n + l, k * n + k, l * n + k, k * n + l)
            )  # fmt: skip
            val = torch.cat((a, a, -a, -a, c, c, -c, -c))
            grad.index_add_(0, pos, val)
        m = Q.shape[0]
        grad = grad.div_(m).view(n, n)
        value = float(total) / m
        if self.lam:
            grad.diagonal().add_(self.lam)
            value += self.lam * float(diag.double().sum())
        return value, grad


#: Copies of the n x p embedding a solver holds at once (iterate, snapshot,
#: gradients, previous iterate and gradient of the step rule, a work copy).
_EMBEDDING_COPIES = 6


def check_embedding_size(owner: str, n_objects: int, p: int, device, dtype) -> None:
    """Refuse an embedding whose solver state cannot fit on the device.

    Parameters
    ----------
    owner : str
    n_objects, p : int
    device, dtype
        As given to the solver (resolved here).

    Raises
    ------
    DataValidationError
        When ``6 n p`` numbers exceed the device's memory.
    """
    check_tensor_memory(
        owner,
        _EMBEDDING_COPIES * n_objects * p,
        device,
        dtype,
        f"an embedding of {n_objects} objects in {p} dimensions",
        "A stray index or ids never remapped to 0..n_objects-1 are the usual "
        "cause (n_objects is max index + 1 unless given): drop the stray "
        "comparisons, or remap the ids (np.unique(ids, return_inverse=True)).",
    )


@dataclass
class _Setup:
    problem: OrdinalProblem
    x0: torch.Tensor
    rs: object
    evaluate: object


def epoch_samples(n: int, update_frequency: int | None) -> int:
    """Gradient calls of one SVRG epoch on n comparisons: a full gradient, then
    ``update_frequency`` (default n) inner steps of two calls each.

    The budget by which the other stochastic and batch solvers measure an
    epoch, so that their histories compare with SVRG's per epoch.
    """
    return n + 2 * (update_frequency or n)


def batch_steps_per_epoch(n: int, update_frequency: int | None) -> int:
    """Full-gradient steps within the budget of an SVRG epoch (3 when m = n)."""
    return max(1, round(epoch_samples(n, update_frequency) / n))


#: The parameters of every ordinal solver that :func:`setup` takes as given,
#: in the one order :func:`setup_options` collects them.
SETUP_PARAMETERS = (
    "loss",
    "n_objects",
    "init",
    "init_scale",
    "validation",
    "random_state",
    "device",
    "dtype",
    "sample_weight",
)


def setup_options(parameters: Mapping[str, Any]) -> dict:
    """The keywords of :func:`setup` that every ordinal solver passes on as given.

    Parameters
    ----------
    parameters : mapping
        The solver's parameters by name (its ``locals()`` at the call): those
        of :data:`SETUP_PARAMETERS` are taken, the others ignored.

    Returns
    -------
    dict
        ``loss``, ``n_objects``, ``init``, ``init_scale``, ``validation``,
        ``random_state``, ``device``, ``dtype`` and ``sample_weight``.
    """
    return {name: parameters[name] for name in SETUP_PARAMETERS}


def setup(
    comparisons: Comparisons | ArrayLike,
    n_components: int,
    *,
    loss: str | OrdinalLoss,
    n_objects: int | None,
    init: ArrayLike | torch.Tensor | None,
    init_scale: float,
    validation: Comparisons | ArrayLike | None,
    random_state: RandomStateLike,
    device: DeviceLike,
    dtype: DtypeLike,
    owner: str,
    factored: bool = True,
    sample_weight: ArrayLike | None = None,
) -> _Setup:
    """Shared preparation of every ordinal solver: data, loss, start, tracking.

    ``factored=False`` (the convex Gram-matrix solver) admits an init whose
    rows are all equal: G = 0 is no stationary point of the convex problem.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
        p, the embedding dimension.
    loss, n_objects, init, init_scale, validation, random_state, device, dtype
        The solver's parameters of those names (see
        :func:`~embedopt.ordinal.svrg_sbb`; :func:`setup_options` collects
        them).
    owner : str
        The solver, named in error messages.
    factored : bool
        False for the Gram-matrix solver (see above).
    sample_weight : array-like of float, shape (m,), optional
        One weight >= 0 per row of ``comparisons`` (see
        :class:`OrdinalProblem`).

    Returns
    -------
    _Setup
        ``problem`` (the :class:`OrdinalProblem` on the device), ``x0`` (the
        start, n_objects x p), ``rs`` (the resolved random state) and
        ``evaluate`` (the held-out error tracker, None without
        ``validation``).
    """
    _check_n_components(n_components, owner)
    comps = as_comparisons(comparisons, n_objects=n_objects, owner=owner)
    weights = comparison_weights(sample_weight, comparisons, comps, owner)
    check_embedding_size(owner, comps.n_objects, int(n_components), device, dtype)
    problem = OrdinalProblem(
        comps,
        get_loss(loss, int(n_components)),
        device=resolve_device(device),
        dtype=dtype,
        sample_weight=weights,
    )
    rs = resolve_random_state(random_state, owner)
    shape = (problem.n_objects, int(n_components))
    if init is None:
        x0 = torch.randn(
            shape,
            generator=rs.torch(problem.device),
            device=problem.device,
            dtype=problem.dtype,
        ).mul_(init_scale)
    else:
        x0 = _given_start(init, shape, problem, factored)
    return _Setup(problem, x0, rs, _validation_tracker(problem, validation))


def _check_n_components(n_components, owner: str) -> None:
    """Refuse an ``n_components`` that is not an int >= 1 (bools included)."""
    if (
        isinstance(n_components, bool)
        or not isinstance(n_components, (int, np.integer))
        or n_components < 1
    ):
        raise InvalidParameterError(
            f"The 'n_components' parameter of {owner} must be an int in [1, inf). Got "
            f"{n_components!r}."
        )


def _given_start(init, shape: tuple, problem: OrdinalProblem, factored: bool):
    """``init`` checked (real, the embedding's shape, finite) on the device."""
    n, p = shape
    a = as_array(init, "init")
    if a.dtype.kind not in "iuf":
        raise DataValidationError(
            f"init must be a real (n_objects, n_components) array; got dtype {a.dtype}."
        )
    x0 = torch.as_tensor(a, dtype=problem.dtype).to(problem.device)
    if x0.shape != (n, p):
        raise DataValidationError(
            f"init must have shape (n_objects, n_components) = ({n}, {p}); got "
            f"{tuple(x0.shape)}."
        )
    if not torch.isfinite(x0).all():
        raise DataValidationError("init contains NaN or infinite values.")
    if factored and n > 1 and bool((x0 == x0[:1]).all()):
        # every difference x_i - x_j is 0, so is every gradient row
        raise DataValidationError(
            f"init has all {n} rows equal (all zeros?): every distance is 0 "
            "there and the gradient of any ordinal loss vanishes (a saddle "
            "point), so the solver cannot move. Pass init=None for a random "
            "start, or add small noise, e.g. init + 1e-3 * "
            "np.random.default_rng(0).standard_normal(init.shape)."
        )
    return x0


def _validation_tracker(problem: OrdinalProblem, validation):
    """``X -> {"val_error": ...}`` on the held-out comparisons (None without)."""
    if validation is None:
        return None
    n = problem.n_objects
    val = (
        validation
        if isinstance(validation, Comparisons)
        else as_comparisons(validation, n_objects=n)
    )
    if len(val) == 0:
        raise DataValidationError("The validation comparisons are empty.")
    if val.n_objects > n:
        raise DataValidationError(
            f"The validation comparisons index {val.n_objects} objects, the "
            f"training ones {n}."
        )
    Qv = torch.as_tensor(val.as_quadruplets(), device=problem.device)

    def evaluate(X):
        return {"val_error": problem.error(X, Qv)}

    return evaluate
