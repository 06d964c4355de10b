"""Rotation learning for PQ on fixed embeddings (Jiang et al., Sec. 3.1 / Figure 2).

For GloVe-6B-50d (n = 50, M in {5, 10}) and a synthetic correlated Gaussian set
(20k x 128, M in {8, 16}), K = 256: distortion vs iterations and vs time of
plain PQ, the eigenvalue-allocation initialization, OPQ (SVD Procrustes),
Cayley, GCD-R/G/S, the overlapping GCD-R/G ablations and GCD-G with exact
angles, over seeds, on training and held-out vectors; faiss OPQMatrix
(niter 50 in full mode) + IndexPQ and nanopq OPQ as peers in the same run;
recall@1/10/100 of ADC search (exact L2 nearest neighbour among the database).

    python benchmarks/quantization/fixed_embeddings.py --quick
    python benchmarks/quantization/fixed_embeddings.py            # full

Writes results/quant_fixed_embeddings[_quick].{json,md,png}.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

# name -> ProductQuantizer options (all share K=256 and the k-means schedule).
METHODS = {
    "PQ (no rotation)": dict(rotation="none"),
    "eigenvalue allocation (init only)": dict(
        rotation="none", rotation_init="eigenvalue"
    ),
    "OPQ-SVD": dict(rotation="opq"),
    "Cayley": dict(rotation="cayley"),
    "GCD-R": dict(rotation="gcd-r"),
    "GCD-G": dict(rotation="gcd-g"),
    "GCD-S": dict(rotation="gcd-s"),
    "GCD-R overlap": dict(rotation="gcd-r-overlap"),
    "GCD-G overlap": dict(rotation="gcd-g-overlap"),
    "GCD-G exact angle": dict(rotation="gcd-g", step_rule="exact"),
    # Our tuned setting: exact angles and n GCD steps per outer iteration (one
    # rotation step then costs O(n^3 log n), still below the k-means' O(m n K)).
    "GCD-G exact angle, n steps": dict(
        rotation="gcd-g", step_rule="exact", n_rotation_steps="n"
    ),
    # The same learners started from OPQ's eigenvalue allocation (Ge et al.),
    # the initialization the goal refers to.
    "OPQ-SVD (eig. init)": dict(rotation="opq", rotation_init="eigenvalue"),
    "GCD-G (eig. init)": dict(rotation="gcd-g", rotation_init="eigenvalue"),
    "GCD-S (eig. init)": dict(rotation="gcd-s", rotation_init="eigenvalue"),
    "GCD-G exact angle, n steps (eig. init)": dict(
        rotation="gcd-g",
        step_rule="exact",
        n_rotation_steps="n",
        rotation_init="eigenvalue",
    ),
}
# This figure is about the paper's methods: every entry starts from the
# identity with the paper's GCD step unless it says otherwise (these are not
# ProductQuantizer's defaults, which benchmarks/quantization/defaults.py runs).
for _opts in METHODS.values():
    _opts.setdefault("rotation_init", "identity")
    _opts.setdefault("step_rule", "gradient")
# Full mode runs this core set (the overlapping ablations and the 5-step exact
# variant are in the quick run) to fit the shared CPU budget.
FULL_METHODS = (
    "PQ (no rotation)",
    "eigenvalue allocation (init only)",
    "OPQ-SVD",
    "Cayley",
    "GCD-R",
    "GCD-G",
    "GCD-S",
    "GCD-G exact angle, n steps",
    "OPQ-SVD (eig. init)",
    "GCD-G (eig. init)",
    "GCD-S (eig. init)",
    "GCD-G exact angle, n steps (eig. init)",
)
PEERS = ("faiss OPQMatrix+IndexPQ", "nanopq OPQ")


def _split(args, dataset, rng):
    import numpy as np

    from embedopt.data import load_glove, load_sift1m, make_correlated_gaussian

    if dataset == "sift":
        # The paper's set: train on sift_learn, index the 1M base, queries
        # from sift_query with the shipped exact neighbours (no recomputation).
        sift = load_sift1m(args.sift_dir)
        n_train, n_val = (5000, 2000) if args.quick else (100000 - 10000, 10000)
        perm = rng.permutation(sift.learn.shape[0])
        n_q = 200 if args.quick else 1000
        q = rng.permutation(sift.query.shape[0])[:n_q]
        return dict(
            train=sift.learn[perm[:n_train]],
            heldout=sift.learn[perm[n_train : n_train + n_val]],
            base=sift.base,
            queries=sift.query[q],
            gt=sift.groundtruth[q, 0],
        )
    if dataset == "glove":
        sizes = (5000, 2000, 20000, 200) if args.quick else (20000, 10000, 100000, 1000)
        X = np.asarray(load_glove())
        perm = rng.permutation(X.shape[0])[: sum(sizes)]
        parts = np.split(X[perm], np.cumsum(sizes)[:-1])
        return dict(zip(("train", "heldout", "base", "queries"), parts, strict=True))
    n_train = 5000 if args.quick else 20000
    n_val, n_q = (1000, 200) if args.quick else (5000, 500)
    X = make_correlated_gaussian(n_train + n_val + n_q, 128, random_state=rng)
    train, heldout, queries = np.split(X, [n_train, n_train + n_val])
    # The database is the training set itself (a 20k x 128 index).
    return dict(train=train, heldout=heldout, base=train, queries=queries)


def _ground_truth(base, queries):
    import torch

    B = torch.as_tensor(base)
    out = []
    for a in range(0, queries.shape[0], 256):
        d = torch.cdist(torch.as_tensor(queries[a : a + 256]), B)
        out.append(d.argmin(1))
    return torch.cat(out).numpy()


def _recalls(ids, gt):
    from embedopt.metrics import recall_at_k

    return {f"recall@{r}": recall_at_k(ids, gt, r) for r in (1, 10, 100)}


def _distortion(X, rec):
    from embedopt.metrics import quantization_distortion

    return quantization_distortion(X, rec)


def run_ours(name, opts, data, M, gt, seed, iters):
    from embedopt import ConvergenceWarning
    from embedopt.quantization import ProductQuantizer

    opts = dict(opts)
    if opts.get("n_rotation_steps") == "n":
        opts["n_rotation_steps"] = data["train"].shape[1]
    pq = ProductQuantizer(
        M,
        256,
        max_iter=iters,
        init_kmeans_iter=40,  # faiss OPQMatrix: niter_pq_0 = 40
        kmeans_iter=4,  # niter_pq = 4
        refine_iter=25,  # faiss IndexPQ trains its final k-means 25 iterations
        tol=0.0,
        random_state=seed,
        device="cpu",
        **opts,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with _shared.Timer() as t:
            pq.fit(data["train"], validation=data["heldout"])
    codes = pq.encode(data["base"])
    with _shared.Timer() as ts:
        _, ids = pq.search(data["queries"], codes, k=100)
    h = pq.history_
    return dict(
        train_distortion=pq.distortion_,
        heldout_distortion=pq.distortion(data["heldout"]),
        fit_seconds=t.seconds,
        search_seconds=ts.seconds,
        history=dict(
            iteration=h["iteration"],
            time=h["time"],
            objective=h["objective"],
            val_distortion=h["val_distortion"],
        ),
        **_recalls(ids, gt),
    )


def run_faiss(data, M, gt, seed, iters):
    import faiss
    import numpy as np

    d = data["train"].shape[1]
    opq = faiss.OPQMatrix(d, M)
    opq.niter = iters
    ipq = faiss.IndexPQ(d, M, 8)
    ipq.pq.cp.seed = seed
    index = faiss.IndexPreTransform(opq, ipq)
    train = np.ascontiguousarray(data["train"], dtype=np.float32)
    with _shared.Timer() as t:
        index.train(train)

    def rec(X):
        X = np.ascontiguousarray(X, dtype=np.float32)
        return index.sa_decode(index.sa_encode(X))

    index.add(np.ascontiguousarray(data["base"], dtype=np.float32))
    with _shared.Timer() as ts:
        _, ids = index.search(np.ascontiguousarray(data["queries"]), 100)
    return dict(
        train_distortion=_distortion(data["train"], rec(data["train"])),
        heldout_distortion=_distortion(data["heldout"], rec(data["heldout"])),
        fit_seconds=t.seconds,
        search_seconds=ts.seconds,
        **_recalls(ids, gt),
    )


def run_nanopq(data, M, gt, seed, iters):
    import nanopq
    import numpy as np

    opq = nanopq.OPQ(M=M, Ks=256, verbose=False)
    train = np.ascontiguousarray(data["train"], dtype=np.float32)
    with _shared.Timer() as t:
        opq.fit(train, pq_iter=20, rotation_iter=iters, seed=seed)

    def rec(X):
        return opq.decode(opq.encode(np.ascontiguousarray(X, dtype=np.float32)))

    codes = opq.encode(np.ascontiguousarray(data["base"], dtype=np.float32))
    with _shared.Timer() as ts:
        ids = np.empty((data["queries"].shape[0], 100), np.int64)
        for q, x in enumerate(data["queries"]):
            dist = opq.dtable(np.ascontiguousarray(x, dtype=np.float32)).adist(codes)
            top = np.argpartition(dist, 100)[:100]
            ids[q] = top[np.argsort(dist[top])]
    return dict(
        train_distortion=_distortion(data["train"], rec(data["train"])),
        heldout_distortion=_distortion(data["heldout"], rec(data["heldout"])),
        fit_seconds=t.seconds,
        search_seconds=ts.seconds,
        **_recalls(ids, gt),
    )


def _summary(runs, key):
    import numpy as np

    v = np.array([r[key] for r in runs], dtype=float)
    return float(v.mean()), float(v.std()), float(np.median(v))


def _plot(results, configs, path):
    plt = _shared.figure()
    import numpy as np

    fig, axes = plt.subplots(
        len(configs), 3, figsize=(16, 4 * len(configs)), squeeze=False
    )
    for row, cfg in enumerate(configs):
        res = results[cfg]
        for name in METHODS:
            runs = res.get(name)
            if not runs:
                continue
            obj = np.mean([r["history"]["objective"] for r in runs], 0)
            val = np.mean([r["history"]["val_distortion"] for r in runs], 0)
            tim = np.mean([r["history"]["time"] for r in runs], 0)
            it = np.arange(1, obj.size + 1)
            style = "--" if "overlap" in name else "-"
            axes[row, 0].plot(it, obj, style, label=name)
            axes[row, 1].plot(it, val, style, label=name)
            axes[row, 2].plot(tim, obj, style, label=name)
        for peer, marker in zip(PEERS, ("*", "P"), strict=True):
            runs = res.get(peer)
            if not runs:
                continue
            tr = np.mean([r["train_distortion"] for r in runs])
            va = np.mean([r["heldout_distortion"] for r in runs])
            ts = np.mean([r["fit_seconds"] for r in runs])
            axes[row, 0].axhline(tr, color="k", ls=":", lw=1)
            axes[row, 1].axhline(va, color="k", ls=":", lw=1)
            axes[row, 2].plot([ts], [tr], marker, ms=12, color="k", label=peer)
        axes[row, 0].set_title(f"{cfg}: train distortion vs iteration")
        axes[row, 1].set_title(f"{cfg}: held-out distortion vs iteration")
        axes[row, 2].set_title(f"{cfg}: train distortion vs fit time")
        axes[row, 2].set_xscale("log")
        for ax in axes[row]:
            ax.grid(alpha=0.3)
        axes[row, 0].set_xlabel("outer iteration (dotted: peers' final)")
        axes[row, 2].set_xlabel("seconds")
    axes[0, 2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI-sized run")
    p.add_argument("--seeds", type=int, default=None, help="default 2 quick, 10 full")
    p.add_argument("--tag", default="", help="suffix of the output files")
    p.add_argument("--iters", type=int, default=None, help="default 10 quick, 50 full")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--datasets",
        default="gaussian,glove",
        help="comma list of gaussian,glove,sift (sift needs --sift-dir)",
    )
    p.add_argument(
        "--sift-dir",
        default=None,
        help="folder with SIFT1M's .fvecs/.ivecs (default: $EMBEDOPT_DATA/sift1m)",
    )
    p.add_argument(
        "--methods",
        default=None,
        help="semicolon-separated names (some contain commas), or 'none' for "
        "peers only",
    )
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--M", default=None, help="comma list of M (default: both)")
    return p


def _installed_peers(args) -> dict:
    """The peers to run: name -> run function, for those installed."""
    peers = {}
    if args.no_peers:
        return peers
    for peer, mod, fn in (
        (PEERS[0], "faiss", run_faiss),
        (PEERS[1], "nanopq", run_nanopq),
    ):
        try:
            __import__(mod)
            peers[peer] = fn
        except ImportError:
            print(f"{peer}: not installed, skipped", file=sys.stderr)
    return peers


def configure(args) -> dict:
    """Seeds, iterations, methods, peers and the (dataset, M) configurations."""
    if args.methods:
        names = [] if args.methods == "none" else args.methods.split(";")
    else:
        names = list(METHODS) if args.quick else list(FULL_METHODS)
    ms = {"gaussian": (8, 16), "glove": (5, 10), "sift": (8, 16)}
    configs = [
        (ds, M)
        for ds in args.datasets.split(",")
        for M in (ms[ds] if args.M is None else map(int, args.M.split(",")))
    ]
    return dict(
        seeds=args.seeds or (2 if args.quick else 10),
        iters=args.iters or (10 if args.quick else 50),
        methods={k: METHODS[k] for k in names},
        peers=_installed_peers(args),
        configs=configs,
    )


def _run_seed(args, conf, ds, M, seed, runs, data_info) -> None:
    """Every method and peer on one split of ``ds``; appends to ``runs``."""
    import numpy as np

    data = _split(args, ds, np.random.default_rng(1000 + seed))
    gt = data.pop("gt", None)
    if gt is None:
        gt = _ground_truth(data["base"], data["queries"])
    data_info[ds] = {k: list(v.shape) for k, v in data.items()}
    methods, peers, iters = conf["methods"], conf["peers"], conf["iters"]
    for name in [*methods, *peers]:
        if name in methods:
            r = run_ours(name, methods[name], data, M, gt, seed, iters)
        else:
            r = peers[name](data, M, gt, seed, iters)
        runs[name].append(r)
        print(
            f"{ds} M={M} seed {seed} {name:34s} "
            f"train {r['train_distortion']:.5f} "
            f"held-out {r['heldout_distortion']:.5f} "
            f"R@10 {r['recall@10']:.3f} {r['fit_seconds']:.1f}s",
            flush=True,
        )


def run(args, conf) -> tuple[dict, dict]:
    """Results per configuration (``"glove M=10"`` -> method -> runs) and the
    shapes of every dataset's splits."""
    results, data_info = {}, {}
    for ds, M in conf["configs"]:
        runs = {name: [] for name in [*conf["methods"], *conf["peers"]]}
        results[f"{ds} M={M}"] = runs
        for seed in range(conf["seeds"]):
            _run_seed(args, conf, ds, M, seed, runs, data_info)
    return results, data_info


