"""Collectives over a ``torch.distributed`` process group, and row-sharded QR.

A :class:`Communicator` wraps a process group (or no group: one process, where
every collective is the identity) with the few collectives that data-parallel
solvers need: the sum (all-reduce) of small products, the maximum, the
broadcast of a seed, and the gathering of a row-sharded matrix. A collective
that fails (a process died, or the group's timeout passed while the others
waited) raises :class:`~embedopt._core.CollectiveError` naming the operation,
instead of the backend's bare message.

:func:`sharded_orthonormalize` is the ``QR(.)`` of the power method for a tall
matrix whose rows are spread over the processes: CholeskyQR2 with the k x k
Gram matrix all-reduced (two GEMMs and one all-reduce of k^2 floats per
pass), falling back to TSQR (local Householder QRs, all-gathered k x k
factors) where the Cholesky factorization fails, as
:func:`~embedopt.linalg.orthonormalize` falls back to Householder QR. The
same code runs on gloo (CPU tensors) and NCCL (CUDA tensors).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.distributed as dist

from .._core import CollectiveError, InstanceOf, InvalidParameterError, Options
from .svd import _nearly_singular, _times_inverse_transpose

__all__ = [
    "PROCESS_GROUP_CONSTRAINT",
    "Communicator",
    "GroupLike",
    "sharded_orthonormalize",
]

#: What a ``process_group=`` parameter takes: None (one process), ``"default"``
#: (the default group) or a group object.
GroupLike = Literal["default"] | getattr(dist, "ProcessGroup", object) | None

_PROCESS_GROUP = getattr(dist, "ProcessGroup", None) if dist.is_available() else None

#: The ``_parameter_constraints`` entry of an estimator's ``process_group``:
#: None (one process), "default" (the default group) or a ProcessGroup
#: (where torch.distributed is available).
PROCESS_GROUP_CONSTRAINT = [
    None,
    Options(["default"]),
    *(
        [InstanceOf(_PROCESS_GROUP, "a torch.distributed.ProcessGroup")]
        if _PROCESS_GROUP is not None
        else []
    ),
]


class Communicator:
    """The collectives of one process group, as the data-parallel solvers use them.

    Parameters
    ----------
    process_group : None, "default" or torch.distributed.ProcessGroup
        None: this process alone (every collective returns its input);
        ``"default"``: the default group of
        ``torch.distributed.init_process_group``; a group object: that group.
    owner : str
        Named in error messages.

    Attributes
    ----------
    rank, world_size : int
        This process's rank in the group and the group's size.
    group : torch.distributed.ProcessGroup or None
        What the collectives receive (None: the default group).
    volume : int
        Bytes this process has handed to collectives so far (the payloads;
        a ring all-reduce sends and receives about twice its payload).

    Raises
    ------
    InvalidParameterError
        If a group is asked for but torch.distributed is not initialized.

    Examples
    --------
    >>> comm = Communicator(None)
    >>> comm.world_size, float(comm.all_reduce(torch.ones(1))[0])
    (1, 1.0)
    """

    def __init__(self, process_group: GroupLike = None, owner: str = "embedopt"):
        self.owner = owner
        self.volume = 0
        self.active = process_group is not None
        if not self.active:
            self.group, self.rank, self.world_size = None, 0, 1
            return
        if not (dist.is_available() and dist.is_initialized()):
            raise InvalidParameterError(
                f"{owner}(process_group={process_group!r}) runs on a "
                "torch.distributed process group, but none is initialized in this "
                "process: call torch.distributed.init_process_group first (torchrun "
                "sets up its environment), or leave process_group=None."
            )
        self.group = None if process_group == "default" else process_group
        self.rank = dist.get_rank(self.group)
        self.world_size = dist.get_world_size(self.group)

    @property
    def root(self) -> int:
        """The global rank of the group's first process (``src`` of a broadcast)."""
        return 0 if self.group is None else dist.get_global_rank(self.group, 0)

    def _call(self, what: str, fn, *args, payload: torch.Tensor, **kwargs):
        self.volume += payload.numel() * payload.element_size()
        try:
            return fn(*args, group=self.group, **kwargs)
        except (RuntimeError, ValueError) as exc:
            raise CollectiveError(
                f"{self.owner}: the {what} on process {self.rank} of "
                f"{self.world_size} failed ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}). Another process "
                "of the group has died, or has not reached the same collective "
                "within the group's timeout (init_process_group(timeout=...)): "
                "every process must run the same calls with the same data and "
                "options. Look at the other processes' output for the first error."
            ) from exc

    def all_reduce(
        self, *tensors: torch.Tensor, op: str = "sum"
    ) -> tuple[torch.Tensor, ...]:
        """The elementwise sums (or maxima) over the processes, in one collective.

        Parameters
        ----------
        *tensors : torch.Tensor
            Of one dtype and device (several are concatenated, since every
            collective costs a round trip whatever its size).
        op : {"sum", "max"}

        Returns
        -------
        tuple of torch.Tensor
            New tensors shaped like the inputs, bitwise the same on every
            process.
        """
        if not self.active or self.world_size == 1:
            return tensors
        flat = torch.cat([t.detach().reshape(-1) for t in tensors])
        red = dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX
        what = f"all-reduce ({op}) of {flat.numel()} values"
        self._call(what, dist.all_reduce, flat, op=red, payload=flat)
        sizes = [t.numel() for t in tensors]
        return tuple(
            p.view(t.shape) for p, t in zip(flat.split(sizes), tensors, strict=True)
        )

    def broadcast(self, t: torch.Tensor) -> torch.Tensor:
        """The group's first process's ``t``, on every process (in place)."""
        if self.active and self.world_size > 1:
            self._call("broadcast", dist.broadcast, t, src=self.root, payload=t)
        return t

    def all_gather_rows(self, X: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """The whole matrix whose consecutive row blocks the processes hold.

        Parameters
        ----------
        X : torch.Tensor, shape (counts[rank], ...)
            This process's rows.
        counts : list of int
            Every process's number of rows, by rank.

        Returns
        -------
        torch.Tensor, shape (sum(counts), ...)
        """
        if not self.active or self.world_size == 1:
            return X
        rows = max(counts)
        block = X.new_zeros((rows, *X.shape[1:]))
        block[: X.shape[0]] = X
        out = X.new_empty((rows * self.world_size, *X.shape[1:]))
        fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        block = block.contiguous()
        what = f"all-gather of {out.numel()} values"
        self._call(what, fn, out, block, payload=block)
        return torch.cat([out[r * rows : r * rows + c] for r, c in enumerate(counts)])


def sharded_orthonormalize(
    X: torch.Tensor, comm: Communicator, passes: int = 2
) -> torch.Tensor:
    """Orthonormal basis of a tall matrix whose rows are spread over processes.

    :func:`~embedopt.linalg.orthonormalize` (CholeskyQR2, the first pass in
    float64) with the Gram matrix ``X^T X`` summed over the processes, so
    that every process computes the same k x k Cholesky factor and scales
    its own rows; the result equals the one-process basis of the stacked
    rows up to the rounding of the sums. Where the Cholesky factorization
    fails (or, with one pass, ``X`` is nearly rank deficient), TSQR: each
    process factors its rows, the k x k triangles are all-gathered and
    factored again (the same on every process). Its columns may differ in
    sign from the one-process Householder QR's, which spans the same space.

    Parameters
    ----------
    X : torch.Tensor, shape (m_r, k)
        This process's rows.
    comm : Communicator
    passes : {1, 2}
        As in :func:`~embedopt.linalg.orthonormalize`.

    Returns
    -------
    torch.Tensor, shape (m_r, k)
        This process's rows of the orthonormal basis.
    """
    k = X.shape[1]
    if k == 0:
        return X
    Q = X.double()
    for p in range(passes):
        if p == 1 and X.dtype != torch.float64:
            Q = Q.to(X.dtype)
        (G,) = comm.all_reduce((Q.T @ Q).double())
        L, info = torch.linalg.cholesky_ex(G)
        if int(info) != 0 or (passes == 1 and _nearly_singular(L)):
            return _tsqr(X, comm)
        Q = _times_inverse_transpose(Q, L)
    return Q.to(X.dtype)


def _tsqr(X: torch.Tensor, comm: Communicator) -> torch.Tensor:
    """TSQR: ``X_r = Q_r R_r``, ``[R_0; R_1; ...] = Q' R``, rows ``Q_r Q'_r``.

    A process with fewer rows than columns pads its triangle with zero rows;
    every triangle is k x k, so one all-gather carries them.
    """
    k = X.shape[1]
    Q1, R1 = torch.linalg.qr(X.double(), mode="reduced")
    if R1.shape[0] < k:
        Q1 = torch.cat([Q1, Q1.new_zeros((Q1.shape[0], k - R1.shape[0]))], dim=1)
        R1 = torch.cat([R1, R1.new_zeros((k - R1.shape[0], k))])
    stacked = comm.all_gather_rows(R1, [k] * comm.world_size)
    Q2 = torch.linalg.qr(stacked, mode="reduced").Q
    return (Q1 @ Q2[comm.rank * k : (comm.rank + 1) * k]).to(X.dtype)
