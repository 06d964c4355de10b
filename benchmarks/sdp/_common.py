"""Shared pieces of the sdp benchmarks: data, clustering, Rand index, the scipy peer.

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


def data_dir() -> Path:
    """``$EMBEDOPT_DATA`` (the shared data folder), else ``../shared/data``."""
    root = os.environ.get("EMBEDOPT_DATA")
    if root:
        return Path(root)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def read_svmlight(path, n_features: int = 123):
    """An svmlight file as (CSR features, int labels), without scikit-learn."""
    rows, cols, vals, labels = [], [], [], []
    with open(path) as fh:
        for r, line in enumerate(fh):
            label, *items = line.split()
            labels.append(int(float(label)))
            for item in items:
                k, v = item.split(":")
                rows.append(r)
                cols.append(int(k) - 1)
                vals.append(float(v))
    X = sp.csr_matrix((vals, (rows, cols)), shape=(len(labels), n_features))
    return X, np.asarray(labels)


def adult(name: str, rng=None):
    """``a1a``, ``a9a``, or ``a9a:<n>`` (n rows of a9a drawn without replacement)."""
    folder = data_dir() / "libsvm-adult"
    if ":" in name:
        base, size = name.split(":")
        X, y = read_svmlight(folder / base)
        idx = np.sort(np.random.default_rng(rng).choice(len(y), int(size), False))
        return X[idx], y[idx]
    return read_svmlight(folder / name)


def kmeans(V: np.ndarray, k: int, n_init: int = 10, seed: int = 0) -> np.ndarray:
    """Kernel k-means on Z = V V^T: k-means (Lloyd, k-means++) on the rows of V."""
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    best, best_cost = None, np.inf
    for _ in range(n_init):
        centers, labels = kmeans2(V, k, minit="++", seed=rng)
        cost = float(((V - centers[labels]) ** 2).sum())
        if cost < best_cost:
            best, best_cost = labels, cost
    return best


def rand_index(a, b) -> float:
    """Rand (1971): the fraction of the n(n-1)/2 pairs on which a and b agree.

    From the contingency table, O(n + k^2), so a9a's 5e8 pairs cost nothing.
    """
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    n = len(a)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)

    def pairs(x):
        return float((x * (x - 1) / 2).sum())

    total = n * (n - 1) / 2
    same_both = pairs(table)
    same_a, same_b = pairs(table.sum(1)), pairs(table.sum(0))
    return (total + 2 * same_both - same_a - same_b) / total


def digits(n: int | None = None):
    """The first n of the 1,797 8x8 digits (features 0..16, labels 0..9)."""
    from embedopt.data import load_digits

    d = load_digits(data_dir())
    return d.X[:n], d.y[:n]


def reset_peak_rss() -> float:
    """Reset this process's peak resident memory (Linux); return the current RSS, MiB.

    Writing 5 to ``/proc/self/clear_refs`` sets VmHWM back to VmRSS, so
    :func:`peak_rss_mb` after a call measures that call's peak.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_kb("VmRSS") / 1024
    except OSError:
        return float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory since :func:`reset_peak_rss`, MiB (NaN off Linux)."""
    try:
        return _status_kb("VmHWM") / 1024
    except OSError:
        return float("nan")


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise OSError(key)


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
            since the start, as :class:`CpuClock` records for embedopt).
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


def time_to(times, values, threshold) -> float:
    """First time at which ``values <= threshold`` (NaN if never)."""
    hit = np.nonzero(np.asarray(values) <= threshold)[0]
    return float(np.asarray(times)[hit[0]]) if hit.size else float("nan")


def loo_1nn_accuracy(E, y) -> float:
    """Leave-one-out 1-nearest-neighbour accuracy of the rows of E (Euclidean)."""
    E = np.asarray(E, dtype=np.float64)
    sq = (E * E).sum(1)
    d2 = sq[:, None] + sq[None, :] - 2 * E @ E.T
    np.fill_diagonal(d2, np.inf)
    y = np.asarray(y)
    return float((y[d2.argmin(1)] == y).mean())
