"""The fixed sparsity pattern of observed entries, with fast products.

A :class:`SparsePattern` stores the positions Omega of the observed entries of
an m x n matrix once, in CSR order, together with the CSR structure of the
transpose and the permutation between the two orders. Values that change every
iteration (residuals, gradients) are plain 1-D tensors in CSR order; the
products below wrap them into CSR tensors without copying the structure.

Cost model (2-core CPU, 10^7 entries, rank 10, float32): ``matmul`` (torch CSR,
both cores) 25-40 ms; ``rmatmul`` 70 ms through SciPy's CSC kernel on the same
arrays (torch's transposed CSR product is ~40x slower, and permuting 10^7 values
into a stored transpose costs ~240 ms of cache misses, so on the CPU the
transpose is never materialized); ``sampled_dot`` 70-90 ms. On CUDA, where
gathers are cheap, ``rmatmul`` uses a transposed CSR whose values are permuted
once per value vector.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike

__all__ = ["SparsePattern", "csr_tensor"]


def csr_tensor(
    crow: torch.Tensor,
    col: torch.Tensor,
    values: torch.Tensor,
    size: tuple[int, ...],
) -> torch.Tensor:
    """A torch sparse CSR tensor, without torch's "beta" warning.

    torch warns once per process that CSR support is "beta" (a C++
    warn-once, whatever the Python filters say); the operations used here
    (CSR @ dense, sampled_addmm) are stable and tested. The first
    construction here silences it, never the process-wide filters; later
    ones skip the ``catch_warnings`` (entering it cost as much as the
    construction itself, thousands of times in a small fit).

    Parameters
    ----------
    crow, col : torch.Tensor
        Compressed row pointers and column indices (int32 or int64).
    values : torch.Tensor
    size : tuple of int

    Returns
    -------
    torch.Tensor
    """
    global _BETA_WARNING_SEEN
    if _BETA_WARNING_SEEN:
        return torch.sparse_csr_tensor(crow, col, values, size, check_invariants=False)
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Sparse CSR tensor support is in beta"
        )
        out = torch.sparse_csr_tensor(crow, col, values, size, check_invariants=False)
    _BETA_WARNING_SEEN = True
    return out


#: Whether torch has emitted (and :func:`csr_tensor` swallowed) its one-time
#: "beta" warning in this process.
_BETA_WARNING_SEEN = False


class SparsePattern:
    """Positions of the observed entries of an m x n matrix.

    Parameters
    ----------
    rows, cols : array-like of int
        Row and column index of each observed entry (any order, no duplicates).
    shape : tuple of int
        ``(m, n)``.
    device : torch.device or str
        Where the index structures live.

    Attributes
    ----------
    shape : tuple of int
    nnz : int
        Number of observed entries ``|Omega|``.
    order : torch.Tensor
        Permutation taking input order to CSR order: ``values_csr =
        values_input[order]``.

    Notes
    -----
    Indices are stored as int32 when they fit (faster and half the memory of
    int64 in torch's CSR kernels).
    """

    def __init__(
        self,
        rows: ArrayLike,
        cols: ArrayLike,
        shape: tuple[int, int],
        device: torch.device | str = "cpu",
    ):
        m, n = int(shape[0]), int(shape[1])
        self.shape = (m, n)
        rows, cols = _index_array(rows), _index_array(cols)
        self.nnz = int(rows.shape[0])
        itype = torch.int32 if max(m, n, self.nnz) < 2**31 - 1 else torch.int64
        self.index_dtype = itype
        dev = torch.device(device)
        # CSR order: sort by (row, col); input already in that order (as
        # generators and row-sorted files give it) needs no permutation.
        order = None if _is_csr_sorted(rows, cols, n) else np.lexsort((cols, rows))
        self._order = None if order is None else _gather(order, None, itype)
        self.crow = _row_pointers(rows, m).to(dev, itype)
        self.col = _gather(cols, order, itype).to(dev)
        self._csr_rows = None
        if dev.type != "cpu":
            self._csr_rows = _gather(rows, order, torch.int64)
            self._order = None if order is None else self._order.to(dev)
        del order
        self._transpose: tuple | None = None
        self.device = dev
        self._tcache: tuple | None = None
        self._scipy_t: tuple | None = None

    @property
    def order(self) -> torch.Tensor:
        """Permutation taking input order to CSR order (int64, on the device).

        ``values_csr = values_input[order]``. Stored as ``index_dtype`` and
        not at all when the input is in CSR order already (then this is
        ``arange(nnz)``, made on each access): 8 bytes per observed entry
        that a solver never reads after its setup.
        """
        if self._order is None:
            return torch.arange(self.nnz, device=self.device)
        return self._order.long()

    @property
    def is_input_order(self) -> bool:
        """Whether the input was in CSR order (``order`` is the identity)."""
        return self._order is None

    # -- index views ------------------------------------------------------------
    def row_indices(self) -> torch.Tensor:
        """Row index of each entry, in CSR order (int64, computed on demand)."""
        counts = self.crow[1:] - self.crow[:-1]
        return torch.repeat_interleave(
            torch.arange(self.shape[0], device=self.device), counts.long()
        )

    def col_indices(self) -> torch.Tensor:
        """Column index of each entry, in CSR order (int64)."""
        return self.col.long()

    def to_csr(self, values: torch.Tensor) -> torch.Tensor:
        """Wrap CSR-ordered ``values`` into a torch sparse CSR tensor."""
        return csr_tensor(self.crow, self.col, values, self.shape)

    def to_csr_transposed(self, values: torch.Tensor) -> torch.Tensor:
        """The transpose (n x m) of :meth:`to_csr` as a CSR tensor.

        The permuted values are cached for the last ``values`` tensor (the
        same tensor object, unmodified since), since a solver multiplies by
        the same sparse matrix several times per iteration. The cache holds
        that tensor: keyed by its address instead, a new tensor that the
        CUDA caching allocator places where a freed one was (same address,
        fresh version counter) would find the old tensor's values, and
        AIS-Impute in float32 on CUDA diverged from it.
        """
        tcrow, tcol, tperm = self.transposed_structure()
        cached = self._tcache
        if cached is None or cached[0] is not values or cached[1] != values._version:
            cached = self._tcache = (values, values._version, values[tperm])
        return csr_tensor(tcrow, tcol, cached[2], (self.shape[1], self.shape[0]))

    def transposed_structure(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """CSR structure of the transpose (the CSC structure), built on first use.

        Only the CUDA path, :meth:`to_csr_transposed` and column-wise solvers
        (row-by-row least squares on the columns) need it; on the CPU
        :meth:`rmatmul` works on the CSR arrays directly, which saves 16 bytes
        per observed entry.

        Returns
        -------
        crow : torch.Tensor, shape (n + 1,)
            Row pointers of the transpose (one row per column of the pattern).
        col : torch.Tensor, shape (nnz,)
            Its column indices (the pattern's rows), sorted within each row.
        perm : torch.Tensor of int64, shape (nnz,)
            ``values[perm]`` orders CSR-ordered values like the transpose.
        """
        if self._transpose is None:
            r_csr = self._csr_rows
            if r_csr is None:
                r_csr = self.row_indices().cpu()
            c_csr = self.col.long().cpu()
            tperm = torch.from_numpy(np.lexsort((r_csr.numpy(), c_csr.numpy())))
            itype, dev = self.index_dtype, self.device
            self._transpose = (
                _compress(c_csr[tperm], self.shape[1]).to(dev, itype),
                r_csr[tperm].to(dev, itype),
                tperm.to(dev),
            )
            self._csr_rows = None
        return self._transpose

    # -- products -----------------------------------------------------------------
    def matmul(self, values: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        """``P_Omega(values) @ R`` for ``R`` of shape (n, k): O(|Omega| k)."""
        return self.to_csr(values) @ R

    def rmatmul(self, values: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
        """``P_Omega(values)^T @ Q`` for ``Q`` of shape (m, k): O(|Omega| k)."""
        if self.device.type == "cpu" and values.dtype in (torch.float32, torch.float64):
            # Zero-copy SciPy view of the transpose as CSC; its kernel needs no
            # permutation of the values.
            zt = self._scipy_transpose(values.detach().numpy())
            out = zt @ np.ascontiguousarray(Q.detach().numpy())
            zt.data = _NO_VALUES  # hold no reference to the caller's values
            return torch.from_numpy(np.ascontiguousarray(out))
        return self.to_csr_transposed(values) @ Q

    def _scipy_transpose(self, data: np.ndarray) -> sp.csc_matrix:
        """The n x m transpose as a SciPy CSC view of the CSR arrays, cached.

        Building a SciPy matrix validates its index arrays (about 40 us),
        which on small problems was a fifth of a fit: a 4-way tensor fit
        made ~20,000 of them. Only ``data`` changes between calls (set to
        ``data`` here); the cache is per thread (two threads multiplying at
        once each get their own).
        """
        key = threading.get_ident()
        cached = self._scipy_t
        if cached is None or cached[0] != key:
            zt = sp.csc_matrix(
                (data, self.col.numpy(), self.crow.numpy()),
                shape=(self.shape[1], self.shape[0]),
                copy=False,
            )
            cached = self._scipy_t = (key, zt)
        cached[1].data = data
        return cached[1]

    def sampled_dot(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """Entries of ``A @ B.T`` at the observed positions, in CSR order.

        Parameters
        ----------
        A : torch.Tensor, shape (m, k)
        B : torch.Tensor, shape (n, k)

        Returns
        -------
        torch.Tensor, shape (nnz,)
            ``sum_l A[i_e, l] * B[j_e, l]`` for each observed entry e.
        """
        out = torch.zeros(self.nnz, dtype=A.dtype, device=self.device)
        if A.shape[1] == 0:
            return out
        # In place on the output's own CSR wrapper: the kernel then allocates
        # nothing per entry (with a separate input it copies the structure
        # and the values, 8 more bytes per entry, and the input's zeros were
        # cached: 4 bytes per entry for the life of the pattern). The zeros
        # matter: with beta=0 the kernel still reads the values of ``out``.
        # On CUDA (cuSPARSE's SDDMM, untested in place here) and under
        # autograd (out= has no derivative) the separate output stays.
        csr = self.to_csr(out)
        grad = torch.is_grad_enabled() and (A.requires_grad or B.requires_grad)
        if grad or self.device.type != "cpu":
            return torch.sparse.sampled_addmm(csr, A, B.T, beta=0.0).values()
        torch.sparse.sampled_addmm(csr, A, B.T, beta=0.0, out=csr)
        return out


#: Placeholder values of the cached SciPy view between products.
_NO_VALUES = np.zeros(0)

#: Entries handled per step by the chunked index helpers (bounded temporaries).
_CHUNK = 1 << 22


def _index_array(idx: ArrayLike) -> np.ndarray:
    """A 1-D integer NumPy array of indices, without copying integer input."""
    a = idx.detach().cpu().numpy() if torch.is_tensor(idx) else np.asarray(idx)
    return a if np.issubdtype(a.dtype, np.integer) else a.astype(np.int64)


def _is_csr_sorted(rows: np.ndarray, cols: np.ndarray, n: int) -> bool:
    """Whether ``(rows, cols)`` is sorted by row, then column (chunked)."""
    prev = -1
    for s in range(0, rows.shape[0], _CHUNK):
        lin = rows[s : s + _CHUNK].astype(np.int64) * n + cols[s : s + _CHUNK]
        if lin[0] < prev or (lin[1:] < lin[:-1]).any():
            return False
        prev = int(lin[-1])
    return True


def _gather(a: np.ndarray, order: np.ndarray | None, dtype) -> torch.Tensor:
    """``a[order]`` (``a`` without order) as a ``dtype`` tensor, chunked so
    that no int64 copy of the whole array is made."""
    out = np.empty(a.shape[0], dtype=torch.empty((), dtype=dtype).numpy().dtype)
    for s in range(0, a.shape[0], _CHUNK):
        part = slice(s, s + _CHUNK)
        out[part] = a[part] if order is None else a[order[part]]
    return torch.from_numpy(out)


def _row_pointers(rows: np.ndarray, m: int) -> torch.Tensor:
    """CSR row pointers (int64) from the row of each entry, in any order."""
    counts = np.zeros(m, dtype=np.int64)
    for s in range(0, rows.shape[0], _CHUNK):
        counts += np.bincount(rows[s : s + _CHUNK], minlength=m)
    crow = torch.zeros(m + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(torch.from_numpy(counts), 0)
    return crow


def _compress(idx: torch.Tensor, size: int) -> torch.Tensor:
    """CSR row pointers from the row index of each entry (any order)."""
    counts = torch.bincount(idx, minlength=size)
    crow = torch.zeros(size + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(counts, 0)
    return crow
