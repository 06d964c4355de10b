"""The ``embedopt`` command line (also ``python -m embedopt``).

Commands
--------
complete
    Matrix completion with AIS-Impute on the paper's synthetic problem (the
    default), a MovieLens dataset, or a CSV file of (row, col, value) triples;
    prints the convergence table and the test error.
ordinal
    Ordinal embedding from triplets with SVRG-SBB on the paper's synthetic
    problem (the default), the music-artist triplets, eurodist, or a CSV file
    of triplets/quadruplets; prints the convergence table and the held-out
    triplet error.
quantize
    Product quantization with a learned rotation (Givens coordinate descent vs
    OPQ...) on a correlated-Gaussian set (the default), GloVe, or a .npy /
    .fvecs file; prints the distortion per iteration of each method.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np

__all__ = ["main"]

_DATASETS = ("synthetic", "movielens-100k", "movielens-1m", "movielens-latest-small")


def _add_complete(sub) -> None:
    p = sub.add_parser(
        "complete",
        help="matrix completion with AIS-Impute (default: the paper's synthetic "
        "problem)",
        description=(
            "Fit a low-rank completion with AIS-Impute (or a baseline), select lambda "
            "on a validation split, print the convergence table and the test error. "
            "Synthetic: rank-5 m x m matrix with N(0, 0.05^2) noise, 15 m log m "
            "training and as many validation entries, NMSE on all other entries "
            "(Yao & Kwok, Sec. 5.1). MovieLens: 50/25/25 train/validation/test split, "
            "RMSE in stars. CSV: 'row,col,value' lines (header allowed), 80/10/10."
        ),
    )
    p.add_argument(
        "--data",
        default="synthetic",
        help=f"one of {', '.join(_DATASETS)}, or a CSV path (default: synthetic)",
    )
    p.add_argument(
        "--data-dir", default=None, help="dataset root (default: $EMBEDOPT_DATA)"
    )
    p.add_argument(
        "--size",
        type=int,
        default=1000,
        help="m for the synthetic problem (default: 1000)",
    )
    p.add_argument(
        "--rank",
        type=int,
        default=5,
        help="rank of the synthetic ground truth (default: 5)",
    )
    p.add_argument(
        "--solver",
        default="ais_impute",
        choices=["ais_impute", "ais_impute_exact", "soft_impute", "apg"],
    )
    p.add_argument(
        "--lam",
        default="auto",
        help="lambda, or 'auto' to select it on validation (default)",
    )
    p.add_argument(
        "--loss", default="square", choices=["square", "logistic", "squared_hinge"]
    )
    p.add_argument(
        "--center",
        default=None,
        choices=["none", "global", "row", "column", "both"],
        help="centering (default: none for synthetic, both otherwise)",
    )
    p.add_argument("--postprocess", default="auto", choices=["auto", "yes", "no"])
    p.add_argument("--max-iter", type=int, default=500)
    _add_run_options(p, "iteration")
    p.set_defaults(func=_run_complete)


def _add_run_options(p, unit: str) -> None:
    """Options every command shares: tolerance, seed, device, dtype, output."""
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument(
        "--every",
        type=int,
        default=0,
        help=f"print every N-th {unit} (default: about 15 rows)",
    )
    p.add_argument("--json", default=None, help="also write the results to this file")


def _load(args):
    from .data import (
        ObservedEntries,
        load_movielens,
        make_low_rank_matrix,
        split_entries,
    )

    rng = np.random.default_rng(args.seed)
    if args.data == "synthetic":
        m = args.size
        n_train = round(15 * m * np.log(m))
        prob = make_low_rank_matrix(
            m, rank=args.rank, n_observed=2 * n_train, random_state=rng
        )
        train, val = split_entries(prob.observed, (0.5, 0.5), random_state=rng)
        return dict(train=train, val=val, test=None, truth=prob, center="none")
    if args.data in _DATASETS:
        entries = load_movielens(args.data.split("-", 1)[1], args.data_dir).entries
    else:
        raw = np.loadtxt(
            args.data,
            delimiter=",",
            ndmin=2,
            comments="#",
            skiprows=_header_lines(args.data),
        )
        entries = ObservedEntries((raw[:, 0], raw[:, 1]), raw[:, 2])
    fr = (0.5, 0.25, 0.25) if args.data in _DATASETS else (0.8, 0.1, 0.1)
    train, val, test = split_entries(entries, fr, random_state=rng)
    return dict(train=train, val=val, test=test, truth=None, center="both")


def _header_lines(path) -> int:
    with open(path) as fh:
        first = fh.readline()
    try:
        [float(x) for x in first.strip().split(",")]
        return 0
    except ValueError:
        return 1


def _run_complete(args) -> int:
    from ._core import ConvergenceWarning
    from .completion import MatrixCompletion
    from .metrics import nmse_lowrank

    data = _load(args)
    lam = args.lam if args.lam == "auto" else float(args.lam)
    pp = {"auto": "auto", "yes": True, "no": False}[args.postprocess]
    model = MatrixCompletion(
        lam,
        loss=args.loss,
        solver=args.solver,
        center=args.center or data["center"],
        postprocess=pp,
        max_iter=args.max_iter,
        tol=args.tol,
        refit=False,
        random_state=args.seed,
        device=args.device,
        dtype=args.dtype,
    )
    train, val = data["train"], data["val"]
    print(
        f"data: {args.data}  shape={train.shape}  train={train.nnz}  "
        f"validation={val.nnz}  solver={args.solver}"
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(train, validation=val)
    total = time.perf_counter() - t0
    out = {
        "data": args.data,
        "solver": args.solver,
        "lambda": model.lam_,
        "rank": model.rank_,
        "fit_seconds": total,
    }
    if model.path_ is not None:
        path = model.path_
        print(
            f"\nlambda path (warm starts; validation {path['metric']} after "
            "optional post-processing):"
        )
        print(f"{'lambda':>10} {'rank':>5} {'seconds':>8} {path['metric']:>10}")
        for lam_k, r, t, sc in zip(
            path["lambdas"], path["ranks"], path["times"], path["scores"], strict=True
        ):
            mark = "  <- selected" if lam_k == model.lam_ else ""
            print(f"{lam_k:>10.4g} {int(r):>5} {t:>8.3f} {sc:>10.5f}{mark}")
        # Convergence from scratch at the selected lambda: what one solve costs.
        from .completion import CompletionProblem, method_options, proximal_completion

        cen = model.centering_
        prob = CompletionProblem(
            cen.transform(train),
            loss=args.loss,
            validation=cen.transform(val),
            device=args.device,
            dtype=args.dtype,
        )
        method = method_options(args.solver)
        name = method["name"]
        with warnings.catch_warnings(record=True) as more:
            warnings.simplefilter("always", ConvergenceWarning)
            res = proximal_completion(
                prob,
                model.lam_,
                **method,
                max_iter=args.max_iter,
                tol=args.tol,
                random_state=args.seed,
            )
        caught += more
        history = res.history
        print(
            f"\n{name} from scratch at lambda={model.lam_:.4g} "
            f"({res.n_iter} iterations, {res.elapsed:.3f}s, stop: {res.stop_reason}):"
        )
        out.update(
            n_iter=res.n_iter, solve_seconds=res.elapsed, stop_reason=res.stop_reason
        )
    else:
        history = model.history_
        print(f"\n{args.solver} convergence:")
        out.update(n_iter=model.n_iter_, stop_reason=model.stop_reason_)
    _print_table(history, args.every)
    print()
    if data["truth"] is not None:
        truth = data["truth"]
        observed = (
            np.concatenate([train.rows, val.rows]),
            np.concatenate([train.cols, val.cols]),
        )
        out["test_nmse"] = nmse_lowrank(
            model.U_ * model.s_, model.V_, truth.U, truth.V, exclude=observed
        )
        print(
            f"test NMSE (all unobserved entries) = {out['test_nmse']:.4f}   "
            f"rank = {model.rank_}   total fit time = {total:.2f}s"
        )
    else:
        score = model.score(data["test"])
        key = "test_accuracy" if model._loss.binary else "test_rmse"
        out[key] = score if model._loss.binary else -score
        print(
            f"{key.replace('_', ' ')} = {out[key]:.4f}   rank = {model.rank_}   "
            f"total fit time = {total:.2f}s"
        )
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def _print_table(history, every) -> None:
    n = len(history["iteration"])
    step = every or max(1, n // 15)
    keys = [k for k in ("val_rmse", "val_accuracy") if k in history]
    header = (
        f"{'iter':>5} {'time(s)':>9} {'objective':>14} {'lambda_t':>10} {'rank':>5}"
    )
    header += "".join(f" {k:>12}" for k in keys)
    print(header)
    rows = sorted(set(range(0, n, step)) | {n - 1})
    for i in rows:
        line = (
            f"{int(history['iteration'][i]):>5} {history['time'][i]:>9.3f} "
            f"{history['objective'][i]:>14.6g} {history['lam'][i]:>10.4g} "
            f"{int(history['rank'][i]):>5}"
        )
        line += "".join(f" {history[k][i]:>12.5f}" for k in keys)
        print(line)


_ORDINAL_DATA = ("synthetic", "music", "eurodist")


def _add_ordinal(sub) -> None:
    from .ordinal import LOSSES, SOLVERS

    p = sub.add_parser(
        "ordinal",
        help="ordinal embedding from triplets with SVRG-SBB (default: the paper's "
        "synthetic problem)",
        description=(
            "Learn an embedding from triplet comparisons with SVRG-SBB (or a "
            "baseline), print the convergence table (per epoch: gradient passes, "
            "time, objective, step size, held-out triplet error) and the final "
            "held-out triplet error. Synthetic (Ma et al., Sec. 5.1, Table I): "
            "points from N(0, I/20) in 10-d, random training and held-out "
            "triplets. music: the aset400 artist triplets, 80/20 split, p = 9 "
            "(Sec. 5.3). eurodist: 2,000 random triplets of the road distances "
            "for training, all others held out, p = 2 (Sec. 5.2). CSV: 'i,j,k' or "
            "'i,j,l,k' lines of oriented comparisons (header allowed), 80/20."
        ),
    )
    p.add_argument(
        "--data",
        default="synthetic",
        help=f"one of {', '.join(_ORDINAL_DATA)}, or a CSV path (default: synthetic)",
    )
    p.add_argument(
        "--data-dir", default=None, help="dataset root (default: $EMBEDOPT_DATA)"
    )
    p.add_argument(
        "--n-objects", type=int, default=100, help="synthetic objects (default: 100)"
    )
    p.add_argument(
        "--dims", type=int, default=10, help="synthetic dimension (default: 10)"
    )
    p.add_argument(
        "--n-train",
        type=int,
        default=10_000,
        help="synthetic training triplets (default: 10000)",
    )
    p.add_argument(
        "--n-test",
        type=int,
        default=10_000,
        help="synthetic held-out triplets (default: 10000)",
    )
    p.add_argument(
        "--n-components",
        type=int,
        default=None,
        help="embedding dimension (default: 10 synthetic, 9 music, 2 otherwise)",
    )
    p.add_argument("--loss", default="ste", choices=sorted(LOSSES))
    p.add_argument("--solver", default="svrg_sbb", choices=sorted(SOLVERS))
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="SBB epsilon (in units of r / n_objects unless --absolute-epsilon)",
    )
    p.add_argument(
        "--absolute-epsilon",
        action="store_true",
        help="use --epsilon as the absolute epsilon of eq. (17)",
    )
    p.add_argument(
        "--update-frequency",
        type=int,
        default=None,
        help="m, comparisons per epoch (default: all)",
    )
    p.add_argument(
        "--learning-rate", default="auto", help="first/fixed step, or 'auto'"
    )
    p.add_argument("--max-iter", type=int, default=30, help="epochs (default: 30)")
    _add_run_options(p, "epoch")
    p.set_defaults(func=_run_ordinal)


def _load_ordinal(args):
    from .data import (
        Comparisons,
        load_eurodist,
        load_music_triplets,
        make_planted_embedding,
        make_random_triplets,
        split_comparisons,
    )

    rng = np.random.default_rng(args.seed)
    if args.data == "synthetic":
        prob = make_planted_embedding(
            args.n_objects,
            args.dims,
            n_train=args.n_train,
            n_test=args.n_test,
            random_state=rng,
        )
        return prob.train, prob.test, args.dims
    if args.data == "music":
        comps = load_music_triplets(args.data_dir).comparisons
        return (*split_comparisons(comps, (0.8, 0.2), random_state=rng), 9)
    if args.data == "eurodist":
        from .data import make_all_triplets

        D = load_eurodist(args.data_dir).distances
        every = make_all_triplets(distances=D)
        train = make_random_triplets(distances=D, n_triplets=2000, random_state=rng)
        seen = {tuple(t) for t in train.indices}
        test_idx = [t for t in every.indices if tuple(t) not in seen]
        return train, Comparisons(np.array(test_idx)), 2
    raw = np.loadtxt(
        args.data,
        delimiter=",",
        ndmin=2,
        comments="#",
        skiprows=_header_lines(args.data),
    )
    comps = Comparisons(raw)
    return (*split_comparisons(comps, (0.8, 0.2), random_state=rng), 2)


def _run_ordinal(args) -> int:
    from ._core import ConvergenceWarning
    from .ordinal import OrdinalEmbedding

    train, test, default_p = _load_ordinal(args)
    p = args.n_components or default_p
    lr = (
        args.learning_rate
        if args.learning_rate == "auto"
        else float(args.learning_rate)
    )
    extra = {}
    if args.batch_size is not None:
        extra["batch_size"] = args.batch_size
    if args.epsilon is not None:
        extra["epsilon"] = args.epsilon
    model = OrdinalEmbedding(
        p,
        loss=args.loss,
        solver=args.solver,
        update_frequency=args.update_frequency,
        relative_epsilon=not args.absolute_epsilon,
        learning_rate=lr,
        max_iter=args.max_iter,
        tol=args.tol,
        random_state=args.seed,
        device=args.device,
        dtype=args.dtype,
        **extra,
    )
    print(
        f"data: {args.data}  objects={train.n_objects}  train={len(train)}  "
        f"held-out={len(test)}  p={p}  loss={args.loss}  solver={args.solver}"
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(train, n_objects=train.n_objects, validation=test)
    total = time.perf_counter() - t0
    h = model.history_
    n = len(h["iteration"])
    step = args.every or max(1, n // 15)
    print(
        f"\n{'epoch':>5} {'passes':>7} {'time(s)':>8} {'objective':>12} "
        f"{'step':>10} {'held-out err':>13}"
    )
    for i in sorted(set(range(0, n, step)) | {n - 1}):
        print(
            f"{int(h['iteration'][i]):>5} {h['passes'][i]:>7.1f} {h['time'][i]:>8.3f} "
            f"{h['objective'][i]:>12.6g} {h['step_size'][i]:>10.4g} "
            f"{h['val_error'][i]:>13.4f}"
        )
    err = 1.0 - model.score(test)
    hit = np.flatnonzero(h["val_error"] < 0.15)
    print(
        f"\nheld-out triplet error = {err:.4f}   epochs = {model.n_iter_} "
        f"({model.stop_reason_})   solver time = {h['time'][-1]:.3f}s   "
        f"total fit time = {total:.2f}s"
    )
    if hit.size:
        print(
            f"held-out error < 0.15 after {h['time'][hit[0]]:.3f}s "
            f"(epoch {int(h['iteration'][hit[0]])})"
        )
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    if args.json:
        out = {
            "data": args.data,
            "loss": args.loss,
            "solver": args.solver,
            "n_components": p,
            "test_error": err,
            "n_iter": model.n_iter_,
            "fit_seconds": total,
            "history": {k: v.tolist() for k, v in h.items()},
        }
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def _add_quantize(sub) -> None:
    p = sub.add_parser(
        "quantize",
        help="PQ with rotation learning: GCD-G vs OPQ distortion (default: a "
        "synthetic correlated-Gaussian set)",
        description=(
            "Fit product quantizers whose rotation is learned by different methods "
            "(Givens coordinate descent GCD-R/G/S, OPQ's SVD Procrustes, Cayley, "
            "none) and print the training distortion per outer iteration, the "
            "held-out distortion and the fit time. Data: a correlated Gaussian "
            "(decaying spectrum in a random basis), GloVe-6B-50d from "
            "$EMBEDOPT_DATA, or a .npy / .fvecs file; 20% of the vectors are held "
            "out."
        ),
    )
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
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.set_defaults(func=_run_quantize)


def _quantize_data(args):
    from .data import load_glove, make_correlated_gaussian, read_fvecs

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


def _run_quantize(args) -> int:
    from ._core import ConvergenceWarning
    from .quantization import ROTATIONS, ProductQuantizer

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in ROTATIONS]
    if bad:
        print(
            f"unknown method(s) {bad}; choose among {', '.join(ROTATIONS)}",
            file=sys.stderr,
        )
        return 2
    X = _quantize_data(args)
    n_val = max(1, X.shape[0] // 5)
    train, val = X[:-n_val], X[-n_val:]
    print(
        f"data: {args.data}  train={train.shape}  held-out={val.shape}  "
        f"M={args.subquantizers}  K={args.centroids}  init={args.rotation_init}"
    )
    out = {"data": args.data, "methods": {}}
    curves = {}
    for m in methods:
        pq = ProductQuantizer(
            args.subquantizers,
            args.centroids,
            rotation=m,
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
        curves[m] = pq.history_["objective"]
        out["methods"][m] = dict(
            train_distortion=pq.distortion_,
            heldout_distortion=pq.distortion(val),
            seconds=secs,
            history=pq.history_["objective"].tolist(),
        )
    print("\ntraining distortion per outer iteration:")
    print(f"{'iter':>5}" + "".join(f" {m:>14}" for m in methods))
    n = args.iters
    for i in sorted(set(range(0, n, max(1, n // 10))) | {n - 1}):
        print(f"{i + 1:>5}" + "".join(f" {curves[m][i]:>14.6g}" for m in methods))
    print(f"\n{'method':>14} {'train':>12} {'held-out':>12} {'seconds':>8}")
    for m, r in out["methods"].items():
        print(
            f"{m:>14} {r['train_distortion']:>12.6g} "
            f"{r['heldout_distortion']:>12.6g} {r['seconds']:>8.2f}"
        )
    print("(train: after 10 final k-means iterations with the rotation fixed)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``embedopt`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="embedopt",
        description="Fast, scalable optimization for embeddings and low-rank "
        "structure.",
    )
    parser.add_argument(
        "--version", action="version", version=f"embedopt {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_complete(sub)
    _add_ordinal(sub)
    _add_quantize(sub)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``embedopt`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.func(args)
