"""Colored MVU on sklearn digits: Figure 3 of the biconvex SDP paper.

Benchmark 3 of issue 11 (USPS and 20 Newsgroups are not available here; the
8x8 digits are). Problem (Sec. 4.2, eq. 23, Sec. 5.2): the pairs N are the
symmetric k-NN graph with k = 1 % of n (the paper's choice; ``--n-neighbors``
overrides), joined into one component by ``knn_pairs``, their squared
distances on the raw pixels (0..16), the one-hot label kernel K, lambda = 1.

- f*: BM-L-BFGS to rounding level (``tol=0``) at rank ``--rank``; its
  gradient G is checked for PSD-ness (``lambda_min(G)``): at a rank below
  that of Z*, G has a clearly negative eigenvalue and f* is only the best
  rank-r value, not the SDP optimum (see the README). r = 40 by default:
  on all digits, r = 20 stops where G has 22 negative eigenvalues (the
  lowest -21, f 7e-5 above the r = 40 value), r = 40 where
  ``lambda_min(G) = -1e-4`` (``||G||_2 = 3.7e4``), so Z* has a rank between
  20 and 40. ``--quick`` (n = 300) uses r = 20, where ``lambda_min(G) =
  -2e-3`` for ``||G||_2 = 4.8e4``.
- AAGD, BM-AGD, BM-L-BFGS and Frank-Wolfe (Laue's hybrid, from Z = 0; CMVU
  has no trace bound of its own, so ``tau = 2 tr(Z_ref)``, valid because it
  contains the reference's optimum) each run from the same random factor
  until ``f <= f* + 1e-6 |f*|``, ``--max-iter`` or ``--time-limit`` CPU
  seconds (stop reason ``cpu_limit``). Recorded: objective vs CPU time
  (plotted, log scales of the relative error), CPU time to relative errors
  1e-2, 1e-4 and the target, iterations.
- The embedding: the two leading principal axes of the learned Z (the
  centered factor's top singular directions), plotted coloured by class;
  leave-one-out 1-NN accuracy of that 2-d embedding and of the raw pixels.

    python benchmarks/sdp/cmvu_digits.py --quick        # n = 300, r = 20 (~25 s)
    python benchmarks/sdp/cmvu_digits.py                # n = 1797
    python benchmarks/sdp/cmvu_digits.py --rank 2       # the rank-2 problem

Writes results/sdp_cmvu_digits[_quick].{json,md}, *_objective.png and
*_embedding.png.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
from _common import digits  # first: one BLAS thread before NumPy loads

import _shared
from _shared import CpuClock, time_to

METHODS = ("aagd", "bm_agd", "bm_lbfgs", "fw")
LABELS = {"aagd": "AAGD", "bm_agd": "BM-AGD", "bm_lbfgs": "BM-L-BFGS", "fw": "FW"}


def _args():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="default 300 quick, 1797")
    p.add_argument("--n-neighbors", type=int, default=None, help="default 1 %% of n")
    p.add_argument("--rank", type=int, default=None, help="r (default 20 / 40)")
    p.add_argument("--lam", type=float, default=1.0)
    p.add_argument("--accuracy", type=float, default=1e-6, help="relative target")
    p.add_argument("--max-iter", type=int, default=100_000)
    p.add_argument(
        "--time-limit", type=float, default=None, help="CPU s per solver (6 / 45)"
    )
    p.add_argument("--ref-time", type=float, default=None, help="s (20 / 90)")
    return p.parse_args()


def _problem(X, y, k, args):
    from embedopt.sdp import CMVUProblem, knn_pairs, one_hot_labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # joined components
        pairs, sqdist = knn_pairs(X, k, device=args.device)
    return CMVUProblem(
        len(y), pairs, sqdist, one_hot_labels(y), lam=args.lam, device=args.device
    )


def _lambda_min(problem, V) -> float:
    """Smallest eigenvalue of the gradient at V V^T (dense; n <= a few 1000)."""
    import numpy as np
    import torch

    g = problem.gradient(V, V)
    G = g.matmul(torch.eye(problem.n, dtype=V.dtype, device=V.device))
    G = G.double().cpu().numpy()
    return float(np.linalg.eigvalsh(0.5 * (G + G.T))[0])


def _reference(problem, args, ref_time):
    import torch

    from embedopt.sdp import bm_lbfgs

    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bm_lbfgs(
            problem,
            args.rank,
            tol=0.0,
            max_iter=args.max_iter,
            callback=CpuClock(ref_time),
            random_state=args.seed + 1,
            device=args.device,
        )
    V = res.x
    g = problem.gradient(V, V)
    gen = torch.Generator().manual_seed(args.seed)
    start = torch.randn(problem.n, 1, generator=gen, dtype=V.dtype).to(V.device)
    return {
        "f": g.value,
        "lambda_min_G": _lambda_min(problem, V),
        # ||G||_2 from a generic start (G V = 0 and G 1 = 0 near the optimum)
        "lambda_max_G": g.spectral_norm(start, 100)[0],
        "trace": float((V * V).sum()),
        "n_iter": res.n_iter,
        "stop_reason": res.stop_reason,
        "cpu_s": time.process_time() - t0,
        "V": V,
    }


def _run(name, problem, V0, target, tau, args, time_limit):
    import numpy as np

    from embedopt.sdp import SOLVERS, frank_wolfe

    clock = CpuClock(time_limit)
    options = {
        "tol": 0.0,
        "target": target,
        "max_iter": args.max_iter,
        "device": args.device,
        "callback": clock,
    }
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning when not reached
        if name == "fw":
            res = frank_wolfe(problem, trace_bound=tau, **options)
        else:
            res = SOLVERS.get(name)(problem, V0, **options)
    cpu = time.process_time() - t0
    hist = res.history
    return {
        "cpu_s": cpu,
        "n_iter": res.n_iter,
        # the CPU-time limit is the clock callback's
        "stop_reason": {"callback": "cpu_limit"}.get(res.stop_reason, res.stop_reason),
        "reached": res.stop_reason == "target",
        "objective": float(hist["objective"][-1]),
        "rank": int(res.x.shape[1]),
        "time": np.asarray(clock.times),
        "objective_history": np.asarray(hist["objective"]),
        "gap_history": np.asarray(hist["gap"]) if "gap" in hist else None,
        "V": res.x,
    }


def _embedding(V):
    """The two leading principal axes of Z = V V^T (centered), n x 2."""
    import torch

    C = V - V.mean(0, keepdim=True)
    U, S, _ = torch.linalg.svd(C, full_matrices=False)
    return (U[:, :2] * S[:2]).double().cpu().numpy()


def _plots(out, y, stem):
    plt = _shared.figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    f = out["reference"]["f"]
    for name in METHODS:
        rec = out["runs"][name]
        err = (rec["objective_history"] - f) / abs(f)
        keep = err > 0
        ax.loglog(rec["time"][keep], err[keep], label=LABELS[name])
    ax.axhline(out["accuracy"], ls="--", color="m", lw=1, label="target")
    ax.set(
        title=f"CMVU, digits n = {out['n']}, r = {out['rank']}",
        xlabel="process time (s, one thread)",
        ylabel="(f - f*) / |f*|",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}_objective.png", dpi=120)
    E = out["embedding"]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    sc = ax.scatter(E[:, 0], E[:, 1], c=y, cmap="tab10", s=4)
    fig.colorbar(sc, ax=ax, label="digit")
    ax.set(
        title=f"CMVU embedding (AAGD, leading 2 axes of Z), 1-NN "
        f"{100 * out['knn_accuracy_2d']:.1f} %",
    )
    fig.tight_layout()
    fig.savefig(f"{stem}_embedding.png", dpi=120)


def _configure():
    """The options (sizes by mode), the data and the CMVU problem."""
    args = _args()
    _shared.limit_threads(args.threads or 1)
    args.n = args.n or (300 if args.quick else 1797)
    args.rank = args.rank or (20 if args.quick else 40)
    args.time_limit = args.time_limit or (6.0 if args.quick else 45.0)
    args.ref_time = args.ref_time or (20.0 if args.quick else 90.0)
    args.n_neighbors = args.n_neighbors or max(1, round(0.01 * args.n))
    X, y = digits(args.n)
    return args, X, y, _problem(X, y, args.n_neighbors, args)


def _run_all(problem, args):
    """The reference f*, then every method from the same start to its target."""
    import numpy as np

    ref = _reference(problem, args, args.ref_time)
    target = ref["f"] + args.accuracy * abs(ref["f"])
    rng = np.random.default_rng(args.seed)
    V0 = rng.normal(size=(args.n, args.rank)) / np.sqrt(args.rank)
    tau = 2.0 * ref["trace"]
    runs = {}
    for name in METHODS:
        runs[name] = _run(name, problem, V0, target, tau, args, args.time_limit)
        rec = runs[name]
        print(
            LABELS[name],
            f"{rec['cpu_s']:.2f} s",
            rec["n_iter"],
            rec["stop_reason"],
            f"rel err {(rec['objective'] - ref['f']) / abs(ref['f']):.2e}",
            flush=True,
        )
    return ref, tau, runs


def _results(problem, X, y, ref, tau, runs, args) -> dict:
    """What the JSON holds: the reference, the runs and the 1-NN accuracies."""
    from embedopt.metrics import nearest_neighbor_accuracy

    E = _embedding(runs["aagd"]["V"])
    return {
        "n": args.n,
        "n_neighbors": args.n_neighbors,
        "n_pairs": problem.n_pairs,
        "rank": args.rank,
        "accuracy": args.accuracy,
        "reference": {key: v for key, v in ref.items() if key != "V"},
        "trace_bound_fw": tau,
        "runs": {
            m: {key: v for key, v in r.items() if key != "V"} for m, r in runs.items()
        },
        "embedding": E,
        "knn_accuracy_2d": nearest_neighbor_accuracy(E, y),
        "knn_accuracy_2d_reference": nearest_neighbor_accuracy(_embedding(ref["V"]), y),
        "knn_accuracy_pixels": nearest_neighbor_accuracy(X, y),
    }


def _table(out, args) -> str:
    """The Markdown table (CPU time to each accuracy level) and its note."""
    ref, rows = out["reference"], []
    levels = (1e-2, 1e-4, args.accuracy)
    for name in METHODS:
        rec = out["runs"][name]
        rel = (rec["objective"] - ref["f"]) / abs(ref["f"])
        hits = [
            time_to(rec["time"], rec["objective_history"], ref["f"] + a * abs(ref["f"]))
            for a in levels
        ]
        times = zip(levels, hits, strict=True)
        rec["time_to"] = {f"{a:g}": t for a, t in times}
        rows.append(
            [
                LABELS[name],
                *(f"{t:.3g}" if t == t else "-" for t in hits),
                rec["n_iter"],
                f"{rec['cpu_s']:.3g}",
                rec["stop_reason"],
                rec["rank"],
                f"{rel:.1e}",
            ]
        )
    headers = ["solver", *(f"CPU s to {a:g}" for a in levels)]
    headers += ["iterations", "CPU s (run)", "stop", "rank", "final rel. error"]
    return _shared.markdown_table(headers, rows) + (
        f"\n\nn = {args.n}, {args.n_neighbors}-NN pairs |N| = {out['n_pairs']}, "
        f"r = {args.rank}, lambda = {args.lam}; f* = {ref['f']:.10g} (BM-L-BFGS, "
        f"{ref['cpu_s']:.3g} s, {ref['stop_reason']}), lambda_min(G) = "
        f"{ref['lambda_min_G']:.2e}, ||G||_2 = {ref['lambda_max_G']:.3g}. "
        f"Leave-one-out 1-NN accuracy: 2-d CMVU embedding (AAGD) "
        f"{100 * out['knn_accuracy_2d']:.1f} % (reference "
        f"{100 * out['knn_accuracy_2d_reference']:.1f} %), raw pixels "
        f"{100 * out['knn_accuracy_pixels']:.1f} %.\n"
    )


def _report(out, y, args) -> None:
    """Write the JSON, the Markdown table and the plots."""
    table = _table(out, args)
    name = "sdp_cmvu_digits" + ("_quick" if args.quick else "")
    path = _shared.write(name, args.out, vars(args), out, table)
    if not args.no_plots:
        _plots(out, y, str(Path(args.out) / name))
    print(table)
    print("wrote", path)


def main():
    args, X, y, problem = _configure()
    ref, tau, runs = _run_all(problem, args)
    _report(_results(problem, X, y, ref, tau, runs, args), y, args)


if __name__ == "__main__":
    main()
