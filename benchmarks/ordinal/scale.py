"""Scale: epoch time and time to a target error, n <= 10^5 objects, |Q| <= 10^7.

Planted points from N(0, I/20) in 10-d, random triplets, p = 10, STE loss,
SVRG-SBB_eps with the defaults (b = 100, m = |Q|). For each (n, |Q|):

- time of one full gradient (a pass over |Q| comparisons), of one inner step
  (should not depend on n), and of one epoch (|Q| + 2m gradient calls), all
  measured on the solver's own clock;
- at n = 10^4 with 10^6 triplets, the time to a held-out error below TARGET
  for SVRG-SBB_eps (m = |Q| and m = |Q| / 4) and for cblearn's STE (scipy
  L-BFGS-B, forms n x n distance matrices every iteration), in the same run.

    python benchmarks/ordinal/scale.py --quick     # n <= 10^4, |Q| <= 10^6
    python benchmarks/ordinal/scale.py             # adds 10^7 triplets
    python benchmarks/ordinal/scale.py --big-only --objects 100000 --lbfgs-cap 150
        # 10^7 triplets of 10^5 objects: time to TARGET and peak memory of
        # SVRG-SBB, and of L-BFGS stopped after 150 s (issue 26, item 3)
    python benchmarks/ordinal/scale.py --big-only --objects 100000 --cblearn 10
        # ... and cblearn's STE on the same triplets, in a child process
        # limited to --cblearn-memory-limit GB of address space

Writes benchmarks/results/ordinal_scale.{json,md,png}.
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C  # first: it sets single-threading
import _shared

import argparse
import time
import warnings

import numpy as np
import torch

from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalProblem, get_loss, lbfgs, svrg_sbb
from embedopt.optim.svrg import _inner_loop

TARGET = 0.2


def kernel_times(n, m, seed=0):
    prob = make_planted_embedding(
        n, 10, n_train=m, n_test=min(m, 100_000), random_state=seed
    )
    problem = OrdinalProblem(prob.train, get_loss("ste", 10))
    X = torch.randn(n, 10, generator=torch.Generator().manual_seed(seed)) * 0.1
    problem.value_and_grad(X)  # builds the CSR incidence once
    t0 = time.perf_counter()
    reps = 3
    for _ in range(reps):
        _, g = problem.value_and_grad(X)
    full = (time.perf_counter() - t0) / reps
    steps = 2000
    gen = torch.Generator().manual_seed(seed)
    _inner_loop(problem, X, g, 1e-3, 100, 50, gen, True, None, None)
    t0 = time.perf_counter()
    _inner_loop(problem, X, g, 1e-3, 100, steps, gen, True, None, None)
    inner = (time.perf_counter() - t0) / steps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = svrg_sbb(
            prob.train, 10, max_iter=2, tol=0, random_state=seed, device="cpu"
        )
    epoch = float(np.diff(np.r_[0.0, res.history["time"]])[-1])
    return {
        "n_objects": n,
        "n_triplets": m,
        "full_gradient_s": full,
        "inner_step_us": inner * 1e6,
        "inner_steps_per_epoch": int(np.ceil(m / 100)),
        "epoch_s": epoch,
    }, prob


def race(prob, n, cb_max_iter, epochs, seed=0):
    out = {}
    curves = {}
    for label, kw, ep in [
        ("SVRG-SBB_eps (m=|Q|)", {}, epochs),
        (
            "SVRG-SBB_eps (m=|Q|/4)",
            {"update_frequency": len(prob.train) // 4},
            2 * epochs,
        ),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = svrg_sbb(
                prob.train,
                10,
                max_iter=ep,
                tol=0,
                validation=prob.test,
                random_state=seed,
                device="cpu",
                **kw,
            )
        h = res.history
        out[label] = {
            "time_to_target": _shared.time_to(
                h["time"], h["val_error"], TARGET, strict=True, never=np.inf
            ),
            "final_error": float(h["val_error"][-1]),
            "seconds": float(h["time"][-1]),
        }
        curves[label] = (h["time"].tolist(), h["val_error"].tolist())
        print(label, out[label], flush=True)
    if C.have_cblearn():
        cb = C.run_cblearn(
            "ste",
            prob.train.indices,
            n,
            10,
            prob.test.indices,
            seed=seed,
            max_iter=cb_max_iter,
        )
        out["cblearn STE (L-BFGS-B)"] = {
            "time_to_target": _shared.time_to(
                cb["times"], cb["errors"], TARGET, strict=True, never=np.inf
            ),
            "final_error": cb["final_error"],
            "seconds": cb["fit_seconds"],
            "iterations": cb["n_iter"],
        }
        curves["cblearn STE (L-BFGS-B)"] = (cb["times"], cb["errors"])
        print("cblearn", out["cblearn STE (L-BFGS-B)"], flush=True)
    return out, curves


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far, GB (Linux: ru_maxrss in kB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def big_run(n=10_000, m=10_000_000, epochs=10, lbfgs_cap=0.0, cblearn=None):
    """10^7 triplets end to end (SVRG-SBB, m = |Q|/4, compiled steps); with
    ``lbfgs_cap`` > 0 also our L-BFGS on the same problem, stopped after that
    many seconds or at the target; with ``cblearn = (max_iter, limit_gb)``
    also cblearn's STE (see :func:`big_cblearn`)."""
    t0 = time.perf_counter()
    prob = make_planted_embedding(n, 10, n_train=m, n_test=100_000, random_state=1)
    gen_s = time.perf_counter() - t0
    gen_rss = peak_rss_gb()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = svrg_sbb(
            prob.train, 10, max_iter=epochs, tol=0, validation=prob.test,
            update_frequency=m // 4, random_state=0, device="cpu",
        )  # fmt: skip
    h = res.history
    out = {
        "n_objects": n,
        "n_triplets": m,
        "generate_seconds": gen_s,
        "epochs": int(h["iteration"][-1]),
        "seconds": float(h["time"][-1]),
        "val_error": h["val_error"].tolist(),
        "time": h["time"].tolist(),
        "time_to_target": _shared.time_to(h["time"], h["val_error"], TARGET),
        "peak_rss_gb_after_generation": gen_rss,
        "peak_rss_gb_after_svrg_sbb": peak_rss_gb(),
    }
    if lbfgs_cap:
        out["lbfgs"] = big_lbfgs(prob, lbfgs_cap)
    if cblearn:
        out["cblearn"] = big_cblearn(prob, n, *cblearn)
    print(out, flush=True)
    return out


