"""Scoped thread limits for work too small to share between cores."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["few_threads"]


@contextlib.contextmanager
def few_threads(n: int = 1, *, enabled: bool = True) -> Iterator[None]:
    """Run the enclosed CPU work on at most ``n`` torch and BLAS threads.

    Tensors of a few thousand numbers gain nothing from several threads, but
    every operation then waits for the others to wake up, and torch's OpenMP
    pool and the BLAS pool that SciPy uses spin against each other between
    calls: a full-batch L-BFGS fit of 10^4 triplets took 4-5 s with two of
    each on a busy 2-core machine and 0.06 s with one. The previous torch
    setting is restored on exit; the BLAS limit needs ``threadpoolctl``
    (without it only torch is limited).

    Parameters
    ----------
    n : int
        Threads for each library.
    enabled : bool
        False makes this a no-op (callers decide by problem size).

    Notes
    -----
    ``torch.set_num_threads`` is process-wide: torch work that other Python
    threads run meanwhile is limited too.
    """
    if not enabled:
        yield
        return
    old = torch.get_num_threads()
    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # optional: limit torch only
            pass
        else:
            stack.enter_context(threadpool_limits(n, user_api="blas"))
        if old > n:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if old > n:
                torch.set_num_threads(old)
