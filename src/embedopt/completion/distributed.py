"""Data-parallel AIS-Impute on ``torch.distributed``: the observed entries by rows.

Every process holds a contiguous block of rows of the m x n matrix with the
observed entries in them (:func:`row_shards` balances the blocks by entries),
its rows of the left factor ``U`` of every iterate, and the whole right
factor ``V`` and singular values ``s`` (n x r and r: small). AIS-Impute's
work is then local but for a few small sums:

==========================================  ==================  ============
what                                        collective          floats
==========================================  ==================  ============
``Z^T Q`` (power method, ``W`` of the SVT)  all-reduce          n k, J + 1
``Q^T Q`` (CholeskyQR of the m x k basis)   all-reduce          k^2, J + 2
training loss, validation error             all-reduce          1, 2
==========================================  ==================  ============

per iteration (J power iterations, k columns of the basis): about
``(J + 1) n k`` floats, independent of |Omega|. ``Z R``
and ``Z^T Q`` are local sparse-plus-low-rank products (``Z`` restricted to
the process's rows); the thin SVD of the all-reduced ``W`` (n x k), the warm
start basis from ``V``, the thresholding and the convergence tests are
computed by every process on bitwise the same inputs, so every process
takes the same steps (gloo and NCCL hand every process bitwise the same
sums; the processes run the same torch build with the same number of
threads, so that the same inputs give the same bits). The
orthonormalization of the row-sharded basis is a distributed CholeskyQR2
(TSQR where the Cholesky factorization fails):
:func:`~embedopt.linalg.distributed.sharded_orthonormalize`. At the end the
rows of ``U`` are all-gathered, so every process holds the whole model.

The lambda path, the validation error, the post-processing of the singular
values, the initial ``lambda_max`` and the centering's offsets
(:func:`fit_centering`) sum over processes the same way:
:class:`DistributedCompletionProblem` is a
:class:`~embedopt.completion.CompletionProblem` whose sums over Omega are
all-reduced, and every solver piece that takes a problem takes it.

Launch one process per device under ``torchrun`` after
``torch.distributed.init_process_group("gloo")`` (CPUs) or ``"nccl"``
(GPUs, one per process, ``device=f"cuda:{local_rank}"``), or with
:func:`~embedopt.similarity.run_distributed` for tests and experiments on
one machine; every process passes the same (whole) data and options, or
its own rows only (``DistributedCompletionProblem(..., local=True)``).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
import torch.distributed as dist
from numpy.typing import ArrayLike

from .._core import (
    DataValidationError,
    InvalidParameterError,
    RandomStateLike,
    resolve_random_state,
)
from ..data import ObservedEntries, as_observed_entries
from ..linalg import SparsePlusLowRank
from ..linalg.distributed import Communicator, GroupLike, sharded_orthonormalize
from .binary import LossCentering
from .centering import Centering
from .problem import (
    CompletionProblem,
    EntriesLike,
    Factors,
    Unfolding,
    problem_pair,
)

__all__ = ["DistributedCompletionProblem", "row_shards"]


def row_shards(rows: np.ndarray, m: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous row blocks with about the same number of entries each.

    Parameters
    ----------
    rows : numpy.ndarray of int
        The row of every observed entry.
    m : int
        Number of rows.
    n_shards : int
        Number of processes.

    Returns
    -------
    list of (start, stop)
        Block r holds rows ``start..stop-1``; every block has at least one
        row, and block boundaries fall where the cumulative entry count
        crosses ``r |Omega| / n_shards`` (power-law row degrees would leave
        equal row counts unbalanced).

    Raises
    ------
    InvalidParameterError
        If there are fewer rows than shards.

    Examples
    --------
    >>> row_shards(np.array([0, 0, 0, 1, 2, 3]), 4, 2)
    [(0, 1), (1, 4)]
    """
    if m < n_shards:
        raise InvalidParameterError(
            f"Data-parallel completion shards the {m} rows over {n_shards} "
            "processes, so each needs at least one row. Use fewer processes."
        )
    cum = np.cumsum(np.bincount(np.asarray(rows, dtype=np.int64), minlength=m))
    nnz = int(cum[-1]) if m else 0
    cuts = [0]
    for r in range(1, n_shards):
        cut = int(np.searchsorted(cum, r * nnz / n_shards, side="left")) + 1
        cuts.append(min(max(cut, cuts[-1] + 1), m - (n_shards - r)))
    cuts.append(m)
    return list(itertools.pairwise(cuts))


