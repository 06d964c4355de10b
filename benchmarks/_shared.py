"""The one helper module of every benchmark: environment record, threads, output.

Every benchmark script (``benchmarks/<domain>/<name>.py``) is one command with
``--quick`` (CI-sized) and full modes, and writes ``benchmarks/results/<name>.json``
(config, library versions, device, per-method histories and final metrics),
``benchmarks/results/<name>.md`` (the table) and optional plots
``benchmarks/results/<name>*.png``.

A script puts ``benchmarks/`` on ``sys.path`` and imports this module::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import _shared

Nothing here imports NumPy, torch or a peer at module level: the ordinal and
quantization benchmarks fix the thread count through environment variables,
which only work before those libraries load.
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

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def parser(description: str) -> argparse.ArgumentParser:
    """Argument parser with the options every completion benchmark shares."""
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
    """Apply the shared options of :func:`parser` (threads) before any work."""
    if args.threads and not limit_threads(args.threads):
        print("warning: threadpoolctl is not installed; BLAS threads not limited")


def limit_threads(n: int, *, environ: bool = False) -> bool:
    """Run torch, the BLAS of NumPy / SciPy and faiss (if used) on ``n`` threads.

    Every method of a comparison must run on the same number of cores. On a
    shared, loaded machine, oversubscribed BLAS threads otherwise stall for tens
    of seconds (a 1000 x 1000 SVD took 26 s instead of 0.5 s here), and spinning
    OpenMP workers slow everything down ~10x.

    Parameters
    ----------
    n : int
        Threads per library.
    environ : bool
        Also set ``OMP_NUM_THREADS`` and friends (and a passive OpenMP wait
        policy): they only take effect when set before NumPy / torch / faiss
        load, and child processes inherit them.

    Returns
    -------
    bool
        Whether the BLAS pools were limited (threadpoolctl is installed, see
        ``requirements-benchmarks.txt``).
    """
    if environ:
        for var in (
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
            "NUMEXPR_NUM_THREADS",
        ):
            os.environ[var] = str(n)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    torch.set_num_threads(n)
    # faiss only where a benchmark uses it (environ=True) or has loaded it: its
    # import is not free and brings its own OpenMP runtime.
    if environ or "faiss" in sys.modules:
        try:
            import faiss
        except ImportError:
            pass
        else:
            faiss.omp_set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    # Kept for the life of the process.
    _LIMITS.append(threadpool_limits(n))
    return True


_LIMITS: list = []


def versions(*peers: str) -> dict:
    """Versions of Python, embedopt, its dependencies and ``peers`` (None if absent)."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for mod in ("embedopt", "torch", "numpy", "scipy", *peers):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "unknown")
        except ImportError:
            out[mod] = None
    return out


