"""Observed entries prepared once for the completion solvers.

A matrix problem has one *unfolding* (the matrix itself); a D-way tensor
problem has D, the mode-d matricizations ``X_<d>`` of Yao & Kwok Sec. 4, each
with its own sparse pattern over the same observed entries. Values that live
on the observed entries (observations, predictions, loss derivatives) are kept
in one canonical order: the CSR order of the single pattern for a matrix (so no
permutation is ever applied), the input order for a tensor (each unfolding
permutes to and from its CSR order).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    DeviceLike,
    DtypeLike,
    check_sample_weight,
    resolve_device,
    resolve_dtype,
)
from ..data import ObservedEntries, as_observed_entries
from ..linalg import SparsePattern, SparsePlusLowRank, power_method
from .losses import Loss, get_loss

__all__ = ["CompletionProblem", "Unfolding", "problem_pair"]

#: Observed entries in any form :func:`~embedopt.data.as_observed_entries` takes.
EntriesLike = (
    ObservedEntries | sp.spmatrix | sp.sparray | tuple | ArrayLike | torch.Tensor
)
#: ``(U, s, V)``: the factors of ``U diag(s) V^T``.
Factors = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class Unfolding:
    """One matricization of the observed entries.

    Parameters
    ----------
    pattern : SparsePattern
        Positions in the unfolded matrix.
    perm : torch.Tensor or None
        ``values_in_csr_order = values_canonical[perm]``; None when the canonical
        order already is the CSR order (matrices).
    """

    def __init__(self, pattern: SparsePattern, perm: torch.Tensor | None):
        self.pattern = pattern
        self.perm = perm
        self.inverse = None if perm is None else torch.argsort(perm)
        self.shape = pattern.shape

    def to_block(self, values: torch.Tensor) -> torch.Tensor:
        """Canonical-order values to this unfolding's CSR order."""
        return values if self.perm is None else values[self.perm]

    def to_canonical(self, values: torch.Tensor) -> torch.Tensor:
        """This unfolding's CSR-order values to canonical order."""
        return values if self.inverse is None else values[self.inverse]

    def values(self, U: torch.Tensor, s: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        """Entries of ``U diag(s) V^T`` (unfolded) at the observed positions."""
        return self.to_canonical(self.pattern.sampled_dot(U * s, V))


def _unfoldings(
    entries: ObservedEntries, device
) -> tuple[list[Unfolding], np.ndarray | None]:
    """Unfoldings of ``entries`` and the canonical permutation of its values
    (None: the input order is the canonical order)."""
    idx, shape = entries.indices, entries.shape
    if entries.ndim == 2:
        pattern = SparsePattern(idx[:, 0], idx[:, 1], shape, device)
        order = None if pattern.is_input_order else pattern.order.cpu().numpy()
        return [Unfolding(pattern, None)], order
    out = []
    for d in range(entries.ndim):
        others = [k for k in range(entries.ndim) if k != d]
        cols = np.ravel_multi_index(tuple(idx[:, others].T), [shape[k] for k in others])
        n_cols = int(np.prod([shape[k] for k in others]))
        pattern = SparsePattern(idx[:, d], cols, (shape[d], n_cols), device)
        out.append(Unfolding(pattern, pattern.order))
    return out, None


class CompletionProblem:
    """Training (and optional validation) entries on a device, ready to solve.

    Building the sparse structures costs a sort of the entries per unfolding;
    a problem is built once and reused across the lambda path, restarts and
    post-processing.

    Parameters
    ----------
    X : ObservedEntries or any input accepted by
        :func:`~embedopt.data.as_observed_entries`
        The observed training entries of a matrix or a D-way tensor.
    loss : str or Loss
        See :func:`~embedopt.completion.get_loss`.
    validation : same types as X, optional
        Held-out entries whose error is recorded at every iteration.
    shape : tuple of int, optional
        Shape for COO input.
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}
    sample_weight : array-like of shape (nnz,), optional
        One non-negative finite weight per training entry, in the order of
        the entries of ``X`` (as :func:`~embedopt.data.as_observed_entries`
        lists them); not all zero. The loss becomes ``sum_Omega w_ij
        l(X_ij, O_ij)``: its gradient on Omega is ``w * l'`` (the same
        O(|Omega|) work), its smoothness ``max(w) rho``, so the solvers step
        ``1 / (max(w) rho)``; a weight-0 entry is as good as absent. Scaling
        every weight by c is dividing lambda by c. None: every entry weighs
        1 (the unweighted code path).
    validation_weight : array-like of shape (n_validation,), optional
        The same for the validation entries: their error becomes the
        weighted RMSE ``sqrt(sum w e^2 / sum w)`` (weighted accuracy for
        +/-1 losses).

    Attributes
    ----------
    entries : ObservedEntries
    unfoldings : list of Unfolding
        One for a matrix, D for a D-way tensor.
    y : torch.Tensor
        Observed values in canonical order.
    weight : torch.Tensor or None
        ``sample_weight`` in canonical order (None without weights).
    validation_weight : torch.Tensor or None
        The validation weights in the validation entries' canonical order.
    loss : Loss
    shape : tuple of int
    ndim : int
    """

    def __init__(
        self,
        X: EntriesLike,
        *,
        loss: str | Loss = "square",
        validation: EntriesLike | None = None,
        shape: tuple[int, ...] | None = None,
        device: DeviceLike = "auto",
        dtype: DtypeLike = None,
        sample_weight: ArrayLike | None = None,
        validation_weight: ArrayLike | None = None,
    ):
        self.entries = as_observed_entries(X, shape)
        if self.entries.ndim < 2:
            raise DataValidationError(
                f"Completion needs matrix or tensor entries; got shape "
                f"{self.entries.shape}."
            )
        self.shape = self.entries.shape
        self.ndim = self.entries.ndim
        self.loss: Loss = get_loss(loss)
        self.loss.check_labels(self.entries.values)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        self.unfoldings, self.y, self.weight = self._prepare(
            self.entries, sample_weight, "sample_weight"
        )
        self.validation, self.validation_weight = None, None
        if validation is not None:
            if isinstance(validation, ObservedEntries):
                val = validation
            else:
                val = as_observed_entries(validation, self.shape)
            if val.shape != self.shape:
                raise DataValidationError(
                    f"Validation entries have shape {val.shape} but training entries "
                    f"have shape {self.shape}."
                )
            self.loss.check_labels(val.values)
            unf, y, w = self._prepare(val, validation_weight, "validation_weight")
            self.validation, self.validation_weight = (unf, y), w
        elif validation_weight is not None:
            raise DataValidationError(
                "validation_weight was given without validation entries; pass "
                "validation=... as well, or drop validation_weight."
            )

    def _prepare(self, entries: ObservedEntries, weight, name: str):
        unf, order = _unfoldings(entries, self.device)
        y = _permuted(entries.values, order, self.dtype).to(self.device)
        if weight is None:
            return unf, y, None
        w = check_sample_weight(weight, entries.nnz, owner=name, unit="entry")
        w = w if order is None else w[order]
        wt = torch.as_tensor(w, dtype=self.dtype)
        if not bool(torch.isfinite(wt).all()) or not bool((wt > 0).any()):
            raise DataValidationError(
                f"{name} spans more than {self.dtype} holds: the weights "
                f"(largest {w.max():.3g}) overflow to inf or all round to 0 in it. "
                "Rescale them (e.g. divide by their maximum and scale lam the "
                "same way) or use dtype='float64'."
            )
        return unf, y, wt.to(self.device)

    # -- the weighted loss on Omega -------------------------------------------------
    @property
    def max_weight(self) -> float:
        """``max(w)``: the loss is ``max(w) rho``-smooth (1.0 without weights)."""
        return 1.0 if self.weight is None else float(self.weight.max())

    def loss_total(self, x: torch.Tensor) -> float:
        """``sum_Omega w l(x, y)`` at the values ``x`` on Omega (canonical order).

        Parameters
        ----------
        x : torch.Tensor, shape (nnz,)

        Returns
        -------
        float
            Accumulated in float64.
        """
        if self.weight is None:
            return self.loss.total(x, self.y)
        values = self.weight * self.loss.value(x, self.y)
        return float(values.sum(dtype=torch.float64))

    def loss_grad(self, x: torch.Tensor) -> torch.Tensor:
        """``w * l'(x, y)``: the gradient of :meth:`loss_total` on Omega.

        Parameters
        ----------
        x : torch.Tensor, shape (nnz,)

        Returns
        -------
        torch.Tensor, shape (nnz,)
        """
        g = self.loss.grad(x, self.y)
        return g if self.weight is None else self.weight * g

    @property
    def pattern(self) -> SparsePattern:
        """The sparse pattern of a matrix problem."""
        if self.ndim != 2:
            raise AttributeError(
                "a tensor problem has one pattern per unfolding; use .unfoldings"
            )
        return self.unfoldings[0].pattern

    @property
    def metric_name(self) -> str:
        """``"accuracy"`` for +/-1 losses, ``"rmse"`` otherwise."""
        return "accuracy" if self.loss.binary else "rmse"

    def on_device(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The tensors on the problem's device (factors a user built on the CPU).

        ``Tensor.to`` returns a tensor already there as is, so the solvers'
        own factors cost nothing.
        """
        return tuple(t.to(self.device) for t in tensors)

    def values_at(
        self, pattern: SparsePattern, U: torch.Tensor, s: torch.Tensor, V: torch.Tensor
    ) -> torch.Tensor:
        """Entries of ``U diag(s) V^T`` at a matrix pattern's positions."""
        return pattern.sampled_dot(U * s, V)

    def predict(
        self, factors: Factors | list[Factors], which: str = "train"
    ) -> torch.Tensor:
        """Model values at the training or validation entries (canonical order).

        Parameters
        ----------
        factors : tuple (U, s, V) or list of them (one per unfolding)
        which : {"train", "validation"}

        Returns
        -------
        torch.Tensor
        """
        unfoldings = self.unfoldings if which == "train" else self.validation[0]
        factors = [self.on_device(*f) for f in _as_factor_list(factors)]
        total = None
        for unf, (U, s, V) in zip(unfoldings, factors, strict=True):
            if s.numel() == 0:
                continue
            v = unf.values(U, s, V)
            total = v if total is None else total + v
        if total is None:
            n = self.y.numel() if which == "train" else self.validation[1].numel()
            total = torch.zeros(n, dtype=self.dtype, device=self.device)
        return total

    def score(
        self, pred: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None
    ) -> float:
        """RMSE, or accuracy of the signs for +/-1 losses (weighted by ``weight``).

        Parameters
        ----------
        pred, y : torch.Tensor, shape (n,)
        weight : torch.Tensor, shape (n,), optional
            Weighted mean of the squared errors (of the hits); NaN if the
            weights sum to 0.

        Returns
        -------
        float
        """
        if self.loss.binary:
            hits = ((pred >= 0).to(y.dtype) * 2 - 1 == y).double()
        else:
            hits = (pred - y).double() ** 2
        if weight is None:
            mean = hits.mean()
        else:
            w = weight.double()
            mean = (w * hits).sum() / w.sum()
        return float(mean if self.loss.binary else torch.sqrt(mean))

    def validation_score(self, *factors) -> float:
        """Validation metric of the model.

        Parameters
        ----------
        *factors
            ``U, s, V`` of a matrix, ``(U, s, V)``, the list of per-mode
            ``(U_d, s_d, V_d)`` of a tensor, or those per-mode triples unpacked.

        Returns
        -------
        float
            RMSE (accuracy for +/-1 losses); NaN without validation entries.
        """
        if self.validation is None:
            return float("nan")
        if len(factors) == 1:
            f = factors[0]
        elif len(factors) == 3 and torch.is_tensor(factors[1]):
            f = factors  # one matrix triple, unpacked
        else:
            f = list(factors)  # per-mode triples, unpacked (any number of modes)
        pred = self.predict(f, "validation")
        return self.score(pred, self.validation[1], self.validation_weight)

    def lambda_max(
        self,
        factors: Factors | list[Factors] | None = None,
        n_iter: int = 10,
        generator: torch.Generator | None = None,
    ) -> float | list[float]:
        """Largest singular value of each unfolded loss gradient at ``X``.

        For the square loss and X = 0 this is ``||P_Omega(O)||_2``, the smallest
        lambda whose solution is zero: the natural start of the continuation and
        of the lambda path. Estimated by the power method. A float for a matrix,
        a list (one per unfolding) for a tensor. With sample weights it is
        that of the weighted gradient ``w * l'``.
        """
        x = self.predict(factors) if factors is not None else torch.zeros_like(self.y)
        g = self.loss_grad(x)
        out = []
        for unf in self.unfoldings:
            R = torch.randn(
                unf.shape[1],
                1,
                generator=generator,
                dtype=self.dtype,
                device="cpu" if generator is None else generator.device,
            )
            op = self.operator(unf, g, [])
            Q = power_method(op, R.to(self.device), n_iter)
            out.append(float(torch.linalg.vector_norm(op.rmatmul(Q))))
        return out[0] if self.ndim == 2 else out

    # -- the hooks of data-parallel problems (completion.distributed) ---------------
    #: Whether the entries are spread over the processes of a group (then
    #: every sum over Omega goes through :meth:`all_reduce`).
    distributed: bool = False

    def operator(
        self,
        unf: Unfolding,
        values: torch.Tensor,
        terms: list[tuple[float, torch.Tensor, torch.Tensor]],
    ) -> SparsePlusLowRank:
        """``P_Omega(values) + sum_i c_i U_i V_i^T`` on one unfolding.

        Parameters
        ----------
        unf : Unfolding
        values : torch.Tensor, shape (nnz,)
            Values on Omega in canonical order.
        terms : list of (float, Tensor, Tensor)
            See :meth:`~embedopt.linalg.SparsePlusLowRank.from_terms`.

        Returns
        -------
        SparsePlusLowRank
            (A data-parallel problem returns an operator whose products
            with Z^T are summed over the processes.)
        """
        return SparsePlusLowRank.from_terms(unf.pattern, unf.to_block(values), terms)

    def all_reduce(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Sums over the observed entries of every process: here, the inputs.

        Parameters
        ----------
        *tensors : torch.Tensor
            Partial sums over this process's entries.

        Returns
        -------
        tuple of torch.Tensor
        """
        return tensors

    def __repr__(self) -> str:
        return (
            f"CompletionProblem(shape={self.shape}, nnz={self.entries.nnz}, "
            f"loss={self.loss.name!r}, device={self.device}, dtype={self.dtype})"
        )


def _permuted(values: np.ndarray, order: np.ndarray | None, dtype) -> torch.Tensor:
    """A new ``dtype`` tensor of ``values[order]``, cast before it is permuted
    (a float64 input then makes no float64 copy: the same numbers)."""
    np_dtype = torch.empty((), dtype=dtype).numpy().dtype
    cast = np.asarray(values).astype(np_dtype, copy=order is None)
    return torch.from_numpy(cast if order is None else cast[order])


def _as_factor_list(factors) -> list:
    """``(U, s, V)`` -> ``[(U, s, V)]``; a list of triples is returned as is."""
    if isinstance(factors, tuple) and len(factors) == 3 and torch.is_tensor(factors[1]):
        return [factors]
    return list(factors)


def _as_problem(X, *, loss, validation, shape, device, dtype) -> CompletionProblem:
    if isinstance(X, CompletionProblem):
        return X
    return CompletionProblem(
        X, loss=loss, validation=validation, shape=shape, device=device, dtype=dtype
    )


def problem_pair(
    make: Callable[..., CompletionProblem],
    entries: tuple[ObservedEntries, ObservedEntries | None, ObservedEntries | None],
    weights: tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None],
) -> tuple[CompletionProblem, CompletionProblem | None]:
    """The problem a fit solves and the one it refits on, made by ``make``.

    ``make(entries, validation=None, sample_weight=None,
    validation_weight=None)`` builds one problem (plain, offsets inside a
    +/-1 loss, or sharded over processes); the validation weights are
    dropped when there is no validation set, and there is no refit problem
    without refit entries.

    Parameters
    ----------
    make : callable
    entries : tuple (train, validation, refit) of ObservedEntries
        ``validation`` and ``refit`` may be None.
    weights : tuple (sample_weight, validation_weight, refit_weight)
        Their sample weights (each None or a numpy.ndarray).

    Returns
    -------
    problem, refit_problem : CompletionProblem, CompletionProblem or None
    """
    (train, validation, refit), (w_train, w_val, w_refit) = entries, weights
    problem = make(
        train,
        validation=validation,
        sample_weight=w_train,
        validation_weight=None if validation is None else w_val,
    )
    if refit is None:
        return problem, None
    return problem, make(refit, sample_weight=w_refit)
