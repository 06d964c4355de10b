"""End-to-end trainable PQ index on MovieLens-1M (Jiang et al., Sec. 3.2 / Table 1).

A two-tower model (user id + gender/age/occupation/zip; movie id + genres +
decade; cosine scoring, hinge loss with margin 0.1 over in-batch negatives) is
warmed up without the index, the PQ codebooks and rotation are warm-started by
OPQ on 8192 item embeddings, then training continues with the indexing layer
for each rotation method from that same warm start: fixed R (baseline,
rotation "none"), Cayley,
GCD-R, GCD-G, GCD-S. Reported: distortion curves, precision@100 and recall@100
of retrieval through the index (ADC search over the items' PQ codes, training
items excluded) on a random 20% of each user's ratings, mean over seeds, and
p-values against the baseline (paired t-test and one-way ANOVA over seeds).

    python benchmarks/quantization/end_to_end.py --quick
    python benchmarks/quantization/end_to_end.py
    python benchmarks/quantization/end_to_end.py --baselines   # issue 13, item 5

Writes results/quant_end_to_end[_quick].{json,md,png}.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

METHODS = ("none", "cayley", "gcd-r", "gcd-g", "gcd-s")
LABELS = {
    "none": "Baseline (fixed R)",
    "cayley": "Cayley",
    "gcd-r": "GCD-R",
    "gcd-g": "GCD-G",
    "gcd-s": "GCD-S",
}


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


def baselines(args) -> int:
    """``--baselines``: why Table 1's baseline is lower than the paper's.

    On the split of seed 0 (issue 13, item 5): precision@100 / recall@100 of
    the most popular training items (no model), implicit's ALS (skipped when
    ``implicit`` is not installed), the two-tower model with a fixed rotation
    retrieving exactly and through its PQ index, and the same exact scores plus
    ``beta * log(1 + training count)`` -- the popularity prior that training
    on in-batch negatives removes (positive pairs are drawn uniformly, so an
    item is a negative in proportion to its popularity). Also the median
    training count of the recommended items. Writes
    results/quant_end_to_end_baselines[_quick].{json,md}.
    """
    seed = 0
    warm = args.warmup_steps or (200 if args.quick else 1000)
    steps = args.index_steps or (50 if args.quick else 300)
    split = _baseline_split(seed)
    results = []
    record = _recorder(results, split)
    _peer_rows(record, split, seed)
    _two_tower_rows(
        record,
        split,
        _baseline_model(args, split, warm, steps, seed),
        args,
        warm,
        steps,
    )
    return _baseline_report(args, split, results, seed, warm, steps)


def _baseline_split(seed):
    """Seed ``seed``'s 80/20 split: the test users, their held-out items, the
    training items of every user and the training count of every item."""
    import numpy as np

    from embedopt.data import (
        as_interactions,
        load_movielens_side_features,
        split_entries,
    )
    from embedopt.nn import pairs_by_user

    feats = load_movielens_side_features()
    E = feats.ratings.entries
    n_u, n_i = E.shape
    train, test = split_entries(E, (0.8, 0.2), random_state=seed)
    tu, ti = train.indices[:, 0], train.indices[:, 1]
    si = test.indices[:, 1]
    users, rel = pairs_by_user(as_interactions(test, (n_u, n_i)))
    order = np.argsort(tu, kind="stable")
    seen = np.split(ti[order], np.searchsorted(tu[order], np.arange(1, n_u)))
    count = np.bincount(ti, minlength=n_i).astype(np.float64)
    return dict(
        feats=feats,
        train=train,
        tu=tu,
        ti=ti,
        si=si,
        users=users,
        rel=rel,
        seen=seen,
        count=count,
        shape=(n_u, n_i),
    )


def _recorder(results, split):
    """``record(name, ids)``: P@100, R@100 and the median training count of a
    method's top 100, appended to ``results`` and printed."""
    import numpy as np

    from embedopt.metrics import precision_at_k, recall_at_k

    rel, count = split["rel"], split["count"]

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

    return record


def _peer_rows(record, split, seed) -> None:
    """The most popular items and implicit's ALS (when installed)."""
    import numpy as np
    import scipy.sparse as sp

    users, seen, count = split["users"], split["seen"], split["count"]
    tu, ti = split["tu"], split["ti"]
    n_u, n_i = split["shape"]
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
            factors=64, regularization=0.05, iterations=15, random_state=seed
        )
        als.fit(C, show_progress=False)
        Uf, Vf = np.asarray(als.user_factors), np.asarray(als.item_factors)
        record(
            "implicit ALS (64 factors, 15 iterations)",
            _top_k(lambda b: Uf[b] @ Vf.T, users, seen),
        )


