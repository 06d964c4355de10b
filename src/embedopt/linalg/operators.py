"""Matrices given by their products: sparse-plus-low-rank and dense wrappers.

The solvers of :mod:`embedopt.linalg.svd` only need ``Z @ R`` and ``Z.T @ Q``
products, so the m x n iterate of AIS-Impute / Soft-Impute is never formed.
"""

from __future__ import annotations

from typing import Protocol

import torch

from .sparse import SparsePattern

__all__ = ["DenseOperator", "MatrixOperator", "SparsePlusLowRank"]


class MatrixOperator(Protocol):
    """A matrix Z (m x n) given by its products, as the SVT solvers take it.

    :class:`SparsePlusLowRank` and :class:`DenseOperator` are two; any object
    with these attributes and methods will do.

    Attributes
    ----------
    shape : tuple of int
        ``(m, n)``.
    dtype : torch.dtype
    device : torch.device
    """

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device

    def matmul(self, R: torch.Tensor) -> torch.Tensor:
        """``Z @ R`` for ``R`` of shape (n, k)."""
        ...

    def rmatmul(self, Q: torch.Tensor) -> torch.Tensor:
        """``Z.T @ Q`` for ``Q`` of shape (m, k)."""
        ...


class SparsePlusLowRank:
    """``Z = P_Omega(S) + A @ B.T`` (the "sparse plus low-rank" structure).

    Parameters
    ----------
    pattern : SparsePattern
        Positions Omega of the sparse part.
    values : torch.Tensor, shape (nnz,)
        Values of the sparse part, in the pattern's CSR order.
    A : torch.Tensor, shape (m, q)
    B : torch.Tensor, shape (n, q)
        Low-rank part; ``q`` may be 0.

    Notes
    -----
    ``matmul`` and ``rmatmul`` cost ``O(|Omega| k + (m + n) q k)`` for k
    right-hand sides (eq. (11) and Sec. 3.2 of Yao & Kwok).
    """

    def __init__(
        self,
        pattern: SparsePattern,
        values: torch.Tensor,
        A: torch.Tensor,
        B: torch.Tensor,
    ):
        self.pattern = pattern
        self.values = values
        self.A = A
        self.B = B
        self.shape = pattern.shape
        self.dtype = values.dtype
        self.device = values.device

    @classmethod
    def from_terms(
        cls,
        pattern: SparsePattern,
        values: torch.Tensor,
        terms: list[tuple[float, torch.Tensor, torch.Tensor]],
    ) -> SparsePlusLowRank:
        """Build ``P_Omega(values) + sum_i c_i U_i V_i^T``.

        Parameters
        ----------
        pattern : SparsePattern
        values : torch.Tensor
        terms : list of (float, Tensor (m, r_i), Tensor (n, r_i))
            Scaled low-rank terms; terms with a zero coefficient or rank are
            dropped.
        """
        kept = [(c, U, V) for c, U, V in terms if c != 0 and U.shape[1] > 0]
        m, n = pattern.shape
        if not kept:
            empty = values.new_zeros
            return cls(pattern, values, empty((m, 0)), empty((n, 0)))
        A = torch.cat([c * U for c, U, _ in kept], dim=1)
        B = torch.cat([V for _, _, V in kept], dim=1)
        return cls(pattern, values, A, B)

    def matmul(self, R: torch.Tensor) -> torch.Tensor:
        """``Z @ R`` for ``R`` of shape (n, k)."""
        out = self.pattern.matmul(self.values, R)
        if self.A.shape[1]:
            out = out + self.A @ (self.B.T @ R)
        return out

    def rmatmul(self, Q: torch.Tensor) -> torch.Tensor:
        """``Z.T @ Q`` for ``Q`` of shape (m, k)."""
        out = self.pattern.rmatmul(self.values, Q)
        if self.A.shape[1]:
            out = out + self.B @ (self.A.T @ Q)
        return out

    def to_dense(self) -> torch.Tensor:
        """The dense m x n matrix (for tests and tiny problems only)."""
        return self.pattern.to_csr(self.values).to_dense() + self.A @ self.B.T


class DenseOperator:
    """A dense matrix exposed through the same product interface.

    Parameters
    ----------
    Z : torch.Tensor, shape (m, n)
    """

    def __init__(self, Z: torch.Tensor):
        self.Z = Z
        self.shape = tuple(Z.shape)
        self.dtype = Z.dtype
        self.device = Z.device

    def matmul(self, R: torch.Tensor) -> torch.Tensor:
        """``Z @ R``."""
        return self.Z @ R

    def rmatmul(self, Q: torch.Tensor) -> torch.Tensor:
        """``Z.T @ Q``."""
        return self.Z.T @ Q

    def to_dense(self) -> torch.Tensor:
        """The matrix itself."""
        return self.Z