def big_lbfgs(prob, cap: float) -> dict:
    """Our L-BFGS (float64, the estimator's default) to TARGET or ``cap`` s."""

    def stop(state):
        return state.elapsed > cap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = lbfgs(
            prob.train, 10, max_iter=1000, tol=0, validation=prob.test,
            random_state=0, device="cpu", callback=stop,
        )  # fmt: skip
    h = res.history
    return {
        "seconds": float(h["time"][-1]),
        "iterations": int(h["iteration"][-1]),
        "val_error": h["val_error"].tolist(),
        "time": h["time"].tolist(),
        "time_to_target": _shared.time_to(h["time"], h["val_error"], TARGET),
        "peak_rss_gb": peak_rss_gb(),
    }


def big_cblearn(prob, n: int, max_iter: int, limit_gb: float) -> dict:
    """cblearn's STE (scipy L-BFGS-B, ``max_iter`` iterations) in a forked
    child whose address space is capped at ``limit_gb`` GB (RLIMIT_AS), so an
    allocation it cannot make raises MemoryError there instead of swapping;
    returns its curve, or the error and the peak RSS of the child."""
    import multiprocessing as mp
    import resource

    def child(conn):
        with open("/proc/self/status") as f:  # address space inherited at fork
            vm = next(int(x.split()[1]) for x in f if x.startswith("VmSize"))
        cap = int(limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        t0 = time.perf_counter()
        try:
            cb = C.run_cblearn("ste", prob.train.indices, n, 10, prob.test.indices,
                               max_iter=max_iter)  # fmt: skip
            cb.pop("embedding")
            tt = _shared.time_to(cb["times"], cb["errors"], TARGET, strict=True)
            out = {**cb, "time_to_target": tt}
        except Exception as exc:  # MemoryError expected; any other says why
            out = {"error": f"{type(exc).__name__}: {exc}"}
        out["seconds_in_child"] = time.perf_counter() - t0
        out.update(peak_rss_gb=peak_rss_gb(), vm_at_fork_gb=vm / 2**20)
        conn.send(out)

    if not C.have_cblearn():
        return {"error": "cblearn is not installed"}
    import cblearn.embedding  # noqa: F401  (loaded before the limit applies)

    recv, send = mp.get_context("fork").Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=child, args=(send,))
    proc.start()
    send.close()  # so that recv raises EOFError if the child is killed
    try:
        out = recv.recv()
    except EOFError:
        out = {"error": "the child died without a result"}
    proc.join()
    out.update(memory_limit_gb=limit_gb, exitcode=proc.exitcode)
    return out