def _baseline_model(args, split, warm, steps, seed):
    """The two-tower model with a fixed rotation, fitted on the split."""
    from embedopt.quantization import TwoTowerRetrieval

    feats, train = split["feats"], split["train"]
    model = TwoTowerRetrieval(
        rotation="none",
        n_components=args.dim,
        n_subquantizers=args.M,
        n_centroids=256,
        batch_size=1024,
        warmup_steps=warm,
        n_steps=steps,
        warm_start_iter=20 if args.quick else 200,
        random_state=seed,
        device="cpu",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(
            train,
            user_features=feats.user_features,
            item_features=feats.item_features,
        )
    return model


def _two_tower_rows(record, split, model, args, warm, steps) -> None:
    """The model's rows: exact, through its PQ index, exact plus a popularity prior."""
    import numpy as np
    import torch

    users, seen, count = split["users"], split["seen"], split["count"]
    n_u, n_i = split["shape"]
    net = model.net_
    with torch.no_grad():
        V = net.items(torch.arange(n_i)).numpy()
        U = net.users(torch.as_tensor(users)).numpy()
    row_of = np.full(n_u, -1)
    row_of[users] = np.arange(users.size)
    label = f"two-tower d={args.dim} ({warm}+{steps} steps)"
    record(f"{label}, exact", _top_k(lambda b: U[row_of[b]] @ V.T, users, seen))
    record(f"{label}, through the PQ index", model.recommend(users, 100)[0])
    log_count = np.log1p(count)
    for beta in BETAS:
        record(
            f"{label}, exact + {beta} log(1 + count)",
            _top_k(
                lambda b, beta=beta: U[row_of[b]] @ V.T + beta * log_count, users, seen
            ),
        )


def _baseline_report(args, split, results, seed, warm, steps) -> int:
    import numpy as np

    count, si, users, rel = split["count"], split["si"], split["users"], split["rel"]
    held_median = float(np.median(count[si]))
    md = (
        "# MovieLens-1M retrieval baselines on the split of end_to_end.py\n\n"
        f"Seed {seed}, random 80/20 split, {users.size} test users, "
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


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    if args.baselines:
        return baselines(args)
    cfg = _configure(args)
    results = _run_seeds(args, cfg)
    return _report(args, cfg, results)


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=None, help="default 2 quick, 5 full")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--M", type=int, default=8)
    p.add_argument("--warmup-steps", type=int, default=None)
    p.add_argument("--index-steps", type=int, default=None)
    p.add_argument("--warm-start-iter", type=int, default=None)
    p.add_argument("--rotation-lr", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument(
        "--loss",
        default="hinge",
        choices=("hinge", "softmax"),
        help="retrieval loss over in-batch negatives (paper: hinge)",
    )
    p.add_argument(
        "--baselines",
        action="store_true",
        help="instead of Table 1: popularity, ALS and the two-tower model exact "
        "vs through its index on seed 0's split (default steps 1000 + 300, "
        "quick 200 + 50)",
    )
    return p


def _configure(args) -> dict:
    """Seeds, step budgets and methods (quick or full)."""
    seeds = args.seeds or (2 if args.quick else 5)
    warm = args.warmup_steps or (300 if args.quick else 2000)
    steps = args.index_steps or (300 if args.quick else 2000)
    ws_iter = args.warm_start_iter or (20 if args.quick else 200)
    methods = args.methods.split(",")
    return dict(seeds=seeds, warm=warm, steps=steps, ws_iter=ws_iter, methods=methods)


def _run_seeds(args, cfg) -> dict:
    """Every method on every seed's split, from one shared warm start per seed."""
    import numpy as np

    from embedopt.data import load_movielens_side_features, split_entries
    from embedopt.quantization import TwoTowerRetrieval

    seeds, warm, steps = cfg["seeds"], cfg["warm"], cfg["steps"]
    ws_iter, methods = cfg["ws_iter"], cfg["methods"]
    feats = load_movielens_side_features()
    results = {m: [] for m in methods}
    for seed in range(seeds):
        train, test = split_entries(
            feats.ratings.entries, (0.8, 0.2), random_state=seed
        )
        common = dict(
            n_components=args.dim,
            n_subquantizers=args.M,
            n_centroids=256,
            batch_size=args.batch_size,
            warmup_steps=warm,
            n_steps=steps,
            warm_start_iter=ws_iter,
            rotation_learning_rate=args.rotation_lr,
            loss=args.loss,
            random_state=seed,
            device="cpu",
        )
        base = None
        for m in methods:
            model = TwoTowerRetrieval(rotation=m, **common)
            with _shared.Timer() as t:
                model.fit(
                    train,
                    user_features=feats.user_features,
                    item_features=feats.item_features,
                    warm_start_from=base,
                )
            base = base or model
            ev = model.evaluate(test, 100)  # the training pairs excluded
            h = model.history_
            r = dict(
                seed=seed,
                fit_seconds=t.seconds,
                warm_start_distortion=model.warm_start_distortion_,
                final_distortion=float(np.mean(h["distortion"][-3:])),
                history=dict(
                    step=h["iteration"] * model.log_every,
                    distortion=h["distortion"],
                    retrieval_loss=h["retrieval_loss"],
                ),
                **ev,
            )
            results[m].append(r)
            print(
                f"seed {seed} {LABELS[m]:20s} p@100 {ev['precision@100']:.4%} "
                f"r@100 {ev['recall@100']:.4%} distortion {r['final_distortion']:.3e}"
                f" ({t.seconds:.0f}s)",
                flush=True,
            )
    return results


def _report(args, cfg, results) -> int:
    """Table 1 (means, p-values vs the baseline), its JSON and the distortion plot."""
    seeds, warm, steps = cfg["seeds"], cfg["warm"], cfg["steps"]
    ws_iter, methods = cfg["ws_iter"], cfg["methods"]
    rows = _table_rows(results, methods)
    md = (
        "# End-to-end trainable PQ index, MovieLens-1M "
        f"({'quick' if args.quick else 'full'})\n\n"
        f"dim {args.dim}, M {args.M}, K 256, batch {args.batch_size}, warm-up "
        f"{warm} steps, OPQ warm start {ws_iter} iterations on 8192 item "
        f"embeddings, {steps} index steps, GCD lr {args.rotation_lr} (Cayley: plain "
        f"SGD at lr/4), {seeds} seeds (random 80/20 split of the ratings per "
        f"seed), {args.loss} loss, retrieval through the index, training items "
        "excluded. p-values vs the baseline, paired t-test / one-way ANOVA over "
        "seeds. Fit seconds of the baseline include warm-up and warm start.\n\n"
        + _shared.markdown_table(
            [
                "method",
                "p@100",
                "r@100",
                "final distortion",
                "p-value p@100",
                "p-value r@100",
                "fit s",
            ],
            rows,
        )
        + "\n"
    )
    tag = "quant_end_to_end" + ("_quick" if args.quick else "")
    payload = dict(
        config=dict(
            vars(args), seeds=seeds, warmup=warm, index_steps=steps, ws_iter=ws_iter
        ),
        versions=_shared.versions("faiss", "nanopq"),
        device=_shared.device_info(),
        results=results,
    )
    js, mdp = _shared.write_outputs(tag, payload, md)
    _plot(results, methods, tag)
    print(md)
    print(f"wrote {js}, {mdp}")
    return 0


def _table_rows(results, methods) -> list:
    """Mean ± std per method, and p-values against the baseline over seeds."""
    import numpy as np
    from scipy import stats

    rows = []
    base_runs = results.get("none")
    for m in methods:
        runs = results[m]
        pk = np.array([r["precision@100"] for r in runs])
        rk = np.array([r["recall@100"] for r in runs])
        dist = np.array([r["final_distortion"] for r in runs])
        pvals = ["-", "-"]
        if base_runs and m != "none" and len(runs) > 1:
            for c, (ours, key) in enumerate(
                ((pk, "precision@100"), (rk, "recall@100"))
            ):
                ref = np.array([r[key] for r in base_runs])
                pvals[c] = (
                    f"{stats.ttest_rel(ours, ref).pvalue:.3f} / "
                    f"{stats.f_oneway(ours, ref).pvalue:.3f}"
                )
        rows.append(
            [
                LABELS[m],
                f"{pk.mean():.3%} ± {pk.std():.3%}",
                f"{rk.mean():.3%} ± {rk.std():.3%}",
                f"{dist.mean():.4e}",
                *pvals,
                f"{np.median([r['fit_seconds'] for r in runs]):.0f}",
            ]
        )
    return rows


def _plot(results, methods, tag) -> None:
    import numpy as np

    plt = _shared.figure()

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in methods:
        d = np.mean([r["history"]["distortion"] for r in results[m]], 0)
        step = results[m][0]["history"]["step"]
        ax.plot(step, d, label=LABELS[m])
    ax.set_xlabel("index-phase step")
    ax.set_ylabel("quantization distortion (training batches)")
    ax.set_title("MovieLens-1M: distortion after the OPQ warm start")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(_shared.RESULTS / f"{tag}.png", dpi=90)


if __name__ == "__main__":
    raise SystemExit(main())
