"""``embedopt quantize``: product quantization with a learned rotation."""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from ._common import add_device_option, add_json_option, table_rows, write_json


def _rotation_names():
    """The rotation learners ``--methods`` accepts: the one lookup."""
    from ..quantization import ROTATIONS

    return ROTATIONS


COMMAND = "quantize"
HELP = (
    "PQ with rotation learning: GCD-G vs OPQ distortion (default: a "
    "synthetic correlated-Gaussian set)"
)
DESCRIPTION = (
    "Fit product quantizers whose rotation is learned by different methods "
    "(Givens coordinate descent GCD-R/G/S, OPQ's SVD Procrustes, Cayley, "
    "none) and print the training distortion per outer iteration, the "
    "held-out distortion and the fit time. Data: a correlated Gaussian "
    "(decaying spectrum in a random basis), GloVe-6B-50d from "
    "$EMBEDOPT_DATA, or a .npy / .fvecs file; 20% of the vectors are held "
    "out."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt quantize`` to the parser ``p``."""
    p.add_argument(
        "--data",
        default="synthetic",
        help="synthetic, glove, or a path to a .npy / .fvecs file (default: synthetic)",
    )
    p.add_argument("--data-dir", default=None, help="dataset root for glove")
    p.add_argument("--n", type=int, default=5000, help="number of vectors (5000)")
    p.add_argument(
        "--dim", type=int, default=32, help="dimension of the synthetic set (32)"
    )
    p.add_argument("-M", "--subquantizers", type=int, default=4, help="M (4)")
    p.add_argument("-K", "--centroids", type=int, default=64, help="K (64)")
    p.add_argument("--iters", type=int, default=20, help="outer iterations (20)")
    p.add_argument(
        "--methods",
        default="none,opq,gcd-g",
        help="comma list among none, opq, gcd-r, gcd-g, gcd-s, gcd-r-overlap, "
        "gcd-g-overlap, cayley, unconstrained (default: none,opq,gcd-g)",
    )
    p.add_argument(
        "--rotation-init",
        default="identity",
        choices=["identity", "random", "eigenvalue"],
    )
    p.add_argument("--steps", type=int, default=5, help="GCD steps per iteration (5)")
    p.add_argument("--step-rule", default="gradient", choices=["gradient", "exact"])
    p.add_argument("--seed", type=int, default=0)
    add_device_option(p)
    add_json_option(p)


def _load(args):
    from ..data import load_glove, make_correlated_gaussian, read_fvecs

    rng = np.random.default_rng(args.seed)
    if args.data == "synthetic":
        return make_correlated_gaussian(args.n, args.dim, random_state=rng)
    if args.data == "glove":
        X = load_glove(args.data_dir)
    elif args.data.endswith(".fvecs"):
        X = read_fvecs(args.data)
    else:
        X = np.load(args.data, mmap_mode="r")
    take = rng.permutation(X.shape[0])[: args.n]
    return np.asarray(X[np.sort(take)], dtype=np.float32)


def _fit_one(args, method, train, val) -> dict:
    from .._core import ConvergenceWarning
    from ..quantization import ProductQuantizer

    pq = ProductQuantizer(
        args.subquantizers,
        args.centroids,
        rotation=method,
        rotation_init=args.rotation_init,
        max_iter=args.iters,
        n_rotation_steps=args.steps,
        step_rule=args.step_rule,
        tol=0.0,
        random_state=args.seed,
        device=args.device,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pq.fit(train)
    secs = time.perf_counter() - t0
    return dict(
        train_distortion=pq.distortion_,
        heldout_distortion=pq.distortion(val),
        seconds=secs,
        history=pq.history_["objective"].tolist(),
    )


def run(args) -> int:
    """Run ``embedopt quantize``; return the exit status."""
    rotations = _rotation_names()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in rotations]
    if bad:
        print(
            f"unknown method(s) {bad}; choose among {', '.join(rotations)}",
            file=sys.stderr,
        )
        return 2
    X = _load(args)
    n_val = max(1, X.shape[0] // 5)
    train, val = X[:-n_val], X[-n_val:]
    print(
        f"data: {args.data}  train={train.shape}  held-out={val.shape}  "
        f"M={args.subquantizers}  K={args.centroids}  init={args.rotation_init}"
    )
    out = {"data": args.data, "methods": {}}
    for m in methods:
        out["methods"][m] = _fit_one(args, m, train, val)
    print("\ntraining distortion per outer iteration:")
    print(f"{'iter':>5}" + "".join(f" {m:>14}" for m in methods))
    for i in table_rows(args.iters, 0, default_rows=10):
        print(
            f"{i + 1:>5}"
            + "".join(f" {out['methods'][m]['history'][i]:>14.6g}" for m in methods)
        )
    print(f"\n{'method':>14} {'train':>12} {'held-out':>12} {'seconds':>8}")
    for m, r in out["methods"].items():
        print(
            f"{m:>14} {r['train_distortion']:>12.6g} "
            f"{r['heldout_distortion']:>12.6g} {r['seconds']:>8.2f}"
        )
    print("(train: after 10 final k-means iterations with the rotation fixed)")
    write_json(args.json, out)
    return 0
