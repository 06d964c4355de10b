"""What only the sdp benchmarks share: their data, k-means on a factor, the scipy peer.

The library's own pieces come from the library (``embedopt.data.load_libsvm``,
``embedopt.metrics.rand_index`` / ``nearest_neighbor_accuracy``) and from
``benchmarks/_shared.py`` (``CpuClock``, ``time_to``, the peak-RSS probes).

Import it first in a script: it runs NumPy's BLAS (and OpenMP) on one thread,
which only works before NumPy loads. Measured here: with the default
OpenBLAS pool on the shared 2-core machine, one call of SciPy's L-BFGS-B
update (18,000 variables) took 117 ms instead of 1.2 ms, so every L-BFGS
number would have measured thread contention, not the method.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from embedopt.data import load_libsvm  # noqa: E402
from embedopt.sdp import kernel_kmeans  # noqa: E402

#: Columns of the LIBSVM adult files (a1a ... a9a): 123 binary features.
ADULT_FEATURES = 123


def data_dir() -> Path:
    """``$EMBEDOPT_DATA`` (the shared data folder), else ``../shared/data``."""
    root = os.environ.get("EMBEDOPT_DATA")
    if root:
        return Path(root)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def adult(name: str, rng=None):
    """``a1a``, ``a9a``, or ``a9a:<n>`` (n rows of a9a drawn without replacement)."""
    folder = data_dir() / "libsvm-adult"
    if ":" in name:
        base, size = name.split(":")
        X, y = load_libsvm(folder / base, ADULT_FEATURES)
        idx = np.sort(np.random.default_rng(rng).choice(len(y), int(size), False))
        return X[idx], y[idx]
    return load_libsvm(folder / name, ADULT_FEATURES)


def kmeans(V: np.ndarray, k: int, n_init: int = 10, seed: int = 0) -> np.ndarray:
    """Kernel k-means on Z = V V^T (:func:`embedopt.sdp.kernel_kmeans`)."""
    return kernel_kmeans(V, k, n_init=n_init, random_state=seed)


def digits(n: int | None = None):
    """The first n of the 1,797 8x8 digits (features 0..16, labels 0..9)."""
    from embedopt.data import load_digits

    d = load_digits(data_dir())
    return d.X[:n], d.y[:n]


class ScipyBurerMonteiro:
    """The peer: plain Burer-Monteiro on NPKL (eq. 13) with SciPy's L-BFGS-B.

    What a user writes without embedopt: ``f(V) = 1/2 sum_Omega ((V V^T)_ij -
    T_ij)^2 + lam tr(V^T Lap V)`` over the n x r factor, in NumPy / SciPy
    only, its gradient ``M V + 2 lam Lap V`` (M the sparse matrix of the
    residuals: ``r_p`` at ``(i, j)`` and ``(j, i)`` of a pair, ``2 r_p`` on the
    diagonal) through one CSR product whose pattern is built once, handed to
    ``scipy.optimize.minimize(method="L-BFGS-B")`` (10 correction pairs, its
    default) with both tolerances 0, stopped by a callback at the target.
    """

    def __init__(self, n, must_link, cannot_link, laplacian, lam):
        ml, cl = np.asarray(must_link), np.asarray(cannot_link)
        self.n, self.lam = n, float(lam)
        self.i = np.concatenate([ml[:, 0], cl[:, 0], np.arange(n)])
        self.j = np.concatenate([ml[:, 1], cl[:, 1], np.arange(n)])
        self.t = np.concatenate([np.ones(len(ml)), np.zeros(len(cl)), np.ones(n)])
        off = np.nonzero(self.i != self.j)[0]
        diag = np.nonzero(self.i == self.j)[0]
        rows = np.concatenate([self.i[off], self.j[off], self.i[diag]])
        cols = np.concatenate([self.j[off], self.i[off], self.i[diag]])
        pair = np.concatenate([off, off, diag])
        weight = np.concatenate([np.ones(2 * len(off)), 2 * np.ones(len(diag))])
        order = np.lexsort((cols, rows))
        self.cols, self.pair, self.weight = cols[order], pair[order], weight[order]
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
        self.lap = sp.csr_matrix(laplacian, dtype=np.float64)

    def fun(self, v: np.ndarray):
        """``(f(V), nabla f(V))`` for the flattened factor."""
        V = v.reshape(self.n, -1)
        resid = np.einsum("ij,ij->i", V[self.i], V[self.j]) - self.t
        M = sp.csr_matrix(
            (self.weight * resid[self.pair], self.cols, self.indptr),
            shape=(self.n, self.n),
        )
        LV = self.lap @ V
        value = 0.5 * float(resid @ resid) + self.lam * float(np.vdot(V, LV))
        return value, (M @ V + 2 * self.lam * LV).ravel()

    def solve(self, V0: np.ndarray, target: float, max_iter: int = 10_000):
        """Run L-BFGS-B from V0 until ``f <= target``, with its history.

        Returns
        -------
        dict
            ``V``, ``objective`` (final), ``n_iter``, ``reached``, ``message``,
            ``time`` and ``objective_history`` (per iteration; process time
            since the start, as ``_shared.CpuClock`` records for embedopt).
        """
        from scipy.optimize import minimize

        times, values = [], []
        t0 = time.process_time()

        def callback(intermediate_result):
            times.append(time.process_time() - t0)
            values.append(float(intermediate_result.fun))
            if values[-1] <= target:
                raise StopIteration

        res = minimize(
            self.fun,
            np.ascontiguousarray(V0, dtype=np.float64).ravel(),
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={"maxiter": max_iter, "ftol": 0.0, "gtol": 0.0, "maxcor": 10},
        )
        return {
            "V": res.x.reshape(self.n, -1),
            "objective": float(res.fun),
            "n_iter": len(values),
            "reached": bool(values) and values[-1] <= target,
            "message": str(res.message),
            "time": np.asarray(times),
            "objective_history": np.asarray(values),
        }
