"""``embedopt similarity``: all-pairs two-tower training on MovieLens."""

from __future__ import annotations

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
    write_json,
)

_DATASETS = ("100k", "1m")

COMMAND = "similarity"
HELP = "all-pairs two-tower similarity learning at O(m + n) cost (default: ML-100K)"
DESCRIPTION = (
    "Train a user tower and an item tower on every user-item pair of "
    "MovieLens as implicit feedback (observed pairs labelled 1, all others "
    "imputed 0 with weight omega), by Gauss-Newton-CG (ALS for embedding "
    "towers) on the exact O(m + n) objective, and print the convergence "
    "table and the test ranking metrics (P@k, recall@k, nDCG@k, MAP@k; "
    "training pairs excluded). "
    "Default: ML-100K, per-user 80/20 split, hybrid towers (id embedding + "
    "side features: age, gender, occupation; genres, decade)."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt similarity`` to the parser ``p``."""
    from ..similarity import SOLVERS

    add_choice_option(
        p, "--data", choices=_DATASETS, default="100k", help="MovieLens dataset"
    )
    add_data_dir_option(p)
    add_choice_option(
        p,
        "--towers",
        choices=["hybrid", "mlp", "embedding"],
        default="hybrid",
        help="tower kind of both sides",
    )
    add_int_option(p, "--n-components", default=64, help="embedding dimension")
    add_float_option(
        p,
        "--omega",
        default=None,
        help="weight of the imputed zeros (default: the model's)",
    )
    add_float_option(
        p, "--lam", default=None, help="regularization (default: the model's)"
    )
    add_choice_option(
        p,
        "--solver",
        choices=["auto", *SOLVERS],
        default="auto",
        help="auto: ALS for embedding towers, Gauss-Newton-CG otherwise",
    )
    add_int_option(
        p, "--max-iter", default=None, help="iterations (default: the model's)"
    )
    add_int_option(p, "--k", default=10, help="cut-off of the metrics")
    add_run_options(p, "iteration", plot="the objective and P@k vs time")
    # The model's tolerance depends on its solver (ALS tests the objective
    # decrease, the others the gradient norm): the shared 1e-4 would make
    # default ALS runs on MovieLens-1M stop at max_iter with a warning.
    p.set_defaults(tol=None)


def _load(args):
    from ..data import load_movielens_side_features, split_by_user

    d = load_movielens_side_features(args.data_dir, dataset=args.data)
    e = d.ratings.entries
    train, test = split_by_user((e.rows, e.cols), (0.8, 0.2), random_state=args.seed)
    users = dict(d.user_features)
    items = {"genres": d.item_features["genres"], "decade": d.item_features["decade"]}
    return train, test, users, items


def run(args) -> int:
    """Run ``embedopt similarity``; return the exit status."""
    train, test, users, items = _load(args)
    model = _model(args)
    feats = args.towers != "embedding"
    m, n = train.shape
    print(
        f"data: MovieLens-{args.data}  users={m}  items={n}  train={len(train)} "
        f"test={len(test)}  towers={args.towers}  solver={args.solver}"
    )
    total, caught = fit_recording(
        model.fit,
        train,
        user_features=users if feats else None,
        item_features=items if feats else None,
        validation=test,
    )
    metrics = _report(model, test, total, args)
    _plot(args.plot, model, args)
    report_warnings(caught)
    write_json(
        args.json,
        {
            "data": args.data,
            "towers": args.towers,
            "solver": args.solver,
            "objective": model.objective_,
            "n_iter": model.n_iter_,
            "fit_seconds": total,
            **metrics,
        },
    )
    return 0


def _model(args):
    """The TwoTowerModel the options ask for."""
    from ..similarity import TwoTowerModel

    kw = {
        k: getattr(args, k)
        for k in ("omega", "lam", "max_iter")
        if getattr(args, k) is not None
    }
    return TwoTowerModel(
        args.n_components,
        user_tower=args.towers,
        item_tower=args.towers,
        solver=args.solver,
        eval_k=args.k,
        **fit_options(args),  # tol=None (no --tol) is the model's default
        **kw,
    )


def _report(model, test, total: float, args) -> dict:
    """Print the convergence table and the test metrics; return the metrics."""
    print(f"\n{model.solver_} convergence (P@{args.k} on the test pairs):")
    columns = [
        *ITERATION_COLUMNS,
        ("objective", "objective", 14, ".8g"),
        ("grad_norm", "grad norm", 11, ".4g"),
        ("cg_iter", "cg_iter", 12, ".4g"),
        (f"precision@{args.k}", f"precision@{args.k}", 12, ".4g"),
    ]
    print_history(model.history_, args.every, columns)
    metrics = model.evaluate(test, k=args.k)
    print(
        "\ntest: "
        + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k != "n_users")
        + f"  ({metrics['n_users']} users)"
    )
    print(
        f"objective {model.objective_:.8g}  iterations {model.n_iter_} "
        f"({model.stop_reason_})  fit {total:.2f} s"
    )
    return metrics


def _plot(path, model, args) -> None:
    """--plot: objective and P@k vs time."""
    h = model.history_
    key = f"precision@{args.k}"

    def draw(axes):
        plot_convergence(
            axes[0],
            h["time"],
            h["objective"],
            title=f"MovieLens-{args.data}, {args.towers} towers, {args.solver}",
        )
        if key in h:
            axes[1].plot(h["time"], h[key], marker="o")
        axes[1].set(xlabel="time (s)", ylabel=key)
        axes[1].grid(alpha=0.3)

    save_plot(path, draw, panels=2)
