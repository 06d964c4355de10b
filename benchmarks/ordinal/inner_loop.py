"""Cost of an SVRG-SBB inner step and epoch: compiled (numba) against the torch loop.

Table I's problem (n = 100 planted points in 10-d, 10^4 triplets, p = 10,
float32, one thread), every loss, b in {20, 100}. For each:

- us per inner step (CPU time of the thread, median of several epochs) of
  the compiled steps and of the torch loop, on the same mini-batches, and
  their ratio; the flops of a step (30 p + 30 per comparison: the lazy
  catch-up, the distances and partials at x_t and at the snapshot, the two
  gradient rows, the scatter) and the step's time against one flop per
  clock cycle at the CPU's nominal clock;
- one full gradient (ms), and a whole ``svrg_sbb`` epoch (m = |Q|, solver
  clock, median over epochs) in full-gradient equivalents, compiled and
  torch;
- what the first compiled call of a fresh process costs (numba import plus
  loading the kernel from its on-disk cache, or compiling it when the cache
  is cold), measured in a subprocess.

    python benchmarks/ordinal/inner_loop.py --quick   # STE and GNMDS (~15 s)
    python benchmarks/ordinal/inner_loop.py           # every loss (~30 s)

Writes benchmarks/results/ordinal_inner_loop.{json,md}.
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C  # first: it sets single-threading
import _shared

import argparse
import os
import subprocess
import tempfile
import time
import warnings

import numpy as np
import torch

from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalProblem, batch_gd, get_loss, svrg_sbb
from embedopt.ordinal._kernels import COMPILED_ENV
from embedopt.optim.svrg import _inner_loop

P = 10
LOSSES = ["gnmds", "ckl", "ste", "tste", "soe"]
BATCHES = [20, 100]


def nominal_ghz() -> float | None:
    """The CPU's nominal clock from /proc/cpuinfo (None elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1000
    except OSError:
        pass
    return None


def flops_per_step(b: int, p: int = P) -> int:
    """Flops of one SVRG inner step of b comparisons (see the module docstring)."""
    return b * (30 * p + 30)


def step_us(problem, x, g, b, steps, compiled: bool, reps: int) -> float:
    """Median thread-CPU us per inner step over ``reps`` runs of ``steps`` steps."""
    os.environ[COMPILED_ENV] = "1" if compiled else "0"
    gen = torch.Generator().manual_seed(0)
    _inner_loop(problem, x, g, 1e-3, b, min(steps, 5), gen, True, None, None)
    times = []
    for _ in range(reps):
        t0 = time.thread_time()
        _inner_loop(problem, x, g, 1e-3, b, steps, gen, True, None, None)
        times.append((time.thread_time() - t0) / steps * 1e6)
    os.environ.pop(COMPILED_ENV)
    return float(np.median(times))


def full_gradient_ms(problem, x, reps: int = 30) -> float:
    problem.value_and_grad(x)
    times = []
    for _ in range(reps):
        t0 = time.thread_time()
        problem.value_and_grad(x)
        times.append(time.thread_time() - t0)
    return float(np.median(times)) * 1e3


def per_epoch_ms(solver, train, epochs: int, **kw) -> float:
    """Thread-CPU ms per epoch of ``solver``: a run of ``epochs + 1`` epochs
    minus a run of 1 (the setup, the first gradient and the probe), per epoch."""
    kw = dict(tol=0, random_state=0, device="cpu", **kw)
    cpu = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver(train, P, max_iter=1, **kw)  # warm-up
        for n_epochs in (1, epochs + 1):
            t0 = time.thread_time()
            solver(train, P, max_iter=n_epochs, **kw)
            cpu.append(time.thread_time() - t0)
    return (cpu[1] - cpu[0]) / epochs * 1e3


def epoch_ms(train, loss, b, compiled: bool, epochs: int) -> float:
    """Thread-CPU ms per svrg_sbb epoch (m = |Q|), compiled or torch steps."""
    os.environ[COMPILED_ENV] = "1" if compiled else "0"
    ms = per_epoch_ms(svrg_sbb, train, epochs, loss=loss, batch_size=b)
    os.environ.pop(COMPILED_ENV)
    return ms


def gd_iteration_ms(train, loss, epochs: int) -> float:
    """Thread-CPU ms per iteration of batch gradient descent (3 per epoch)."""
    return per_epoch_ms(batch_gd, train, epochs, loss=loss) / 3


