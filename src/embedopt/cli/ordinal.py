"""``embedopt ordinal``: ordinal embedding from triplets with SVRG-SBB."""

from __future__ import annotations

import numpy as np

from ._common import (
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
    report_warnings,
    save_plot,
    write_json,
)

_ORDINAL_DATA = ("synthetic", "music", "eurodist")


def _names():
    """(loss names, solver names) offered by ``--loss`` / ``--solver``."""
    from ..ordinal import LOSSES, SOLVERS

    return sorted(LOSSES), sorted(SOLVERS)


COMMAND = "ordinal"
HELP = (
    "ordinal embedding from triplets with L-BFGS or SVRG-SBB (default: the "
    "paper's synthetic problem)"
)
DESCRIPTION = (
    "Learn an embedding from triplet comparisons with the library's default "
    "solver (L-BFGS up to 10^5 comparisons, SVRG-SBB above) or the one "
    "named, print the convergence table (per epoch: gradient passes, "
    "time, objective, step size, held-out triplet error) and the final "
    "held-out triplet error. Synthetic (Ma et al., Sec. 5.1, Table I): "
    "points from N(0, I/20) in 10-d, random training and held-out "
    "triplets. music: the aset400 artist triplets, 80/20 split, p = 9 "
    "(Sec. 5.3). eurodist: 2,000 random triplets of the road distances "
    "for training, all others held out, p = 2 (Sec. 5.2). CSV: 'i,j,k' or "
    "'i,j,l,k' lines of oriented comparisons (header allowed), 80/20."
)


def add_arguments(p) -> None:
    """Add the options of ``embedopt ordinal`` to the parser ``p``."""
    losses, solvers = _names()
    _add_data_arguments(p)
    add_choice_option(p, "--loss", choices=losses, default="ste", help="triplet loss")
    add_choice_option(
        p,
        "--solver",
        choices=["auto", *solvers],
        default="auto",
        help="optimization method ('auto': L-BFGS up to 10^5 comparisons, "
        "SVRG-SBB above)",
    )
    _add_solver_arguments(p)
    add_run_options(
        p,
        "epoch",
        plot="the convergence plot and the embedding (first two principal axes)",
    )
    # None: the estimator's per-solver defaults (see OrdinalEmbedding)
    p.set_defaults(tol=None, dtype=None)


def _add_data_arguments(p) -> None:
    """``--data`` and the options of the synthetic problem, ``--n-components``."""
    add_data_options(p, _ORDINAL_DATA, "a CSV file of i,j,k or i,j,l,k lines")
    add_int_option(p, "--n-objects", default=100, help="synthetic objects", minimum=3)
    add_int_option(p, "--dims", default=10, help="synthetic planted dimension")
    add_int_option(p, "--n-train", default=10_000, help="synthetic training triplets")
    add_int_option(p, "--n-test", default=10_000, help="synthetic held-out triplets")
    add_int_option(
        p,
        "--n-components",
        default=None,
        help="embedding dimension (default: --dims for synthetic, 9 music, 2 "
        "otherwise)",
        metavar="P",
    )


def _add_solver_arguments(p) -> None:
    """The solver options: batch size, SBB epsilon, epoch size, step, budget."""
    add_int_option(
        p,
        "--batch-size",
        default=None,
        help="comparisons per inner step (default: the library's, 100)",
    )
    add_float_option(
        p,
        "--epsilon",
        default=None,
        help="SBB epsilon in units of r / n_objects unless --absolute-epsilon "
        "(default: the library's, 0.03)",
    )
    p.add_argument(
        "--absolute-epsilon",
        action="store_true",
        help="use --epsilon as the absolute epsilon of eq. (17)",
    )
    add_int_option(
        p,
        "--update-frequency",
        default=None,
        help="m, comparisons per epoch (default: all)",
        metavar="M",
    )
    add_float_option(
        p,
        "--learning-rate",
        default="auto",
        help="first/fixed step > 0, or 'auto' to measure the curvature",
        strict=True,
        auto=True,
    )
    add_int_option(
        p,
        "--max-iter",
        default=None,
        help="epochs, or L-BFGS iterations (default: the library's, 100 epochs "
        "or 1000 iterations)",
    )


