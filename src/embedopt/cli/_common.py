"""Pieces every ``embedopt`` command shares: options, CSV reading, fit timing,
row selection of the printed tables, warnings and the JSON report."""

from __future__ import annotations

import json
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np


def add_data_options(p, datasets, extra: str = "a CSV path") -> None:
    """``--data`` (a named dataset or a file) and ``--data-dir``."""
    p.add_argument(
        "--data",
        default="synthetic",
        help=f"one of {', '.join(datasets)}, or {extra} (default: synthetic)",
    )
    p.add_argument(
        "--data-dir", default=None, help="dataset root (default: $EMBEDOPT_DATA)"
    )


def add_run_options(p, unit: str) -> None:
    """Options every command shares: tolerance, seed, device, dtype, output."""
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    add_device_option(p)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument(
        "--every",
        type=int,
        default=0,
        help=f"print every N-th {unit} (default: about 15 rows)",
    )
    add_json_option(p)


def add_device_option(p) -> None:
    """``--device``: the CLI runs on the CPU unless told otherwise."""
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")


def add_json_option(p) -> None:
    """``--json FILE``: also write the results as JSON."""
    p.add_argument("--json", default=None, help="also write the results to this file")


def header_lines(path) -> int:
    """1 when the first line of a CSV file is a header (not all numbers), else 0."""
    with open(path) as fh:
        first = fh.readline()
    try:
        [float(x) for x in first.strip().split(",")]
        return 0
    except ValueError:
        return 1


def load_csv(path) -> np.ndarray:
    """The numeric rows of a CSV file (header allowed, ``#`` comments skipped)."""
    return np.loadtxt(
        path,
        delimiter=",",
        ndmin=2,
        comments="#",
        skiprows=header_lines(path),
    )


@contextmanager
def recording_warnings():
    """Record every ConvergenceWarning raised inside the block into a list.

    The warnings are printed after the tables (:func:`report_warnings`) rather
    than in the middle of them.
    """
    from .._core import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        yield caught


def fit_recording(fit, *args, **kwargs):
    """Run ``fit(*args, **kwargs)``; return (seconds, ConvergenceWarnings caught)."""
    t0 = time.perf_counter()
    with recording_warnings() as caught:
        fit(*args, **kwargs)
    return time.perf_counter() - t0, caught


def report_warnings(caught) -> None:
    """Print the recorded warnings on stderr."""
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)


def table_rows(n: int, every: int, default_rows: int = 15) -> list[int]:
    """Indices of the rows to print: every ``every``-th one and always the last."""
    step = every or max(1, n // default_rows)
    return sorted(set(range(0, n, step)) | {n - 1})


def write_json(path, out: dict) -> None:
    """Write ``out`` to ``path`` when ``--json`` was given."""
    if path:
        with open(path, "w") as fh:
            json.dump(out, fh, indent=2)
