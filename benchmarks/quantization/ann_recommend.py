"""Approximate top-k inner products for recommending: embedopt's ItemIndex.

Issue 23, item 4: ``recommend(..., approximate=True)`` scans IVF-PQ codes
(``embedopt.nn.ItemIndex``: coarse lists, a learned rotation, PQ codes of the
residuals) and re-ranks the best candidates exactly. Measured here, in one run
per catalogue: recall@10 against the exact top 10 and queries per second,
beside the exact batched scan (``linalg.top_k_inner_products``) and, when
faiss is installed, faiss' ``OPQ,PQ`` and ``OPQ,IVF,PQ`` (same bytes per
vector, with and without an exact re-rank through ``IndexRefineFlat``) and
faiss searching the codes our index exported (``ItemIndex.to_faiss``).

Catalogues:

- ``glove``: the 400k GloVe 6B 50-d vectors as items, inner-product queries
  with held-out words (removed from the items).
- ``synthetic``: 10^6 items at rank 64 (``--quick``: 10^5), drawn like fitted
  item factors: a mixture of 1,000 clusters, a decaying spectrum and
  log-normal norms (popularity); queries drawn the same way, independently.

    python benchmarks/quantization/ann_recommend.py [--quick] [--threads 1]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _shared


def _synthetic(n: int, n_queries: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    spectrum = np.linspace(1.0, 0.15, d)
    centers = rng.normal(size=(1000, d)) * spectrum

    def draw(m):
        z = rng.integers(0, 1000, m)
        x = centers[z] + 0.6 * rng.normal(size=(m, d)) * spectrum
        return x * rng.lognormal(0.0, 0.3, size=(m, 1))

    return draw(n).astype(np.float32), draw(n_queries).astype(np.float32)


def _glove(n_queries: int, seed: int, n_items: int | None):
    from embedopt.data import load_glove

    X = np.asarray(load_glove(), dtype=np.float32)
    rng = np.random.default_rng(seed)
    held = np.zeros(len(X), dtype=bool)
    held[rng.choice(len(X), n_queries, replace=False)] = True
    items = X[~held] if n_items is None else X[~held][:n_items]
    return np.ascontiguousarray(items), np.ascontiguousarray(X[held])


def _recall(ids, exact) -> float:
    return float(
        np.mean(
            [len(set(a) & set(b)) / len(b) for a, b in zip(ids, exact, strict=False)]
        )
    )


def _timed(fn, n_queries, repeats: int = 3):
    """The result of ``fn`` and its queries per second: one warm-up call,
    then the median of ``repeats`` timed calls (the shared machine's load
    makes single calls vary by 2x)."""
    out = fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return out, n_queries / float(np.median(times))


def _ours(X, Q, exact, M, probes, rerank, seed):
    import torch

    from embedopt.nn import ItemIndex

    t = time.perf_counter()
    index = ItemIndex(M, 256, n_probe=probes[0], rerank=rerank, random_state=seed)
    index.fit(torch.from_numpy(X))
    build = time.perf_counter() - t
    Qt = torch.from_numpy(Q)
    rows = []
    for p in probes:
        (ids, _), qps = _timed(lambda p=p: index.search(Qt, 10, n_probe=p), len(Q))
        rows.append(
            {
                "method": f"embedopt ItemIndex, re-rank {rerank}",
                "n_probe": p,
                "recall@10": _recall(ids, exact),
                "qps": qps,
                "build_s": build,
            }
        )
    return index, rows


def _faiss_rows(X, Q, exact, M, n_lists, probes, rerank, index, seed):
    try:
        import faiss
    except ImportError:
        return [{"method": "faiss", "note": "not installed (pip install faiss-cpu)"}]
    rows = []
    exported = index.to_faiss()
    for p in probes:
        faiss.extract_index_ivf(exported).nprobe = p
        (_, ids), qps = _timed(lambda: exported.search(Q, 10), len(Q))
        rows.append(
            {
                "method": "faiss on our exported codes (ADC, no re-rank)",
                "n_probe": p,
                "recall@10": _recall(ids, exact),
                "qps": qps,
            }
        )
    rng = np.random.default_rng(seed)
    train = X[rng.choice(len(X), min(len(X), 65536), replace=False)]
    ip = faiss.METRIC_INNER_PRODUCT
    for spec, sweep in ((f"OPQ{M},IVF{n_lists},PQ{M}", probes), (f"OPQ{M},PQ{M}", [0])):
        t = time.perf_counter()
        base = faiss.index_factory(X.shape[1], spec, ip)
        base.train(train)
        base.add(X)
        build = time.perf_counter() - t
        refine = faiss.IndexRefineFlat(base, faiss.swig_ptr(X))
        refine.k_factor = rerank / 10
        for idx, name in ((base, "ADC only"), (refine, f"re-rank {rerank}")):
            for p in sweep:
                if p:
                    faiss.extract_index_ivf(base).nprobe = p
                (_, ids), qps = _timed(lambda idx=idx: idx.search(Q, 10), len(Q))
                rows.append(
                    {
                        "method": f"faiss {spec}, {name}",
                        "n_probe": p or None,
                        "recall@10": _recall(ids, exact),
                        "qps": qps,
                        "build_s": build,
                    }
                )
    return rows


def run_catalogue(name, X, Q, args):
    import torch

    from embedopt.linalg import top_k_inner_products

    M = {50: 25, 64: 16}.get(X.shape[1], X.shape[1] // 4)
    probes = [8, 16, 32, 64] if not args.quick else [8, 16, 32]
    Xt, Qt = torch.from_numpy(X), torch.from_numpy(Q)
    (exact, _), exact_qps = _timed(lambda: top_k_inner_products(Qt, Xt, 10), len(Q))
    rows = [
        {
            "method": "exact scan (top_k_inner_products)",
            "recall@10": 1.0,
            "qps": exact_qps,
        }
    ]
    index, ours = _ours(X, Q, exact, M, probes, args.rerank, args.seed)
    rows += ours
    n_lists = index.coarse_.shape[0]
    if not args.no_peers:
        rows += _faiss_rows(
            X, Q, exact, M, n_lists, probes, args.rerank, index, args.seed
        )
    for r in rows:
        if "qps" in r:
            r["speedup"] = r["qps"] / exact_qps
    info = {
        "items": X.shape[0],
        "dim": X.shape[1],
        "queries": len(Q),
        "bytes_per_vector": M,
        "n_lists": n_lists,
    }
    return {"catalogue": name, **info, "rows": rows}


def table(res) -> str:
    head = (
        f"### {res['catalogue']}: {res['items']:,} items x {res['dim']}, "
        f"{res['queries']} queries, {res['bytes_per_vector']} bytes per code, "
        f"{res['n_lists']} lists\n\n"
    )
    rows = []
    for r in res["rows"]:
        if "qps" not in r:
            rows.append([r["method"], "", r["note"], "", "", ""])
            continue
        rows.append(
            [
                r["method"],
                r.get("n_probe") or "",
                f"{r['recall@10']:.3f}",
                f"{r['qps']:.0f}",
                f"{r['speedup']:.1f}x",
                f"{r['build_s']:.0f}" if "build_s" in r else "",
            ]
        )
    return head + _shared.markdown_table(
        ["method", "n_probe", "recall@10", "queries/s", "vs exact", "build s"], rows
    )


def main(argv=None) -> int:
    p = _shared.parser(__doc__.splitlines()[0])
    p.set_defaults(threads=1)
    p.add_argument("--catalogues", default="glove,synthetic")
    p.add_argument("--queries", type=int, default=None, help="default 1000 (quick 200)")
    p.add_argument("--rerank", type=int, default=100)
    p.add_argument("--no-peers", action="store_true")
    args = p.parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    nq = args.queries or (200 if args.quick else 1000)
    results, md = [], []
    for name in args.catalogues.split(","):
        if name == "glove":
            X, Q = _glove(nq, args.seed, 100_000 if args.quick else None)
        else:
            X, Q = _synthetic(100_000 if args.quick else 1_000_000, nq, 64, args.seed)
        res = run_catalogue(name, X, Q, args)
        results.append(res)
        md.append(table(res))
        print(md[-1], flush=True)
    name = "ann_recommend" + ("_quick" if args.quick else "")
    path = _shared.write(
        name, args.out, vars(args), {"catalogues": results}, "\n\n".join(md)
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
