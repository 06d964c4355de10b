"""New points for the transductive sdp estimators: ``transform`` on held-out digits.

Issue 23, item 5. ``KernelLearning`` (NPKL) and ``ColoredMVU`` (CMVU) learn an
embedding of the patterns of the fit; ``transform(X_new)`` places unseen
ones. Protocol, per split (seeds ``--seed`` ...): hold out ``--holdout``
(20 %) of the 1,797 8x8 digits (stratified), fit on the rest with the
estimator's defaults (NPKL: rank 10, lambda 1, 5-NN Laplacian, n // 2 pairs
of each kind sampled from the training labels; CMVU: rank 2, 5-NN pairs,
lambda 1, the training labels), place the held-out points with each
candidate extension, and measure on the held-out points only:

- **1-NN**: the share of held-out points whose nearest *training* point in
  the embedding has their label (the classifier a pipeline would build);
- **RI**: the Rand index of kernel k-means (10 clusters, k-means on the
  rows of the factor, ``embedopt.sdp.kernel_kmeans``) on the held-out rows.

Candidates (all from the fitted embedding V of the training points and
their features; k = the fit's ``n_neighbors``):

- ``knn-heat``: the weighted mean of the k nearest training points' rows of
  V, weights ``exp(-||x - x_j||^2 / t)`` with t the fit's heat-kernel
  bandwidth (the mean squared kNN distance of the training points), the
  weights of the graph NPKL's Laplacian is built from;
- ``knn-uniform``: the plain mean of the same k rows;
- ``nystrom-mu``: the kernel-regression (Nystrom-style) extension of the
  learned kernel through the RBF base kernel of the same bandwidth,
  ``v(x) = k(x, X) (K + mu I)^{-1} V`` (``K = k(X, X)``, one dense n x n
  solve at fit), mu = 1e-3 and 1e-1.

Against them, the same points fitted transductively (``transductive``: one
fit on all 1,797 points; NPKL with the same training pairs, so the
held-out points enter only through the Laplacian; CMVU with the held-out
points' labels hidden (zero rows of the label matrix, the problem built
directly), and ``transductive+labels``: the estimator on all points with
all labels, an upper bound that uses the held-out labels) and the raw
pixels (``pixels``).

    python benchmarks/sdp/transform_digits.py --quick   # 1 split (~15 s)
    python benchmarks/sdp/transform_digits.py           # 5 splits (~1 min)

Writes results/sdp_transform_digits[_quick].{json,md}.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
# _common first: one BLAS thread before NumPy loads
from _common import digits  # noqa: I001

import _shared
import numpy as np

N_CLASSES = 10


def _args():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=None, help="default 1 quick, 5")
    p.add_argument("--holdout", type=float, default=0.2)
    return p.parse_args()


def _split(y, frac, seed):
    """Stratified split: (train indices, held-out indices), both sorted."""
    rng = np.random.default_rng(seed)
    held = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        held.append(rng.choice(idx, round(frac * len(idx)), replace=False))
    held = np.sort(np.concatenate(held))
    return np.setdiff1d(np.arange(len(y)), held), held


def _sqdist(A, B):
    return np.maximum((A * A).sum(1)[:, None] + (B * B).sum(1) - 2 * A @ B.T, 0)


def _bandwidth(X, k):
    """The fit's default heat-kernel width: mean squared kNN distance."""
    d2 = _sqdist(X, X)
    np.fill_diagonal(d2, np.inf)
    return float(np.sort(d2, 1)[:, :k].mean())


def knn_mean(Xtr, V, Xnew, k, t=None):
    """Weighted (heat kernel of width t; None: uniform) mean of kNN rows."""
    d2 = _sqdist(Xnew, Xtr)
    nn = np.argsort(d2, 1)[:, :k]
    dk = np.take_along_axis(d2, nn, 1)
    if t is None:
        w = np.ones_like(dk)
    else:  # relative to the nearest, so that no row's weights all underflow
        w = np.exp(-(dk - dk[:, :1]) / t)
    w /= w.sum(1, keepdims=True)
    return np.einsum("mk,mkr->mr", w, V[nn])


def nystrom(Xtr, V, Xnew, t, mu):
    """Kernel regression of V on the RBF base kernel: k(x, X)(K + mu I)^-1 V."""
    K = np.exp(-_sqdist(Xtr, Xtr) / t)
    A = np.linalg.solve(K + mu * np.eye(len(K)), V)
    return np.exp(-_sqdist(Xnew, Xtr) / t) @ A


def _quality(Vtr, ytr, Vnew, ynew, seed):
    from embedopt.metrics import rand_index
    from embedopt.sdp import kernel_kmeans

    nearest = np.argmin(_sqdist(Vnew, Vtr), 1)
    acc = float((ytr[nearest] == ynew).mean())
    ri = rand_index(kernel_kmeans(Vnew, N_CLASSES, random_state=seed), ynew)
    return acc, ri