_HEADERS = [
    "method",
    "train distortion",
    "held-out distortion",
    "train / faiss",
    "R@1",
    "R@10",
    "R@100",
    "fit s (median)",
    "time / faiss",
]
#: The rows whose train distortion is compared with faiss OPQ (and, on the
#: Gaussian set, with the eigenvalue allocation alone) under "Goals".
_GOAL_METHODS = (
    "GCD-G",
    "GCD-S",
    "GCD-G exact angle, n steps",
    "GCD-G (eig. init)",
    "GCD-S (eig. init)",
    "GCD-G exact angle, n steps (eig. init)",
)


def _table(res) -> str:
    """One configuration's table: every method and peer against faiss."""
    ref = res.get(PEERS[0])
    ref_tr = _summary(ref, "train_distortion")[0] if ref else None
    ref_t = _summary(ref, "fit_seconds")[2] if ref else None
    rows = []
    for name, runs in res.items():
        if not runs:
            continue
        tr, trs, _ = _summary(runs, "train_distortion")
        va, vas, _ = _summary(runs, "heldout_distortion")
        t_med = _summary(runs, "fit_seconds")[2]
        rows.append(
            [
                name,
                f"{tr:.5f} ± {trs:.5f}",
                f"{va:.5f} ± {vas:.5f}",
                f"{tr / ref_tr:.4f}" if ref_tr else "-",
                *(f"{_summary(runs, f'recall@{r}')[0]:.3f}" for r in (1, 10, 100)),
                f"{t_med:.2f}",
                f"{t_med / ref_t:.2f}" if ref_t else "-",
            ]
        )
    return _shared.markdown_table(_HEADERS, rows)


