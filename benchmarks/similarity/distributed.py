"""Data-parallel all-pairs training: 1 vs 2 processes, time per iteration and
identical iterates (issue 12, "Beyond one machine"; benchmark 4).

A synthetic implicit-feedback problem (m users, n items, ``--per-user``
observed items each, chosen by a planted low-rank affinity of their side
features), two MLP towers over the side features, the all-pairs objective
(square loss, imputation 0 on the unobserved pairs, ``omega``, ``lam``), and
``--iters`` Gauss-Newton-CG iterations (``embedopt.optim.newton_cg``,
``use="gauss_newton"``) from the same starting point, under ``torchrun``
with every layout of ``--layouts`` (``PxT``: P processes of T torch threads,
gloo on loopback). Per layout: the median time of one gradient and of one
Gauss-Newton product at the start (``--repeats`` each), the median time per
Newton iteration, the objective after every iteration and the final point,
compared with the first layout's (max |x - x_ref| / max |x_ref|).

    python benchmarks/similarity/distributed.py --quick
    python benchmarks/similarity/distributed.py
    python benchmarks/similarity/distributed.py --layouts 1x1 2x1 4x1 --dtype float32

One layout by hand (what the driver runs)::

    python -m torch.distributed.run --standalone --nproc_per_node 2 \\
        benchmarks/similarity/distributed.py --worker --quick

Writes results/similarity_distributed[_quick].{json,md}.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

SIZES = {  # (m, n, per_user, hidden, iters)
    "quick": (20_000, 10_000, 20, 64, 5),
    "full": (50_000, 25_000, 30, 128, 8),
}


def _args(argv=None):
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument(
        "--layouts",
        nargs="+",
        default=["1x1", "2x1", "1x2"],
        help="PxT: P processes of T threads; the first is the reference",
    )
    p.add_argument(
        "--perturb",
        type=float,
        default=1e-15,
        help="also run the first layout from x0 (1 + perturb): how far rounding "
        "alone moves the iterates (0: skip)",
    )
    p.add_argument("--runs", type=int, default=None, help="default 1 quick, 3")
    p.add_argument("--users", type=int, default=None)
    p.add_argument("--items", type=int, default=None)
    p.add_argument("--per-user", type=int, default=None)
    p.add_argument("--hidden", type=int, default=None)
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--k", type=int, default=32, help="n_components")
    p.add_argument("--omega", type=float, default=0.01)
    p.add_argument("--lam", type=float, default=1e-3)
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    p.add_argument("--repeats", type=int, default=5, help="timings per oracle")
    p.add_argument("--worker", action="store_true", help="run under torchrun")
    p.add_argument("--result", default=None, help="(worker) where rank 0 saves")
    p.add_argument("--scale-x0", type=float, default=1.0, help="(worker)")
    args = p.parse_args(argv)
    m, n, per_user, hidden, iters = SIZES["quick" if args.quick else "full"]
    for name, default in (
        ("users", m),
        ("items", n),
        ("per_user", per_user),
        ("hidden", hidden),
        ("iters", iters),
    ):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    return args


# -- one process of a layout ------------------------------------------------------
def problem(args, device="cpu"):
    """Side features, observed pairs and the two towers (same on every process)."""
    import numpy as np
    import torch

    from embedopt.data import as_side_features
    from embedopt.nn import MLPTower

    rng = np.random.default_rng(args.seed)
    m, n, d, r = args.users, args.items, 16, 8
    fu, fv = rng.normal(size=(m, d)), rng.normal(size=(n, d))
    cu, cv = rng.integers(0, 10, m), rng.integers(0, 20, n)
    # Planted affinity: a random linear map of the features to r dimensions.
    U = fu @ rng.normal(size=(d, r)) + rng.normal(size=(10, r))[cu]
    V = fv @ rng.normal(size=(d, r)) + rng.normal(size=(20, r))[cv]
    # Each user's best items among 5 * per_user random candidates: O(m) work.
    cand = rng.integers(0, n, size=(m, 5 * args.per_user))
    scores = np.einsum("ir,icr->ic", U, V[cand]) + rng.gumbel(size=cand.shape)
    best = np.argsort(-scores, axis=1)
    rows, cols = [], []
    for i in range(m):
        items = list(dict.fromkeys(cand[i, best[i]].tolist()))[: args.per_user]
        rows += [i] * len(items)
        cols += items
    pairs = (np.asarray(rows), np.asarray(cols))
    dtype = getattr(torch, args.dtype)
    g = torch.Generator().manual_seed(args.seed)
    towers = [
        MLPTower(
            as_side_features({"c": c, "x": f}, len(f), name),
            args.k,
            hidden=args.hidden,
            normalize=False,
            generator=g,
            device=device,
            dtype=dtype,
        )
        for name, c, f in (("user", cu, fu), ("item", cv, fv))
    ]
    return towers, pairs


def _median_time(fn, repeats, sync):
    """Median wall-clock and CPU (this process) seconds of ``fn()``."""
    import statistics

    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def worker(args) -> None:
    """One process under torchrun: build, time the oracles, run Newton-CG."""
    import torch
    import torch.distributed as dist

    from embedopt.similarity import DistributedAllPairsObjective

    device, sync = _init_group(args)
    t0 = time.perf_counter()
    (user_tower, item_tower), pairs = problem(args, device)
    obj = DistributedAllPairsObjective(
        user_tower, item_tower, pairs, omega=args.omega, lam=args.lam
    )
    setup = time.perf_counter() - t0
    x0 = tuple(t * args.scale_x0 for t in obj.initial_point())
    f0, timings = _time_oracles(obj, x0, args.repeats, sync)
    res, iter_cpu = _newton(obj, x0, args.iters)
    # The busiest process's CPU seconds: what the layout would take on idle
    # cores (this machine's cores are shared with other work).
    cpu = torch.tensor(
        [timings["grad_cpu"], timings["gnvp_cpu"], iter_cpu],
        dtype=torch.float64,
        device=device,
    )
    dist.all_reduce(cpu, op=dist.ReduceOp.MAX)
    timings["grad_cpu"], timings["gnvp_cpu"], iter_cpu = cpu.tolist()
    out = _record(obj, x0, res, f0, setup, timings, iter_cpu)
    if dist.get_rank() == 0:
        print(
            f"{obj.world_size} process(es) x {out['threads']} thread(s): "
            f"gradient {out['grad_s']:.3f} s, GN product {out['gnvp_s']:.3f} s, "
            f"iteration {out['iter_s']:.3f} s, objective {out['objective'][-1]:.10g}",
            flush=True,
        )
        if args.result:
            torch.save(out, args.result)
    dist.destroy_process_group()


def _init_group(args):
    """Threads, the process group and the device of this process."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads or 1)
    if args.device == "cuda":  # one GPU per process, NCCL between them
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl")
        return device, torch.cuda.synchronize
    dist.init_process_group("gloo")
    return torch.device("cpu"), lambda: None


