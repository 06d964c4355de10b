"""Shared fixtures: seeded tiny problems and the real-data directory."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

# The default suite means the same on every machine: device="auto" is the CPU
# here, and the tests marked gpu ask for CUDA by name. `EMBEDOPT_DEVICE=cuda
# python -m pytest` runs everything that says "auto" on the GPU instead
# (benchmarks/gpu_check.sh); tests that compare against CPU references then
# fail by design, so that run is read, not required to pass.
os.environ.setdefault("EMBEDOPT_DEVICE", "cpu")

from embedopt.data import ObservedEntries

# Tests are tiny: one thread avoids OpenMP barrier stalls on a loaded machine.
# EMBEDOPT_TEST_THREADS=2 (CI's second pass, .ci/run) runs them on two, so a
# result that depends on the thread count fails here before a user sees it.
torch.set_num_threads(int(os.environ.get("EMBEDOPT_TEST_THREADS", "1")))

#: Why a bitwise rerun test skips when device="auto" means CUDA.
CUDA_REASON = (
    "CUDA does not promise bitwise reruns: its atomic adds (index_add_, "
    "scatter_add_, sparse products) sum in a varying order, so the same seed "
    "gives the same result to rounding only"
)


def auto_is_cuda() -> bool:
    """Whether device="auto" means CUDA in this run (EMBEDOPT_DEVICE=cuda)."""
    return os.environ.get("EMBEDOPT_DEVICE", "").strip().startswith("cuda")


def pytest_collection_modifyitems(config, items):
    if not auto_is_cuda():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("bitwise_rerun"):
            item.add_marker(skip)


try:  # the property suite's hypothesis profiles, registered before
    # hypothesis reads --hypothesis-profile (tests/property/_harness.py)
    from tests.property._harness import register_profiles
except ImportError:  # hypothesis is not installed: tests/property skips
    pass
else:
    register_profiles()


def data_dir() -> Path | None:
    """The real-data folder ($EMBEDOPT_DATA), or None when absent."""
    env = os.environ.get("EMBEDOPT_DATA")
    if env and Path(env).is_dir():
        return Path(env)
    return None


def requires_dataset(folder: str):
    """Skip a test unless $EMBEDOPT_DATA/<folder> exists."""
    root = data_dir()
    ok = root is not None and (root / folder).is_dir()
    return pytest.mark.skipif(
        not ok, reason=f"needs $EMBEDOPT_DATA/{folder} (real data not available)"
    )


def fast_start_method() -> str:
    """``"fork"`` (milliseconds) unless this process has initialized CUDA.

    After a test on the GPU, forked processes cannot use CUDA or autograd's
    threads, and run_distributed refuses "fork"; "spawn" always works.
    """
    return "spawn" if torch.cuda.is_initialized() else "fork"


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def random_entries(m=30, n=20, rank=3, frac=0.5, noise=0.01, seed=0):
    """A tiny noisy low-rank matrix observed on a random fraction of entries.

    Returns (entries, U, V) with truth U @ V.T.
    """
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((m, rank))
    V = rng.standard_normal((n, rank))
    mask = rng.random((m, n)) < frac
    rows, cols = np.nonzero(mask)
    vals = (U @ V.T)[rows, cols] + noise * rng.standard_normal(rows.size)
    return ObservedEntries((rows, cols), vals, (m, n)), U, V


@pytest.fixture
def tiny():
    """(entries, U, V) of a 30 x 20 rank-3 matrix, half observed."""
    return random_entries()
