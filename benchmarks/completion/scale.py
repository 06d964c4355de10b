"""AIS-Impute at Netflix scale: memory, time per iteration and to tolerance vs |Omega|.

Netflix-shaped ratings (480,189 users x 17,770 items, power-law degrees,
1-5 stars: :func:`embedopt.data.make_ratings`) with |Omega| training entries
from 10^6 up, and held-out test ratings. Every (size, lambda) runs in a fresh
process that loads the entries as :class:`~embedopt.data.ObservedEntries`
(int64 positions, float32 values: 20 bytes per entry, "the input"), resets
the peak resident memory, then builds the problem and runs AIS-Impute to the
paper's tolerance (relative objective change 1e-4) at the paper's fixed
``lambda = lambda_0 / c``, ``lambda_0 = ||P_Omega(O)||_F`` of the ratings in
stars, not centered (Table VI: c = 10, 20, 30). Reported: peak RSS, bytes per
entry above the input, median seconds per iteration (wall and CPU: process
time of all threads, what a loaded shared machine does not stretch),
iterations and seconds to the tolerance, rank, test RMSE (stars), the
log-log slope of CPU time against |Omega|; with ``--auto-max``, the default
``MatrixCompletion()`` (``lam="auto"``) fit at the sizes up to it.

    python benchmarks/completion/scale.py --quick    # 10^5 and 10^6, c = 10, 20
    python benchmarks/completion/scale.py --threads 2   # 10^6 .. 2 x 10^7
    python benchmarks/completion/scale.py --threads 2 --sizes 5e7 --cs 20
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

#: The paper's stopping rule (Sec. 5): relative change of the objective.
TOL = 1e-4


def _load(path: str):
    """The training entries (ObservedEntries) and the test arrays of a file."""
    from embedopt.data import ObservedEntries

    d = np.load(path)
    train = ObservedEntries(
        (d["rows"], d["cols"]), d["vals"], tuple(d["shape"]), validate=False
    )
    return train, (d["test_rows"], d["test_cols"], d["test_vals"])


def _test_rmse(U, s, V, test) -> float:
    """RMSE in stars of the model ``U diag(s) V^T`` at the test ratings."""
    r, c, v = test
    U, s, V = (t.double().cpu().numpy() for t in (U, s, V))
    pred = np.einsum("ij,ij->i", U[r] * s, V[c])
    return float(np.sqrt(np.mean((pred - v) ** 2)))


def worker(args) -> dict:
    """One fit in this (fresh) process: fixed lambda_0 / c, or ``lam="auto"``."""
    import torch

    from embedopt.completion import CompletionProblem, MatrixCompletion, ais_impute

    if args.threads:
        torch.set_num_threads(args.threads)
    train, test = _load(args.worker)
    base = _shared.reset_peak_rss()  # the data is loaded: the peak adds the fit's
    t0, clock = time.perf_counter(), _shared.CpuClock()
    if args.c == 0:  # the default estimator (its own centering, lambda path)
        model = MatrixCompletion(random_state=0).fit(train)
        r, c, v = test
        pred = model.predict(np.stack([r, c], axis=1).astype(np.int64))
        out = dict(seconds=time.perf_counter() - t0, n_iter=int(model.n_iter_))
        out.update(rank=int(model.s_.shape[0]), lam=float(model.lam_))
        out["test_rmse"] = float(np.sqrt(np.mean((pred - v) ** 2)))
    else:
        problem = CompletionProblem(train, dtype="float32", device=args.device)
        build = time.perf_counter() - t0
        lam0 = float(torch.linalg.vector_norm(problem.y.double()))
        res = ais_impute(
            problem,
            lam=lam0 / args.c,
            tol=TOL,
            max_iter=args.max_iter,
            random_state=0,
            callback=clock,
        )
        times = np.asarray(res.history["time"])
        out = dict(seconds=time.perf_counter() - t0, build=build, n_iter=res.n_iter)
        out.update(per_iter=float(np.median(np.diff(times))) if times.size > 1 else 0)
        cpu = np.diff(clock.times)
        out["cpu_per_iter"] = float(np.median(cpu)) if cpu.size else 0.0
        out.update(rank=int(res.history["rank"][-1]), stop=res.stop_reason)
        out["test_rmse"] = _test_rmse(*res.x, test)
    out.update(cpu_seconds=time.process_time() - clock.t0)
    out.update(nnz=train.nnz, base_mb=base, peak_mb=_shared.peak_rss_mb())
    out["input_mb"] = (train.indices.nbytes + train.values.nbytes) / 2**20
    return out


def configure():
    """The command line (``--worker FILE``: the child process's run)."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--c", type=float, default=20, help=argparse.SUPPRESS)
    p.add_argument("--sizes", type=float, nargs="*", default=None)
    p.add_argument("--cs", type=float, nargs="*", default=None, help="lambda_0 / c")
    p.add_argument("--auto-max", type=float, default=None, help="lam='auto' up to")
    p.add_argument("--max-iter", type=int, default=1000)
    args = p.parse_args()
    if args.quick:
        sizes, cs, auto = [1e5, 1e6], [10, 20], 1e5
    else:
        sizes, cs, auto = [1e6, 2e6, 5e6, 1e7, 2e7], [10, 20, 30], 1e6
    args.sizes = [int(x) for x in (args.sizes or sizes)]
    args.cs = args.cs or cs
    args.auto_max = auto if args.auto_max is None else args.auto_max
    return args


def write_entries(nnz: int, seed: int, path: Path) -> None:
    """Netflix-shaped training (``nnz``) and test ratings (a tenth, <= 10^6)."""
    from embedopt.data import make_ratings

    n_test = int(min(max(nnz // 10, 10_000), 10**6))
    r = make_ratings("netflix", n_ratings=nnz + n_test, random_state=seed)
    rng = np.random.default_rng(seed)
    test = np.zeros(r.nnz, dtype=bool)
    test[rng.choice(r.nnz, n_test, replace=False)] = True
    np.savez(
        path,
        rows=r.rows[~test],
        cols=r.cols[~test],
        vals=r.values[~test],
        shape=np.array(r.shape),
        test_rows=r.rows[test],
        test_cols=r.cols[test],
        test_vals=r.values[test],
    )


def run_size(nnz: int, args) -> list[dict]:
    """Every fit of one |Omega|, each in a fresh process."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "entries.npz"
        t0 = time.perf_counter()
        write_entries(nnz, args.seed, path)
        print(f"|Omega| = {nnz:.0e}: data in {time.perf_counter() - t0:.0f} s")
        cs = list(args.cs) + ([0] if nnz <= args.auto_max else [])
        for c in cs:
            cmd = [sys.executable, __file__, "--worker", str(path), "--c", str(c)]
            cmd += ["--max-iter", str(args.max_iter), "--device", args.device]
            cmd += ["--threads", str(args.threads)] if args.threads else []
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"worker failed (c={c}):\n{proc.stderr[-3000:]}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r["c"] = c
            r["above_input_mb"] = r["peak_mb"] - r["base_mb"]
            r["bytes_per_entry"] = r["above_input_mb"] * 2**20 / r["nnz"]
            print(json.dumps(r), flush=True)
            out.append(r)
    return out


def slopes(results: list[dict]) -> dict:
    """Least-squares log-log slope of CPU seconds per iteration (and to the
    tolerance) against |Omega|, per c (sizes from 10^6 up)."""
    out = {}
    for c in sorted({r["c"] for r in results if r["c"]}):
        rs = [r for r in results if r["c"] == c and r["nnz"] >= 10**6]
        if len(rs) >= 2:
            x = np.log([r["nnz"] for r in rs])
            out[c] = tuple(
                float(np.polyfit(x, np.log([r[key] for r in rs]), 1)[0])
                for key in ("cpu_per_iter", "cpu_seconds")
            )
    return out


def report(args, results) -> None:
    """Print the table and write the JSON and Markdown results."""
    rows = []
    for r in results:
        fixed = r["c"] != 0
        rows.append(
            [
                f"{r['nnz']:.0e}",
                f"lambda_0/{r['c']:g}" if fixed else 'lam="auto"',
                r["peak_mb"] / 1024,
                r["above_input_mb"] / 1024,
                round(r["bytes_per_entry"]),
                r["per_iter"] if fixed else "",
                r["cpu_per_iter"] if fixed else "",
                r["n_iter"],
                r["seconds"],
                r["cpu_seconds"],
                r["rank"],
                r["test_rmse"],
            ]
        )
    headers = [
        "|Omega|",
        "lambda",
        "peak RSS GB",
        "above input GB",
        "bytes / entry above input",
        "s / iteration",
        "CPU s / iteration",
        "iterations",
        "s to tol",
        "CPU s to tol",
        "rank",
        "test RMSE (stars)",
    ]
    table = _shared.markdown_table(headers, rows)
    sl = slopes(results)
    table += (
        "\n\nLog-log slope of CPU time against |Omega| (per iteration, to tol): "
        + ", ".join(f"c = {c:g}: {a:.2f}, {b:.2f}" for c, (a, b) in sl.items())
    )
    print(table)
    config = dict(sizes=args.sizes, cs=args.cs, threads=args.threads, tol=TOL)
    _shared.write("completion_scale", args.out, config, dict(runs=results), table)


def main():
    args = configure()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    results = []
    for nnz in args.sizes:
        results += run_size(nnz, args)
    report(args, results)


if __name__ == "__main__":
    main()
