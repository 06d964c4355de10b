"""Approximate maximum-inner-product search over a recommender's item vectors.

:class:`ItemIndex` is an inverted file over product-quantization codes
(IVF-PQ, Jegou et al. 2011) with a learned rotation, scanned with asymmetric
inner products and re-ranked exactly:

1. **Coarse lists.** k-means (``n_lists`` centroids ``c_l``) splits the items;
   each item is stored in the list of its nearest centroid.
2. **Codes of the residuals.** ``r = x - c_l`` is rotated (``r R``, R
   orthogonal) and product-quantized: M subspaces of K centroids, one byte per
   subspace for K <= 256. The rotation and the codebooks are learned on a
   sample of residuals, by OPQ's alternation (k-means with R fixed, then the
   Procrustes R with the codes fixed; Ge et al. 2013) from a random rotation,
   or by any quantizer passed as ``quantizer`` (e.g.
   :class:`embedopt.quantization.ProductQuantizer`, whose Givens descent
   learns the rotation).
3. **Search.** A query probes the ``n_probe`` lists of largest ``<q, c_l>``;
   an item of list l scores ``<q, c_l> + <q R, phi(r)>``, the inner product of
   the query with the item's reconstruction (the ADC estimate). The
   ``rerank`` best estimates per query are then scored exactly against the
   item vectors and the top k returned.

For inner products the vectors are quantized as they are (no norm
augmentation): the ADC error of an item is ``<q, x - x_hat>``, which the
residual quantization keeps small for every query, and the exact re-rank
removes it from the returned scores; the coarse term ``<q, c_l>`` makes the
lists of large-norm (popular) items the ones probed first.

The lists are scanned list by list: every query of a batch that probes list
l is scored against its decoded codes with one matrix product, so the work
per batch is about ``n_probe / n_lists`` of an exact scan plus the decoding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from .._core import (
    DataValidationError,
    Interval,
    NotFittedError,
    Options,
    as_array,
    check_param,
    clone,
    persistable,
    resolve_random_state,
    validate_params,
)
from ..linalg.codebooks import assign, decode, lloyd, random_init, split
from ..linalg.rotations import procrustes

__all__ = ["ItemIndex"]

#: How to install faiss: the project's ``faiss`` extra (faiss-cpu).
FAISS_INSTALL = 'pip install "embedopt[faiss]"'


def _import_faiss(what: str, alternative: str) -> Any:
    """The faiss module, or an ImportError that says how to install it.

    Parameters
    ----------
    what : str
        The function that needs faiss, named in the message.
    alternative : str
        Said after the project's extra (another way to install faiss).

    Returns
    -------
    module
        ``faiss``.
    """
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{what} needs faiss: {FAISS_INSTALL} {alternative}."
        ) from exc
    return faiss


_CONSTRAINTS = {
    "n_subquantizers": [Interval(int, 1, None), Options(["auto"])],
    "n_centroids": [Interval(int, 2, 65536)],
    "n_lists": [Interval(int, 1, None), Options(["auto"])],
    "n_probe": [Interval(int, 1, None)],
    "rerank": [Interval(int, 1, None)],
    "n_iter": [Interval(int, 0, None)],
    "train_size": [Interval(int, 1, None)],
    "random_state": ["random_state"],
}


def _auto_subquantizers(d: int) -> int:
    # About four dimensions per byte (16 bytes at d = 64), on a divisor of d.
    return min(m for m in range(1, d + 1) if d % m == 0 and m >= d / 4)


def _auto_lists(n: int) -> int:
    # sqrt(n) lists (1,000 at a million items); one list (an exhaustive scan of
    # the codes) below 4,096 items, where lists would hold a handful each.
    return 1 if n < 4096 else round(math.sqrt(n))


def _haar_rotation(d: int, generator: torch.Generator) -> torch.Tensor:
    # A random rotation (QR of a Gaussian, signs fixed): it spreads the
    # variance over the subspaces before OPQ's first k-means.
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).float()


def _opq(
    Y: torch.Tensor, M: int, K: int, n_iter: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """OPQ's alternation on the rows of ``Y``: returns (R, codebooks)."""
    # At most 64 K residuals (faiss asks for 39 K): the k-means of M
    # subspaces of tiny dimension is bound by memory traffic, not flops.
    Y = Y[: 64 * K]
    R = _haar_rotation(Y.shape[1], generator).to(Y)
    Ys = split(Y @ R, M)
    codebooks = random_init(Ys, K, generator)
    for _ in range(n_iter // 2):
        codebooks, codes, _, _ = lloyd(Ys, codebooks, 1)
        R = procrustes(Y, decode(codes, codebooks)).to(Y)
        Ys = split(Y @ R, M)
    codebooks, _, _, _ = lloyd(Ys, codebooks, max(n_iter - n_iter // 2, 1))
    return R, codebooks


def _fit_quantizer(quantizer: Any, Y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(R, codebooks) of a clone of ``quantizer`` fitted on ``Y``."""
    q = clone(quantizer)
    q.fit(Y.numpy())
    try:
        R = torch.as_tensor(np.asarray(q.rotation_), dtype=Y.dtype)
        codebooks = torch.as_tensor(np.asarray(q.codebooks_), dtype=Y.dtype)
    except AttributeError:
        raise DataValidationError(
            "quantizer must be an estimator whose fit sets rotation_ (d, d) and "
            "codebooks_ (M, K, d / M), such as embedopt.quantization."
            f"ProductQuantizer; got {type(quantizer).__name__}."
        ) from None
    if R.shape != (Y.shape[1],) * 2 or codebooks.ndim != 3:
        raise DataValidationError(
            f"The quantizer's rotation_ must be ({Y.shape[1]}, {Y.shape[1]}) and "
            f"its codebooks_ 3-D; got {tuple(R.shape)} and {tuple(codebooks.shape)}."
        )
    return R, codebooks


def _codes_dtype(K: int) -> torch.dtype:
    return torch.uint8 if K <= 256 else torch.int32


@persistable
class ItemIndex:
    """IVF-PQ index of item vectors for approximate top-k inner products.

    Parameters
    ----------
    n_subquantizers : int or "auto"
        M, bytes per item code for ``n_centroids <= 256``; must divide the
        dimension. "auto" takes the smallest divisor of d that is at least
        d / 4 (16 at d = 64).
    n_centroids : int
        K, centroids per subspace (256: one byte per subspace).
    n_lists : int or "auto"
        Coarse k-means lists; "auto" is ``round(sqrt(n_items))``, or 1 (an
        exhaustive scan of the codes) below 4,096 items.
    n_probe : int
        Lists scanned per query (clipped to ``n_lists``); more is slower and
        finds more of the true top k. The default 16 finds 0.96 of the exact
        top 10 at 13x the exact scan's throughput on a 10^6-item catalogue
        (``benchmarks/quantization/ann_recommend.py`` re-measures it); catalogues
        whose inner-product neighbours spread over many lists (GloVe) need
        more.
    rerank : int
        Candidates per query (the best ADC estimates) scored exactly before
        the top k is taken; at least k are always re-ranked.
    n_iter : int
        Lloyd iterations of the coarse k-means and of the residual quantizer:
        ``n_iter // 2`` OPQ rounds (one Lloyd iteration, then the Procrustes
        rotation), then the rest with the rotation fixed.
    train_size : int
        Items sampled (without replacement) to train the lists, the rotation
        and the codebooks; every item is then encoded.
    quantizer : estimator, optional
        Learns the rotation and codebooks instead of the built-in OPQ: an
        unfitted estimator (cloned, then fitted on the residuals) whose fit
        sets ``rotation_`` and ``codebooks_``, e.g.
        ``embedopt.quantization.ProductQuantizer(n_subquantizers=16)``; its
        own M and K are used. It must learn an orthogonal rotation.
    random_state : None, int or numpy.random.Generator
        Seeds the sample and the k-means initializations.

    Attributes
    ----------
    items_ : torch.Tensor, shape (n_items, d)
        The indexed vectors (the tensor given to :meth:`fit`, not a copy when
        it is float32 and contiguous), used by the exact re-rank.
    coarse_ : torch.Tensor, shape (n_lists, d)
        The lists' centroids.
    offsets_ : torch.Tensor of int64, shape (n_lists + 1,)
        List l holds the sorted positions ``offsets_[l]:offsets_[l + 1]``.
    order_ : torch.Tensor of int64, shape (n_items,)
        The item index at each sorted position.
    codes_ : torch.Tensor, shape (n_items, M)
        PQ codes of the rotated residuals, in sorted order.
    rotation_ : torch.Tensor, shape (d, d)
    codebooks_ : torch.Tensor, shape (M, K, d / M)

    Examples
    --------
    >>> items = torch.randn(500, 8, generator=torch.Generator().manual_seed(0))
    >>> index = ItemIndex(n_subquantizers=4, n_centroids=16, random_state=0)
    >>> ids, scores = index.fit(items).search(items[:2], 3)
    >>> ids.shape
    (2, 3)
    """

    def __init__(
        self,
        n_subquantizers: int | str = "auto",
        n_centroids: int = 256,
        *,
        n_lists: int | str = "auto",
        n_probe: int = 16,
        rerank: int = 100,
        n_iter: int = 10,
        train_size: int = 65536,
        quantizer: Any = None,
        random_state: Any = None,
    ) -> None:
        self.n_subquantizers = n_subquantizers
        self.n_centroids = n_centroids
        self.n_lists = n_lists
        self.n_probe = n_probe
        self.rerank = rerank
        self.n_iter = n_iter
        self.train_size = train_size
        self.quantizer = quantizer
        self.random_state = random_state

    # -- building ----------------------------------------------------------------
    def fit(self, items: Any) -> ItemIndex:
        """Learn the lists, rotation and codebooks on ``items`` and encode them.

        Parameters
        ----------
        items : array-like or torch.Tensor, shape (n_items, d)
            The item vectors (finite). A float32 tensor is kept by reference.

        Returns
        -------
        ItemIndex
            ``self``.
        """
        validate_params("ItemIndex", vars(self), _CONSTRAINTS)
        X = _as_matrix(items, "items")
        n, d = X.shape
        M = (
            _auto_subquantizers(d)
            if self.n_subquantizers == "auto"
            else self.n_subquantizers
        )
        n_lists = _auto_lists(n) if self.n_lists == "auto" else self.n_lists
        _check_sizes(n, d, M, self.n_centroids, n_lists, self.quantizer)
        gen = resolve_random_state(self.random_state, "ItemIndex").torch("cpu")
        size = min(n, max(self.train_size, n_lists, self.n_centroids))
        sample = X[torch.randperm(n, generator=gen)[:size]]
        coarse = _coarse_centroids(sample, n_lists, self.n_iter, gen)
        lists = assign(X[:, None, :], coarse[None])[0][:, 0]
        near = assign(sample[:, None, :], coarse[None])[0][:, 0]
        residual = sample - coarse[near]
        if self.quantizer is None:
            R, codebooks = _opq(residual, M, self.n_centroids, self.n_iter, gen)
        else:
            R, codebooks = _fit_quantizer(self.quantizer, residual)
        order = torch.argsort(lists, stable=True)
        counts = torch.bincount(lists, minlength=n_lists)
        self.items_, self.coarse_, self.rotation_, self.codebooks_ = (
            X,
            coarse,
            R,
            codebooks,
        )
        self.order_ = order
        self.offsets_ = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
        self.codes_ = self._encode(X[order] - coarse[lists[order]])
        return self

    def _encode(self, residuals: torch.Tensor, chunk: int = 65536) -> torch.Tensor:
        M, K = self.codebooks_.shape[:2]
        out = torch.empty((residuals.shape[0], M), dtype=_codes_dtype(K))
        for a in range(0, residuals.shape[0], chunk):
            rot = residuals[a : a + chunk] @ self.rotation_
            out[a : a + chunk] = assign(split(rot, M), self.codebooks_)[0].to(out.dtype)
        return out

    # -- searching ---------------------------------------------------------------
    def search(
        self,
        queries: Any,
        k: int,
        *,
        exclude: sp.spmatrix | None = None,
        n_probe: int | None = None,
        rerank: int | None = None,
        batch_size: int = 512,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k inner products, re-ranked exactly.

        Same result layout as :func:`embedopt.linalg.top_k_inner_products`,
        for which it stands in.

        Parameters
        ----------
        queries : array-like or torch.Tensor, shape (b, d)
        k : int
            Results per query; more than ``n_items`` gives ``n_items``.
        exclude : scipy.sparse matrix, shape (b, n_items), optional
            Nonzeros of row q are items never returned for query q (the
            candidates re-ranked grow by the row's count, so excluded items
            do not crowd out the others).
        n_probe, rerank : int, optional
            Override the index's settings for this call.
        batch_size : int
            Queries searched at once (memory is about ``batch_size x n_probe
            x`` the mean list length candidates, 8 bytes each). Every list a
            batch probes is decoded once for the whole batch, so larger
            batches decode less per query (the figures are in
            ``benchmarks/quantization/README.md``).

        Returns
        -------
        ids : numpy.ndarray of int64, shape (b, min(k, n_items))
            Item indices by decreasing exact score; -1 where fewer remain.
        scores : numpy.ndarray of float64, same shape
            Exact inner products (-inf where ``ids`` is -1).
        """
        if not hasattr(self, "codes_"):
            raise NotFittedError(
                "This ItemIndex is not built yet: call fit(items) first."
            )
        Q = _as_matrix(queries, "queries", self.items_.shape[1])
        n = self.items_.shape[0]
        for name, value in (("k", k), ("batch_size", batch_size)):
            check_param("ItemIndex.search", name, value, [Interval(int, 1, None)])
        for name, value in (("n_probe", n_probe), ("rerank", rerank)):
            check_param("ItemIndex.search", name, value, [Interval(int, 1, None), None])
        k = min(int(k), n)
        exclude = _check_exclude(exclude, Q.shape[0], n)
        probe = min(n_probe or self.n_probe, self.coarse_.shape[0])
        ids = np.full((Q.shape[0], k), -1, dtype=np.int64)
        scores = np.full((Q.shape[0], k), -np.inf)
        for a in range(0, Q.shape[0], batch_size):
            block = None if exclude is None else exclude[a : a + batch_size]
            extra = 0 if block is None else int(np.diff(block.indptr).max(initial=0))
            wanted = max(rerank or self.rerank, k) + extra
            i, s = self._search_batch(Q[a : a + batch_size], k, probe, wanted, block)
            ids[a : a + len(i)], scores[a : a + len(i)] = i, s
        return ids, scores

    def _search_batch(self, Q, k, probe, wanted, exclude):
        coarse = Q @ self.coarse_.T  # (b, n_lists)
        lists = torch.topk(coarse, probe, dim=1).indices  # (b, probe)
        est, pos = self._scan(Q, coarse, lists)
        top = torch.topk(est, min(wanted, est.shape[1]), dim=1)
        cand = self.order_[torch.gather(pos, 1, top.indices).long()]  # item ids
        exact = torch.bmm(self.items_[cand], Q[:, :, None])[:, :, 0]
        exact[~torch.isfinite(top.values)] = -torch.inf  # padding slots
        if exclude is not None:
            exact[_excluded(exclude, cand)] = -torch.inf
        best = torch.topk(exact, min(k, exact.shape[1]), dim=1)
        s = best.values.double().numpy()
        i = torch.gather(cand, 1, best.indices).numpy()
        i[~np.isfinite(s)] = -1
        out_i = np.full((Q.shape[0], k), -1, dtype=np.int64)
        out_s = np.full((Q.shape[0], k), -np.inf)
        out_i[:, : i.shape[1]], out_s[:, : s.shape[1]] = i, s
        return out_i, out_s

    def _scan(self, Q, coarse, lists):
        """ADC estimates of every item of every probed list, list by list.

        Returns (b, L) estimates (-inf pads) and the sorted positions they
        belong to, L being the most candidates any query of the batch has.
        """
        b, probe = lists.shape
        lens = self.offsets_[lists + 1] - self.offsets_[lists]  # (b, probe)
        start = lens.cumsum(1) - lens  # where each probed list goes in a row
        width = max(int(lens.sum(1).max()), 1)
        est = torch.full((b, width), -torch.inf, dtype=Q.dtype)
        pos = torch.zeros((b, width), dtype=torch.int32)
        rotated = Q @ self.rotation_
        M, K, ds = self.codebooks_.shape
        table = self.codebooks_.reshape(M * K, ds)  # decode = one row gather
        shift = torch.arange(M) * K
        flat = lists.reshape(-1)
        by_list = torch.argsort(flat, stable=True)
        ls, counts = torch.unique_consecutive(flat[by_list], return_counts=True)
        for l, group in zip(
            ls.tolist(), torch.split(by_list, counts.tolist()), strict=True
        ):
            lo, hi = int(self.offsets_[l]), int(self.offsets_[l + 1])
            if hi == lo:
                continue
            q, slot = group // probe, group % probe
            flat = (self.codes_[lo:hi].long() + shift).reshape(-1)
            rec = table.index_select(0, flat).reshape(hi - lo, M * ds)
            s = torch.addmm(coarse[q, l][:, None], rotated[q], rec.T)
            cols = start[q, slot][:, None] + torch.arange(hi - lo)
            est[q[:, None], cols] = s
            pos[q[:, None], cols] = torch.arange(lo, hi, dtype=torch.int32)
        return est, pos

    # -- export ------------------------------------------------------------------
    def to_faiss(self) -> Any:
        """The same index as a faiss ``IndexPreTransform`` over an ``IndexIVFPQ``.

        The rotation becomes a ``LinearTransform`` (``x -> R^T x``), the
        coarse centroids (rotated) an ``IndexFlatIP`` quantizer, and the codes
        are copied into the inverted lists unchanged, so faiss scans the same
        codes with the same estimates (faiss re-ranks nothing: its scores are
        the ADC estimates). Set ``index.nprobe`` (faiss' own setting, default
        1) before searching.

        Returns
        -------
        faiss.IndexPreTransform

        Raises
        ------
        ImportError
            If faiss is not installed (``pip install faiss-cpu``).
        DataValidationError
            If ``n_centroids`` is not a power of two.
        """
        faiss = _import_faiss("ItemIndex.to_faiss", "or pip install faiss-cpu")
        if not hasattr(self, "codes_"):
            raise NotFittedError(
                "This ItemIndex is not built yet: call fit(items) first."
            )
        return _faiss_ivfpq(faiss, self)


def _faiss_ivfpq(faiss: Any, index: ItemIndex) -> Any:
    M, K, _ = index.codebooks_.shape
    d = index.items_.shape[1]
    nbits = round(math.log2(K))
    if 2**nbits != K or nbits > 8:
        raise DataValidationError(
            f"faiss IVF-PQ codes have 2**nbits <= 256 centroids; n_centroids={K} "
            "is not such a power of two."
        )
    R = index.rotation_.double().numpy()
    lt = faiss.LinearTransform(d, d, False)
    faiss.copy_array_to_vector(
        np.ascontiguousarray(R.T, dtype=np.float32).ravel(), lt.A
    )
    lt.is_trained = True
    n_lists = index.coarse_.shape[0]
    coarse = faiss.IndexFlatIP(d)
    coarse.add(
        np.ascontiguousarray(index.coarse_.double().numpy() @ R, dtype=np.float32)
    )
    ivf = faiss.IndexIVFPQ(coarse, d, n_lists, M, nbits, faiss.METRIC_INNER_PRODUCT)
    # faiss' Python constructors keep the quantizer (and below, the transform
    # and the IVF index) referenced by the index that uses them.
    cb = np.ascontiguousarray(index.codebooks_.numpy(), dtype=np.float32)
    faiss.copy_array_to_vector(cb.ravel(), ivf.pq.centroids)
    ivf.is_trained = True
    ivf.use_precomputed_table = 0
    codes = _pack_codes(index.codes_.numpy(), nbits, ivf.pq.code_size)
    order = index.order_.numpy().astype(np.int64)
    off = index.offsets_.numpy()
    for l in range(n_lists):
        lo, hi = int(off[l]), int(off[l + 1])
        if hi > lo:
            ids = np.ascontiguousarray(order[lo:hi])
            ivf.invlists.add_entries(
                l, hi - lo, faiss.swig_ptr(ids), faiss.swig_ptr(codes[lo:hi])
            )
    ivf.ntotal = index.items_.shape[0]
    return faiss.IndexPreTransform(lt, ivf)


def _pack_codes(c: np.ndarray, nbits: int, code_size: int) -> np.ndarray:
    """The codes bit-packed the way faiss stores them (nbits per sub-code)."""
    if nbits == 8:
        return np.ascontiguousarray(c.astype(np.uint8))
    packed = np.zeros((c.shape[0], code_size), dtype=np.uint8)
    c = c.astype(np.int64)
    for m in range(c.shape[1]):
        for b in range(nbits):
            bit = m * nbits + b
            packed[:, bit // 8] |= (((c[:, m] >> b) & 1) << (bit % 8)).astype(np.uint8)
    return packed


def _as_matrix(x: Any, what: str, d: int | None = None) -> torch.Tensor:
    """A finite float32 (rows, d) tensor of ``x``, or the library's error."""
    if isinstance(x, torch.Tensor):
        X = x.detach().to("cpu", torch.float32)
    else:
        X = torch.as_tensor(as_array(x, what, dtype=np.float32))
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DataValidationError(
            f"{what} must be a non-empty 2-D array (rows x dimensions); got shape "
            f"{tuple(X.shape)}."
        )
    if d is not None and X.shape[1] != d:
        raise DataValidationError(
            f"{what} must have {d} columns, the dimension of the indexed items; "
            f"got {X.shape[1]}."
        )
    if not bool(torch.isfinite(X).all()):
        raise DataValidationError(f"{what} must be finite; remove NaN or inf rows.")
    return X.contiguous()


def _check_sizes(n: int, d: int, M: int, K: int, n_lists: int, quantizer) -> None:
    if quantizer is None and d % M:
        divisors = [m for m in range(1, d + 1) if d % m == 0]
        raise DataValidationError(
            f"n_subquantizers={M} must divide the dimension {d} (one of {divisors})."
        )
    if n_lists > n:
        raise DataValidationError(
            f"n_lists={n_lists} is more than the {n} items; use at most {n} "
            "(or n_lists='auto')."
        )
    if quantizer is None and K > n:
        raise DataValidationError(
            f"n_centroids={K} is more than the {n} items to train on; use at most {n}."
        )


def _coarse_centroids(sample, n_lists, n_iter, gen):
    if n_lists == 1:
        return sample.mean(0, keepdim=True)
    Xs = sample[:, None, :]
    return lloyd(Xs, random_init(Xs, n_lists, gen), n_iter)[0][0]


def _check_exclude(exclude, b: int, n: int):
    if exclude is None:
        return None
    exclude = sp.csr_matrix(exclude)
    if exclude.shape != (b, n):
        raise DataValidationError(
            f"exclude must have shape ({b}, {n}) (queries x items); got "
            f"{exclude.shape}."
        )
    return exclude


def _excluded(exclude: sp.csr_matrix, cand: torch.Tensor) -> torch.Tensor:
    """Mask of the (query, candidate) slots that ``exclude`` lists."""
    n = exclude.shape[1]
    coo = exclude.tocoo()
    banned = torch.as_tensor(coo.row.astype(np.int64) * n + coo.col)
    keys = torch.arange(cand.shape[0])[:, None] * n + cand
    return torch.isin(keys, banned)