def device_info() -> dict:
    """CPU count, torch threads and the CUDA device (None without one)."""
    import torch

    return {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def environment(*peers: str) -> dict:
    """Versions, machine, device and date of this run."""
    return {
        **versions(*peers),
        **device_info(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


class Timer:
    """Context manager measuring wall-clock seconds (``.seconds``)."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def median(xs) -> float:
    """Median of the finite values of a sequence (NaN when there are none)."""
    import numpy as np

    xs = [x for x in xs if x is not None and np.isfinite(x)]
    return float(statistics.median(xs)) if xs else float("nan")


def mean_std(xs) -> tuple[float, float]:
    """Mean and standard deviation (ddof=0)."""
    import numpy as np

    a = np.asarray([x for x in xs if x is not None], dtype=float)
    return (float(a.mean()), float(a.std())) if a.size else (float("nan"),) * 2


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """A GitHub-flavoured Markdown table (floats to 4 significant digits)."""

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


def _ratio(a, b) -> str:
    return "" if a is None or b in (None, 0) else f"{a / b:.2f}"


def _num(x) -> str:
    if x is None:
        return ""
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def defaults_table(rows: list[dict]) -> str:
    """Markdown table of defaults-vs-peer rows (issue 13) with ratios.

    Parameters
    ----------
    rows : list of dict
        The rows of a ``<domain>/defaults.py`` ``rows()`` (keys ``estimator``,
        ``dataset``, ``tuned_on``, ``metric``, ``lower_is_better``, ``ours``,
        ``ours_seconds``, ``peer``, ``peer_value``, ``peer_seconds``,
        ``n_seeds``, ``note``).

    Returns
    -------
    str
        Quality and time ratios are ours / peer (below 1 is better when lower
        is better).
    """
    body = [
        [
            r["estimator"],
            r["dataset"],
            "yes" if r.get("tuned_on") else "no",
            r["metric"] + (" (lower better)" if r.get("lower_is_better") else ""),
            _num(r["ours"]),
            r["peer"],
            _num(r.get("peer_value")),
            _ratio(r["ours"], r.get("peer_value")),
            _num(r.get("ours_seconds")),
            _num(r.get("peer_seconds")),
            _ratio(r.get("ours_seconds"), r.get("peer_seconds")),
            r.get("n_seeds", ""),
            r.get("note", ""),
        ]
        for r in rows
    ]
    return markdown_table(
        [
            "estimator (defaults)",
            "data",
            "tuned on",
            "metric",
            "ours",
            "peer (defaults)",
            "peer",
            "ratio",
            "ours s",
            "peer s",
            "time ratio",
            "seeds",
            "note",
        ],
        body,
    )


def report_defaults(name: str, args, rows: list[dict]) -> str:
    """Print and write a defaults-vs-peer run: :func:`defaults_table` of
    ``rows`` to stdout and, with ``args.quick`` / ``seeds`` / ``threads``
    as its configuration, to ``<args.out>/<name>[_quick].{json,md}``.

    Returns
    -------
    str
        The Markdown table.
    """
    md = defaults_table(rows)
    print(md)
    write(
        name + ("_quick" if args.quick else ""),
        args.out,
        dict(quick=args.quick, seeds=args.seeds, threads=args.threads),
        dict(rows=rows),
        md,
    )
    return md


def _jsonable(o):
    """Plain JSON values: NumPy scalars and arrays converted, NaN / inf as null."""
    import numpy as np

    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, (np.floating, float)):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, (np.integer, np.bool_)):
        return o.item()
    return o


def write_outputs(
    name: str, payload: dict, markdown: str, out=RESULTS
) -> tuple[Path, Path]:
    """Write ``<out>/<name>.json`` and ``<out>/<name>.md``; return both paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    js, md = folder / f"{name}.json", folder / f"{name}.md"
    js.write_text(json.dumps(_jsonable(payload), indent=1, default=str))
    md.write_text(markdown)
    return js, md


def command() -> str:
    """The command line of this run, as typed from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(HERE.parent)
    except ValueError:
        pass
    return "python " + " ".join([str(script), *sys.argv[1:]])


def write(name: str, out: str, config: dict, results: dict, table: str) -> Path:
    """Write the JSON record and the Markdown table of a run; return the JSON path.

    The JSON holds ``config``, :func:`environment` and ``results``; the Markdown
    file the command and ``table``.
    """
    payload = {
        "benchmark": name,
        "config": config,
        "environment": environment(),
        "results": results,
    }
    text = f"# {name}\n\nCommand: `{command()}`\n\n{table}\n"
    return write_outputs(name, payload, text, out)[0]


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise OSError(key)


def reset_peak_rss() -> float:
    """Reset this process's peak resident memory (Linux); return the current RSS, MiB.

    Writing 5 to ``/proc/self/clear_refs`` sets VmHWM back to VmRSS, so
    :func:`peak_rss_mb` after a call measures that call's peak. NaN where the
    kernel does not allow it.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_kb("VmRSS") / 1024
    except OSError:
        return float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory (VmHWM) since start or :func:`reset_peak_rss`, MiB."""
    try:
        return _status_kb("VmHWM") / 1024
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_gb() -> float:
    """Peak resident memory of this process (VmHWM), in GiB."""
    return peak_rss_mb() / 1024


def time_to(times, values, target, *, strict: bool = False, never=float("nan")):
    """First entry of ``times`` at which ``values`` reaches ``target``.

    Reached means ``values <= target`` (``values < target`` with ``strict``);
    ``never`` is returned when no entry reaches it (NaN by default, ``inf``
    where a median over trials should rank "never" last).
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    hit = np.flatnonzero(v < target if strict else v <= target)
    return float(np.asarray(times)[hit[0]]) if hit.size else float(never)


class CpuClock:
    """A solver callback recording the process time of every iteration.

    embedopt's histories and ``time_limit`` use the wall clock, which a
    loaded shared machine stretches; benchmarks compare CPU time. Pass an
    instance as ``callback``: ``times`` then has one entry per history row,
    and the solver stops (``stop_reason == "callback"``) once ``limit``
    CPU seconds are spent.
    """

    def __init__(self, limit: float | None = None):
        self.t0 = time.process_time()
        self.limit = limit
        self.times: list[float] = []

    def __call__(self, state) -> bool:
        self.times.append(time.process_time() - self.t0)
        return self.limit is not None and self.times[-1] >= self.limit


def figure():
    """matplotlib's pyplot with a non-interactive backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
