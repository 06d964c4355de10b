"""Why Table 1's baseline is lower than the paper's (issue 13, item 5).

On the split of ``end_to_end.py`` (MovieLens-1M, a random 20 % of each user's
ratings held out, training items excluded), precision@100 / recall@100 of

- the most popular training items (no model);
- implicit's ALS (a standard collaborative-filtering peer; skipped when
  ``implicit`` is not installed);
- the two-tower model of ``end_to_end.py`` (fixed rotation), retrieving
  exactly (inner products of the tower outputs) and through its PQ index;
- the same exact scores plus ``beta * log(1 + training count)`` of the item:
  the popularity prior that training on in-batch negatives removes (positive
  pairs are drawn uniformly, so an item is a negative in proportion to its
  popularity).

Also the median training count of the recommended items, against that of the
held-out items.

    python benchmarks/quantization/end_to_end_baselines.py --quick
    python benchmarks/quantization/end_to_end_baselines.py

Writes results/quant_end_to_end_baselines[_quick].{json,md}.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

BETAS = (0.02, 0.05, 0.1, 0.2)


def _top_k(scores_of, users, seen, k=100):
    """Top-k item ids of ``users`` by ``scores_of(batch)``, seen items excluded."""
    import numpy as np

    out = np.empty((users.size, k), np.int64)
    for a in range(0, users.size, 512):
        batch = users[a : a + 512]
        S = np.array(scores_of(batch), dtype=np.float64, copy=True)
        for r, u in enumerate(batch):
            S[r, seen[u]] = -np.inf
        out[a : a + 512] = np.argsort(-S, 1, kind="stable")[:, :k]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI-sized run")
    p.add_argument("--seed", type=int, default=0, help="split and model seed")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--M", type=int, default=8)
    p.add_argument("--warmup-steps", type=int, default=None, help="1000 (quick 200)")
    p.add_argument("--index-steps", type=int, default=None, help="300 (quick 50)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    import numpy as np
    import scipy.sparse as sp
    import torch

    from embedopt.data import load_movielens_side_features, split_entries
    from embedopt.metrics import precision_at_k, recall_at_k
    from embedopt.quantization import TwoTowerRetrieval

    warm = args.warmup_steps or (200 if args.quick else 1000)
    steps = args.index_steps or (50 if args.quick else 300)
    feats = load_movielens_side_features()
    E = feats.ratings.entries
    n_u, n_i = E.shape
    train, test = split_entries(E, (0.8, 0.2), random_state=args.seed)
    tu, ti = train.indices[:, 0], train.indices[:, 1]
    su, si = test.indices[:, 0], test.indices[:, 1]
    users = np.unique(su)
    order = np.argsort(su, kind="stable")
    rel = np.split(si[order], np.searchsorted(su[order], users[1:]))
    order = np.argsort(tu, kind="stable")
    seen = np.split(ti[order], np.searchsorted(tu[order], np.arange(1, n_u)))
    count = np.bincount(ti, minlength=n_i).astype(np.float64)
    results = []

    def record(name, ids):
        row = dict(
            method=name,
            precision=precision_at_k(ids, rel, 100),
            recall=recall_at_k(ids, rel, 100),
            median_count=float(np.median(count[ids[ids >= 0]])),
        )
        results.append(row)
        print(
            f"{name:48s} p@100 {row['precision']:.3%}  r@100 {row['recall']:.3%}"
            f"  median training count of the top 100: {row['median_count']:.0f}",
            flush=True,
        )

    record(
        "most popular items", _top_k(lambda b: np.tile(count, (b.size, 1)), users, seen)
    )
    try:
        from implicit.als import AlternatingLeastSquares
    except ImportError:
        print("implicit is not installed: no ALS row")
    else:
        C = sp.csr_matrix((np.ones(tu.size, np.float32), (tu, ti)), shape=(n_u, n_i))
        als = AlternatingLeastSquares(
            factors=64, regularization=0.05, iterations=15, random_state=args.seed
        )
        als.fit(C, show_progress=False)
        Uf, Vf = np.asarray(als.user_factors), np.asarray(als.item_factors)
        record(
            "implicit ALS (64 factors, 15 iterations)",
            _top_k(lambda b: Uf[b] @ Vf.T, users, seen),
        )
    model = TwoTowerRetrieval(
        rotation="fixed",
        n_components=args.dim,
        n_subquantizers=args.M,
        n_centroids=256,
        batch_size=1024,
        warmup_steps=warm,
        n_steps=steps,
        warm_start_iter=20 if args.quick else 200,
        random_state=args.seed,
        device="cpu",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(
            train,
            user_features=feats.user_features,
            item_features=feats.item_features,
        )
    net = model.net_
    with torch.no_grad():
        V = net.items(torch.arange(n_i)).numpy()
        U = net.users(torch.as_tensor(users)).numpy()
    row_of = np.full(n_u, -1)
    row_of[users] = np.arange(users.size)
    label = f"two-tower d={args.dim} ({warm}+{steps} steps)"
    record(f"{label}, exact", _top_k(lambda b: U[row_of[b]] @ V.T, users, seen))
    record(f"{label}, through the PQ index", model.recommend(users, 100, exclude=train))
    log_count = np.log1p(count)
    for beta in BETAS:
        record(
            f"{label}, exact + {beta} log(1 + count)",
            _top_k(
                lambda b, beta=beta: U[row_of[b]] @ V.T + beta * log_count, users, seen
            ),
        )
    held_median = float(np.median(count[si]))
    md = (
        "# MovieLens-1M retrieval baselines on the split of end_to_end.py\n\n"
        f"Seed {args.seed}, random 80/20 split, {users.size} test users, "
        f"{np.mean([r.size for r in rel]):.1f} held-out items per user (median "
        f"training count of a held-out item: {held_median:.0f}).\n\n"
        + _shared.markdown_table(
            ["method", "p@100", "r@100", "median training count of top 100"],
            [
                [
                    r["method"],
                    f"{r['precision']:.3%}",
                    f"{r['recall']:.3%}",
                    r["median_count"],
                ]
                for r in results
            ],
        )
        + "\n"
    )
    print(md)
    tag = "quant_end_to_end_baselines" + ("_quick" if args.quick else "")
    payload = dict(
        config=dict(vars(args), warmup=warm, index_steps=steps),
        environment=_shared.environment("implicit"),
        held_out_median_count=held_median,
        results=results,
    )
    js, mdp = _shared.write_outputs(tag, payload, md)
    print(f"wrote {js}, {mdp}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