def configure(argv=None):
    """The command line: ``--quick`` and ``--big-only``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--big-only", action="store_true", help="only the 10^7-triplet run")
    ap.add_argument(
        "--objects", type=int, default=10_000, help="objects of the 10^7 run"
    )
    ap.add_argument(
        "--lbfgs-cap", type=float, default=0.0,
        help="also run L-BFGS on the 10^7 triplets, for at most this many s",
    )  # fmt: skip
    ap.add_argument(
        "--cblearn", type=int, default=0, metavar="MAX_ITER",
        help="also run cblearn's STE on the 10^7 triplets, this many iterations",
    )  # fmt: skip
    ap.add_argument(
        "--cblearn-memory-limit", type=float, default=10.0, metavar="GB",
        help="address-space limit of the cblearn child process (--cblearn)",
    )  # fmt: skip
    return ap.parse_args(argv)


def run(args) -> dict:
    """Kernel times per size, the race at 10^6 triplets, the 10^7 run (full)."""
    sizes = [(1_000, 100_000), (10_000, 100_000), (10_000, 1_000_000)]
    if not args.quick:
        sizes += [(100_000, 1_000_000), (10_000, 10_000_000), (100_000, 10_000_000)]
    kernels = []
    race_prob = None
    for n, m in sizes:
        k, prob = kernel_times(n, m)
        kernels.append(k)
        print(k, flush=True)
        if (n, m) == (10_000, 1_000_000):
            race_prob = prob
    race_res, curves = race(
        race_prob,
        10_000,
        cb_max_iter=15 if args.quick else 40,
        epochs=6 if args.quick else 12,
    )
    big = big_run() if not args.quick else None
    return {"kernels": kernels, "race": race_res, "curves": curves, "big": big}


def report(res: dict) -> str:
    """The Markdown tables of a :func:`run`."""
    lines = [
        "Kernel times (1 thread, float32, STE, b = 100, m = |Q|):",
        "",
        "| objects | triplets | full gradient (s) | inner step (us) | epoch (s) |",
        "|---|---|---|---|---|",
    ]
    for k in res["kernels"]:
        lines.append(
            f"| {k['n_objects']:,} | {k['n_triplets']:,} | {k['full_gradient_s']:.3f} "
            f"| {k['inner_step_us']:.0f} | {k['epoch_s']:.2f} |"
        )
    lines += [
        "",
        f"n = 10,000 objects, 10^6 triplets: time (s) to held-out error < {TARGET} "
        "(solver time; cblearn: scipy L-BFGS-B wall time per iteration).",
        "",
        "| method | time to target | final error | run seconds |",
        "|---|---|---|---|",
    ]
    race_res = res["race"]
    cb_t = race_res.get("cblearn STE (L-BFGS-B)", {}).get("time_to_target")
    for label, r in race_res.items():
        ratio = ""
        if cb_t and np.isfinite(cb_t) and np.isfinite(r["time_to_target"]):
            ratio = f" ({cb_t / r['time_to_target']:.1f}x vs cblearn)"
        lines.append(
            f"| {C.md(label)} | "
            f"{C.fmt(r['time_to_target'], 1)}{ratio} | "
            f"{C.fmt(r['final_error'])} | {C.fmt(r['seconds'], 1)} |"
        )
    big = res["big"]
    if big:
        lines += [
            "",
            f"10^7 triplets, {big['n_objects']:,} objects, m = |Q|/4: "
            f"{big['epochs']} epochs in "
            f"{big['seconds']:.0f} s, held-out error "
            + " -> ".join(f"{e:.3f}" for e in big["val_error"]),
        ]
    return "\n".join(lines) + "\n"


def plot(curves: dict) -> None:
    """Held-out error against time of the race, ``ordinal_scale.png``."""
    plt = _shared.figure()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, (t, e) in curves.items():
        ax.plot(t, e, marker=".", label=label)
    ax.axhline(TARGET, color="k", ls=":", lw=0.8)
    ax.set(
        xlabel="seconds",
        ylabel="held-out triplet error",
        xscale="log",
        title="n = 10^4, 10^6 triplets, STE",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(_shared.RESULTS / "ordinal_scale.png", dpi=120)


def main(argv=None):
    args = configure(argv)
    if args.big_only:
        cb = (args.cblearn, args.cblearn_memory_limit) if args.cblearn else None
        big = big_run(n=args.objects, epochs=8, lbfgs_cap=args.lbfgs_cap, cblearn=cb)
        payload = {"versions": _shared.environment("cblearn"), "q1e7": big}
        _shared.write_outputs("ordinal_scale_1e7", payload, "")
        return
    t0 = time.perf_counter()
    res = run(args)
    md = report(res)
    payload = {
        "experiment": "scale (issue 3, benchmark 3)",
        "target": TARGET,
        "versions": _shared.environment("cblearn"),
        "kernels": res["kernels"],
        "race_n10000_q1e6": res["race"],
        "race_curves": res["curves"],
        "q1e7": res["big"],
        "wall_seconds": time.perf_counter() - t0,
    }
    path, _ = _shared.write_outputs("ordinal_scale", payload, md)
    plot(res["curves"])
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
