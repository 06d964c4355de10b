"""Pieces of the ordinal-embedding benchmarks only (the rest is ``_shared``).

- single-threaded runs (``OMP_NUM_THREADS=1`` is set before NumPy/torch load):
  the machine is shared and has 2 cores; one thread per library keeps the
  side-by-side ratios meaningful;
- cblearn as the peer: its scipy L-BFGS-B estimators are run unchanged, and
  ``scipy.optimize.minimize`` is wrapped in cblearn's modules only to record
  (time, iterate) after every L-BFGS iteration, so its time to a target
  held-out error is measured the same way as ours (error evaluations off the
  clock);
- the summary statistics they report (the held-out error is
  ``embedopt.metrics.triplet_error``, the time to a target
  ``_shared.time_to(..., strict=True, never=inf)``).

Import it first in a script: it sets the thread environment before NumPy and
torch load.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time
import warnings

import numpy as np
import torch

from embedopt.metrics import triplet_error
from embedopt.ordinal import batch_gd, sgd, svrg, svrg_sbb, svrg_sbb_pl

torch.set_num_threads(1)

#: The first-order methods every experiment compares (label, solver, options).
STOCHASTIC_METHODS = [
    ("Batch GD", batch_gd, {}),
    ("SGD (b=20)", sgd, {"batch_size": 20}),
    ("SVRG (b=20)", svrg, {"batch_size": 20}),
    ("SVRG-SBB_0 (b=20)", svrg_sbb, {"epsilon": 0.0, "batch_size": 20}),
    ("SVRG-SBB_eps b=20", svrg_sbb, {"batch_size": 20}),
    ("SVRG-SBB_eps b=100", svrg_sbb, {"batch_size": 100}),
    ("SVRG-SBB_eps PL (Alg. 2, b=100)", svrg_sbb_pl, {"batch_size": 100}),
]


def have_cblearn() -> bool:
    try:
        import cblearn  # noqa: F401

        return True
    except ImportError:
        return False


_CB_CLASSES = {
    "gnmds": "GNMDS",
    "ckl": "CKL",
    "ste": "STE",
    "tste": "TSTE",
    "soe": "SOE",
}


def run_cblearn(loss, train, n_objects, p, test, *, seed=0, max_iter=None):
    """Fit cblearn's scipy estimator; return per-iteration (time, error) curve.

    Returns
    -------
    dict with ``times``, ``errors`` (per L-BFGS iteration, error off the
    clock), ``fit_seconds`` (whole fit), ``final_error``, ``embedding``.
    """
    import scipy.optimize as so
    from cblearn import embedding as E
    from cblearn.embedding import _ckl, _gnmds, _soe, _ste

    record = []

    def minimize(*args, **kwargs):
        t0 = time.perf_counter()

        def callback(xk, *rest):
            record.append((time.perf_counter() - t0, np.array(xk)))

        kwargs["callback"] = callback
        return so.minimize(*args, **kwargs)

    mods = (_ckl, _gnmds, _soe, _ste)
    saved = [m.minimize for m in mods]
    for m in mods:
        m.minimize = minimize
    try:
        kw = {"n_components": p, "random_state": seed}
        if loss == "soe":
            kw["n_init"] = 1  # one start, like every other method here
        if max_iter is not None:
            kw["max_iter"] = max_iter
        est = getattr(E, _CB_CLASSES[loss])(**kw)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(train, n_objects=n_objects)
        fit_seconds = time.perf_counter() - t0
    finally:
        for m, f in zip(mods, saved, strict=True):
            m.minimize = f
    times = [t for t, _ in record]
    errors = [triplet_error(x.reshape(n_objects, p), test) for _, x in record]
    return {
        "times": times,
        "errors": errors,
        "fit_seconds": fit_seconds,
        "final_error": triplet_error(est.embedding_, test),
        "n_iter": len(record),
        "embedding": est.embedding_,
    }


def stats(values) -> dict:
    v = np.asarray(values, dtype=float)
    ok = v[np.isfinite(v)]
    out = {"reached": int(ok.size), "trials": int(v.size)}
    if ok.size:
        out.update(
            min=float(ok.min()),
            median=float(np.median(ok)),
            mean=float(ok.mean()),
            max=float(ok.max()),
            std=float(ok.std()),
        )
    return out


def fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return f"{x:.{digits}f}"


def md(text: str) -> str:
    """Escape the pipes of a label (e.g. m=|Q|/4) inside a Markdown table."""
    return text.replace("|", "\\|")