def _time_oracles(obj, x0, repeats, sync):
    """f(x0) and the median wall / CPU seconds of a gradient and a GN product."""
    from embedopt.linalg.points import scale

    f0, g0 = obj.value_and_grad(x0)  # warm-up
    v = scale(1.0, g0)
    obj.gnvp(x0, v)
    # A fresh point per gradient (the objective caches the last one's
    # embeddings); the Gauss-Newton products reuse them, as inside one CG.
    grad_s, grad_cpu = _median_time(
        lambda: obj.value_and_grad(tuple(t.clone() for t in x0)), repeats, sync
    )
    obj.value_and_grad(x0)
    gnvp_s, gnvp_cpu = _median_time(lambda: obj.gnvp(x0, v), repeats, sync)
    return f0, dict(grad_s=grad_s, grad_cpu=grad_cpu, gnvp_s=gnvp_s, gnvp_cpu=gnvp_cpu)


def _newton(obj, x0, iters):
    """``iters`` Gauss-Newton-CG iterations; the result and CPU s per iteration."""
    import warnings

    from embedopt import ConvergenceWarning
    from embedopt.optim import newton_cg

    c0 = time.process_time()
    with warnings.catch_warnings():  # a fixed number of iterations on purpose
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = newton_cg(
            obj,
            x0,
            use="gauss_newton",
            damping=1.0,
            max_iter=iters,
            tol=0.0,
            cg_max_iter=20,
        )
    return res, (time.process_time() - c0) / res.n_iter


def _record(obj, x0, res, f0, setup, timings, iter_cpu) -> dict:
    """What one layout's run reports to the driver."""
    import torch

    times = list(res.history["time"])
    per_iter = [b - a for a, b in zip([0.0, *times[:-1]], times, strict=True)]
    return dict(
        world_size=obj.world_size,
        threads=torch.get_num_threads(),
        shape=obj.shape,
        n_observed=obj.n_observed,
        n_params=sum(t.numel() for t in x0),
        setup_s=setup,
        grad_s=timings["grad_s"],
        gnvp_s=timings["gnvp_s"],
        iter_s=_shared.median(per_iter),
        grad_cpu=timings["grad_cpu"],
        gnvp_cpu=timings["gnvp_cpu"],
        iter_cpu=iter_cpu,
        objective=[float(f0), *map(float, res.history["objective"])],
        cg_iter=list(res.history["cg_iter"]),
        spread=obj.replica_spread(res.x),
        x=[t.cpu() for t in res.x],
    )


# -- the driver -----------------------------------------------------------------
def _layout(text: str) -> tuple[int, int]:
    procs, _, threads = text.partition("x")
    return int(procs), int(threads or 1)