def _load(args):
    """``dict(train, test, p, names)``: comparisons, default p, object names."""
    from ..data import (
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
        return dict(train=prob.train, test=prob.test, p=args.dims, names=None)
    if args.data == "music":
        comps = load_music_triplets(args.data_dir).comparisons
        train, test = split_comparisons(comps, (0.8, 0.2), random_state=rng)
        return dict(train=train, test=test, p=9, names=None)
    if args.data == "eurodist":
        from ..data import make_all_triplets

        data = load_eurodist(args.data_dir)
        D = data.distances
        train = make_random_triplets(distances=D, n_triplets=2000, random_state=rng)
        test = make_all_triplets(distances=D, exclude=train)
        if not len(test):
            raise CommandError(
                f"the eurodist distances have {len(D)} cities: the 2000 training "
                "triplets drawn cover all of their triplets, none is left to test"
            )
        return dict(train=train, test=test, p=2, names=list(data.names))
    raw = load_csv(args.data, columns=(3, 4), layout="i,j,k or i,j,l,k")
    comps = Comparisons(raw)
    if len(comps) < 2:
        raise CommandError(
            f"{args.data} has {len(comps)} informative comparison(s); at least 2 "
            "are needed for the training and held-out splits"
        )
    train, test = split_comparisons(comps, (0.8, 0.2), random_state=rng)
    return dict(train=train, test=test, p=2, names=None)


def _model(args, p):
    from ..ordinal import OrdinalEmbedding

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
    return OrdinalEmbedding(
        p,
        loss=args.loss,
        solver=args.solver,
        update_frequency=args.update_frequency,
        relative_epsilon=not args.absolute_epsilon,
        learning_rate=lr,
        max_iter=args.max_iter,
        **fit_options(args),
        **extra,
    )


def run(args) -> int:
    """Run ``embedopt ordinal``; return the exit status."""
    data = _load(args)
    train, test = data["train"], data["test"]
    p = data["p"] if args.n_components is None else args.n_components
    model = _model(args, p)
    print(
        f"data: {args.data}  objects={train.n_objects}  train={len(train)}  "
        f"held-out={len(test)}  p={p}  loss={args.loss}  solver={args.solver}"
    )
    total, caught = fit_recording(
        model.fit, train, n_objects=train.n_objects, validation=test
    )
    h = model.history_
    unit = "iter" if model.solver_ == "lbfgs" else "epoch"
    # L-BFGS records iterations, without gradient passes or step sizes: its
    # table leaves those columns out.
    print()
    columns = [
        ("iteration", unit, 5, "d"),
        ("passes", "passes", 7, ".1f"),
        ("time", "time(s)", 8, ".3f"),
        ("objective", "objective", 12, ".6g"),
        ("step_size", "step", 10, ".4g"),
        ("val_error", "held-out err", 13, ".4f"),
    ]
    print_history(h, args.every, columns)
    err = 1.0 - model.score(test)
    hit = np.flatnonzero(h["val_error"] < 0.15)
    print(
        f"\nheld-out triplet error = {err:.4f}   solver = {model.solver_}   "
        f"{unit}s = {model.n_iter_} ({model.stop_reason_})   solver time = "
        f"{h['time'][-1]:.3f}s   total fit time = {total:.2f}s"
    )
    if hit.size:
        print(
            f"held-out error < 0.15 after {h['time'][hit[0]]:.3f}s "
            f"({unit} {int(h['iteration'][hit[0]])})"
        )
    _plot(args, model, data["names"])
    report_warnings(caught)
    if args.json:
        out = {
            "data": args.data,
            "loss": args.loss,
            "solver": model.solver_,
            "n_components": p,
            "test_error": err,
            "n_iter": model.n_iter_,
            "fit_seconds": total,
            "history": {k: v.tolist() for k, v in h.items()},
        }
        write_json(args.json, out)
    return 0


def principal_plane(E) -> np.ndarray:
    """The rows of ``E`` on its first two principal axes (zeros pad p = 1).

    Parameters
    ----------
    E : numpy.ndarray, shape (n, p)

    Returns
    -------
    numpy.ndarray, shape (n, 2)
    """
    E = np.asarray(E, dtype=np.float64)
    E = E - E.mean(axis=0)
    if E.shape[1] > 2:
        _, _, Vt = np.linalg.svd(E, full_matrices=False)
        E = E @ Vt[:2].T
    return np.pad(E, ((0, 0), (0, 2 - E.shape[1])))


def _plot(args, model, names) -> None:
    """--plot: objective and held-out error vs time, and the embedding."""
    h = model.history_

    def draw(axes):
        ax = axes[0]
        plot_convergence(ax, h["time"], h["objective"], title=model.solver_)
        err = ax.twinx()
        err.plot(h["time"], h["val_error"], color="tab:red", linestyle="--")
        err.set_ylabel("held-out triplet error", color="tab:red")
        xy = principal_plane(model.embedding_)
        ax = axes[1]
        ax.scatter(xy[:, 0], xy[:, 1], s=12)
        if names is not None:
            for (x, y), name in zip(xy, names, strict=True):
                ax.annotate(str(name), (x, y), fontsize=7)
        axis = "principal axes" if model.embedding_.shape[1] > 2 else "coordinates"
        ax.set(title=f"embedding ({axis} 1-2)", aspect="equal")

    save_plot(args.plot, draw, panels=2)
