"""NPKL on LIBSVM adult: Tables 2-3 and Figures 1-2 of the biconvex SDP paper.

Protocol (Sec. 5, 5.1): per data set and repeat, ``round(0.75 n)`` random
must-links and as many cannot-links (Table 1), the diagonal, a symmetric
5-NN graph with heat-kernel weights and its normalized Laplacian, eq. 13 with
``lambda``. Frank-Wolfe (Laue's hybrid, from Z = 0) runs until the relative
objective change is below 1e-6; its rank r and its final objective are then
handed to BM-AGD, BM-L-BFGS and AAGD, which start from the same random
factor and stop once their objective is not larger than FW's, or after
2,000 iterations. The Rand index (Rand, 1971, over all n(n-1)/2 pairs)
compares the two classes with kernel k-means on the learned Z (k-means on
the rows of its factor, 2 clusters, 10 restarts). CPU time is the process
time of each solver (one thread). Plots: objective vs CPU time (log scale)
for the first repeat of the smallest and the largest data set (Figure 1)
and ``||X_k - Y_k||_F^2`` of AAGD vs iterations (Figure 2).

    python benchmarks/sdp/npkl_adult.py --quick
    python benchmarks/sdp/npkl_adult.py
    python benchmarks/sdp/npkl_adult.py --quick --lam 0.01 --pairs 0.25 0.75 1.5

Data: ``$EMBEDOPT_DATA/libsvm-adult`` (a1a, a9a; intermediate sizes are
random subsets ``a9a:<n>`` of a9a, since a2a..a8a are not available).
Writes results/sdp_npkl_adult[_quick].{json,md} and *_objective.png,
*_gap.png.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
from _common import adult, kmeans

import _shared

METHODS = ("fw", "bm_agd", "bm_lbfgs", "aagd")
LABELS = {"fw": "FW", "bm_agd": "BM-AGD", "bm_lbfgs": "BM-L-BFGS", "aagd": "AAGD"}
QUICK = ["a1a"]
FULL = ["a1a", "a9a:4781", "a9a:11220", "a9a"]


def _args():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=None, help="a1a, a9a, a9a:<n>")
    p.add_argument("--repeats", type=int, default=None, help="default 3 quick, 10")
    p.add_argument("--lam", type=float, default=10.0, help="lambda (paper: 10)")
    p.add_argument(
        "--pairs",
        type=float,
        nargs="+",
        default=[0.75],
        help="must-links (= cannot-links) per pattern; several values sweep",
    )
    p.add_argument("--n-neighbors", type=int, default=5)
    p.add_argument("--rank", type=int, default=None, help="default: FW's rank")
    p.add_argument("--max-iter", type=int, default=2000)
    p.add_argument("--fw-tol", type=float, default=1e-6)
    return p.parse_args()


def _solve(name, problem, init, target, args, seed):
    from embedopt.sdp import SOLVERS, frank_wolfe

    t0 = time.process_time()
    if name == "fw":
        res = frank_wolfe(problem, tol=args.fw_tol, max_iter=args.max_iter)
    else:
        res = SOLVERS.get(name)(
            problem,
            init,
            target=target,
            tol=0.0,
            max_iter=args.max_iter,
            random_state=seed,
            device=args.device,
        )
    cpu = time.process_time() - t0
    return res, cpu


def _one_run(X, y, lap, n_pairs, args, seed):
    """FW, then the three others to FW's objective; per-method records."""
    import numpy as np

    from embedopt.metrics import rand_index
    from embedopt.sdp import NPKLProblem, sample_pairs

    ml, cl = sample_pairs(y, n_pairs, random_state=seed)
    problem = NPKLProblem(len(y), ml, cl, lap, lam=args.lam, device=args.device)
    out = {}
    target, rank = None, args.rank
    for name in METHODS:
        res, cpu = _solve(name, problem, rank, target, args, seed)
        V = res.x.double().cpu().numpy()
        if name == "fw":
            target = float(res.history["objective"][-1])
            rank = rank or V.shape[1]
        hist = res.history
        out[name] = {
            "cpu_s": cpu,
            "n_iter": res.n_iter,
            "stop_reason": res.stop_reason,
            "objective": float(hist["objective"][-1]),
            "rank": V.shape[1],
            "rand_index": rand_index(kmeans(V, len(np.unique(y)), seed=seed), y),
            "time": np.asarray(hist["time"]) if "time" in hist else None,
            "objective_history": np.asarray(hist["objective"]),
            "gap_history": np.asarray(hist["gap"]) if name == "aagd" else None,
        }
    out["target"], out["rank"] = target, rank
    return out


