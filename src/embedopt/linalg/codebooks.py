"""Product-quantization kernels: k-means per subspace, encoding, ADC search.

They live in ``linalg`` because both :mod:`embedopt.quantization` (which
learns the codebooks) and the recommenders' item index (:mod:`embedopt.nn`)
scan codes with them; ``embedopt.quantization.codebooks`` re-exports them.

Notation (Jegou et al. 2010): vectors of dimension n are split into M
contiguous subvectors of dimension ``ds = n / M``; subspace m has a codebook of K
centroids ``C_m`` (tensor ``codebooks`` of shape (M, K, ds)); a vector's code is
the index of the nearest centroid in every subspace, and its reconstruction
``phi(x)`` concatenates those centroids. All kernels work on the M subspaces at
once with batched matrix products and process rows in chunks, so memory stays
``O(chunk * M * K)`` whatever the number of vectors.
"""

from __future__ import annotations

import numbers

import torch

from .._core import InstanceOf, check_param

__all__ = [
    "adc_search",
    "adc_tables",
    "assign",
    "check_n_subquantizers",
    "decode",
    "kmeans_plusplus",
    "lloyd",
    "random_init",
    "split",
]


def split(X: torch.Tensor, M: int) -> torch.Tensor:
    """View an (m, n) tensor as (m, M, n / M) subvectors (no copy when contiguous).

    Parameters
    ----------
    X : torch.Tensor, shape (m, n)
    M : int
        Number of subspaces (divides n).

    Returns
    -------
    torch.Tensor, shape (m, M, n / M)
    """
    m, n = X.shape
    return X.reshape(m, M, n // M)


class _Divisor(InstanceOf):
    # A parameter constraint (see embedopt._core.validation) for "an int that
    # divides n": the subspaces of PQ must split the dimension evenly.
    def __init__(self, n: int, what: str):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        super().__init__(
            numbers.Integral, f"an int that divides {what} (one of {divisors})"
        )
        self.n = n

    def is_satisfied_by(self, value) -> bool:
        return (
            super().is_satisfied_by(value)
            and not isinstance(value, bool)
            and value >= 1
            and self.n % value == 0
        )


def check_n_subquantizers(owner: str, M: int, n: int, what: str | None = None) -> None:
    """Check that ``M`` subspaces split the dimension ``n`` evenly.

    Parameters
    ----------
    owner : str
        The estimator or function named in the message.
    M : int
        The ``n_subquantizers`` parameter.
    n : int
        The dimension.
    what : str, optional
        How the message names the dimension (default ``"the dimension n"``).

    Raises
    ------
    InvalidParameterError
        "The 'n_subquantizers' parameter of <owner> must be an int that divides
        the dimension 6 (one of [1, 2, 3, 6]). Got 4."
    """
    what = f"the dimension {n}" if what is None else what
    check_param(owner, "n_subquantizers", M, [_Divisor(n, what)])


def _chunk_rows(m: int, M: int, K: int, budget: int = 1 << 18) -> int:
    # Rows per chunk so that the (M, chunk, K) distance block (~1 MB) stays in
    # cache between the product and the min: the product has a tiny inner
    # dimension n / M, so the kernel is bound by memory traffic, not flops
    # (benchmarks/quantization/README.md has the timing against 64 MB blocks).
    return max(1, min(m, budget // max(1, M * K)))


def assign(
    Xs: torch.Tensor, codebooks: torch.Tensor, *, chunk_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest centroid of every subvector.

    Squared distances are expanded as ``||x||^2 - 2 x.c + ||c||^2`` and computed
    with one batched matrix product per chunk of rows.

    Parameters
    ----------
    Xs : torch.Tensor, shape (m, M, ds)
    codebooks : torch.Tensor, shape (M, K, ds)
    chunk_size : int, optional
        Rows per chunk (default: about 256k distances per chunk).

    Returns
    -------
    codes : torch.Tensor of int64, shape (m, M)
    sqerr : torch.Tensor, shape (m, M)
        Squared distance of each subvector to its centroid (clamped at 0).
    """
    codes, sqerr = _assign_t(Xs.transpose(0, 1).contiguous(), codebooks, chunk_size)
    return codes.T, sqerr.T


def _assign_t(
    Xt: torch.Tensor, codebooks: torch.Tensor, chunk_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    # Subspace-major layout (M, m, ds): batched products need no copies.
    M, m, _ = Xt.shape
    K = codebooks.shape[1]
    step = chunk_size or _chunk_rows(m, M, K)
    cnorm = (codebooks * codebooks).sum(-1)[:, None, :]  # (M, 1, K)
    CT = codebooks.transpose(1, 2)  # (M, ds, K)
    codes = torch.empty((M, m), dtype=torch.long, device=Xt.device)
    sqerr = torch.empty((M, m), dtype=Xt.dtype, device=Xt.device)
    for a in range(0, m, step):
        x = Xt[:, a : a + step]
        d = torch.baddbmm(cnorm, x, CT, alpha=-2.0)  # (M, c, K), ||x||^2 omitted
        val, idx = d.min(dim=2)
        codes[:, a : a + step] = idx
        sqerr[:, a : a + step] = (val + (x * x).sum(-1)).clamp_min_(0)
    return codes, sqerr


def decode(codes: torch.Tensor, codebooks: torch.Tensor) -> torch.Tensor:
    """Reconstruction ``phi``: concatenate the selected centroids.

    Parameters
    ----------
    codes : torch.Tensor of int, shape (m, M)
    codebooks : torch.Tensor, shape (M, K, ds)

    Returns
    -------
    torch.Tensor, shape (m, M * ds)
    """
    M = codebooks.shape[0]
    m_idx = torch.arange(M, device=codebooks.device)
    out = codebooks[m_idx[None, :], codes.long()]  # (m, M, ds)
    return out.reshape(codes.shape[0], -1)


def random_init(
    Xs: torch.Tensor, K: int, generator: torch.Generator | None
) -> torch.Tensor:
    """K distinct training subvectors per subspace, drawn uniformly.

    Parameters
    ----------
    Xs : torch.Tensor, shape (m, M, ds)
    K : int
        At most m.
    generator : torch.Generator, optional
        A CPU generator.

    Returns
    -------
    torch.Tensor, shape (M, K, ds)
    """
    m, M, _ = Xs.shape
    cols = []
    for mm in range(M):
        perm = torch.randperm(m, generator=generator, device="cpu")[:K]
        cols.append(Xs[perm.to(Xs.device), mm])
    return torch.stack(cols)


def kmeans_plusplus(
    Xs: torch.Tensor, K: int, generator: torch.Generator | None
) -> torch.Tensor:
    """k-means++ seeding (Arthur & Vassilvitskii 2007), all subspaces at once.

    Each new centroid is a training subvector drawn with probability
    proportional to its squared distance to the nearest centroid chosen so far.
    O(K m n) work in total.

    Parameters
    ----------
    Xs : torch.Tensor, shape (m, M, ds)
    K : int
    generator : torch.Generator, optional
        A CPU generator (sampling happens on the CPU for reproducibility across
        devices).

    Returns
    -------
    torch.Tensor, shape (M, K, ds)
    """
    m, M, ds = Xs.shape
    # Coordinate-major layout (M, ds, m): the distance update runs over
    # contiguous rows of m values instead of tiny rows of ds.
    Xd = Xs.permute(1, 2, 0).contiguous()
    ar = torch.arange(M, device=Xs.device)
    C = torch.empty((M, K, ds), dtype=Xs.dtype, device=Xs.device)
    first = torch.randint(0, m, (M,), generator=generator).to(Xs.device)
    C[:, 0] = Xd[ar, :, first]
    D = _sqdist_to(Xd, C[:, 0])  # (M, m)
    for k in range(1, K):
        # Inverse-CDF draw: one uniform per subspace against the cumulative
        # weights (torch.multinomial took ~20x longer here, and K draws of it
        # dominated the whole initialization). right=True never lands on a
        # zero-weight point, i.e. on an already chosen one.
        cum = torch.cumsum(D.double().cpu(), 1)
        tot = cum[:, -1:]
        u = torch.rand((M, 1), generator=generator, dtype=torch.float64)
        idx = torch.searchsorted(cum, u * tot, right=True)
        # All points already coincide with centroids: draw uniformly.
        idx = torch.where(tot > 0, idx, (u * m).long()).clamp_(max=m - 1)
        idx = idx[:, 0].to(Xs.device)
        C[:, k] = Xd[ar, :, idx]
        D = torch.minimum(D, _sqdist_to(Xd, C[:, k]))
    return C


def _sqdist_to(Xd: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    # (M, m) squared distances of the columns of Xd (M, ds, m) to c (M, ds).
    # Subtracting (not expanding ||x||^2 - 2 x.c + ||c||^2) keeps the distance
    # of a chosen point exactly 0, so it is never drawn again; the in-place
    # square is ~10x faster than ``** 2`` on one core.
    t = Xd - c[:, :, None]
    return t.square_().sum(1)


def _update(
    Xt: torch.Tensor, codes: torch.Tensor, sqerr: torch.Tensor, codebooks: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """Centroid update (means of the assigned subvectors) with empty-cluster repair.

    Works in the subspace-major layout: ``Xt`` (M, m, ds), ``codes`` and
    ``sqerr`` (M, m). A centroid that lost all its points is moved onto the
    subvector of its subspace with the largest current error (distinct points
    for distinct empty centroids), which both removes the empty cluster and
    splits the worst one. Sums are accumulated in float64.

    Returns the new codebooks and the number of repaired centroids.
    """
    M, m, ds = Xt.shape
    K = codebooks.shape[1]
    flat = (codes + torch.arange(M, device=codes.device)[:, None] * K).reshape(-1)
    sums = torch.zeros((M * K, ds), dtype=torch.float64, device=Xt.device)
    sums.index_add_(0, flat, Xt.reshape(-1, ds).double())
    counts = torch.bincount(flat, minlength=M * K).reshape(M, K)
    new = (sums.reshape(M, K, ds) / counts.clamp_min(1)[..., None]).to(Xt.dtype)
    empty = counts == 0
    n_empty = int(empty.sum())
    if n_empty:
        for mm in torch.nonzero(empty.any(1)).flatten().tolist():
            ks = torch.nonzero(empty[mm]).flatten()
            # K <= m is checked up front, so there are enough distinct points.
            far = torch.topk(sqerr[mm], min(ks.numel(), m)).indices
            new[mm, ks[: far.numel()]] = Xt[mm, far]
    return new, n_empty


def lloyd(
    Xs: torch.Tensor,
    codebooks: torch.Tensor,
    n_iter: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """``n_iter`` Lloyd iterations, then a final assignment.

    Parameters
    ----------
    Xs : torch.Tensor, shape (m, M, ds)
    codebooks : torch.Tensor, shape (M, K, ds)
        Starting centroids (k-means++ / random seeds, or the previous
        codebooks for a warm start).
    n_iter : int
        Number of (assign, update) rounds; 0 only assigns.

    Returns
    -------
    codebooks : torch.Tensor, shape (M, K, ds)
    codes : torch.Tensor of int64, shape (m, M)
        Assignment to the returned codebooks.
    sqerr : torch.Tensor, shape (m, M)
        Squared error of each subvector under that assignment.
    n_empty : int
        Empty clusters repaired along the way.
    """
    Xt = Xs.transpose(0, 1).contiguous()
    n_empty = 0
    codes, sqerr = _assign_t(Xt, codebooks)
    for _ in range(n_iter):
        codebooks, e = _update(Xt, codes, sqerr, codebooks)
        n_empty += e
        codes, sqerr = _assign_t(Xt, codebooks)
    return codebooks, codes.T, sqerr.T, n_empty


def adc_tables(Q: torch.Tensor, codebooks: torch.Tensor, metric: str) -> torch.Tensor:
    """Asymmetric-distance lookup tables of the (rotated) queries.

    ``T[q, m, k] = <q_m, c_mk>`` for ``metric="ip"`` and ``||q_m - c_mk||^2`` for
    ``"l2"``, so that ``sum_m T[q, m, code_m(x)]`` is the inner product or the
    squared distance between q and the reconstruction of x (Jegou et al. 2010,
    Sec. 3.2).

    Parameters
    ----------
    Q : torch.Tensor, shape (nq, n)
    codebooks : torch.Tensor, shape (M, K, ds)
    metric : {"l2", "ip"}

    Returns
    -------
    torch.Tensor, shape (nq, M, K)
    """
    M = codebooks.shape[0]
    qs = split(Q, M).transpose(0, 1)  # (M, nq, ds)
    ip = torch.bmm(qs, codebooks.transpose(1, 2))  # (M, nq, K)
    if metric == "ip":
        return ip.transpose(0, 1)
    qn = (qs * qs).sum(-1, keepdim=True)
    cn = (codebooks * codebooks).sum(-1)[:, None, :]
    return (qn - 2 * ip + cn).clamp_min_(0).transpose(0, 1)


def adc_search(
    Q: torch.Tensor,
    codes: torch.Tensor,
    codebooks: torch.Tensor,
    k: int,
    *,
    metric: str = "l2",
    query_batch: int = 64,
    db_batch: int = 8192,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exhaustive ADC search: top-k database items for each query.

    Scores are accumulated from the lookup tables (:func:`adc_tables`) one
    subspace at a time, for blocks of ``query_batch`` queries and ``db_batch``
    codes, and merged into a running top-k, so memory is
    ``O(query_batch * (db_batch + k))`` whatever the database size (small
    default blocks, because the accumulation is bound by memory traffic; the
    timing is in ``benchmarks/quantization/README.md``).

    Parameters
    ----------
    Q : torch.Tensor, shape (nq, n)
        Queries, already rotated into the quantizer's space.
    codes : torch.Tensor of integer dtype, shape (N, M)
        Database codes (uint8/int16/int32/int64).
    codebooks : torch.Tensor, shape (M, K, ds)
    k : int
        Number of results (at most N).
    metric : {"l2", "ip"}
        Smallest squared distance, or largest inner product, first.
    query_batch, db_batch : int
        Block sizes.

    Returns
    -------
    scores : torch.Tensor, shape (nq, k)
        Squared distances (ascending) or inner products (descending).
    ids : torch.Tensor of int64, shape (nq, k)
    """
    nq = Q.shape[0]
    N, M = codes.shape
    k = min(k, N)
    largest = metric == "ip"
    out_s = torch.empty((nq, k), dtype=Q.dtype, device=Q.device)
    out_i = torch.empty((nq, k), dtype=torch.long, device=Q.device)
    for qa in range(0, nq, query_batch):
        lut = adc_tables(Q[qa : qa + query_batch], codebooks, metric)  # (b, M, K)
        best_s = best_i = None
        for da in range(0, N, db_batch):
            c = codes[da : da + db_batch].to(device=Q.device, dtype=torch.long)
            s = lut[:, 0].index_select(1, c[:, 0])
            for mm in range(1, M):
                s += lut[:, mm].index_select(1, c[:, mm])
            ids = torch.arange(da, da + c.shape[0], device=Q.device).expand_as(s)
            if best_s is not None:
                s = torch.cat([best_s, s], 1)
                ids = torch.cat([best_i, ids], 1)
            kk = min(k, s.shape[1])
            best_s, pos = torch.topk(s, kk, dim=1, largest=largest, sorted=True)
            best_i = torch.gather(ids, 1, pos)
        out_s[qa : qa + query_batch] = best_s
        out_i[qa : qa + query_batch] = best_i
    return out_s, out_i
