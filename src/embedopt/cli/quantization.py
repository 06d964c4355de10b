"""``embedopt quantize``: product quantization with a learned rotation."""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ._common import (
    CommandError,
    add_choice_option,
    add_data_options,
    add_device_option,
    add_int_option,
    add_output_options,
    add_seed_option,
    save_plot,
    table_rows,
    write_json,
)

_DATASETS = ("synthetic", "glove")
#: The M used when -M is not given and it divides the dimension (else the
#: nearest divisor).
_PREFERRED_M = 4


def _rotation_names():
    """The rotation learners ``--methods`` accepts: the one lookup."""
    from ..quantization import ROTATIONS

    return ROTATIONS


def _method_list(text: str) -> list[str]:
    """``--methods``: a comma list of rotation learners, checked at parse time."""
    rotations = _rotation_names()
    methods = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in methods if m not in rotations]
    if bad or not methods:
        raise argparse.ArgumentTypeError(
            f"unknown method(s) {', '.join(bad) or '(none given)'}; choose among "
            f"{', '.join(rotations)}"
        )
    return methods


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
    add_data_options(p, _DATASETS, "a .npy or .fvecs file of vectors")
    add_int_option(
        p,
        "--n",
        default=5000,
        help="number of vectors (a random subset of a larger set)",
        minimum=2,
    )
    add_int_option(p, "--dim", default=32, help="dimension of the synthetic set")
    add_int_option(
        p,
        "-M",
        "--subquantizers",
        default=None,
        help=f"M, sub-quantizers; it must divide the dimension (default: "
        f"{_PREFERRED_M} when it does, else the nearest divisor)",
    )
    add_int_option(p, "-K", "--centroids", default=64, help="K, centroids each")
    add_int_option(p, "--iters", default=20, help="outer iterations")
    p.add_argument(
        "--methods",
        type=_method_list,
        default="none,opq,gcd-g",
        help="comma list among none, opq, gcd-r, gcd-g, gcd-s, gcd-r-overlap, "
        "gcd-g-overlap, cayley, unconstrained",
    )
    # The estimator's defaults: a user sees what ProductQuantizer() gives
    # (identity + gradient are the paper's Fig. 2 setting: pass them).
    add_choice_option(
        p,
        "--rotation-init",
        choices=["identity", "random", "eigenvalue"],
        default="eigenvalue",
        help="starting rotation (default: eigenvalue allocation, the model's)",
    )
    add_int_option(p, "--steps", default=5, help="GCD steps per iteration")
    add_choice_option(
        p,
        "--step-rule",
        choices=["gradient", "exact"],
        default="exact",
        help="GCD angle rule (default: exact, the model's; gradient: the paper's)",
    )
    add_seed_option(p)
    add_device_option(p)
    add_output_options(p, "the distortion per iteration of every method")


def default_subquantizers(dim: int, preferred: int = _PREFERRED_M) -> int:
    """The divisor of ``dim`` nearest to ``preferred`` (the smaller on a tie).

    Parameters
    ----------
    dim : int
    preferred : int

    Returns
    -------
    int
    """
    divisors = [m for m in range(1, dim + 1) if dim % m == 0]
    return min(divisors, key=lambda m: (abs(m - preferred), m))


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
        X = _read_npy(args.data)
    take = rng.permutation(X.shape[0])[: args.n]
    return np.asarray(X[np.sort(take)], dtype=np.float32)


def _read_npy(path):
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic != b"\x93NUMPY":
        raise CommandError(
            f"{path} is not a .npy file (no NumPy header); give a .npy file saved "
            "with numpy.save or a .fvecs file"
        )
    try:
        X = np.load(path, mmap_mode="r")
    except (ValueError, EOFError, OSError) as exc:
        raise CommandError(
            f"cannot read {path} as a .npy array ({' '.join(str(exc).split())}); "
            "give a .npy file saved with numpy.save or a .fvecs file"
        ) from None
    if X.ndim != 2 or not np.issubdtype(X.dtype, np.number) or X.shape[0] < 2:
        raise CommandError(
            f"{path} holds an array of shape {X.shape} and dtype {X.dtype}; "
            "expected a 2-D numeric array with one vector per row (n >= 2)"
        )
    return X


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
    methods = args.methods  # a list: argparse parses the string default too
    X = _load(args)
    n_val = max(1, X.shape[0] // 5)
    train, val = X[:-n_val], X[-n_val:]
    if args.subquantizers is None:
        args.subquantizers = default_subquantizers(X.shape[1])
    print(
        f"data: {args.data}  train={train.shape}  held-out={val.shape}  "
        f"M={args.subquantizers}  K={args.centroids}  init={args.rotation_init}"
    )
    out = {"data": args.data, "M": args.subquantizers, "methods": {}}
    for m in methods:
        out["methods"][m] = _fit_one(args, m, train, val)
    print("\ntraining distortion per outer iteration:")
    print(f"{'iter':>5}" + "".join(f" {m:>14}" for m in methods))
    n_rows = min(len(r["history"]) for r in out["methods"].values())
    for i in table_rows(n_rows, 0, default_rows=10):
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
    _plot(args, out)
    write_json(args.json, out)
    return 0


def _plot(args, out) -> None:
    """--plot: the training distortion per outer iteration of every method."""

    def draw(axes):
        ax = axes[0]
        for m, r in out["methods"].items():
            ax.plot(np.arange(1, len(r["history"]) + 1), r["history"], label=m)
        ax.set(
            xlabel="outer iteration",
            ylabel="training distortion",
            title=f"{args.data}: M={args.subquantizers}, K={args.centroids}",
        )
        ax.grid(alpha=0.3)
        ax.legend()

    save_plot(args.plot, draw)
