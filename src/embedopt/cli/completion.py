"""``embedopt complete``: matrix completion with AIS-Impute."""

from __future__ import annotations

import math

import numpy as np

from ._common import (
    ITERATION_COLUMNS,
    CommandError,
    add_choice_option,
    add_data_options,
    add_float_option,
    add_int_option,
    add_run_options,
    fit_options,
    fit_recording,
    load_csv,
    plot_convergence,
    print_history,
    recording_warnings,
    report_warnings,
    save_plot,
    write_json,
)

_DATASETS = (
    "synthetic",
    "movielens-100k",
    "movielens-1m",
    "movielens-latest-small",
    "bitcoin-alpha",
)
_SOLVER_CHOICES = ["ais_impute", "ais_impute_exact", "soft_impute", "apg"]
_BINARY_LOSSES = ("logistic", "squared_hinge")
#: MovieLens ratings at or above this many stars are +1 for the +/-1 losses.
_LIKED_STARS = 4


COMMAND = "complete"
HELP = "matrix completion with AIS-Impute (default: the paper's synthetic problem)"
DESCRIPTION = (
    "Fit a low-rank completion with AIS-Impute (or a baseline), select lambda "
    "on a validation split, print the convergence table and the test error. "
    "Synthetic: rank-5 m x m matrix with N(0, 0.05^2) noise, 15 m log m "
    "training and as many validation entries (fewer for small m, so that "
    "some stay unobserved), NMSE on all other entries "
    "(Yao & Kwok, Sec. 5.1); with a +/-1 loss (logistic, squared_hinge) the "
    "entries are the signs of the noisy values and the test accuracy is "
    "measured against the signs of the noise-free matrix on as many other "
    "entries. MovieLens: 50/25/25 train/validation/test split, RMSE in stars "
    f"(+/-1 losses: +1 for ratings of {_LIKED_STARS} stars or more). "
    "bitcoin-alpha: the signs of the SNAP Bitcoin Alpha trust network "
    "(raters x rated users, users with fewer than 2 ratings removed; "
    "Sec. 5.5), 80/10/10, test accuracy with a +/-1 loss. CSV: "
    "'row,col,value' lines (header allowed), 80/10/10."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt complete`` to the parser ``p``."""
    add_data_options(p, _DATASETS, "a CSV file of row,col,value lines")
    add_int_option(
        p,
        "--size",
        default=1000,
        help="m for the synthetic problem (an m x m matrix)",
        minimum=2,
        metavar="M",
    )
    add_int_option(p, "--rank", default=5, help="rank of the synthetic ground truth")
    add_choice_option(
        p,
        "--solver",
        choices=_SOLVER_CHOICES,
        default="ais_impute",
        help="AIS-Impute (randomized or exact SVT) or a baseline",
    )
    add_choice_option(
        p,
        "--regularizer",
        choices=["auto", "nuclear", "mcp", "lsp", "capped_l1", "tnn"],
        default="auto",
        help="low-rank regularizer (default auto: MCP for the square loss, the "
        "nuclear norm for the +/-1 losses, as MatrixCompletion does)",
    )
    add_float_option(
        p,
        "--lam",
        default="auto",
        help="lambda > 0, or 'auto' to select it on the validation entries",
        strict=True,
        auto=True,
    )
    add_choice_option(
        p,
        "--loss",
        choices=["square", *_BINARY_LOSSES],
        default="square",
        help="data-fit loss (logistic and squared_hinge fit +/-1 labels)",
    )
    add_choice_option(
        p,
        "--center",
        choices=["auto", "none", "global", "row", "column", "both"],
        default="auto",
        help="centering (default auto: none for the +/-1 losses, else chosen "
        "on the validation entries, as MatrixCompletion does)",
    )
    add_choice_option(
        p,
        "--postprocess",
        choices=["auto", "yes", "no"],
        default="auto",
        help="refit the singular values on the observed entries",
    )
    add_int_option(p, "--max-iter", default=500, help="iterations per lambda")
    add_run_options(p, "iteration")


def _solver_parts(name: str) -> dict:
    """``proximal_completion`` options (svt, momentum, name) of a ``--solver``."""
    from ..completion import method_options

    return method_options(name)


def _binary(args) -> bool:
    return args.loss in _BINARY_LOSSES


def _load(args):
    from ..data import (
        ObservedEntries,
        load_bitcoin_alpha,
        load_movielens,
        make_low_rank_matrix,
        split_entries,
    )

    rng = np.random.default_rng(args.seed)
    if args.data == "synthetic":
        m = args.size
        if args.rank > m:
            raise CommandError(f"--rank {args.rank} exceeds --size {m}")
        parts = 3 if _binary(args) else 2  # +/-1 losses also hold out a test set
        # small m: leave a share of the entries unobserved for the test error
        # math.log: np.log has no loop for Python ints beyond int64 (--size 1e20)
        n_train = min(round(15 * m * math.log(m)), m * m // (parts + 1))
        prob = make_low_rank_matrix(
            m, rank=args.rank, n_observed=parts * n_train, random_state=rng
        )
        entries = prob.observed
        if _binary(args):
            entries = entries.with_values(_signs(entries.values))
        split = split_entries(entries, (1 / parts,) * parts, random_state=rng)
        test = None
        if _binary(args):
            # the labels to recover are the signs of the noise-free matrix
            test = split[2].with_values(
                _signs(prob.truth_at(split[2].rows, split[2].cols))
            )
        return dict(train=split[0], val=split[1], test=test, truth=prob)
    if args.data == "bitcoin-alpha":
        entries = load_bitcoin_alpha(args.data_dir).entries
        fractions = (0.8, 0.1, 0.1)  # the paper's link-prediction split
    elif args.data in _DATASETS:
        entries = load_movielens(args.data.split("-", 1)[1], args.data_dir).entries
        if _binary(args):
            liked = entries.values >= _LIKED_STARS
            entries = entries.with_values(np.where(liked, 1.0, -1.0))
        fractions = (0.5, 0.25, 0.25)
    else:
        raw = load_csv(args.data, columns=(3,), layout="row,col,value")
        entries = ObservedEntries((raw[:, 0], raw[:, 1]), raw[:, 2])
        fractions = (0.8, 0.1, 0.1)
    if entries.nnz < 3:
        raise CommandError(
            f"{args.data} has {entries.nnz} entries; at least 3 are needed for "
            "the training, validation and test splits"
        )
    train, val, test = split_entries(entries, fractions, random_state=rng)
    return dict(train=train, val=val, test=test, truth=None)


def _signs(values) -> np.ndarray:
    return np.where(np.asarray(values) >= 0, 1.0, -1.0)


#: The convergence table: (history key, title, width, format).
_COLUMNS = (
    *ITERATION_COLUMNS,
    ("objective", "objective", 14, ".6g"),
    ("lam", "lambda_t", 10, ".4g"),
    ("rank", "rank", 5, "d"),
    *((key, key, 12, ".5f") for key in ("val_rmse", "val_accuracy")),
)


def run(args) -> int:
    """Run ``embedopt complete``; return the exit status."""
    from ..completion import MatrixCompletion

    data = _load(args)
    pp = {"auto": "auto", "yes": True, "no": False}[args.postprocess]
    model = MatrixCompletion(
        args.lam,
        loss=args.loss,
        solver=args.solver,
        regularizer=args.regularizer,
        center=args.center,
        postprocess=pp,
        max_iter=args.max_iter,
        refit=False,
        **fit_options(args),
    )
    train, val = data["train"], data["val"]
    print(
        f"data: {args.data}  shape={train.shape}  train={train.nnz}  "
        f"validation={val.nnz}  loss={args.loss}  solver={args.solver}"
    )
    total, caught = fit_recording(model.fit, train, validation=val)
    out = {
        "data": args.data,
        "loss": args.loss,
        "solver": args.solver,
        "lambda": model.lam_,
        "rank": model.rank_,
        "fit_seconds": total,
    }
    if model.path_ is not None:
        _print_path(model.path_, model.lam_)
        history = _solve_from_scratch(args, model, train, val, out, caught)
    else:
        history = model.history_
        print(f"\n{args.solver} convergence:")
        out.update(n_iter=model.n_iter_, stop_reason=model.stop_reason_)
    print_history(history, args.every, _COLUMNS)
    print()
    _report_test(args, model, data, out, total)
    _plot(args, model, history)
    report_warnings(caught)
    write_json(args.json, out)
    return 0


def _plot(args, model, history) -> None:
    """--plot: objective vs time, and the validation score along the lambda path."""
    path = model.path_

    def draw(axes):
        plot_convergence(
            axes[0],
            history["time"],
            history["objective"],
            title=f"{args.solver} at lambda = {model.lam_:.4g}",
        )
        if path is not None:
            ax = axes[1]
            ax.semilogx(path["lambdas"], path["scores"], marker="o")
            ax.axvline(model.lam_, color="gray", linestyle="--", label="selected")
            ax.set(
                xlabel="lambda",
                ylabel=f"validation {path['metric']}",
                title="lambda path (warm starts)",
            )
            ax.legend()
            ax.grid(alpha=0.3)

    save_plot(args.plot, draw, panels=1 if path is None else 2)


def _print_path(path, selected) -> None:
    print(
        f"\nlambda path (warm starts; validation {path['metric']} of the raw, "
        "post-processed (pp) or rank-r refined solution, whichever is best):"
    )
    print(f"{'lambda':>10} {'rank':>5} {'seconds':>8} {path['metric']:>10}  scored")
    kinds = np.where(
        path["refined"], "refined", np.where(path["postprocessed"], "pp", "raw")
    )
    for lam_k, r, t, sc, kind in zip(
        path["lambdas"],
        path["ranks"],
        path["times"],
        path["scores"],
        kinds,
        strict=True,
    ):
        mark = "  <- selected" if lam_k == selected else ""
        print(f"{lam_k:>10.4g} {int(r):>5} {t:>8.3f} {sc:>10.5f}  {kind:<7}{mark}")


def _solve_from_scratch(args, model, train, val, out, caught):
    """Convergence from scratch at the selected lambda: what one solve costs."""
    from ..completion import CompletionProblem, proximal_completion

    cen = model.centering_
    prob = CompletionProblem(
        cen.transform(train),
        loss=args.loss,
        validation=cen.transform(val),
        device=args.device,
        dtype=args.dtype,
    )
    method = _solver_parts(args.solver)
    name = method["name"]
    if not model.regularizer_.convex:  # the fit's nonconvex penalty, reweighted
        method["regularizer"] = model.regularizer_
    with recording_warnings() as more:
        res = proximal_completion(
            prob,
            lam=model.lam_,
            **method,
            max_iter=args.max_iter,
            tol=args.tol,
            random_state=args.seed,
        )
    caught += more
    print(
        f"\n{name} from scratch at lambda={model.lam_:.4g} "
        f"({res.n_iter} iterations, {res.elapsed:.3f}s, stop: {res.stop_reason}):"
    )
    out.update(
        n_iter=res.n_iter, solve_seconds=res.elapsed, stop_reason=res.stop_reason
    )
    return res.history


def _report_test(args, model, data, out, total) -> None:
    from ..metrics import nmse_lowrank

    train, val = data["train"], data["val"]
    if data["test"] is None:
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
        key = "test_accuracy" if _binary(args) else "test_rmse"
        out[key] = score if _binary(args) else -score
        print(
            f"{key.replace('_', ' ')} = {out[key]:.4f}   rank = {model.rank_}   "
            f"total fit time = {total:.2f}s"
        )
