"""NPKL on sklearn digits: the optimum certified to 1e-6, and who gets there first.

Benchmark 2 of issue 11. For each size n (the first n of the 1,797 digits):
the normalized Laplacian of the symmetric 5-NN heat-kernel graph, n random
must-links and n random cannot-links (2n pairs) from the labels, the
diagonal, eq. 13 with lambda = 1.

- f*: BM-L-BFGS at rank ``--ref-rank`` run to rounding level (``tol=0``),
  certified by the convex lower bound ``f(Z) - <G, Z> + tau min(0,
  lambda_min(G))`` (G the gradient at Z, tau the problem's trace bound on
  ``tr Z*``; lambda_min from a dense eigendecomposition): the certified gap
  bounds ``(f* - f_min) / f*``.
- Every factor solver starts from the same random n x r factor and stops at
  ``f* (1 + 1e-6)``: AAGD, BM-L-BFGS and BM-AGD of embedopt, and the peer,
  plain Burer-Monteiro on the same factor objective with
  ``scipy.optimize.minimize(method="L-BFGS-B")`` in NumPy / SciPy
  (``_common.ScipyBurerMonteiro``). Reported: process time to the target
  (median of ``--repeats`` interleaved runs, one thread everywhere),
  iterations, and the peak memory of the call above the process's resident
  memory before it (Linux VmHWM, reset per call).
- The exact solvers: CVXPY + SCS (``eps`` 1e-6, capped at ``--scs-time``
  wall seconds, sizes up to ``--scs-max-n``) and CVXPY + Clarabel (sizes up
  to ``--clarabel-max-n``; its memory grows like n^4): time, status, and the
  relative error of f at the PSD projection of their Z.

    python benchmarks/sdp/certify_digits.py --quick     # n = 100, 200 (~30 s)
    python benchmarks/sdp/certify_digits.py             # n = 100 ... 1797 (~5 min)

Writes results/sdp_certify_digits[_quick].{json,md} and *_objective.png
(relative error to f* vs time at the largest n).
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
from _common import (  # first: one BLAS thread before NumPy loads
    ScipyBurerMonteiro,
    digits,
)

import _shared
from _shared import CpuClock, peak_rss_mb, reset_peak_rss

# The exact rows need CVXPY (benchmarks/sdp/requirements.txt); without it they
# are left out with a note.
_HAVE_CVXPY = importlib.util.find_spec("cvxpy") is not None

FACTOR = ("aagd", "bm_lbfgs", "bm_agd", "scipy_bm")
LABELS = {
    "aagd": "AAGD",
    "bm_lbfgs": "BM-L-BFGS",
    "bm_agd": "BM-AGD",
    "scipy_bm": "scipy BM L-BFGS-B",
    "scs": "CVXPY+SCS",
    "clarabel": "CVXPY+Clarabel",
}
QUICK = [100, 200]
FULL = [100, 200, 400, 800, 1797]


def _args():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=None)
    p.add_argument("--rank", type=int, default=10, help="r of the factor solvers")
    p.add_argument("--ref-rank", type=int, default=20, help="r of the reference")
    p.add_argument("--lam", type=float, default=1.0)
    p.add_argument("--n-neighbors", type=int, default=5)
    p.add_argument("--accuracy", type=float, default=1e-6, help="relative target")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-iter", type=int, default=20000)
    p.add_argument("--scs-max-n", type=int, default=None, help="default 200 / 800")
    p.add_argument("--scs-time", type=float, default=None, help="default 20 / 90 s")
    p.add_argument("--scs-eps", type=float, default=1e-6)
    p.add_argument("--clarabel-max-n", type=int, default=None, help="default 0 / 100")
    return p.parse_args()


def _problem(n, args):
    from embedopt.sdp import NPKLProblem, knn_laplacian, sample_pairs

    X, y = digits(n)
    with warnings.catch_warnings():  # small subsets: a few kNN components
        warnings.simplefilter("ignore", UserWarning)
        lap = knn_laplacian(X, args.n_neighbors, device=args.device)
    ml, cl = sample_pairs(y, n, random_state=args.seed)
    problem = NPKLProblem(n, ml, cl, lap, lam=args.lam, device=args.device)
    peer = ScipyBurerMonteiro(n, ml, cl, lap, args.lam)
    return problem, peer


def _reference(problem, args):
    """f* by BM-L-BFGS to rounding level, and its certified lower bound."""
    import numpy as np
    import torch

    from embedopt.sdp import bm_lbfgs

    t0 = time.process_time()
    res = bm_lbfgs(
        problem,
        min(args.ref_rank, problem.n),
        tol=0.0,
        max_iter=args.max_iter,
        random_state=args.seed + 1,
        device=args.device,
    )
    cpu = time.process_time() - t0
    V = res.x
    g = problem.gradient(V, V)
    eye = torch.eye(problem.n, dtype=V.dtype, device=V.device)
    G = g.matmul(eye).double().cpu().numpy()
    lam_min = float(np.linalg.eigvalsh(0.5 * (G + G.T))[0])
    inner = float((g.matmul(V) * V).sum())
    f = g.value
    # f convex: f(Z') >= f(Z) + <G, Z' - Z>, minimized over PSD Z' with
    # tr Z' <= tau (which contains Z*)
    lower = f - inner + problem.trace_bound * min(0.0, lam_min)
    sv = torch.linalg.svdvals(V)
    return {
        "f": f,
        "lower_bound": lower,
        "certified_gap": (f - lower) / abs(f),
        "lambda_min_G": lam_min,
        "numerical_rank": int((sv > 1e-4 * sv[0]).sum()),
        "n_iter": res.n_iter,
        "cpu_s": cpu,
    }


def _run_factor(name, problem, peer, V0, target, args):
    """One solver from V0 to the target: time, memory, history."""
    import numpy as np

    from embedopt.sdp import SOLVERS

    base = reset_peak_rss()
    t0 = time.process_time()
    if name == "scipy_bm":
        out = peer.solve(V0, target, max_iter=args.max_iter)
        cpu = time.process_time() - t0
        rec = {
            "n_iter": out["n_iter"],
            "objective": out["objective"],
            "reached": out["reached"],
            "time": out["time"],
            "objective_history": out["objective_history"],
        }
    else:
        clock = CpuClock()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning when not reached
            res = SOLVERS.get(name)(
                problem,
                V0,
                tol=0.0,
                target=target,
                max_iter=args.max_iter,
                device=args.device,
                callback=clock,
            )
        cpu = time.process_time() - t0
        hist = res.history
        rec = {
            "n_iter": res.n_iter,
            "objective": float(hist["objective"][-1]),
            "reached": res.stop_reason == "target",
            "time": np.asarray(clock.times),
            "objective_history": np.asarray(hist["objective"]),
        }
    rec["cpu_s"] = cpu
    rec["peak_mb_above_base"] = peak_rss_mb() - base
    return rec


def _run_exact(solver, problem, ref, args, time_limit):
    from embedopt.sdp import solve_exact

    base = reset_peak_rss()
    t0, w0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CVXPY's "inaccurate" at the time limit
        res = solve_exact(
            problem,
            solver,
            eps=args.scs_eps if solver == "scs" else 1e-9,
            time_limit=time_limit,
        )
    f = float(res.history["objective"][0])
    return {
        "cpu_s": time.process_time() - t0,
        "wall_s": time.perf_counter() - w0,
        "status": res.info["status"],
        "n_iter": res.n_iter,
        "objective": f,
        "relative_error": (f - ref["f"]) / abs(ref["f"]),
        "peak_mb_above_base": peak_rss_mb() - base,
    }


def _one_size(n, args, scs_max_n, scs_time, clarabel_max_n):
    import numpy as np

    problem, peer = _problem(n, args)
    ref = _reference(problem, args)
    target = ref["f"] + args.accuracy * abs(ref["f"])
    r = min(args.rank, n)
    rng = np.random.default_rng(args.seed)
    V0 = rng.normal(size=(n, r)) / np.sqrt(r)  # rows of norm ~1, unit diagonal
    runs = {name: [] for name in FACTOR}
    for _ in range(args.repeats):  # interleaved: load drifts hit every solver
        for name in FACTOR:
            runs[name].append(_run_factor(name, problem, peer, V0, target, args))
    out = {
        "n": n,
        "n_pairs": 2 * n,
        "rank": r,
        "target": target,
        "reference": ref,
        "factor": runs,
    }
    if not _HAVE_CVXPY:
        return out
    if n <= scs_max_n:
        out["scs"] = _run_exact("scs", problem, ref, args, scs_time)
    if n <= clarabel_max_n:
        out["clarabel"] = _run_exact("clarabel", problem, ref, args, None)
    return out


def _row(rec):
    med = {
        name: _shared.median(
            [x["cpu_s"] if x["reached"] else float("nan") for x in rec["factor"][name]]
        )
        for name in FACTOR
    }

    def cell(name):
        runs = rec["factor"][name]
        hit = sum(x["reached"] for x in runs)
        its = int(_shared.median([x["n_iter"] for x in runs]))
        if not hit:
            return f"not reached ({its} it)"
        return f"{med[name]:.3g} ({its} it)"

    def exact(key):
        e = rec.get(key)
        if e is None:
            return "-"
        return (
            f"{e['cpu_s']:.3g} s, {e['relative_error']:.1e}, "
            f"{e['peak_mb_above_base']:.0f} MiB ({e['status']})"
        )

    ref = rec["reference"]
    mem = max(x["peak_mb_above_base"] for name in FACTOR for x in rec["factor"][name])
    return [
        rec["n"],
        f"{ref['f']:.10g}",
        f"{ref['certified_gap']:.1e}",
        ref["numerical_rank"],
        *(cell(name) for name in FACTOR),
        f"{med['aagd'] / med['scipy_bm']:.2f}",
        f"{med['aagd'] / med['bm_lbfgs']:.2f}",
        f"{mem:.1f}",
        exact("scs"),
        exact("clarabel"),
    ]


def _plot(rec, path):
    plt = _shared.figure()
    fig, ax = plt.subplots(figsize=(6, 4))
    f = rec["reference"]["f"]
    for name in FACTOR:
        run = rec["factor"][name][0]
        err = (run["objective_history"] - f) / abs(f)
        ax.loglog(run["time"], err.clip(1e-12), label=LABELS[name])
    ax.axhline(1e-6, ls="--", color="m", lw=1, label="target 1e-6")
    ax.set(
        title=f"NPKL, digits n = {rec['n']}, r = {rec['rank']}",
        xlabel="process time (s, one thread)",
        ylabel="(f - f*) / f*",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    args = _args()
    _shared.limit_threads(args.threads or 1)
    sizes = args.sizes or (QUICK if args.quick else FULL)
    scs_max_n = (
        args.scs_max_n if args.scs_max_n is not None else (200 if args.quick else 800)
    )
    scs_time = args.scs_time or (20.0 if args.quick else 90.0)
    clarabel_max_n = (
        args.clarabel_max_n
        if args.clarabel_max_n is not None
        else (0 if args.quick else 100)
    )
    results = []
    for n in sizes:
        rec = _one_size(n, args, scs_max_n, scs_time, clarabel_max_n)
        results.append(rec)
        print(
            n,
            f"f*={rec['reference']['f']:.10g}",
            f"gap={rec['reference']['certified_gap']:.1e}",
            {
                k: round(_shared.median([x["cpu_s"] for x in v]), 3)
                for k, v in rec["factor"].items()
            },
            {k: round(rec[k]["cpu_s"], 2) for k in ("scs", "clarabel") if k in rec},
            flush=True,
        )
    headers = [
        "n",
        "f*",
        "certified gap",
        "rank Z*",
        *(f"{LABELS[m]} s to 1e-6" for m in FACTOR),
        "AAGD / scipy BM",
        "AAGD / BM-L-BFGS",
        "peak MiB, factor solvers",
        "SCS: CPU s, rel. error, MiB",
        "Clarabel: CPU s, rel. error, MiB",
    ]
    table = _shared.markdown_table(headers, [_row(r) for r in results])
    if not _HAVE_CVXPY:
        table += "\n\nCVXPY is not installed: no SCS / Clarabel rows.\n"
    name = "sdp_certify_digits" + ("_quick" if args.quick else "")
    config = {
        **vars(args),
        "sizes": sizes,
        "scs_max_n": scs_max_n,
        "scs_time": scs_time,
        "clarabel_max_n": clarabel_max_n,
    }
    env = _shared.versions("cvxpy", "scs", "clarabel")
    path = _shared.write(name, args.out, {**config, "peers": env}, results, table)
    if not args.no_plots:
        _plot(results[-1], str(Path(args.out) / f"{name}_objective.png"))
    print(table)
    print("wrote", path)


if __name__ == "__main__":
    main()