def run_layout(args, procs: int, threads: int, result: Path, scale=1.0) -> dict:
    import torch

    forwarded = [
        f"--{k.replace('_', '-')}={getattr(args, k)}"
        for k in (
            "users",
            "items",
            "per_user",
            "hidden",
            "iters",
            "k",
            "omega",
            "lam",
            "dtype",
            "repeats",
            "seed",
            "device",
        )
    ]
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={procs}",
        str(Path(__file__).resolve()),
        "--worker",
        f"--threads={threads}",
        f"--result={result}",
        f"--scale-x0={scale!r}",
        *forwarded,
    ]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    subprocess.run(cmd, check=True, env=env)
    return torch.load(result, weights_only=False)


def main(argv=None) -> int:
    args = _args(argv)
    if args.worker:
        worker(args)
        return 0
    layouts = _layouts(args)
    runs, load = _run_layouts(args, layouts)
    reference = layouts[0][0]
    rows, results = _summaries(runs, reference)
    ref = runs[reference][0]
    table = _table(args, ref, reference, rows, load)
    print(table)
    tag = "similarity_distributed" + ("_quick" if args.quick else "")
    config = {k: v for k, v in vars(args).items() if k not in ("worker", "result")}
    config["load_average"] = load
    path = _shared.write(tag, args.out, config, results, table)
    print(f"wrote {path}")
    return 0


def _layouts(args) -> list:
    """(name, processes, threads, x0 scale) of every layout to run."""
    layouts = [(t, *_layout(t), 1.0) for t in args.layouts]
    if args.perturb:
        _, p, t, _ = layouts[0]
        layouts.append((f"{p}x{t}, x0 (1 + {args.perturb:g})", p, t, 1 + args.perturb))
    return layouts


def _run_layouts(args, layouts):
    """Every layout ``args.runs`` times (interleaved); the 1-minute load
    average before and after."""
    runs: dict[str, list[dict]] = {name: [] for name, *_ in layouts}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs):  # layouts interleaved, so load drifts hit all
            for i, (name, p, t, scale) in enumerate(layouts):
                res = run_layout(args, p, t, Path(tmp) / f"{i}-{r}.pt", scale)
                runs[name].append(res)
    load.append(os.getloadavg()[0])
    return runs, load


def _summaries(runs, reference):
    """Table rows and JSON results of each layout against the reference."""
    import torch

    ref = runs[reference][0]
    x_ref = torch.cat([a.reshape(-1) for a in ref["x"]])
    keys = ("setup_s", "grad_s", "gnvp_s", "iter_s", "grad_cpu", "gnvp_cpu", "iter_cpu")
    base = {k: _shared.median([r[k] for r in runs[reference]]) for k in keys}
    rows, results = [], {}
    for name, rs in runs.items():
        x = torch.cat([a.reshape(-1) for a in rs[0]["x"]])
        x_diff = float((x - x_ref).abs().max() / x_ref.abs().max())
        f_diffs = [
            abs(a - b) / abs(b)
            for a, b in zip(rs[0]["objective"], ref["objective"], strict=True)
        ]
        summary = {key: _shared.median([r[key] for r in rs]) for key in keys}
        spread = max(r["spread"] for r in rs)
        results[name] = dict(
            summary,
            speedup=base["iter_s"] / summary["iter_s"],
            speedup_cpu=base["iter_cpu"] / summary["iter_cpu"],
            x_rel_diff=x_diff,
            objective_rel_diff=f_diffs,
            spread=spread,
            runs=[{k: v for k, v in r.items() if k != "x"} for r in rs],
        )
        rows.append(
            [
                name,
                *(
                    f"{summary[k + '_s']:.3g} / {summary[k + '_cpu']:.3g}"
                    for k in ("grad", "gnvp", "iter")
                ),
                f"{results[name]['speedup']:.2f} / {results[name]['speedup_cpu']:.2f}",
                f"{rs[0]['objective'][-1]:.10g}",
                " / ".join(f"{d:.0e}" for d in f_diffs),
                f"{x_diff:.1e}",
                f"{spread:.0e}",
            ]
        )
    return rows, results


def _table(args, ref, reference, rows, load) -> str:
    m, n = ref["shape"]
    header = [
        "processes x threads",
        "gradient (s)",
        "GN product (s)",
        "Newton iteration (s)",
        f"iteration speed-up vs {reference}",
        f"objective after {args.iters} it.",
        f"rel. objective diff to {reference} (x0, it. 1, 2 ...)",
        "final x: max abs diff / max abs x_ref",
        "replica spread",
    ]
    table = (
        f"m = {m}, n = {n}, |O| = {ref['n_observed']}, k = {args.k}, MLP towers "
        f"(hidden {args.hidden}, {ref['n_params']} parameters), {args.dtype}; "
        f"gloo on loopback, {os.cpu_count()} cores (1-minute load average "
        f"{load[0]:.1f} before, {load[1]:.1f} after); medians over {args.runs} "
        f"run(s) ({args.repeats} timings per oracle, {args.iters} iterations per "
        f"run), device {args.device}. Times: wall-clock / CPU seconds of the "
        "busiest process (what the layout takes on idle cores).\n\n"
        + _shared.markdown_table(header, rows)
    )
    return table


if __name__ == "__main__":
    sys.exit(main())