def _local(entries: ObservedEntries, weight, a: int, b: int, only: bool = False):
    """The entries of rows ``a..b-1`` (rows renumbered from 0) and their weights;
    ``only``: there must be no others."""
    rows = entries.indices[:, 0]
    sel = np.flatnonzero((rows >= a) & (rows < b))
    if only and sel.size != entries.nnz:
        raise DataValidationError(
            f"With local=True a process passes the entries of its rows {a}..{b - 1} "
            f"only; {entries.nnz - sel.size} entries lie in other rows. Pass this "
            "process's part, or the whole data with local=False."
        )
    idx = entries.indices[sel].copy()
    idx[:, 0] -= a
    # validated as a whole; a block may hold none of them
    shape = (b - a, entries.shape[1])
    local = ObservedEntries(idx, entries.values[sel], shape, validate=False)
    return local, None if weight is None else np.asarray(weight)[sel]


class _ShardedOperator:
    """``Z`` restricted to this process's rows; ``Z^T Q`` summed over processes."""

    def __init__(self, op: SparsePlusLowRank, comm: Communicator, m: int):
        self.op, self.comm = op, comm
        self.shape = (m, op.shape[1])
        self.dtype, self.device = op.dtype, op.device

    def matmul(self, R: torch.Tensor) -> torch.Tensor:
        return self.op.matmul(R)  # this process's rows of Z R

    def rmatmul(self, Q: torch.Tensor) -> torch.Tensor:
        return self.comm.all_reduce(self.op.rmatmul(Q))[0]

    def orthonormalize(self, X: torch.Tensor, passes: int = 2) -> torch.Tensor:
        return sharded_orthonormalize(X, self.comm, passes)