def _cmvu_hidden(est, X, y, held, seed):
    """CMVU on all points with the held-out labels hidden: the label matrix's
    rows of the held-out points are zero (no label term for them)."""
    from embedopt.sdp import CMVUProblem, bm_lbfgs, knn_pairs, one_hot_labels

    labels = one_hot_labels(y)
    labels[held] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs, sqdist = knn_pairs(X, est.n_neighbors)
        problem = CMVUProblem(len(y), pairs, sqdist, labels, lam=est.lam)
        res = bm_lbfgs(problem, est.n_components, tol=1e-8, random_state=seed)
    return res.x.double().numpy()


def _npkl(X, y, tr, held, seed):
    from embedopt.sdp import KernelLearning, sample_pairs

    est = KernelLearning(random_state=seed)
    ml, cl = sample_pairs(y[tr], n_pairs=len(tr) // 2, random_state=seed)
    t0 = time.process_time()
    est.fit(X[tr], must_link=ml, cannot_link=cl)
    fit_s = time.process_time() - t0
    full = KernelLearning(random_state=seed).fit(
        X, must_link=tr[ml], cannot_link=tr[cl]
    )
    return est, fit_s, {"transductive": full.embedding_}


def _cmvu(X, y, tr, held, seed):
    from embedopt.sdp import ColoredMVU

    est = ColoredMVU(random_state=seed)
    t0 = time.process_time()
    est.fit(X[tr], y[tr])
    fit_s = time.process_time() - t0
    return (
        est,
        fit_s,
        {
            "transductive": _cmvu_hidden(est, X, y, held, seed),
            "transductive+labels": ColoredMVU(random_state=seed).fit(X, y).embedding_,
        },
    )


def _one(name, X, y, tr, held, seed):
    est, fit_s, full = (_npkl if name == "npkl" else _cmvu)(X, y, tr, held, seed)
    Xtr, V, Xh = X[tr], est.embedding_, X[held]
    k = est.n_neighbors
    t = _bandwidth(Xtr, k)
    placed, times = {}, {}

    def timed(label, fn):
        t0 = time.process_time()
        placed[label] = fn()
        times[label] = time.process_time() - t0

    if hasattr(est, "transform"):
        timed("transform", lambda: est.transform(Xh))
    timed("knn-heat", lambda: knn_mean(Xtr, V, Xh, k, t))
    timed("knn-uniform", lambda: knn_mean(Xtr, V, Xh, k))
    for mu in (1e-3, 1e-1):
        timed(f"nystrom-{mu:g}", lambda mu=mu: nystrom(Xtr, V, Xh, t, mu))
    rows = {}
    for label, Vh in placed.items():
        rows[label] = (*_quality(V, y[tr], Vh, y[held], seed), times[label])
    for label, F in full.items():
        rows[label] = (*_quality(F[tr], y[tr], F[held], y[held], seed), None)
    rows["pixels"] = (*_quality(Xtr, y[tr], Xh, y[held], seed), None)
    return rows, fit_s


def main():
    args = _args()
    _shared.setup(args)
    X, y = digits()
    repeats = args.repeats or (1 if args.quick else 5)
    results = {}
    for name in ("npkl", "cmvu"):
        per = {}
        for s in range(args.seed, args.seed + repeats):
            tr, held = _split(y, args.holdout, s)
            rows, fit_s = _one(name, X, y, tr, held, s)
            for label, row in rows.items():
                per.setdefault(label, []).append(row)
            print(
                f"{name} seed {s}: fit {fit_s:.2f} s; "
                + ", ".join(f"{k} {v[0]:.3f}/{v[1]:.3f}" for k, v in rows.items())
            )
        results[name] = {
            label: {
                "nn1": float(np.mean([r[0] for r in rs])),
                "nn1_min": float(np.min([r[0] for r in rs])),
                "ri": float(np.mean([r[1] for r in rs])),
                "ri_min": float(np.min([r[1] for r in rs])),
                "place_ms": None
                if rs[0][2] is None
                else 1e3 * float(np.median([r[2] for r in rs])),
            }
            for label, rs in per.items()
        }
    lines = [
        f"digits, {args.holdout:.0%} held out, {repeats} split(s); held-out "
        "points only",
        "",
        "| estimator | placement | 1-NN (%) mean | min | RI (%) mean | min "
        "| place ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, table in results.items():
        for label, r in table.items():
            ms = "" if r["place_ms"] is None else f"{r['place_ms']:.1f}"
            lines.append(
                f"| {name.upper()} | {label} | {100 * r['nn1']:.2f} | "
                f"{100 * r['nn1_min']:.2f} | {100 * r['ri']:.2f} | "
                f"{100 * r['ri_min']:.2f} | {ms} |"
            )
    text = "\n".join(lines)
    print(text)
    name = "sdp_transform_digits" + ("_quick" if args.quick else "")
    config = {**vars(args), "repeats": repeats}
    print("wrote", _shared.write(name, args.out, config, results, text))


if __name__ == "__main__":
    main()
