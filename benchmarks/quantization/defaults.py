"""ProductQuantizer with its defaults vs faiss OPQ with its defaults (issue 13).

Every row runs ``ProductQuantizer(M, 256)`` with nothing else set but the seed
and the device, and, in the same process and interleaved seed by seed,
``faiss.OPQMatrix(d, M)`` + ``faiss.IndexPQ(d, M, 8)`` with faiss' defaults
(OPQ: ``niter = 50``, ``niter_pq = 4``, ``niter_pq_0 = 40``; PQ: 25 k-means
iterations), on one thread each. Quality is the held-out distortion
``mean ||x - T(x)||^2`` of vectors not used for training (lower is better);
time is the training (fit) time. Each seed draws its own train / held-out
split. GloVe was used to choose the defaults; the image patches, the
MovieLens user factors and the correlated Gaussian set were not.

    python benchmarks/quantization/defaults.py --quick     # CI-sized, < 1 min
    python benchmarks/quantization/defaults.py              # full, a few minutes

Writes results/quant_defaults[_quick].{json,md}. ``rows(quick, seeds)`` returns
the table for ``benchmarks/defaults.py``; it runs with the thread settings of
the calling process, so call ``_shared.limit_threads(1, environ=True)`` before
torch and faiss load, as ``main`` does (a row's note says when torch is not on
one thread).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

K = 256
PEER = "faiss.OPQMatrix(d, M) + IndexPQ(d, M, 8), defaults (OPQ niter 50)"
# Grayscale test images cut into 8 x 8 patches (64-d vectors, intensities in
# [0, 1]): natural-image statistics, a set the defaults were not chosen on.
PATCH_IMAGES = (
    "camera",
    "moon",
    "brick",
    "coins",
    "page",
    "text",
    "grass",
    "gravel",
    "cell",
    "astronaut",
    "chelsea",
    "coffee",
)


def _glove(n_train, n_held, rng):
    import numpy as np

    from embedopt.data import load_glove

    X = np.asarray(load_glove())
    idx = rng.choice(X.shape[0], n_train + n_held, replace=False)
    return X[idx[:n_train]], X[idx[n_train:]]


def _patches(n_train, n_held, rng, size=8):
    import numpy as np

    from embedopt.data import load_test_image

    # A fixed number of patches per image (top-left corners drawn uniformly),
    # so that every image contributes and no single texture dominates.
    per = -(-(n_train + n_held) // len(PATCH_IMAGES))
    out = []
    for name in PATCH_IMAGES:
        img = load_test_image(name).astype(np.float32)
        h, w = img.shape
        r = rng.integers(0, h - size + 1, per)
        c = rng.integers(0, w - size + 1, per)
        win = np.lib.stride_tricks.sliding_window_view(img, (size, size))
        out.append(win[r, c].reshape(per, size * size))
    X = np.concatenate(out)[rng.permutation(per * len(PATCH_IMAGES))]
    return X[:n_train], X[n_train : n_train + n_held]


def _movielens_users(n_train, n_held, rng, rank=32):
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.linalg import svds

    from embedopt.data import load_movielens

    e = load_movielens("1m").entries
    # Mean-centred ratings; the user factors U S of a rank-32 truncated SVD
    # are the "user embeddings" a recommender would index.
    vals = e.values - e.values.mean()
    A = sp.csr_matrix((vals, (e.indices[:, 0], e.indices[:, 1])), shape=e.shape)
    U, s, _ = svds(A, k=rank, random_state=0)
    X = (U * s).astype(np.float32)
    idx = rng.permutation(X.shape[0])[: n_train + n_held]
    return X[idx[:n_train]], X[idx[n_train:]]


def _gaussian(n_train, n_held, rng):
    from embedopt.data import make_correlated_gaussian

    X = make_correlated_gaussian(n_train + n_held, 128, random_state=rng)
    return X[:n_train], X[n_train:]


# name -> (loader, M, (train, held-out) full, (train, held-out) quick or None
# when the set is left out of --quick, tuned_on, note).
DATASETS = {
    "GloVe-6B-50d, M=10": (_glove, 10, (20000, 10000), None, True, "issue 13"),
    "GloVe-6B-50d, M=5": (_glove, 5, (20000, 10000), (5000, 2000), True, ""),
    "image patches 8x8, M=8": (
        _patches,
        8,
        (20000, 10000),
        (5000, 2000),
        False,
        "12 test images",
    ),
    "MovieLens-1M user factors (rank 32), M=8": (
        _movielens_users,
        8,
        (4000, 2040),
        None,
        False,
        "SVD of centred ratings",
    ),
    "correlated Gaussian 128-d, M=16": (
        _gaussian,
        16,
        (20000, 5000),
        None,
        False,
        "synthetic, decay 8",
    ),
}


def _distortion(X, rec) -> float:
    import numpy as np

    return float(((np.asarray(X, np.float64) - rec) ** 2).sum(1).mean())


def run_ours(train, held, M, seed) -> dict:
    """Fit ``ProductQuantizer(M, 256)`` with its defaults (seed, CPU)."""
    from embedopt import ConvergenceWarning
    from embedopt.quantization import ProductQuantizer

    pq = ProductQuantizer(M, K, random_state=seed, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with _shared.Timer() as t:
            pq.fit(train)
    return dict(value=pq.distortion(held), seconds=t.seconds, n_iter=int(pq.n_iter_))


def run_faiss(train, held, M, seed) -> dict:
    """Train faiss OPQ + PQ with faiss' defaults (seed of its k-means)."""
    import faiss
    import numpy as np

    d = train.shape[1]
    opq = faiss.OPQMatrix(d, M)
    ipq = faiss.IndexPQ(d, M, 8)
    ipq.pq.cp.seed = seed
    index = faiss.IndexPreTransform(opq, ipq)
    train = np.ascontiguousarray(train, dtype=np.float32)
    held = np.ascontiguousarray(held, dtype=np.float32)
    with _quiet_stderr(), _shared.Timer() as t:
        index.train(train)
    rec = index.sa_decode(index.sa_encode(held))
    return dict(value=_distortion(held, rec), seconds=t.seconds)


