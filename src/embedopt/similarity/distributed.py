"""Data-parallel all-pairs training on ``torch.distributed``.

Every process holds the same (replicated) tower parameters and the whole
problem description; each one owns a contiguous shard of the users, with
their observed pairs, and a contiguous shard of the items (see
:func:`shard_bounds`). On its shards a process runs the towers (``P_r``,
``Q_r``), the Jacobian-vector and vector-Jacobian products, and forms partial
sums, which collectives combine so that every process ends with the same
value, gradient and Gauss-Newton product as one process would (up to the
order of float64 additions):

====================================  ==========================  ============
what                                  collective                  size
====================================  ==========================  ============
``G_P, G_Q, C_P, C_Q`` (eq. 13-14)    all-reduce                  2k (k + kt)
observed loss, eq. 11 correction      all-reduce                  2
``Q`` (the q_j of the local pairs)    all-gather                  n k
``R^T P`` / ``Z_O^T P`` (eq. 27)      reduce-scatter              n k
``dQ`` (Gauss-Newton product)         all-gather                  n k
``dQ^T B Q``, ``dP^T A P``            all-reduce                  2 k^2
gradient / Gauss-Newton product       all-reduce                  dim theta
====================================  ==========================  ============

per point (value: first three rows; gradient: plus the fourth and the last)
and per Gauss-Newton product (the last four rows). A process's work is its
shards' tower passes (``m F(f) / W + n F(g) / W``) and its users' pairs, plus
``O(n k)`` for the item-indexed matrices; the regularizer, the solver's
vector operations and the step are replicated, as in PyTorch's
DistributedDataParallel. Since all-reduce hands every process bitwise the
same sums, every process takes the same step, and the solvers of
:mod:`embedopt.optim` run unchanged on :class:`DistributedAllPairsObjective`.

Launch one process per device with ``torchrun --nproc_per_node W
script.py`` (``python -m torch.distributed.run`` offline) after
``torch.distributed.init_process_group("gloo")`` on CPUs or ``"nccl"`` on
GPUs (towers on ``cuda:LOCAL_RANK``), or, for tests and experiments on one
machine, with :func:`run_distributed`. With one process (or no process
group) the objective is :class:`~embedopt.similarity.AllPairsObjective`
itself: no collective runs.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from .._core import InvalidParameterError
from ..data import InteractionsLike
from ..linalg import SparsePattern
from .problem import AllPairsObjective, _Side

__all__ = ["DistributedAllPairsObjective", "run_distributed", "shard_bounds"]


def shard_bounds(n: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous, nearly equal shards of ``range(n)``.

    The first ``n % n_shards`` shards have one entity more than the others.

    Parameters
    ----------
    n : int
        Number of entities.
    n_shards : int
        Number of processes.

    Returns
    -------
    list of (start, stop)
        Shard r is ``range(start, stop)``.

    Examples
    --------
    >>> shard_bounds(7, 2)
    [(0, 4), (4, 7)]
    """
    if not isinstance(n_shards, int) or isinstance(n_shards, bool) or n_shards < 1:
        raise InvalidParameterError(
            f"The 'n_shards' parameter of shard_bounds must be an int in [1, inf). "
            f"Got {n_shards!r}."
        )
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidParameterError(
            f"The 'n' parameter of shard_bounds must be an int in [0, inf). Got {n!r}."
        )
    size, extra = divmod(n, n_shards)
    bounds, start = [], 0
    for r in range(n_shards):
        stop = start + size + (r < extra)
        bounds.append((start, stop))
        start = stop
    return bounds


