"""Observed entries prepared once for the completion solvers."""

from __future__ import annotations

import torch

from .._core import DataValidationError, resolve_device, resolve_dtype
from ..data import ObservedEntries, as_observed_entries
from ..linalg import SparsePattern, SparsePlusLowRank, power_method
from .losses import Loss, get_loss

__all__ = ["CompletionProblem"]


class CompletionProblem:
    """Training (and optional validation) entries on a device, ready to solve.

    Building the sparse structures (CSR and transposed CSR of Omega) costs a
    sort of the entries; a problem is built once and reused across the
    lambda path, restarts and post-processing.

    Parameters
    ----------
    X : ObservedEntries or any input accepted by
        :func:`~embedopt.data.as_observed_entries`
        The observed training entries (a matrix).
    loss : str or Loss
        See :func:`~embedopt.completion.get_loss`.
    validation : same types as X, optional
        Held-out entries whose error is recorded at every iteration.
    shape : tuple of int, optional
        Shape for COO input.
    device : {"auto", "cpu", "cuda"} or torch.device
    dtype : {"float32", "float64"}

    Attributes
    ----------
    entries : ObservedEntries
    pattern : SparsePattern
    y : torch.Tensor
        Observed values in the pattern's CSR order.
    loss : Loss
    shape : tuple of int
    """

    def __init__(
        self,
        X,
        *,
        loss="square",
        validation=None,
        shape=None,
        device="auto",
        dtype=None,
    ):
        self.entries = as_observed_entries(X, shape)
        if self.entries.ndim != 2:
            raise DataValidationError(
                f"Matrix completion needs 2-D entries; got shape {self.entries.shape}."
            )
        self.shape = self.entries.shape
        self.loss: Loss = get_loss(loss)
        self.loss.check_labels(self.entries.values)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        self.pattern, self.y = self._prepare(self.entries)
        self.validation = None
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
            self.validation = self._prepare(val)

    def _prepare(self, entries: ObservedEntries):
        pattern = SparsePattern(entries.rows, entries.cols, entries.shape, self.device)
        y = torch.as_tensor(entries.values, dtype=self.dtype).to(self.device)
        return pattern, y[pattern.order]

    @property
    def metric_name(self) -> str:
        """``"accuracy"`` for +/-1 losses, ``"rmse"`` otherwise."""
        return "accuracy" if self.loss.binary else "rmse"

    def values_at(self, pattern: SparsePattern, U, s, V) -> torch.Tensor:
        """Entries of ``U diag(s) V^T`` at a pattern's positions (CSR order)."""
        return pattern.sampled_dot(U * s, V)

    def score(self, pred: torch.Tensor, y: torch.Tensor) -> float:
        """RMSE, or accuracy of the signs for +/-1 losses."""
        if self.loss.binary:
            return float(((pred >= 0).to(y.dtype) * 2 - 1 == y).double().mean())
        return float(torch.sqrt(((pred - y).double() ** 2).mean()))

    def validation_score(self, U, s, V) -> float:
        """Validation metric of the low-rank matrix ``U diag(s) V^T``."""
        if self.validation is None:
            return float("nan")
        pattern, y = self.validation
        return self.score(self.values_at(pattern, U, s, V), y)

    def lambda_max(
        self,
        U=None,
        s=None,
        V=None,
        n_iter: int = 10,
        generator: torch.Generator | None = None,
    ) -> float:
        """Largest singular value of the loss gradient at ``X`` (default X = 0).

        For the square loss and X = 0 this is ``||P_Omega(O)||_2``, the smallest
        lambda whose solution is the zero matrix; it is the natural start of the
        continuation and of the lambda path. Estimated by the power method.
        """
        if U is None:
            x = torch.zeros_like(self.y)
        else:
            x = self.values_at(self.pattern, U, s, V)
        g = self.loss.grad(x, self.y)
        n = self.shape[1]
        R = torch.randn(
            n,
            1,
            generator=generator,
            dtype=self.dtype,
            device="cpu" if generator is None else generator.device,
        )
        op = SparsePlusLowRank.from_terms(self.pattern, g, [])
        Q = power_method(op, R.to(self.device), n_iter)
        return float(torch.linalg.vector_norm(op.rmatmul(Q)))

    def __repr__(self) -> str:
        return (
            f"CompletionProblem(shape={self.shape}, nnz={self.pattern.nnz}, "
            f"loss={self.loss.name!r}, device={self.device}, dtype={self.dtype})"
        )


def _as_problem(X, *, loss, validation, shape, device, dtype) -> CompletionProblem:
    if isinstance(X, CompletionProblem):
        return X
    return CompletionProblem(
        X, loss=loss, validation=validation, shape=shape, device=device, dtype=dtype
    )
