"""Data-parallel AIS-Impute: 1 process vs 2 (one thread each), and what they send.

Synthetic m = n = 10^5 (rank-5 truth plus noise, ``make_low_rank_matrix``),
10^7 observed entries (``--quick``: 20,000 x 20,000, 3 x 10^5). The entries
are written to a file once; each layout runs in fresh processes started by
``embedopt.similarity.run_distributed`` (gloo on loopback, one torch thread
per process) that load the entries, build the problem (one process: a
``CompletionProblem``; W processes: a ``DistributedCompletionProblem``, each
keeping its rows; float32 unless ``--dtype float64``) and run ``--iters``
AIS-Impute iterations at ``lambda = 0.2 lambda_max`` with the rank capped at
``--rank`` (tol = 0, so every layout runs the same iterations).

Reported per layout, medians over ``--repeats`` launches: seconds per
iteration (the median over iterations 3.. of the history's times; the
slowest process) and the speedup against 1 process measured in the same run,
the same for the CPU seconds of the busiest process (on a loaded machine the
processes wait for cores: CPU time is what the split of the work saves),
the relative difference of the final objective from 1 process's, the bytes
each process hands to collectives per iteration (payloads counted by the
Communicator; a ring all-reduce moves about twice that over the wire)
against |Omega|, and each process's peak resident memory above the loaded
entries.

    python benchmarks/completion/distributed.py --quick
    python benchmarks/completion/distributed.py          # 10^7 entries, once
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared


def configure():
    """The command line."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=100_000)
    p.add_argument("--nnz", type=float, default=None)
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--procs", type=int, nargs="*", default=[1, 2])
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args()
    args.nnz = int(args.nnz or (3e5 if args.quick else 1e7))
    args.iters = args.iters or (8 if args.quick else 12)
    args.repeats = args.repeats or (3 if args.quick else 1)
    if args.quick:
        args.m = min(args.m, 20_000)
    return args


def worker(path: str, args, distributed: bool) -> dict:
    """One process of a layout: load, build, solve; timings and volume."""
    import warnings

    import torch

    from embedopt import ConvergenceWarning
    from embedopt.completion import (
        CompletionProblem,
        DistributedCompletionProblem,
        ais_impute,
    )
    from embedopt.data import ObservedEntries

    d = np.load(path)
    entries = ObservedEntries(
        (d["rows"], d["cols"]), d["vals"], tuple(d["shape"]), validate=False
    )
    del d
    base = _shared.reset_peak_rss() / 1024
    options = dict(dtype=args.dtype, device="cpu")
    if distributed:
        problem = DistributedCompletionProblem(entries, **options)
    else:
        problem = CompletionProblem(entries, **options)
    del entries
    lam = 0.2 * problem.lambda_max(generator=torch.Generator().manual_seed(0))
    before = problem.comm.volume if distributed else 0
    cpu = []  # this process's CPU seconds at each iteration's end
    with warnings.catch_warnings():  # tol = 0: it never converges
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = ais_impute(
            problem,
            lam=lam,
            max_iter=args.iters,
            tol=0.0,
            max_rank=args.rank,
            random_state=0,
            process_group="default" if distributed else None,
            callback=lambda state: cpu.append(time.process_time()),
        )
    sent = (problem.comm.volume - before) if distributed else 0
    return dict(
        per_iter=float(np.median(np.diff(res.history["time"])[2:])),
        cpu_per_iter=float(np.median(np.diff(cpu)[2:])),
        objective=float(res.history["objective"][-1]),
        rank=int(res.history["rank"][-1]),
        svd_rank=int(res.history["svd_rank"][-1]),
        bytes_per_iter=sent / args.iters,
        local_nnz=int(problem.entries.nnz),
        solver_gb=_shared.peak_rss_gb() - base,
    )


def run_layout(path: str, procs: int, args) -> dict:
    """``procs`` processes, one thread each; the median launch."""
    from embedopt.similarity import run_distributed

    runs = []
    for _ in range(args.repeats):
        out = run_distributed(
            worker,
            procs,
            args=(path, args, procs > 1),
            threads=1,
            start_method="fork",  # CPU only: milliseconds, not a torch import
            timeout=1800,
        )
        runs.append(out)
    per_iter = [max(r["per_iter"] for r in out) for out in runs]
    cpu = [max(r["cpu_per_iter"] for r in out) for out in runs]
    best = runs[int(np.argsort(per_iter)[len(per_iter) // 2])]
    return dict(
        procs=procs,
        per_iter=float(np.median(per_iter)),
        cpu_per_iter=float(np.median(cpu)),
        per_iter_runs=per_iter,
        processes=best,
    )


def table(args, layouts, load) -> str:
    """The Markdown table: speedup and volume against the 1-process layout."""
    ref = next(x for x in layouts if x["procs"] == 1)
    f_ref = ref["processes"][0]["objective"]
    rows = []
    for lay in layouts:
        p = lay["processes"]
        sent = max(x["bytes_per_iter"] for x in p)
        rows.append(
            [
                lay["procs"],
                lay["per_iter"],
                ref["per_iter"] / lay["per_iter"],
                lay["cpu_per_iter"],
                ref["cpu_per_iter"] / lay["cpu_per_iter"],
                abs(p[0]["objective"] - f_ref) / abs(f_ref),
                p[0]["rank"],
                p[0]["svd_rank"],
                "/".join(f"{x['local_nnz'] / 1e6:.2f}" for x in p),
                sent / 1e6,
                sent / args.nnz,
                max(x["solver_gb"] for x in p),
            ]
        )
    text = _shared.markdown_table(
        [
            "processes",
            "s / iteration",
            "speedup",
            "CPU s / iteration",
            "CPU speedup",
            "objective rel. diff.",
            "rank",
            "basis k",
            "entries per process (1e6)",
            "MB sent / iteration / process",
            "bytes sent / iteration / nnz",
            "peak GB / process (above data)",
        ],
        rows,
    )
    return (
        text + f"\n\nm = n = {args.m}, |Omega| = {args.nnz:.0e}, {args.dtype}, "
        f"{args.iters} iterations, {args.repeats} launch(es) per layout; "
        f"load average before the run: {load:.1f} on {os.cpu_count()} cores."
    )


def main():
    args = configure()
    from embedopt.data import make_low_rank_matrix

    load = os.getloadavg()[0]
    prob = make_low_rank_matrix(
        args.m, rank=5, n_observed=args.nnz, random_state=args.seed
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "entries.npz")
        obs = prob.observed
        np.savez(
            path,
            rows=obs.rows.astype(np.int32),
            cols=obs.cols.astype(np.int32),
            vals=obs.values,
            shape=np.array(obs.shape),
        )
        del prob, obs
        layouts = []
        for procs in args.procs:
            layouts.append(run_layout(path, procs, args))
            print(procs, "processes:", layouts[-1]["per_iter"], "s / iter", flush=True)
    text = table(args, layouts, load)
    print(text)
    _shared.write(
        "completion_distributed" + ("_quick" if args.quick else ""),
        args.out,
        dict(
            m=args.m,
            nnz=args.nnz,
            rank=args.rank,
            iters=args.iters,
            repeats=args.repeats,
            procs=args.procs,
        ),
        dict(load_average=load, layouts=layouts),
        text,
    )


if __name__ == "__main__":
    main()
