"""Scale of AIS-Impute: time per iteration and peak memory vs |Omega|.

Synthetic m = n = 10^5 (rank-5 truth), |Omega| from 10^5 to 10^7. Each size runs
in a fresh process that loads the entries, builds the problem and runs 12
AIS-Impute iterations at a lambda whose solution has low rank, with the rank
capped at ``--rank`` so the per-iteration work is comparable across sizes.
Reported: median seconds per iteration (iterations 3-12), seconds per iteration
per million entries (flat = linear in |Omega|), peak resident memory of the
process and its increase over the loaded entries, bytes per observed entry, and
the throughput of the sparse product kernel against this machine's memory
bandwidth (a NumPy copy of a 1 GiB array, STREAM-style, in the same run). No
m x n array is ever allocated (10^10 entries would need 40 GB in float32).

    python benchmarks/completion/scale.py --quick     # up to 10^6 entries
    python benchmarks/completion/scale.py             # up to 10^7 entries
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared


def worker(path: str, rank: int, threads: int | None, device: str) -> None:
    import torch

    from embedopt.completion import CompletionProblem, ais_impute
    from embedopt.data import ObservedEntries

    if threads:
        torch.set_num_threads(threads)
    d = np.load(path)
    entries = ObservedEntries(
        (d["rows"], d["cols"]), d["vals"], tuple(d["shape"]), validate=False
    )
    del d
    # The data is loaded: what the peak adds from here on is the solver's.
    base = _shared.reset_peak_rss() / 1024
    t0 = time.perf_counter()
    problem = CompletionProblem(entries, dtype="float32", device=device)
    sync = torch.cuda.synchronize if problem.device.type == "cuda" else (lambda: None)
    sync()
    build = time.perf_counter() - t0
    lmax = problem.lambda_max()
    res = ais_impute(
        problem, lam=0.2 * lmax, max_iter=12, tol=0.0, max_rank=rank, random_state=0
    )
    per_iter = float(np.median(np.diff(res.history["time"])[2:]))
    # Kernel throughput: one sparse product with k = rank columns.
    R = torch.randn(problem.shape[1], rank, device=problem.device)
    vals = problem.y
    ts = []
    for _ in range(5):
        sync()
        t1 = time.perf_counter()
        problem.pattern.matmul(vals, R)
        sync()
        ts.append(time.perf_counter() - t1)
    spmm = float(np.median(ts))
    nnz = problem.pattern.nnz
    bytes_moved = (
        nnz * (4 + 4) + (problem.shape[0] + 1) * 4 + problem.shape[0] * rank * 4
    )
    print(
        json.dumps(
            dict(
                nnz=nnz,
                per_iter=per_iter,
                build=build,
                base_rss_gb=base,
                peak_rss_gb=_shared.peak_rss_gb(),
                spmm_seconds=spmm,
                spmm_gbps=bytes_moved / spmm / 1e9,
                final_rank=int(res.history["rank"][-1]),
            )
        )
    )


def bandwidth_gbps() -> float:
    a = np.ones(2**27)  # 1 GiB of float64
    b = np.empty_like(a)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(b, a)
        ts.append(time.perf_counter() - t0)
    return 2 * a.nbytes / min(ts) / 1e9  # read + write


def configure():
    """The command line (``--worker FILE``: the child process's run)."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--m", type=int, default=100_000)
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--sizes", type=float, nargs="*", default=None)
    args = p.parse_args()
    quick = [1e5, 3e5, 1e6] if args.quick else [1e5, 3e5, 1e6, 3e6, 1e7]
    args.sizes = [int(x) for x in (args.sizes or quick)]
    return args


def run_size(nnz, args) -> dict:
    """One |Omega|: the entries written to a file, solved in a fresh process."""
    from embedopt.data import make_low_rank_matrix

    prob = make_low_rank_matrix(args.m, rank=5, n_observed=nnz, random_state=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "entries.npz"
        obs = prob.observed
        np.savez(
            path,
            rows=obs.rows.astype(np.int32),
            cols=obs.cols.astype(np.int32),
            vals=obs.values.astype(np.float32),
            shape=np.array(obs.shape),
        )
        del prob, obs
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            str(path),
            "--rank",
            str(args.rank),
        ] + (["--threads", str(args.threads)] if args.threads else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r["solver_gb"] = r["peak_rss_gb"] - r["base_rss_gb"]
    r["bytes_per_entry"] = r["solver_gb"] * 2**30 / r["nnz"]
    return r


def table_row(r, bw) -> list:
    """The table's row of one size."""
    return [
        f"{r['nnz']:.0e}",
        r["per_iter"],
        r["per_iter"] / r["nnz"] * 1e6,
        r["peak_rss_gb"],
        r["solver_gb"],
        r["bytes_per_entry"],
        r["spmm_seconds"] * 1e3,
        r["spmm_gbps"],
        r["spmm_gbps"] / bw,
        r["final_rank"],
    ]


def report(args, bw, rows, results) -> None:
    """Print the table and write the JSON and Markdown results."""
    table = _shared.markdown_table(
        [
            "|Omega|",
            "s / iteration",
            "s / iter / 1e6 entries",
            "peak RSS GB",
            "solver GB (peak - data)",
            "bytes / entry",
            "spmm ms (k=rank)",
            "spmm GB/s",
            "fraction of copy bandwidth",
            "rank",
        ],
        rows,
    )
    table += f"\n\nMemory bandwidth (NumPy 1 GiB copy, read+write): {bw:.1f} GB/s."
    print(table)
    _shared.write(
        "completion_scale",
        args.out,
        dict(m=args.m, rank=args.rank, sizes=args.sizes, threads=args.threads),
        dict(bandwidth_gbps=bw, runs=results),
        table,
    )


def main():
    args = configure()
    if args.worker:
        worker(args.worker, args.rank, args.threads, args.device)
        return
    bw = bandwidth_gbps()
    print(f"memory bandwidth (numpy copy): {bw:.1f} GB/s", flush=True)
    rows, results = [], []
    for nnz in args.sizes:
        results.append(run_size(nnz, args))
        rows.append(table_row(results[-1], bw))
        print(rows[-1], flush=True)
    report(args, bw, rows, results)


if __name__ == "__main__":
    main()