@contextlib.contextmanager
def _quiet_stderr():
    # faiss' C++ k-means prints "please provide at least 9984 training points"
    # for each of its ~200 k-means runs on sets below 39 * 256 vectors (the
    # quick and MovieLens rows): silence file descriptor 2 while it trains.
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _have_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def rows(quick: bool = False, seeds: int | None = None) -> list[dict]:
    """One row per dataset: our defaults vs faiss' defaults, medians over seeds.

    Parameters
    ----------
    quick : bool
        CI-sized: the two smaller sets at 5k training vectors.
    seeds : int, optional
        Seeds per dataset (default 1 quick, 3 full).

    Returns
    -------
    list of dict
        Keys ``estimator``, ``dataset``, ``tuned_on``, ``metric``,
        ``lower_is_better``, ``ours``, ``ours_seconds``, ``peer``,
        ``peer_value``, ``peer_seconds``, ``n_seeds``, ``note`` (and the
        per-seed values under ``per_seed``).
    """
    n_seeds = seeds or (1 if quick else 3)
    peer_ok = _have_faiss()
    out = []
    for name, (load, M, full, small, tuned, note) in DATASETS.items():
        if quick and small is None:
            continue
        n_train, n_held = small if quick else full
        ours, peer = _run_dataset(load, M, n_train, n_held, n_seeds, peer_ok)
        out.append(
            dict(
                estimator=f"ProductQuantizer({M}, {K})",
                dataset=f"{name} ({n_train} train / {n_held} held-out)",
                tuned_on=tuned,
                metric="held-out distortion",
                lower_is_better=True,
                ours=_shared.median(r["value"] for r in ours),
                ours_seconds=_shared.median(r["seconds"] for r in ours),
                peer=PEER,
                peer_value=_shared.median(r["value"] for r in peer) if peer else None,
                peer_seconds=_shared.median(r["seconds"] for r in peer)
                if peer
                else None,
                n_seeds=n_seeds,
                note=_row_note(note, peer_ok),
                per_seed=dict(ours=ours, peer=peer),
            )
        )
    return out


def _run_dataset(load, M, n_train, n_held, n_seeds, peer_ok) -> tuple[list, list]:
    """Our runs and faiss' runs (empty without faiss) on one dataset."""
    import numpy as np

    ours, peer = [], []
    for seed in range(n_seeds):
        train, held = load(n_train, n_held, np.random.default_rng(seed))
        # Alternate who runs first, so a change of load on the shared
        # machine does not always hit the same side.
        order = ("ours", "peer") if seed % 2 == 0 else ("peer", "ours")
        for who in order:
            if who == "ours":
                ours.append(run_ours(train, held, M, seed))
            elif peer_ok:
                peer.append(run_faiss(train, held, M, seed))
    return ours, peer


def _row_note(note: str, peer_ok: bool) -> str:
    """A dataset's note, plus what makes its times or its peer column odd."""
    import torch

    parts = [note] if note else []
    if torch.get_num_threads() != 1:
        # Oversubscribed OpenMP threads on a loaded machine slow torch
        # down several-fold (7.8 s instead of 1.6 s for the quick patches
        # row with 2 threads): say so next to the times.
        parts.append(f"torch on {torch.get_num_threads()} threads")
    if not peer_ok:
        parts.append("faiss not installed")
    return "; ".join(parts)


def _markdown(table: list[dict]) -> str:
    def ratio(a, b):
        return a / b if a is not None and b else float("nan")

    body = [
        [
            r["dataset"],
            "yes" if r["tuned_on"] else "no",
            r["ours"],
            r["peer_value"] if r["peer_value"] is not None else "-",
            ratio(r["ours"], r["peer_value"]),
            r["ours_seconds"],
            r["peer_seconds"] if r["peer_seconds"] is not None else "-",
            ratio(r["ours_seconds"], r["peer_seconds"]),
            r["n_seeds"],
        ]
        for r in table
    ]
    head = [
        "dataset",
        "tuned on",
        "ours: held-out distortion",
        "faiss OPQ",
        "ratio",
        "ours fit s",
        "faiss fit s",
        "time ratio",
        "seeds",
    ]
    return (
        "# ProductQuantizer(M, 256) defaults vs faiss OPQ defaults\n\n"
        f"Medians over seeds; one thread each. Peer: {PEER}.\n\n"
        + _shared.markdown_table(head, body)
        + "\n"
    )


def _parser():
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI-sized run (< 1 min)")
    p.add_argument("--seeds", type=int, default=None, help="default 1 quick, 3 full")
    p.add_argument("--threads", type=int, default=1, help="threads per library")
    p.add_argument("--out", default=str(_shared.RESULTS), help="output folder")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    table = rows(args.quick, args.seeds)
    md = _markdown(table)
    print(md)
    tag = "quant_defaults" + ("_quick" if args.quick else "")
    payload = dict(
        config=vars(args),
        environment=_shared.environment("faiss"),
        rows=table,
    )
    js, mdp = _shared.write_outputs(tag, payload, md, args.out)
    print(f"wrote {js}, {mdp}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
