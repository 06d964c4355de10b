"""``embedopt sdp``: low-rank SDPs by bilinear factorization (NPKL, CMVU)."""

from __future__ import annotations

import sys

import numpy as np

from ._common import (
    ITERATION_COLUMNS,
    add_choice_option,
    add_data_dir_option,
    add_float_option,
    add_int_option,
    add_run_options,
    fit_options,
    fit_recording,
    plot_convergence,
    print_history,
    report_warnings,
    save_plot,
    warning_line,
    write_json,
)

_DATASETS = ("a1a", "digits", "synthetic")
_A1A_FEATURES = 123  # LIBSVM adult: 123 binary features, labels +1/-1

COMMAND = "sdp"
HELP = "nonparametric kernel learning / colored MVU as low-rank SDPs (default: a1a)"
DESCRIPTION = (
    "Solve a low-rank SDP on factors (by default with the estimators' solver "
    "choice: BM-L-BFGS on the CPU; --solver aagd runs the paper's AAGD) and "
    "print the convergence table. NPKL (eq. 13, default): must-links and "
    "cannot-links sampled from the labels (a1a: 1,204 of each, as in the "
    "paper), a 5-NN normalized Laplacian, lambda = 1 (--lam auto: chosen on "
    "held-out pairs); reports the Rand index of kernel "
    "k-means on the learned kernel against the labels. CMVU (eq. 23): a 2-d "
    "embedding coloured by the labels; reports its leave-one-out 1-NN "
    "accuracy. Data: LIBSVM adult a1a from $EMBEDOPT_DATA/libsvm-adult (if "
    "absent, a synthetic two-class problem, with a message), the 8x8 digits, "
    "or 'synthetic'."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt sdp`` to the parser ``p``."""
    _add_problem_options(p)
    _add_solver_options(p)
    add_run_options(
        p,
        "iteration",
        plot="the objective vs time (and, for cmvu, the 2-d embedding)",
    )
    # the SDP objective is certified to 1e-6 relative: float64 by default
    # tol None: the solver's own default (1e-7; 1e-8 for bm_lbfgs)
    p.set_defaults(dtype="float64", tol=None)


def _add_problem_options(p) -> None:
    """The data and the problem built from it."""
    add_choice_option(
        p,
        "--data",
        choices=_DATASETS,
        default="a1a",
        help="LIBSVM adult a1a, the 8x8 digits, or a synthetic two-class set",
    )
    add_data_dir_option(p)
    add_choice_option(
        p,
        "--problem",
        choices=["npkl", "cmvu"],
        default="npkl",
        help="kernel learning (eq. 13) or colored MVU (eq. 23)",
    )
    add_int_option(
        p,
        "--n",
        default=None,
        help="use the first N patterns (default: all; 400 for synthetic)",
        minimum=2,
    )
    add_float_option(
        p,
        "--lam",
        default=1.0,
        auto=True,
        help="lambda (npkl: or auto, chosen on held-out pairs)",
    )
    add_int_option(
        p,
        "--n-pairs",
        default=None,
        help="must-links and cannot-links of each kind (default: 1204 on a1a, "
        "n // 2 otherwise)",
    )
    add_int_option(p, "--n-neighbors", default=5, help="neighbours of the kNN graph")


def _add_solver_options(p) -> None:
    """The rank and the solver."""
    from ..sdp import SOLVERS

    add_int_option(
        p,
        "--rank",
        default=None,
        help="rank r of the factors (default: 10; 2 for cmvu)",
    )
    add_choice_option(
        p,
        "--solver",
        choices=["auto", *SOLVERS],
        default="auto",
        help="SDP solver; auto: the estimators' choice for the device "
        "(bm_lbfgs on the CPU)",
    )
    add_int_option(p, "--max-iter", default=1000, help="iterations")


def _synthetic(n, seed):
    import torch

    from .._core import check_memory

    # 10 features and their labels per pattern, refused before any draw
    check_memory("embedopt sdp", 8 * 11 * n, torch.device("cpu"), f"{n} patterns")
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 10)) + 1.5 * y[:, None]
    return X, y


def _find_a1a(data_dir):
    """The path of a1a under the data root (or the libsvm-adult folder), or None."""
    from pathlib import Path

    from ..data import get_data_home

    root = Path(data_dir).expanduser() if data_dir else get_data_home()
    for path in (root / "libsvm-adult" / "a1a", root / "a1a"):
        if path.is_file():
            return path
    return None


def _load(args):
    """``(X, y, name)``; a1a falls back to synthetic data when it is absent."""
    from ..data import load_digits, load_libsvm

    n = args.n
    if args.data == "digits":
        d = load_digits(args.data_dir)
        return d.X[:n], d.y[:n], "digits"
    if args.data == "a1a":
        path = _find_a1a(args.data_dir)
        if path is not None:
            X, y = load_libsvm(path, _A1A_FEATURES, n_rows=n)
            return X.toarray(), y, "a1a"
        print(
            warning_line(
                "LIBSVM adult a1a not found under --data-dir or $EMBEDOPT_DATA "
                f"(libsvm-adult/a1a); running on the synthetic fallback (two "
                f"Gaussian classes, n = {n or 400}) instead."
            ),
            file=sys.stderr,
        )
    X, y = _synthetic(n or 400, args.seed)
    return X, y, "synthetic"


def _make_model(args):
    from ..sdp import ColoredMVU, KernelLearning

    common = dict(
        lam=args.lam,
        n_neighbors=args.n_neighbors,
        solver=args.solver,
        max_iter=args.max_iter,
        **fit_options(args),
    )
    if args.problem == "cmvu":
        return ColoredMVU(args.rank or 2, **common)
    return KernelLearning(args.rank or 10, n_pairs=args.n_pairs, **common)


#: The convergence table: (history key, title, width, format).
_COLUMNS = (
    *ITERATION_COLUMNS,
    ("objective", "objective", 16, ".10g"),
    ("gap", "gap", 11, ".4g"),
    ("gamma", "gamma", 11, ".4g"),
)


def run(args) -> int:
    """Run ``embedopt sdp``; return the exit status."""
    X, y, name = _load(args)
    if args.problem == "npkl" and args.n_pairs is None and name == "a1a":
        args.n_pairs = 1204  # the paper's a1a row (Table 1)
    model = _make_model(args)
    print(
        f"data: {name}  n={X.shape[0]}  d={X.shape[1]}  classes={len(np.unique(y))}"
        f"  problem={args.problem}  solver={args.solver}"
    )
    total, caught = fit_recording(model.fit, X, y=y)
    print(f"\n{model.solver_} convergence:")
    print_history(model.history_, args.every, _COLUMNS)
    out = {
        "data": name,
        "problem": args.problem,
        "solver": model.solver_,
        "n": int(X.shape[0]),
        "objective": model.objective_,
        "n_iter": model.n_iter_,
        "stop_reason": model.stop_reason_,
        "fit_seconds": total,
    }
    if args.problem == "cmvu":
        out["loo_1nn_accuracy"] = model.score(X, y)
        print(
            f"\nleave-one-out 1-NN accuracy of the embedding: "
            f"{out['loo_1nn_accuracy']:.4f}"
        )
    else:
        out["lam"] = model.lam_
        if model.lam_path_ is not None:
            tried = ", ".join(
                f"{lam:g}: {err:.4g}"
                for lam, err in zip(
                    model.lam_path_["lambdas"],
                    model.lam_path_["heldout_error"],
                    strict=True,
                )
            )
            print(f"\nlambda {model.lam_:g} chosen on held-out pairs (error {tried})")
        out["rand_index"] = model.score(X, y)  # kernel k-means vs the labels
        print(f"\nRand index of kernel k-means vs the labels: {out['rand_index']:.4f}")
    print(
        f"objective {model.objective_:.8g}  iterations {model.n_iter_} "
        f"({model.stop_reason_})  fit {total:.2f} s"
    )
    _plot(args.plot, model, y, args)
    report_warnings(caught)
    write_json(args.json, out)
    return 0


def _plot(path, model, y, args) -> None:
    """--plot: objective vs time (and the 2-d CMVU embedding by class)."""
    h = model.history_

    def draw(axes):
        plot_convergence(
            axes[0],
            h["time"],
            h["objective"],
            title=f"{args.problem} / {model.solver_}",
        )
        if args.problem == "cmvu":
            E = model.embedding_
            axes[1].scatter(E[:, 0], E[:, 1], c=y, s=6, cmap="tab10")
            axes[1].set(title="embedding (coloured by class)")

    save_plot(path, draw, panels=2 if args.problem == "cmvu" else 1)