class DistributedCompletionProblem(CompletionProblem):
    """A matrix completion problem whose rows are spread over a process group.

    Every process builds it with the same arguments (the whole data), or
    with its own rows' entries only (``local=True``); it keeps the entries
    of its block of rows (:func:`row_shards`), and the
    solvers of :mod:`embedopt.completion` run on it unchanged: its products
    with the sparse part are local, its sums over Omega (loss, validation
    error, ``Z^T Q``, Gram matrices) are all-reduced, so every process gets
    the whole problem's values.

    Parameters
    ----------
    X : ObservedEntries or any input of
        :func:`~embedopt.data.as_observed_entries`
        All the training entries of the matrix (the same on every process),
        or with ``local=True`` those of this process's rows (row indices of
        the whole matrix).
    process_group : "default" or torch.distributed.ProcessGroup
        The processes to spread the rows over (``"default"``: the group of
        ``torch.distributed.init_process_group``).
    bounds : list of (start, stop), optional
        Every process's block of rows; default :func:`row_shards` of ``X``.
        Problems whose factors are exchanged (a path and its refit) must
        share them.
    local : bool
        ``X`` (and ``validation``, ``sample_weight``...) hold only this
        process's rows, ``bounds[rank]``, e.g. each process read its own
        part of the data: no process ever holds the whole. Needs ``bounds``
        and ``shape``.
    loss, validation, shape, device, dtype, sample_weight, validation_weight
        As in :class:`~embedopt.completion.CompletionProblem` (the whole
        arrays; each process keeps its rows' part).

    Attributes
    ----------
    comm : Communicator
    bounds : list of (start, stop)
    rows : tuple of int
        This process's ``(start, stop)``.
    shape : tuple of int
        Of the whole matrix; ``entries``, ``y``, the unfolding and the left
        factors of the solutions are this process's rows.

    Raises
    ------
    InvalidParameterError
        Without an initialized process group, with fewer rows than
        processes, or bad ``bounds``; with NCCL and a CPU device; with
        ``local=True`` but no ``bounds`` or ``shape``.
    DataValidationError
        For a tensor (only matrices are sharded) or bad entries; with
        ``local=True``, for entries outside this process's rows.
    """

    distributed = True

    def __init__(
        self,
        X: EntriesLike,
        *,
        process_group: GroupLike = "default",
        bounds: list[tuple[int, int]] | None = None,
        local: bool = False,
        shape: tuple[int, ...] | None = None,
        validation: EntriesLike | None = None,
        sample_weight: ArrayLike | None = None,
        validation_weight: ArrayLike | None = None,
        **options,
    ):
        owner = type(self).__name__
        self.comm = (
            process_group
            if isinstance(process_group, Communicator)
            else Communicator(process_group, owner)
        )
        if local and (bounds is None or shape is None):
            raise InvalidParameterError(
                f"{owner}(local=True) holds one process's rows only: pass "
                "bounds= (every process's block of rows, the same everywhere) and "
                "shape= (of the whole matrix)."
            )
        entries = as_observed_entries(X, shape)
        if entries.ndim != 2:
            raise DataValidationError(
                f"{owner} spreads the rows of a matrix over processes; got entries "
                f"of shape {entries.shape}. Fit tensors in one process."
            )
        m, W = entries.shape[0], self.comm.world_size
        self.bounds = bounds or row_shards(entries.indices[:, 0], m, W)
        _check_bounds(self.bounds, m, W, owner)
        a, b = self.rows = self.bounds[self.comm.rank]
        mine, w = _local(entries, sample_weight, a, b, local)
        val = None
        if validation is not None:
            val_all = as_observed_entries(validation, entries.shape)
            if val_all.shape != entries.shape:
                raise DataValidationError(
                    f"Validation entries have shape {val_all.shape} but training "
                    f"entries have shape {entries.shape}."
                )
            val, validation_weight = _local(val_all, validation_weight, a, b, local)
        super().__init__(
            mine,
            validation=val,
            sample_weight=w,
            validation_weight=validation_weight,
            **options,
        )
        self.shape = entries.shape
        if self.comm.active and W > 1 and dist.get_backend(self.comm.group) == "nccl":
            if self.device.type != "cuda":
                raise InvalidParameterError(
                    f"{owner}: the process group's backend is NCCL, which needs a "
                    f"CUDA device; the problem is on {self.device}. Pass "
                    "device='cuda:LOCAL_RANK', or use the gloo backend on CPUs."
                )

    # -- the hooks of CompletionProblem ---------------------------------------------
    def operator(
        self,
        unf: Unfolding,
        values: torch.Tensor,
        terms: list[tuple[float, torch.Tensor, torch.Tensor]],
    ) -> _ShardedOperator:
        """The local sparse-plus-low-rank operator, ``Z^T Q`` all-reduced."""
        op = super().operator(unf, values, terms)
        return _ShardedOperator(op, self.comm, self.shape[0])

    def all_reduce(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The sums over every process of partial sums over its entries."""
        return self.comm.all_reduce(*tensors)

    def _sum(self, value) -> float:
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        return float(self.comm.all_reduce(t)[0])

    def loss_total(self, x: torch.Tensor) -> float:
        """``sum_Omega w l(x, y)`` over every process's entries."""
        return self._sum(super().loss_total(x))

    @property
    def max_weight(self) -> float:
        """``max(w)`` over every process's entries (1.0 without weights)."""
        if self.weight is None:
            return 1.0
        mine = self.weight.max() if self.weight.numel() else self.weight.new_zeros(())
        t = mine.double().reshape(1)
        return float(self.comm.all_reduce(t, op="max")[0])

    def score(
        self, pred: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None
    ) -> float:
        """RMSE (accuracy for +/-1 losses) over every process's entries."""
        if self.loss.binary:
            hits = ((pred >= 0).to(y.dtype) * 2 - 1 == y).double()
        else:
            hits = (pred - y).double() ** 2
        if weight is None:
            sums = torch.stack([hits.sum(), hits.new_tensor(float(hits.numel()))])
        else:
            w = weight.double()
            sums = torch.stack([(w * hits).sum(), w.sum()])
        total, count = self.comm.all_reduce(sums)[0]
        mean = total / count
        return float(mean if self.loss.binary else torch.sqrt(mean))

    # -- factors -----------------------------------------------------------------------
    def local_factors(self, factors: Factors) -> Factors:
        """``(U[start:stop], s, V)``: this process's rows of a whole solution."""
        U, s, V = factors
        if U.shape[0] != self.shape[0]:
            raise DataValidationError(
                f"A start for the {self.shape} matrix needs U with {self.shape[0]} "
                f"rows (the whole matrix, on every process); got {tuple(U.shape)}."
            )
        a, b = self.rows
        return U[a:b], s, V

    def gather_factors(self, factors: Factors) -> Factors:
        """``(U, s, V)`` with all the rows of ``U``, the same on every process."""
        U, s, V = factors
        counts = [b - a for a, b in self.bounds]
        return self.comm.all_gather_rows(U.contiguous(), counts), s, V

    def __repr__(self) -> str:
        return (
            f"DistributedCompletionProblem(shape={self.shape}, rows={self.rows}, "
            f"local_nnz={self.entries.nnz}, process={self.comm.rank} of "
            f"{self.comm.world_size}, loss={self.loss.name!r}, device={self.device})"
        )


def _check_bounds(bounds, m: int, W: int, owner: str) -> None:
    ok = (
        len(bounds) == W
        and bounds[0][0] == 0
        and bounds[-1][1] == m
        and all(a < b for a, b in bounds)
        and all(b == c for (_, b), (c, _) in itertools.pairwise(bounds))
    )
    if not ok:
        raise InvalidParameterError(
            f"The 'bounds' parameter of {owner} must be {W} consecutive, nonempty "
            f"(start, stop) row blocks covering 0..{m}. Got {bounds!r}."
        )


def shared_seed(random_state: RandomStateLike, comm: Communicator, device) -> int:
    """One int seed on every process: an int as given, else one drawn on the first.

    Processes that drew different random starts would take different steps
    and wait on each other's collectives.

    Parameters
    ----------
    random_state : None, int or numpy Generator
    comm : Communicator
    device : torch.device
        Where the broadcast tensor lives (CUDA for NCCL).

    Returns
    -------
    int
    """
    if isinstance(random_state, int | np.integer) and not isinstance(
        random_state, bool
    ):
        value = int(random_state)
    else:
        value = int(
            resolve_random_state(random_state, comm.owner).numpy.integers(2**62)
        )
    t = torch.tensor([value], dtype=torch.int64, device=device)
    return int(comm.broadcast(t)[0])


def ais_impute_on_group(X, init, *, process_group, random_state, run, **options):
    """:func:`~embedopt.completion.ais_impute` with ``process_group`` (see there).

    ``run`` is the one-process solver entry (``proximal._run``), called on a
    :class:`DistributedCompletionProblem` with this process's rows of
    ``init``; the result's ``U`` is all-gathered.
    """
    if isinstance(X, CompletionProblem) and not isinstance(
        X, DistributedCompletionProblem
    ):
        raise InvalidParameterError(
            "ais_impute(process_group=...) spreads the entries over the processes: "
            "pass the entries (the same on every process), or a "
            "DistributedCompletionProblem, not a CompletionProblem."
        )
    if not isinstance(X, DistributedCompletionProblem):
        keys = ("loss", "validation", "shape", "device", "dtype")
        built = {key: options[key] for key in keys if key in options}
        comm = Communicator(process_group, "ais_impute")
        X = DistributedCompletionProblem(X, process_group=comm, **built)
    if init is not None:
        init = X.local_factors(tuple(init))
    seed = shared_seed(random_state, X.comm, X.device)
    res = run(X, init, random_state=seed, **options)
    res.x = X.gather_factors(res.x)
    return res


def distributed_problems(
    centering,
    train: ObservedEntries,
    validation: ObservedEntries | None,
    refit: ObservedEntries | None,
    comm: Communicator,
    *,
    sample_weight=None,
    validation_weight=None,
    refit_weight=None,
    **options,
):
    """:func:`~embedopt.completion.path.completion_problems` over a group.

    The path (or solve) problem and the refit problem, on the centered
    scale, both with the row blocks of the training entries (a warm start
    passes this process's rows of ``U`` from one to the other).

    Parameters
    ----------
    centering : Centering
        Fitted (the same on every process).
    train, validation, refit : ObservedEntries
        All the entries (each process keeps its rows).
    comm : Communicator
    sample_weight, validation_weight, refit_weight : numpy.ndarray, optional
    **options
        ``loss``, ``device``, ``dtype``.

    Returns
    -------
    problem, refit_problem : DistributedCompletionProblem, or None for the refit

    Raises
    ------
    InvalidParameterError
        For offsets inside a +/-1 loss (``center="both"`` with a +/-1 loss):
        one process only.
    """
    bounds = row_shards(train.indices[:, 0], train.shape[0], comm.world_size)

    def make(entries, validation=None, **weights):
        held = None if validation is None else centering.transform(validation)
        return DistributedCompletionProblem(
            centering.transform(entries),
            process_group=comm,
            bounds=bounds,
            validation=held,
            **weights,
            **options,
        )

    return problem_pair(
        make,
        (train, validation, refit),
        (sample_weight, validation_weight, refit_weight),
    )


def fit_centering(
    centering: Centering,
    train: ObservedEntries,
    weight: np.ndarray | None,
    comm: Communicator | None,
) -> Centering:
    """``centering.fit(train, weight)``, over the processes of ``comm``.

    With a group, each process fits on the entries of its rows (the blocks
    of :func:`row_shards`, as the problems keep them) and the sums over
    entries are all-reduced, so every process holds the same offsets.

    Parameters
    ----------
    centering : Centering
        Unfitted.
    train : ObservedEntries
        All the training entries.
    weight : numpy.ndarray or None
    comm : Communicator or None

    Returns
    -------
    Centering
        Fitted.

    Raises
    ------
    InvalidParameterError
        With a group, for offsets inside a +/-1 loss.
    """
    if comm is None:
        return centering.fit(train, weight)
    if isinstance(centering, LossCentering) and centering.center != "none":
        raise InvalidParameterError(
            "MatrixCompletion(process_group=...) with a +/-1 loss takes "
            "center='none' only: the offsets inside the loss have no "
            "data-parallel form here. Pass center='none', or fit in one process."
        )
    bounds = row_shards(train.indices[:, 0], train.shape[0], comm.world_size)
    a, b = bounds[comm.rank]
    rows = train.indices[:, 0]
    sel = np.flatnonzero((rows >= a) & (rows < b))
    mine = train.subset(sel)
    w = None if weight is None else np.asarray(weight)[sel]
    device = _collective_device(comm)

    def all_reduce(values: np.ndarray) -> np.ndarray:
        t = torch.as_tensor(values, dtype=torch.float64, device=device)
        return comm.all_reduce(t)[0].cpu().numpy()

    return centering.fit(mine, w, all_reduce=all_reduce)


def _collective_device(comm: Communicator) -> torch.device:
    """Where a collective's tensors live: CUDA for NCCL, else the CPU."""
    if comm.active and comm.world_size > 1 and dist.get_backend(comm.group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")