def _time_axis(rec):
    """CPU-time stamps of a history: the recorded times, else uniform in cpu_s."""
    import numpy as np

    k = len(rec["objective_history"])
    if rec["time"] is not None and len(rec["time"]) == k:
        return rec["time"]
    return np.linspace(rec["cpu_s"] / k, rec["cpu_s"], k)


def _plots(runs, path_stem):
    plt = _shared.figure()
    keys = [k for k in (runs[0][0], runs[-1][0]) if k] if runs else []
    keys = list(dict.fromkeys(keys))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4), squeeze=0)
    for ax, key in zip(axes[0], keys, strict=False):
        run = next(r for k, r in runs if k == key)
        for name in METHODS:
            rec = run[name]
            ax.plot(_time_axis(rec), rec["objective_history"], label=LABELS[name])
        ax.axhline(run["target"], ls="--", color="m", lw=1, label="FW final")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set(title=key, xlabel="solver time (s, one thread)", ylabel="objective f(Z)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(f"{path_stem}_objective.png", dpi=120)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for key in keys:
        gap = next(r for k, r in runs if k == key)["aagd"]["gap_history"]
        ax.semilogy(range(1, len(gap) + 1), gap**2, label=key)
    ax.set(xlabel="iteration", ylabel="||X_k - Y_k||_F^2 (AAGD)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{path_stem}_gap.png", dpi=120)


def _row(key, n, n_pairs, reps):
    """Table row: Rand index and CPU time (mean +- std), AAGD's time ratios."""
    row = [key, n, n_pairs, _shared.median([r["rank"] for r in reps])]
    for name in METHODS:
        m, s = _shared.mean_std([100 * r[name]["rand_index"] for r in reps])
        row.append(f"{m:.2f} ± {s:.2f}")
    for name in METHODS:
        m, s = _shared.mean_std([r[name]["cpu_s"] for r in reps])
        hit = sum(r[name]["stop_reason"] in ("target", "tol") for r in reps)
        row.append(f"{m:.3g} ± {s:.2g} ({hit}/{len(reps)})")
    for name in ("bm_agd", "bm_lbfgs"):
        ratio = [r[name]["cpu_s"] / r["aagd"]["cpu_s"] for r in reps]
        row.append(f"{_shared.median(ratio):.2f}")
    return row


def main():
    args = _args()
    _shared.setup(args)
    import torch

    from embedopt.sdp import knn_laplacian

    torch.set_num_threads(args.threads or 1)
    datasets = args.datasets or (QUICK if args.quick else FULL)
    repeats = args.repeats or (3 if args.quick else 10)
    rows, results, runs = [], {}, []
    for key in datasets:
        X, y = adult(key, rng=args.seed)
        n = len(y)
        t0 = time.process_time()
        with warnings.catch_warnings():  # the a9a 5-NN graph is disconnected
            warnings.simplefilter("ignore", UserWarning)
            lap = knn_laplacian(X, args.n_neighbors, device=args.device)
        lap_s = time.process_time() - t0
        for ratio in args.pairs:
            n_pairs = round(ratio * n)
            reps = []
            for rep in range(repeats):
                run = _one_run(X, y, lap, n_pairs, args, args.seed + rep)
                reps.append(run)
                runs.append((key if ratio == args.pairs[0] and rep == 0 else None, run))
                print(
                    key,
                    n_pairs,
                    rep,
                    {m: round(run[m]["cpu_s"], 3) for m in METHODS},
                    {m: round(run[m]["rand_index"], 4) for m in METHODS},
                    flush=True,
                )
            rows.append(_row(key, n, n_pairs, reps))
            results[f"{key}/{n_pairs}"] = {
                "n": n,
                "laplacian_cpu_s": lap_s,
                "runs": reps,
            }
    headers = ["data", "n", "pairs", "r"]
    headers += [f"RI {LABELS[m]} (%)" for m in METHODS]
    headers += [f"CPU s {LABELS[m]} (reached)" for m in METHODS]
    headers += ["AGD / AAGD", "L-BFGS / AAGD"]
    table = _shared.markdown_table(headers, rows)
    name = "sdp_npkl_adult" + ("_quick" if args.quick else "")
    config = {**vars(args), "datasets": datasets, "repeats": repeats}
    path = _shared.write(name, args.out, config, results, table)
    if not args.no_plots:
        _plots([r for r in runs if r[0]], str(Path(args.out) / name))
    print(table)
    print("wrote", path)


if __name__ == "__main__":
    main()
