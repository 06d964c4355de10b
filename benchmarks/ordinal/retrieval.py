"""Retrieval with noisy class triplets (Ma et al., Sec. 5.4 protocol, Table II).

Data: the 8x8 digits (1,797 images, 10 classes; SUN397 is not available
here). 1,000 training images are embedded in p = 10 from 70,000 class
triplets (i, j same class, k another class), 5% / 10% / 15% of them
reversed; a nonlinear map from pixels to the embedding (RBF kernel ridge
regression, as the paper's regularized least squares) places the 797 test
images, which then query the training set: MAP, Precision@60, Recall@60.

    python benchmarks/ordinal/retrieval.py --quick
    python benchmarks/ordinal/retrieval.py

Writes benchmarks/results/ordinal_retrieval.{json,md,png}. Needs $EMBEDOPT_DATA
(sklearn-digits/).
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C  # first: it sets single-threading
import _shared

import argparse
import time
import warnings

import numpy as np

from embedopt.data import load_digits, make_class_triplets
from embedopt.metrics import retrieval_scores

K = 60
METHODS = C.STOCHASTIC_METHODS


def kernel_ridge(Xtr, Ytr, Xte, lam=1e-2):
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-9
    A, B = (Xtr - mu) / sd, (Xte - mu) / sd

    def sq(U, V):
        return (U * U).sum(1)[:, None] + (V * V).sum(1)[None, :] - 2 * U @ V.T

    D = sq(A, A)
    gamma = 1.0 / np.median(D[D > 0])
    Kmat = np.exp(-gamma * D)
    W = np.linalg.solve(Kmat + lam * len(A) * np.eye(len(A)), Ytr)
    return np.exp(-gamma * sq(B, A)) @ W


def plot(rows, rates, losses, path):
    plt = _shared.figure()

    fig, axes = plt.subplots(1, len(losses), figsize=(4.5 * len(losses), 3.5))
    axes = np.atleast_1d(axes)
    for ax, loss in zip(axes, losses, strict=True):
        labels = sorted({lab for (_, lo, lab) in rows if lo == loss})
        for lab in labels:
            ys = [rows.get((r, loss, lab), {}).get("map", np.nan) for r in rates]
            ax.plot([100 * r for r in rates], ys, marker="o", label=lab)
        ax.set(title=f"digits, {loss}", xlabel="flipped triplets (%)", ylabel="MAP")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def configure(argv=None) -> dict:
    """The command line, resolved: epochs, losses and flip rates of the run."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--epochs", type=int, default=None)
    args = ap.parse_args(argv)
    return {
        "epochs": args.epochs or (10 if args.quick else 20),
        "losses": ["ste"] if args.quick else ["gnmds", "ste", "tste"],
        "rates": [0.05, 0.10, 0.15],
        "K": K,
    }


def _scores(E, secs, Xtr, ytr, Xte, yte) -> dict:
    """MAP, P@K, R@K of the test images mapped into the embedding E."""
    sc = retrieval_scores(kernel_ridge(Xtr, E, Xte), yte, E, ytr, k=K)
    return {
        "map": sc["map"],
        "precision": sc["precision"][K],
        "recall": sc["recall"][K],
        "seconds": secs,
    }


def run(config: dict) -> tuple[dict, dict]:
    """Every (flip rate, loss, method): its retrieval scores; and the raw pixels'."""
    data = load_digits()
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(data.y))
    tr, te = perm[:1000], perm[1000:]
    Xtr, ytr, Xte, yte = data.X[tr], data.y[tr], data.X[te], data.y[te]
    rows = {}
    for rate in config["rates"]:
        comps = make_class_triplets(ytr, 70_000, flip_rate=rate, random_state=1)
        for loss in config["losses"]:
            for label, fn, kw in METHODS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        res = fn(
                            comps,
                            10,
                            loss=loss,
                            max_iter=config["epochs"],
                            tol=0,
                            random_state=0,
                            device="cpu",
                            **kw,
                        )
                        E = res.x.numpy().astype(np.float64)
                        secs = float(res.history["time"][-1])
                    except Exception as exc:
                        rows[(rate, loss, label)] = {"failed": repr(exc)[:100]}
                        continue
                rows[(rate, loss, label)] = _scores(E, secs, Xtr, ytr, Xte, yte)
            if C.have_cblearn():
                cb = C.run_cblearn(loss, comps.indices, 1000, 10, comps.indices[:10])
                rows[(rate, loss, "cblearn (L-BFGS-B)")] = _scores(
                    cb["embedding"], cb["fit_seconds"], Xtr, ytr, Xte, yte
                )
            print(f"flip {rate} {loss} done", flush=True)
    # reference: the raw pixels (no learning) under the same protocol
    raw = retrieval_scores(Xte, yte, Xtr, ytr, k=K)
    return rows, raw


def report(rows: dict, raw: dict, epochs: int) -> str:
    """The Markdown table of a :func:`run`."""
    lines = [
        f"Digits retrieval: 1,000 training images embedded (p = 10) from 70,000 "
        f"class triplets with a fraction reversed; test images mapped by RBF kernel "
        f"ridge regression query the training set. {epochs} epochs per solver. "
        f"MAP / P@{K} / R@{K}; raw pixels give MAP {raw['map']:.3f}, "
        f"P@{K} {raw['precision'][K]:.3f}.",
        "",
        "| flipped | loss | method | MAP | P@60 | R@60 | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for (rate, loss, label), r in rows.items():
        if "failed" in r:
            lines.append(f"| {rate:.0%} | {loss} | {label} | failed | | | |")
            continue
        lines.append(
            f"| {rate:.0%} | {loss} | {label} | {r['map']:.3f} | {r['precision']:.3f}"
            f" | {r['recall']:.3f} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    config = configure(argv)
    t0 = time.perf_counter()
    rows, raw = run(config)
    md = report(rows, raw, config["epochs"])
    payload = {
        "experiment": "Ma et al. Sec. 5.4 protocol on digits",
        "config": config,
        "versions": _shared.environment("cblearn"),
        "raw_pixels": raw,
        "results": {f"{a}|{b}|{c}": r for (a, b, c), r in rows.items()},
        "wall_seconds": time.perf_counter() - t0,
    }
    path, _ = _shared.write_outputs("ordinal_retrieval", payload, md)
    plot(
        rows,
        config["rates"],
        config["losses"],
        _shared.RESULTS / "ordinal_retrieval.png",
    )
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
