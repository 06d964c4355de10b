"""Run fancyimpute's SoftImpute on one problem; print a JSON line.

Executed by ``fancyimpute_peer.py`` with the peer's own interpreter (fancyimpute
needs scikit-learn < 1.8; see requirements-peers.txt). Input: an
.npz with rows, cols, vals, shape, lam, truth factors U, V, and options.
"""

import json
import resource
import sys
import time

import numpy as np


def main(path, max_rank, max_iters):
    from fancyimpute import SoftImpute

    d = np.load(path)
    m, n = (int(x) for x in d["shape"])
    rows, cols, vals = d["rows"], d["cols"], d["vals"]
    out = {"ok": False}
    try:
        t0 = time.perf_counter()
        X = np.full((m, n), np.nan)
        X[rows, cols] = vals
        solver = SoftImpute(
            shrinkage_value=float(d["lam"]),
            max_iters=max_iters,
            max_rank=max_rank,
            init_fill_method="zero",
            verbose=False,
        )
        Xhat = solver.fit_transform(X)
        secs = time.perf_counter() - t0
        T = d["U"] @ d["V"].T
        mask = np.ones((m, n), dtype=bool)
        mask[d["obs_rows"], d["obs_cols"]] = False
        nmse = float(np.linalg.norm((Xhat - T)[mask]) / np.linalg.norm(T[mask]))
        out = {"ok": True, "seconds": secs, "nmse": nmse}
    except MemoryError as exc:
        out = {"ok": False, "error": f"MemoryError: {exc}"}
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps(out))


if __name__ == "__main__":
    rank = None if sys.argv[2] == "none" else int(sys.argv[2])
    main(sys.argv[1], rank, int(sys.argv[3]))
