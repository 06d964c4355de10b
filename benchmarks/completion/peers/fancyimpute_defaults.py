"""fancyimpute's SoftImpute with its defaults on one problem; print a JSON line.

Executed by ``completion/defaults.py`` with the peer's own interpreter.
Input: an .npz with the observed ``rows``, ``cols``, ``vals``, the ``shape``,
the test positions ``te_rows``, ``te_cols`` and true values ``te_vals``.
SoftImpute() picks its own shrinkage (max singular value / 50) and runs to its
own convergence threshold; it fills a dense m x n array.
"""

import json
import sys
import time

import numpy as np


def main(path):
    from fancyimpute import SoftImpute

    d = np.load(path)
    m, n = (int(x) for x in d["shape"])
    t0 = time.perf_counter()
    X = np.full((m, n), np.nan)
    X[d["rows"], d["cols"]] = d["vals"]
    Xhat = SoftImpute(verbose=False).fit_transform(X)
    secs = time.perf_counter() - t0
    pred = Xhat[d["te_rows"], d["te_cols"]]
    err = pred - d["te_vals"]
    print(
        json.dumps(
            {
                "seconds": secs,
                "rmse": float(np.sqrt(np.mean(err**2))),
                "nmse": float(np.linalg.norm(err) / np.linalg.norm(d["te_vals"])),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
