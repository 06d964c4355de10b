"""``embedopt complete``: matrix completion with AIS-Impute."""

from __future__ import annotations

import numpy as np

from ._common import (
    add_data_options,
    add_run_options,
    fit_recording,
    load_csv,
    recording_warnings,
    report_warnings,
    table_rows,
    write_json,
)

_DATASETS = ("synthetic", "movielens-100k", "movielens-1m", "movielens-latest-small")
_SOLVER_CHOICES = ["ais_impute", "ais_impute_exact", "soft_impute", "apg"]


COMMAND = "complete"
HELP = "matrix completion with AIS-Impute (default: the paper's synthetic problem)"
DESCRIPTION = (
    "Fit a low-rank completion with AIS-Impute (or a baseline), select lambda "
    "on a validation split, print the convergence table and the test error. "
    "Synthetic: rank-5 m x m matrix with N(0, 0.05^2) noise, 15 m log m "
    "training and as many validation entries, NMSE on all other entries "
    "(Yao & Kwok, Sec. 5.1). MovieLens: 50/25/25 train/validation/test split, "
    "RMSE in stars. CSV: 'row,col,value' lines (header allowed), 80/10/10."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt complete`` to the parser ``p``."""
    add_data_options(p, _DATASETS)
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
    p.add_argument("--solver", default="ais_impute", choices=_SOLVER_CHOICES)
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
    add_run_options(p, "iteration")


def _solver_parts(name: str) -> dict:
    """``proximal_completion`` options (svt, momentum, name) of a ``--solver``."""
    from ..completion import method_options

    return method_options(name)


def _load(args):
    from ..data import (
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
        raw = load_csv(args.data)
        entries = ObservedEntries((raw[:, 0], raw[:, 1]), raw[:, 2])
    fr = (0.5, 0.25, 0.25) if args.data in _DATASETS else (0.8, 0.1, 0.1)
    train, val, test = split_entries(entries, fr, random_state=rng)
    return dict(train=train, val=val, test=test, truth=None, center="both")


def run(args) -> int:
    """Run ``embedopt complete``; return the exit status."""
    from ..completion import MatrixCompletion

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
    total, caught = fit_recording(model.fit, train, validation=val)
    out = {
        "data": args.data,
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
    _print_table(history, args.every)
    print()
    _report_test(model, data, out, total)
    report_warnings(caught)
    write_json(args.json, out)
    return 0


def _print_path(path, selected) -> None:
    print(
        f"\nlambda path (warm starts; validation {path['metric']} after "
        "optional post-processing):"
    )
    print(f"{'lambda':>10} {'rank':>5} {'seconds':>8} {path['metric']:>10}")
    for lam_k, r, t, sc in zip(
        path["lambdas"], path["ranks"], path["times"], path["scores"], strict=True
    ):
        mark = "  <- selected" if lam_k == selected else ""
        print(f"{lam_k:>10.4g} {int(r):>5} {t:>8.3f} {sc:>10.5f}{mark}")


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
    with recording_warnings() as more:
        res = proximal_completion(
            prob,
            model.lam_,
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


def _report_test(model, data, out, total) -> None:
    from ..metrics import nmse_lowrank

    train, val = data["train"], data["val"]
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


def _print_table(history, every) -> None:
    n = len(history["iteration"])
    keys = [k for k in ("val_rmse", "val_accuracy") if k in history]
    header = (
        f"{'iter':>5} {'time(s)':>9} {'objective':>14} {'lambda_t':>10} {'rank':>5}"
    )
    header += "".join(f" {k:>12}" for k in keys)
    print(header)
    for i in table_rows(n, every):
        line = (
            f"{int(history['iteration'][i]):>5} {history['time'][i]:>9.3f} "
            f"{history['objective'][i]:>14.6g} {history['lam'][i]:>10.4g} "
            f"{int(history['rank'][i]):>5}"
        )
        line += "".join(f" {history[k][i]:>12.5f}" for k in keys)
        print(line)