def first_call_seconds(cold: bool) -> float:
    """Seconds of the first compiled svrg_sbb epoch in a fresh process, minus a
    torch-loop epoch of the same process (numba import + cache load / compile)."""
    code = (
        "import os, time, warnings; warnings.simplefilter('ignore');"
        "from embedopt.data import make_planted_embedding;"
        "from embedopt.ordinal import svrg_sbb;"
        "d = make_planted_embedding(30, 2, n_train=500, random_state=0).train;"
        "kw = dict(max_iter=1, tol=0, random_state=0, device='cpu');"
        f"os.environ['{COMPILED_ENV}'] = '0'; svrg_sbb(d, 2, **kw);"
        "t = time.perf_counter(); svrg_sbb(d, 2, **kw); base = time.perf_counter() - t;"
        f"os.environ['{COMPILED_ENV}'] = '1';"
        "t = time.perf_counter(); svrg_sbb(d, 2, **kw);"
        "print(time.perf_counter() - t - base)"
    )
    env = dict(os.environ)
    if cold:
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cold-")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return float(out.stdout.split()[-1])


def run(losses, reps, epochs):
    data = make_planted_embedding(random_state=0)
    ghz = nominal_ghz()
    rows = []
    for loss in losses:
        problem = OrdinalProblem(data.train, get_loss(loss, P))
        x = torch.randn(100, P, generator=torch.Generator().manual_seed(0)) * 0.3
        _, g = problem.value_and_grad(x)
        full = full_gradient_ms(problem, x)
        gd = gd_iteration_ms(data.train, loss, 3 * epochs)
        for b in BATCHES:
            steps = data.train.indices.shape[0] // b
            fast = step_us(problem, x, g, b, steps, True, reps)
            slow = step_us(problem, x, g, b, min(steps, 100), False, reps)
            flops = flops_per_step(b)
            ep_fast = epoch_ms(data.train, loss, b, True, epochs)
            ep_slow = epoch_ms(data.train, loss, b, False, max(2, epochs // 4))
            rows.append({
                "loss": loss, "b": b, "compiled_us": fast, "torch_us": slow,
                "flops": flops,
                "flop_cycles_us": flops / (ghz * 1e3) if ghz else None,
                "full_gradient_ms": full, "gd_iteration_ms": gd, "epoch_ms": ep_fast,
                "epoch_torch_ms": ep_slow,
            })  # fmt: skip
            print(f"{loss} b={b}: {fast:.2f} us/step compiled, {slow:.1f} torch")
    first = {"cached": first_call_seconds(False), "cold": first_call_seconds(True)}
    return rows, first, ghz


def markdown(rows, first, ghz, reps, epochs) -> str:
    clock = f"{ghz:.1f} GHz" if ghz else "unknown clock"
    lines = [
        f"Table I problem (100 objects, 10^4 triplets, p = {P}, float32), one "
        f"thread; step times: median thread CPU time of {reps} runs; epochs: "
        f"thread CPU time of a run of {epochs} + 1 epochs minus a run of 1, "
        "per epoch (m = |Q|). `x flop` = the "
        f"step's time / its flops at one flop per cycle ({clock}). Full grad: "
        "one value_and_grad pass; GD iteration: one iteration of batch "
        "gradient descent (solver overhead included, the issue's unit); "
        "epoch (GD its) = epoch time / GD iteration time.",
        "",
        "| loss | b | compiled us/step | torch us/step | speed-up | flops/step "
        "| x flop | full grad ms | GD iteration ms | epoch ms (GD its) "
        "| torch epoch ms (GD its) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fg, gd = r["full_gradient_ms"], r["gd_iteration_ms"]
        xf = r["compiled_us"] / r["flop_cycles_us"] if r["flop_cycles_us"] else None
        lines.append(
            f"| {r['loss']} | {r['b']} | {r['compiled_us']:.2f} | "
            f"{r['torch_us']:.0f} | {r['torch_us'] / r['compiled_us']:.0f}x | "
            f"{r['flops']:,} | {C.fmt(xf, 1)} | {fg:.3f} | {gd:.3f} | "
            f"{r['epoch_ms']:.2f} ({r['epoch_ms'] / gd:.1f}) | "
            f"{r['epoch_torch_ms']:.1f} ({r['epoch_torch_ms'] / gd:.1f}) |"
        )
    lines += [
        "",
        f"First compiled call of a fresh process (beyond a torch-loop epoch): "
        f"{first['cached']:.2f} s with numba's on-disk cache, "
        f"{first['cold']:.1f} s with a cold cache (compiles both points of the "
        "first dtype).",
    ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="STE and GNMDS only")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args(argv)
    losses = ["gnmds", "ste"] if args.quick else LOSSES
    t0 = time.perf_counter()
    rows, first, ghz = run(losses, args.reps, args.epochs)
    md = markdown(rows, first, ghz, args.reps, args.epochs)
    payload = {
        "experiment": "SVRG-SBB inner step and epoch cost, compiled vs torch",
        "config": {"p": P, "batch_sizes": BATCHES, "losses": losses,
                   "reps": args.reps, "epochs": args.epochs, "quick": args.quick},
        "versions": _shared.environment("numba"),
        "rows": rows,
        "first_call_seconds": first,
        "wall_seconds": time.perf_counter() - t0,
    }  # fmt: skip
    path, _ = _shared.write_outputs("ordinal_inner_loop", payload, md)
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
