"""Session pieces of the property suite: a memory cap, and the case counts."""

from __future__ import annotations

import resource

import pytest
import torch

#: Address space the property tests may add to what the process already
#: maps. Every generated size is either tiny or far beyond any machine's
#: memory (2**40 and up), so a call that allocates more than this has let a
#: huge size through: it gets a MemoryError here instead of exhausting the
#: memory of a shared machine.
MEMORY_CAP = 6 * 2**30


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


@pytest.fixture(autouse=True, scope="package")
def _memory_cap():
    """Cap the address space while the property tests run (Linux, CPU only:
    a CUDA context maps far more address space than it uses)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _mapped_bytes() + MEMORY_CAP
    except (OSError, ValueError, AttributeError):
        yield
        return
    if torch.cuda.is_available() or (hard != resource.RLIM_INFINITY and hard < cap):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def pytest_terminal_summary(terminalreporter):
    """How many generated cases ran, per estimator method / command and kind
    of input, and how they ended."""
    try:
        from ._harness import CASES_RUN
    except ImportError:  # no hypothesis: the property tests were skipped
        return
    if not CASES_RUN:
        return
    write = terminalreporter.write_line
    terminalreporter.section("property suite: generated cases run")
    subjects = sorted({(s, k) for s, k, _ in CASES_RUN})
    width = max(len(f"{s} [{k}]") for s, k in subjects)
    for s, k in subjects:
        refused = CASES_RUN[s, k, "refused"]
        accepted = CASES_RUN[s, k, "accepted"]
        failed = CASES_RUN[s, k, "failed"]
        write(
            f"{f'{s} [{k}]':<{width}}  {refused + accepted + failed:6d} cases: "
            f"{refused:6d} refused, {accepted:6d} accepted, {failed:4d} failed"
        )
    total = sum(CASES_RUN.values())
    write(f"{'total':<{width}}  {total:6d} cases")