class DistributedAllPairsObjective(AllPairsObjective):
    """The all-pairs objective computed by the processes of a process group.

    Each process builds it with the same arguments (the whole problem, the
    same towers); it keeps its shard of users, their observed pairs and its
    shard of items (:func:`shard_bounds`), and its oracles return, on every
    process, the value, gradient and Gauss-Newton product of the whole
    problem. The towers' trainable parameters are broadcast from the group's
    first process at construction, so every process starts from the same
    point.

    Parameters
    ----------
    user_tower, item_tower, interactions
        As for :class:`~embedopt.similarity.AllPairsObjective`; the same on
        every process (the towers are run on the local entities only).
    process_group : torch.distributed.ProcessGroup, optional
        The processes to spread the work over; default the default group
        (``torch.distributed.init_process_group``). Without an initialized
        default group, the objective runs in this process alone.
    **options
        Every keyword of :class:`~embedopt.similarity.AllPairsObjective`
        (``loss``, ``omega``, ``user_weights``, ``item_weights``,
        ``sample_weight``, ``imputation``, ``imputed``, ``lam``,
        ``user_inputs``, ``item_inputs``, ``chunk_size``); ``chunk_size``
        bounds the entities per tower pass within the local shard.

    Attributes
    ----------
    rank, world_size : int
        This process's rank in the group and the group's size.
    user_bounds, item_bounds : list of (start, stop)
        Every process's shard of users / items.
    shape, n_observed
        Of the whole problem.

    Raises
    ------
    InvalidParameterError
        If there are fewer users or items than processes, or the group's
        backend is NCCL and the towers are not on a CUDA device.

    Notes
    -----
    The observed pairs follow their users, so a process's share of the
    ``O(|O| k)`` work is its users' share of the pairs; shards are balanced
    by entity counts, since the tower passes dominate the cost of nonlinear
    towers. Every process reads the whole interaction matrix once (to
    validate it and to select its pairs).

    Every oracle (and :meth:`embeddings`, :meth:`replica_spread`) runs
    collectives, so every process calls them in the same order, as the
    solvers of :mod:`embedopt.optim` and :mod:`embedopt.similarity` do when
    every process runs the same solver with the same options from the same
    point. A solver that draws random numbers (the probes of
    :func:`~embedopt.similarity.gauss_newton`'s damping scale and diagonal
    preconditioner, of :func:`~embedopt.similarity.gradient_descent`'s
    scaling) must draw the same ones everywhere: give it the same int
    ``random_state`` on every process (None would let the processes part
    ways and wait on each other's collectives until the group's timeout).
    gloo's and NCCL's all-reduce hand every process bitwise the same sums,
    so the replicas stay bitwise identical; :meth:`replica_spread` checks
    it.

    The sums over processes are split differently from one process's, so
    the results differ from :class:`AllPairsObjective`'s by rounding (about
    1e-16 relative in float64). Newton-CG amplifies such differences exactly
    as it amplifies a perturbation of the starting point of that size: on
    the problem of ``benchmarks/similarity/distributed.py`` the objectives
    of 1 and 2 processes differ by 2e-15, 5e-11, 4e-9 and 2e-5 (relative)
    after 1 to 4 iterations, and those of one process started from x0 and
    from ``x0 (1 + 1e-15)`` by 7e-15, 9e-11, 1e-9 and 5e-5.

    Examples
    --------
    Under ``torchrun --nproc_per_node 2 train.py``::

        torch.distributed.init_process_group("gloo")
        obj = DistributedAllPairsObjective(user_tower, item_tower, pairs, lam=0.1)
        res = gauss_newton(obj, obj.initial_point(), random_state=0)
    """

    def __init__(
        self,
        user_tower: torch.nn.Module,
        item_tower: torch.nn.Module,
        interactions: InteractionsLike,
        *,
        process_group: dist.ProcessGroup | None = None,
        **options,
    ):
        super().__init__(user_tower, item_tower, interactions, **options)
        self.process_group = process_group
        self.rank, self.world_size = _rank_and_size(process_group)
        m, n = self.shape
        owner = type(self).__name__
        if min(m, n) < self.world_size:
            raise InvalidParameterError(
                f"{owner} shards users and items over {self.world_size} processes, "
                f"so each process needs at least one of each; got {m} users and "
                f"{n} items. Use fewer processes."
            )
        self.user_bounds = shard_bounds(m, self.world_size)
        self.item_bounds = shard_bounds(n, self.world_size)
        chunk_size = options.get("chunk_size")
        self._one_pass_everywhere = chunk_size is None or all(
            b - a <= chunk_size for a, b in self.user_bounds + self.item_bounds
        )
        if self.world_size == 1:
            return
        backend = dist.get_backend(process_group)
        if backend == "nccl" and self.device.type != "cuda":
            raise InvalidParameterError(
                f"{owner}: the process group's backend is NCCL, which needs the "
                f"towers on a CUDA device; they are on {self.device}. Move them to "
                "cuda:LOCAL_RANK, or use the gloo backend on CPUs."
            )
        self.broadcast_parameters()
        self._keep_shards(chunk_size)

    # -- setup -----------------------------------------------------------------
    @torch.no_grad()
    def broadcast_parameters(self) -> None:
        """Copy the group's first process's tower parameters to every process.

        Done at construction; call it again (on every process: it is a
        collective) after changing the towers outside the objective's
        oracles, e.g. after a warm start each process ran on its own, so
        that rounding differences cannot make the replicas part ways.
        """
        params = [p for side in self.sides for p in side.parameters()]
        src = _group_rank0(self.process_group)
        for flat, members in _flat_buffers(params):
            dist.broadcast(flat, src=src, group=self.process_group)
            for p, piece in zip(members, _pieces(flat, members), strict=True):
                p.copy_(piece)

    def _keep_shards(self, chunk_size) -> None:
        """Drop what other processes own: their users' pairs, their entities."""
        (u0, u1), (v0, v1) = self.user_bounds[self.rank], self.item_bounds[self.rank]
        pattern = self.pattern
        # CSR order is by user, so the local users' pairs are one contiguous
        # run of every per-pair array, already in the local pattern's order.
        lo, hi = int(pattern.crow[u0]), int(pattern.crow[u1])
        rows = (pattern.row_indices()[lo:hi] - u0).cpu().numpy()
        cols = pattern.col_indices()[lo:hi].cpu().numpy()
        self.pattern = SparsePattern(rows, cols, (u1 - u0, self.shape[1]), self.device)
        self.labels = self.labels[lo:hi].clone()
        self.ytilde = self.ytilde[lo:hi].clone()
        self.pair_weights = self.pair_weights[lo:hi].clone()
        if self.sample_weight is not None:
            self.sample_weight = self.sample_weight[lo:hi].clone()
        self.sides = tuple(
            _Side(
                side.name,
                side.tower,
                side.inputs[a:b].clone(),
                b - a,
                side.weights[a:b].clone(),
                side.tilde[a:b].clone(),
                chunk_size,
            )
            for side, (a, b) in zip(self.sides, ((u0, u1), (v0, v1)), strict=True)
        )
        self._state = None

    # -- results ---------------------------------------------------------------
    @torch.no_grad()
    def embeddings(
        self, x: Sequence[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """P (m x k) and Q (n x k) at ``x``, all rows, on every process."""
        P, Q = super().embeddings(x)
        if self.world_size == 1:
            return P, Q
        return self._gather(P, self.user_bounds), self._gather(Q, self.item_bounds)

    @torch.no_grad()
    def replica_spread(self, x: Sequence[torch.Tensor]) -> float:
        """How far the processes' copies of the point ``x`` are apart.

        Parameters
        ----------
        x : tuple of torch.Tensor
            This process's copy of a point.

        Returns
        -------
        float
            ``max |x_r - x_0|`` over processes r and coordinates; 0.0 when
            every process holds bitwise the same point, as the solvers
            assume. Every process must call it (it is a collective).
        """
        if self.world_size == 1:
            return 0.0
        mine = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in x])
        first = mine.clone()
        dist.broadcast(
            first, src=_group_rank0(self.process_group), group=self.process_group
        )
        spread = (mine - first).abs().max().reshape(1)
        dist.all_reduce(spread, op=dist.ReduceOp.MAX, group=self.process_group)
        return float(spread)

    # -- the hooks of AllPairsObjective ----------------------------------------
    def _one_pass(self) -> bool:
        # Shards differ in size, so chunk counts can too (4 and 3 users in
        # chunks of 3); every process must take the same path.
        return self._one_pass_everywhere

    def _all_reduce(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.world_size == 1:
            return tensors
        out = list(tensors)
        # One collective per dtype: on loopback each call costs ~1 ms of
        # latency whatever its size, more than the k x k sums it carries.
        for flat, members in _flat_buffers(tensors):
            dist.all_reduce(flat, group=self.process_group)
            where = [i for i, t in enumerate(tensors) if t.dtype == flat.dtype]
            for i, piece in zip(where, _pieces(flat, members), strict=True):
                out[i] = piece
        return tuple(out)

    def _all_items(self, X: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return X
        return self._gather(X, self.item_bounds)

    def _own_items(self, X: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return X
        counts = [b - a for a, b in self.item_bounds]
        rows = max(counts)
        padded = _padded_blocks(X, self.item_bounds, rows)
        out = X.new_empty((rows, *X.shape[1:]))
        _reduce_scatter(out, padded, self.process_group)
        return out[: counts[self.rank]]

    def _gather(self, X: torch.Tensor, bounds) -> torch.Tensor:
        """All rows of a matrix sharded by ``bounds``, from the local rows ``X``."""
        counts = [b - a for a, b in bounds]
        rows = max(counts)
        block = X.contiguous()
        if X.shape[0] < rows:
            block = X.new_zeros((rows, *X.shape[1:]))
            block[: X.shape[0]] = X
        out = X.new_empty((rows * self.world_size, *X.shape[1:]))
        _all_gather(out, block, self.process_group)
        if all(c == rows for c in counts):
            return out
        return torch.cat([out[r * rows : r * rows + c] for r, c in enumerate(counts)])


# -- collectives ----------------------------------------------------------------------
def _rank_and_size(group) -> tuple[int, int]:
    if group is None and not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    if not dist.is_available():
        raise InvalidParameterError(
            "A process_group was given, but this build of torch has no "
            "torch.distributed."
        )
    return dist.get_rank(group), dist.get_world_size(group)


def _group_rank0(group) -> int:
    """The global rank of the group's first process (what ``src`` expects)."""
    return 0 if group is None else dist.get_global_rank(group, 0)


def _flat_buffers(tensors):
    """``(flat, members)`` per dtype: the tensors of that dtype, concatenated."""
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    for members in by_dtype.values():
        yield torch.cat([t.detach().reshape(-1) for t in members]), members


def _pieces(flat: torch.Tensor, members):
    """``flat`` cut back into tensors shaped like ``members``."""
    sizes = [t.numel() for t in members]
    return [
        piece.view(t.shape) for piece, t in zip(flat.split(sizes), members, strict=True)
    ]


def _padded_blocks(X: torch.Tensor, bounds, rows: int) -> torch.Tensor:
    """``X``'s row shards, each zero-padded to ``rows`` rows, stacked."""
    if all(b - a == rows for a, b in bounds):
        return X.contiguous()
    out = X.new_zeros((rows * len(bounds), *X.shape[1:]))
    for r, (a, b) in enumerate(bounds):
        out[r * rows : r * rows + b - a] = X[a:b]
    return out


def _all_gather(out: torch.Tensor, block: torch.Tensor, group) -> None:
    # torch 2.13 renamed the tensor-to-tensor collectives (the old names warn).
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    fn(out, block, group=group)


def _reduce_scatter(out: torch.Tensor, blocks: torch.Tensor, group) -> None:
    fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    fn(out, blocks, group=group)


# -- launching ------------------------------------------------------------------------
def run_distributed(
    fn: Callable,
    world_size: int,
    args: tuple = (),
    *,
    backend: str = "gloo",
    threads: int | None = None,
    timeout: float = 300.0,
    start_method: str = "spawn",
) -> list:
    """Run ``fn(*args)`` in ``world_size`` new processes joined in one group.

    For tests and experiments on one machine; a cluster launches with
    ``torchrun``. Each process initializes the default process group
    (through a file store in a temporary folder, so no port is needed), calls
    ``fn(*args)``, and destroys the group.

    Parameters
    ----------
    fn : callable
        With ``start_method="spawn"``, picklable (a module-level function).
    world_size : int
        Number of processes.
    args : tuple
        Picklable arguments of ``fn``.
    backend : {"gloo", "nccl"}
        NCCL needs one GPU per process.
    threads : int, optional
        torch threads per process; default ``os.cpu_count() // world_size``
        (at least 1), so that the processes do not oversubscribe the cores.
    timeout : float
        Seconds a collective may wait for the other processes before it
        fails (a process that died or diverged does not hang the others
        forever).
    start_method : {"spawn", "fork", "forkserver"}
        How the processes start (:mod:`multiprocessing`). "spawn" always
        works but each process imports torch again (5 s for two on a loaded
        2-core machine); "fork" starts in milliseconds and suits CPU work on
        Linux, but not a process that has initialized CUDA.

    Returns
    -------
    list
        ``fn``'s return value on each process, by rank (they travel back
        through ``torch.save``, so tensors are fine); None for a process
        that exited with status 0 before returning.

    Raises
    ------
    torch.multiprocessing.ProcessRaisedException
        With the failing process's traceback, if ``fn`` raises.

    Examples
    --------
    >>> import torch.distributed as dist
    >>> def rank():
    ...     return dist.get_rank()
    >>> run_distributed(rank, 2)  # doctest: +SKIP
    [0, 1]
    """
    if (
        not isinstance(world_size, int)
        or isinstance(world_size, bool)
        or world_size < 1
    ):
        raise InvalidParameterError(
            "The 'world_size' parameter of run_distributed must be an int in "
            f"[1, inf). Got {world_size!r}."
        )
    if backend not in ("gloo", "nccl"):
        raise InvalidParameterError(
            "The 'backend' parameter of run_distributed must be 'gloo' or 'nccl'. "
            f"Got {backend!r}."
        )
    if start_method not in ("spawn", "fork", "forkserver"):
        raise InvalidParameterError(
            "The 'start_method' parameter of run_distributed must be 'spawn', "
            f"'fork' or 'forkserver'. Got {start_method!r}."
        )
    if start_method == "fork" and torch.cuda.is_initialized():
        # the children would die with "CUDA error: initialization error" or
        # autograd's fork error, far from the cause
        raise InvalidParameterError(
            "run_distributed(start_method='fork') cannot start processes from "
            "one that has initialized CUDA; use start_method='spawn'."
        )
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // world_size)
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="embedopt-dist-") as folder:
        mp.start_processes(
            _process,
            args=(fn, tuple(args), world_size, backend, folder, threads, timeout),
            nprocs=world_size,
            join=True,
            start_method=start_method,
        )
        # A process that exited with status 0 without returning (os._exit,
        # e.g. a test of what its death does to the others) left no file.
        files = [Path(folder) / f"{r}.pt" for r in range(world_size)]
        return [
            torch.load(f, weights_only=False) if f.exists() else None for f in files
        ]


def _process(rank, fn, args, world_size, backend, folder, threads, timeout):
    """One process of :func:`run_distributed`."""
    torch.set_num_threads(threads)
    dist.init_process_group(
        backend,
        init_method=f"file://{Path(folder) / 'store'}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=timeout),
    )
    try:
        result = fn(*args)
    finally:
        dist.destroy_process_group()
    torch.save(result, Path(folder) / f"{rank}.pt")
