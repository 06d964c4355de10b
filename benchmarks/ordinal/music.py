"""Music artists (Ma et al., Sec. 5.3, Figure 4) and eurodist (Sec. 5.2, Figure 3).

Music: 9,090 non-degenerate aset400 triplets over 400 artists, random 80/20
split per trial, p = 9; held-out error vs epochs (gradient passes) for every
method, cblearn in the same run. Eurodist: a 2-d embedding of 21 cities from
2,000 random triplets of their road distances (all other triplets held out),
Procrustes-aligned against classical MDS of the distances and plotted with
the city names.

    python benchmarks/ordinal/music.py --quick
    python benchmarks/ordinal/music.py

Writes benchmarks/results/ordinal_music.{json,md,png} and ordinal_eurodist.png.
Needs $EMBEDOPT_DATA (music-aset400-triplets/, eurodist/).
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

from embedopt.data import (
    load_eurodist,
    load_music_triplets,
    make_all_triplets,
    make_random_triplets,
    split_comparisons,
)
from embedopt.metrics import procrustes_align, procrustes_distance, triplet_error
from embedopt.ordinal import projected_gd, svrg_sbb

METHODS = [*C.STOCHASTIC_METHODS, ("cvx (projected GD)", projected_gd, {})]


def music(losses, trials, epochs):
    data = load_music_triplets()
    comps = data.comparisons
    n = comps.n_objects
    rows, curves = {}, {}
    for trial in range(trials):
        train, test = split_comparisons(comps, (0.8, 0.2), random_state=trial)
        for loss in losses:
            for label, fn, kw in METHODS:
                key = (loss, label)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        res = fn(
                            train,
                            9,
                            loss=loss,
                            max_iter=epochs,
                            tol=0,
                            validation=test,
                            random_state=trial,
                            device="cpu",
                            **kw,
                        )
                    except Exception as exc:
                        rows.setdefault(key, {}).setdefault("failures", []).append(
                            repr(exc)[:120]
                        )
                        continue
                h = res.history
                r = rows.setdefault(key, {})
                r.setdefault("final", []).append(float(h["val_error"][-1]))
                r.setdefault("best", []).append(float(h["val_error"].min()))
                r.setdefault("seconds", []).append(float(h["time"][-1]))
                curves.setdefault(key, []).append(
                    (h["passes"].tolist(), h["val_error"].tolist())
                )
            if C.have_cblearn():
                cb = C.run_cblearn(loss, train.indices, n, 9, test.indices, seed=trial)
                r = rows.setdefault((loss, "cblearn (L-BFGS-B)"), {})
                r.setdefault("final", []).append(cb["final_error"])
                r.setdefault("best", []).append(float(np.min(cb["errors"])))
                r.setdefault("seconds", []).append(cb["fit_seconds"])
        print(f"music trial {trial + 1}/{trials} done", flush=True)
    return rows, curves


def classical_mds(D: np.ndarray, p: int) -> np.ndarray:
    n = D.shape[0]
    J = np.eye(n) - 1.0 / n
    B = -0.5 * J @ (D**2) @ J
    w, V = np.linalg.eigh(B)
    return V[:, ::-1][:, :p] * np.sqrt(np.maximum(w[::-1][:p], 0))


def eurodist(seed: int = 0):
    data = load_eurodist()
    D = data.distances
    train = make_random_triplets(distances=D, n_triplets=2000, random_state=seed)
    test = make_all_triplets(distances=D, exclude=train)
    mds = classical_mds(D, 2)
    out = {"n_train": len(train), "n_test": len(test)}
    embeddings = {"classical MDS (distances)": mds}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = svrg_sbb(
            train, 2, loss="ste", max_iter=50, random_state=seed, device="cpu"
        )
    embeddings["SVRG-SBB_eps (STE)"] = res.x.numpy()
    out["svrg_sbb_seconds"] = float(res.history["time"][-1])
    if C.have_cblearn():
        cb = C.run_cblearn("ste", train.indices, 21, 2, test.indices, seed=seed)
        embeddings["cblearn STE"] = cb["embedding"]
        out["cblearn_seconds"] = cb["fit_seconds"]
    for name, X in embeddings.items():
        out[name] = {
            "held_out_triplet_error": triplet_error(X, test),
            "procrustes_distance_to_mds": procrustes_distance(X, mds),
        }
    return out, embeddings, data.names, mds


def plot_eurodist(embeddings, names, mds, path):
    plt = _shared.figure()

    others = [k for k in embeddings if not k.startswith("classical")]
    fig, axes = plt.subplots(1, len(others), figsize=(6 * len(others), 5.5))
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, others, strict=True):
        A = procrustes_align(embeddings[name], mds)
        ax.scatter(mds[:, 0], mds[:, 1], c="tab:blue", marker="s", s=18, label="MDS")
        ax.scatter(A[:, 0], A[:, 1], c="tab:red", marker="d", s=18, label=name)
        for i, city in enumerate(names):
            ax.annotate(city, mds[i], fontsize=6, color="tab:blue")
            ax.annotate(city, A[i], fontsize=6, color="tab:red", style="italic")
        ax.set_title(f"eurodist: {name} vs classical MDS (Procrustes-aligned)")
        ax.legend(fontsize=7)
        ax.set_aspect("equal")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def plot_music(curves, losses, path):
    plt = _shared.figure()

    fig, axes = plt.subplots(1, len(losses), figsize=(4.5 * len(losses), 3.6))
    axes = np.atleast_1d(axes)
    for ax, loss in zip(axes, losses, strict=True):
        for (lo, label), cs in curves.items():
            if lo != loss:
                continue
            n = min(len(c[1]) for c in cs)
            x = np.asarray(cs[0][0][:n])
            Y = np.array([c[1][:n] for c in cs])
            ax.plot(x, np.median(Y, 0), label=label, lw=1.2)
            ax.fill_between(
                x, np.quantile(Y, 0.25, 0), np.quantile(Y, 0.75, 0), alpha=0.15
            )
        ax.set(
            title=f"music, {loss}",
            xlabel="gradient evaluations / |Q|",
            ylim=(0.1, 0.55),
        )
    axes[0].set_ylabel("held-out triplet error (median, IQR)")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def markdown(rows, euro, trials, epochs, losses) -> str:
    lines = [
        f"Music artists: held-out triplet error (mean over {trials} random 80/20 "
        f"splits), {epochs} epochs per run (3 gradient passes each), p = 9; "
        "`best` is the lowest error seen along the run, `seconds` the solver time.",
        "",
        "| loss | method | final error | best error | seconds |",
        "|---|---|---|---|---|",
    ]
    for loss in losses:
        for (lo, label), r in rows.items():
            if lo != loss or "final" not in r:
                continue
            fails = len(r.get("failures", []))
            note = f" ({fails} diverged)" if fails else ""
            lines.append(
                f"| {loss} | {label}{note} | {C.fmt(np.mean(r['final']))} | "
                f"{C.fmt(np.mean(r['best']))} | {C.fmt(np.mean(r['seconds']), 2)} |"
            )
    lines += [
        "",
        f"Eurodist: {euro['n_train']} training triplets, {euro['n_test']} held out, "
        "p = 2; Procrustes distance to classical MDS of the road distances (0 = "
        "same map up to a similarity transform).",
        "",
        "| embedding | held-out triplet error | Procrustes distance to MDS |",
        "|---|---|---|",
    ]
    for name, v in euro.items():
        if isinstance(v, dict):
            lines.append(
                f"| {name} | {C.fmt(v['held_out_triplet_error'])} | "
                f"{C.fmt(v['procrustes_distance_to_mds'])} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    args = ap.parse_args(argv)
    trials = args.trials or (2 if args.quick else 10)
    epochs = args.epochs or (15 if args.quick else 30)
    losses = ["ste", "gnmds"] if args.quick else ["gnmds", "ckl", "ste", "tste"]
    t0 = time.perf_counter()
    rows, curves = music(losses, trials, epochs)
    euro, embeddings, names, mds = eurodist()
    md = markdown(rows, euro, trials, epochs, losses)
    payload = {
        "experiment": "Ma et al. Sec. 5.3 (music artists) and Sec. 5.2 (eurodist)",
        "config": {"trials": trials, "epochs": epochs, "losses": losses, "p": 9},
        "versions": _shared.environment("cblearn"),
        "music": {f"{lo}|{label}": r for (lo, label), r in rows.items()},
        "music_curves": {f"{lo}|{label}": c for (lo, label), c in curves.items()},
        "eurodist": euro,
        "eurodist_embeddings": {k: v for k, v in embeddings.items()},
        "eurodist_names": names,
        "wall_seconds": time.perf_counter() - t0,
    }
    path, _ = _shared.write_outputs("ordinal_music", payload, md)
    plot_music(curves, losses, _shared.RESULTS / "ordinal_music.png")
    plot_eurodist(embeddings, names, mds, _shared.RESULTS / "ordinal_eurodist.png")
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
