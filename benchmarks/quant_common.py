"""Shared helpers of the quantization benchmarks (threads, output, tables, plots).

The benchmark machine is a shared 2-core CPU: every library (torch, faiss,
NumPy/BLAS used by nanopq) runs with the same thread count (``--threads``,
default 1) and OpenMP threads sleep instead of spinning, so that timings
measured side by side in one run compare fairly.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def set_threads(n: int) -> None:
    """Pin every numeric library to ``n`` threads (call before importing them)."""
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    ):
        os.environ[var] = str(n)
    # Spinning OpenMP workers slow everything down ~10x on a shared machine.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    torch.set_num_threads(n)
    try:
        import faiss

        faiss.omp_set_num_threads(n)
    except ImportError:
        pass


def versions() -> dict:
    """Versions of the libraries involved (None when not installed)."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for mod in ("embedopt", "torch", "numpy", "scipy", "faiss", "nanopq"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "unknown")
        except ImportError:
            out[mod] = None
    return out


def device_info() -> dict:
    """CPU / GPU description."""
    import torch

    info = {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["cuda"] = torch.cuda.get_device_name(0)
    return info


class Timer:
    """Context manager measuring wall-clock seconds."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def _default(o):
    import numpy as np

    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(type(o))


def write_outputs(name: str, payload: dict, markdown: str) -> tuple[Path, Path]:
    """Write ``results/<name>.json`` and ``results/<name>.md``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    js = RESULTS / f"{name}.json"
    md = RESULTS / f"{name}.md"
    js.write_text(json.dumps(payload, indent=1, default=_default))
    md.write_text(markdown)
    return js, md


def md_table(header: list[str], rows: list[list]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines) + "\n"