def _goals(cfg, res) -> list[str]:
    """GCD rows vs faiss OPQ (and vs the eigenvalue allocation on Gaussian)."""
    ref = res.get(PEERS[0])
    ref_tr = _summary(ref, "train_distortion")[0] if ref else None
    eig_runs = res.get("eigenvalue allocation (init only)")
    eig = _summary(eig_runs, "train_distortion")[0] if eig_runs else None
    goals = []
    for g in _GOAL_METHODS:
        if not res.get(g):
            continue
        v = _summary(res[g], "train_distortion")[0]
        if ref_tr:
            goals.append(
                f"- {cfg}: {g} train distortion {v:.5f} vs faiss OPQ {ref_tr:.5f}"
                f" -> {'MET' if v <= ref_tr else 'NOT MET'} ({v / ref_tr:.4f}x)"
            )
        if eig is not None and cfg.startswith("gaussian"):
            goals.append(
                f"- {cfg}: {g} {v:.5f} vs eigenvalue allocation {eig:.5f} -> "
                f"{'MET' if v < eig else 'NOT MET'}"
            )
    return goals


def report(args, conf, results, data_info) -> str:
    """The Markdown report: settings, one table per configuration, goals."""
    md = [
        "# PQ rotation learning on fixed embeddings "
        f"({'quick' if args.quick else 'full'})\n",
        f"K = 256, {conf['iters']} outer iterations (k-means: 40 initial + 4 per "
        f"iteration + 25 final, as faiss OPQMatrix/IndexPQ), {conf['seeds']} seeds, "
        f"{args.threads} thread(s) for every library. Distortion = mean squared "
        "reconstruction error; mean ± std over seeds; time = median fit seconds; "
        "ratios against faiss measured in the same run.\n",
        f"Data: {data_info}\n",
    ]
    goals = []
    for cfg, res in results.items():
        md.append(f"\n## {cfg}\n\n")
        md.append(_table(res) + "\n")
        goals += _goals(cfg, res)
    md.append("\n## Goals\n\n" + "\n".join(goals) + "\n")
    return "".join(md)


def _write(args, conf, results, data_info, md) -> None:
    tag = "quant_fixed_embeddings" + ("_quick" if args.quick else "") + args.tag
    methods = conf["methods"]
    payload = dict(
        config=dict(
            quick=args.quick,
            seeds=conf["seeds"],
            iters=conf["iters"],
            threads=args.threads,
            datasets=data_info,
            methods={
                k: {kk: str(vv) for kk, vv in v.items()} for k, v in methods.items()
            },
        ),
        versions=_shared.versions("faiss", "nanopq"),
        device=_shared.device_info(),
        results=results,
    )
    js, mdp = _shared.write_outputs(tag, payload, md)
    _plot(results, list(results), _shared.RESULTS / f"{tag}.png")
    print(md)
    print(f"wrote {js}, {mdp}, {_shared.RESULTS / (tag + '.png')}")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    conf = configure(args)
    results, data_info = run(args, conf)
    _write(args, conf, results, data_info, report(args, conf, results, data_info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
