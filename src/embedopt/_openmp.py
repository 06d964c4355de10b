"""OpenMP's wait policy, chosen before torch loads its OpenMP runtime.

torch's CPU kernels (and the MKL BLAS inside the torch wheel) run on GNU
OpenMP, whose threads spin between parallel regions by default. When another
process holds one of the cores, every region then waits for a thread that
is not scheduled: on the shared 2-core machine of the benchmarks, with one
core busy, ``MatrixCompletion().fit`` on MovieLens-100K took 23.8 s on two
threads against 0.89 s on one, and a ``TwoTowerModel()`` fit on MovieLens-1M
41.7 s against 5.3 s. With ``OMP_WAIT_POLICY=PASSIVE`` (threads sleep
instead of spinning) the same two-thread fits took 1.27 s and 4.9 s. Two
such MovieLens-100K fits started at once on the idle machine took 10.3 s
each with spinning threads (``GOMP_SPINCOUNT=10000``: 3.5 s) and 0.8 s each
with sleeping ones.

The price is paid on an idle machine, where sleeping threads wake up later
than spinning ones: the MovieLens-100K fit took 1.18 s instead of 0.70 s
(two threads; 0.97 s on one), the MovieLens-1M fit 14.1 s instead of
12.7 s. A 1.1-1.7x loss when nothing else runs against a 10-25x loss
whenever anything else does (on a machine of any size, as soon as another
process takes one of the cores torch's threads were counted on): the
library takes the robust setting. Set ``OMP_WAIT_POLICY`` (or
``GOMP_SPINCOUNT``) yourself to choose otherwise; embedopt never overrides
it.

The runtime reads the variable once, when it is loaded, so it has to be in
the environment before ``import torch``. Importing embedopt first sets it
(only where the user has not set it); a process that imported torch before
embedopt keeps torch's default. This module imports nothing heavy for that
reason.
"""

from __future__ import annotations

import os
import sys

__all__ = ["prefer_passive_wait"]


def prefer_passive_wait() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless set, if torch is not loaded yet.

    Returns
    -------
    bool
        Whether the policy now in the environment will reach torch's OpenMP
        runtime (False when torch was imported before).
    """
    if "torch" in sys.modules:
        return False
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return True
