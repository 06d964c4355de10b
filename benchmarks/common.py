"""Shared benchmark runner: environment record, timing, JSON/Markdown/PNG output.

Every benchmark script is one command with ``--quick`` (CI-sized) and full
modes, and writes ``results/<name>.json`` (config, library versions, device,
per-method histories and final metrics), ``results/<name>.md`` (the table) and
optional plots ``results/<name>*.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def parser(description: str) -> argparse.ArgumentParser:
    """Argument parser with the options every benchmark shares."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="CI-sized run (minutes)")
    p.add_argument("--out", default=str(RESULTS), help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (default: torch's choice)",
    )
    return p


def setup(args) -> None:
    """Apply the shared options (threads) before any work.

    ``--threads N`` limits torch's intra-op pool *and* the BLAS pools of NumPy /
    SciPy (through threadpoolctl, see requirements-benchmarks.txt), so every
    method of a comparison runs on the same number of cores. On a shared,
    loaded machine, oversubscribed BLAS threads otherwise stall for tens of
    seconds (a 1000 x 1000 SVD took 26 s instead of 0.5 s here).
    """
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            print("warning: threadpoolctl is not installed; BLAS threads not limited")
        else:
            # Kept for the life of the process.
            args._blas_limits = threadpool_limits(args.threads)


def environment() -> dict:
    """Versions, machine and device of this run."""
    import scipy
    import torch

    import embedopt

    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "embedopt": embedopt.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    return info


def median(xs) -> float:
    """Median of a non-empty sequence (NaN when empty)."""
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    return float(statistics.median(xs)) if xs else float("nan")


def mean_std(xs) -> tuple[float, float]:
    """Mean and standard deviation (ddof=0)."""
    a = np.asarray([x for x in xs if x is not None], dtype=float)
    return (float(a.mean()), float(a.std())) if a.size else (float("nan"),) * 2


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """A GitHub-flavoured Markdown table."""

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.3e}"
        return str(v)

    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, (np.floating, float)):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.integer):
        return int(o)
    return o


def write(name: str, out: str, config: dict, results: dict, table: str) -> Path:
    """Write ``<out>/<name>.json`` and ``<out>/<name>.md``; return the JSON path."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "config": config,
        "environment": environment(),
        "results": results,
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(_jsonable(payload), indent=1))
    cmd = "python " + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    (folder / f"{name}.md").write_text(f"# {name}\n\nCommand: `{cmd}`\n\n{table}\n")
    return path


def peak_rss_gb() -> float:
    """Peak resident memory of this process (VmHWM), in GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def figure():
    """A matplotlib pyplot module with a non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
