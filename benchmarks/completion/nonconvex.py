"""Table VIII of Yao & Kwok: nuclear norm vs nonconvex low-rank regularizers.

Data: the synthetic problem of Sec. 5.1 (m = 250 and 1000, NMSE on unobserved
entries) and MovieLens-100K with the protocol of Sec. 5.2 (test RMSE on the
standardized scale). Regularizers: nuclear norm (AIS-Impute, post-processed),
truncated nuclear norm (TNNR(APG), IRNN, DC(AIS-Impute)), capped-l1 and
log-sum penalty (IRNN, DC(AIS-Impute)). lambda and the regularizer's own
parameter (free rank, theta) are chosen on the validation set with
DC(AIS-Impute); every solver then runs at the chosen values. Times are those
of the solves at the chosen values, and ratios are to DC(AIS-Impute) of the
same regularizer in the same run.

    python benchmarks/completion/nonconvex.py --quick   # m = 250 only
    python benchmarks/completion/nonconvex.py           # m = 250, 1000 and ML-100K

``--estimators`` measures the estimator instead (issue 24, part 3):
``MatrixCompletion(regularizer=r)`` for every regularizer with its defaults
(``regularizer_params`` None, ``random_state=seed``) on the 80/20 split
(``--seed``, default 0) of ``libmf_peer.py`` / ``movielens.py`` of ML-100K,
ML-1M and latest-small: test RMSE on the ratings' scale, rank, CPU seconds
of ``fit`` (medians of ``--reps``, default 3; one thread) and the CPU time
over the nuclear norm's in the same run. ``--variants`` adds rows of other
``MatrixCompletion`` options (JSON objects).

    python benchmarks/completion/nonconvex.py --estimators --quick  # ML-100K
    python benchmarks/completion/nonconvex.py --estimators --threads 1
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import (
    REGULARIZERS,
    Centering,
    CompletionProblem,
    MatrixCompletion,
    dc_completion,
    irnn,
    lambda_path,
)
from embedopt.data import load_movielens, make_low_rank_matrix, split_entries
from embedopt.metrics import nmse_lowrank

GRIDS = {
    "tnn": ("rank", [3, 5, 8, 12]),
    "capped_l1": ("theta", [1.0, 10.0, 100.0]),
    "lsp": ("theta", [1.0, 10.0, 100.0]),
}
SOLVERS_OF = {
    "tnn": ["TNNR(APG)", "IRNN", "DC(AIS-Impute)"],
    "capped_l1": ["IRNN", "DC(AIS-Impute)"],
    "lsp": ["IRNN", "DC(AIS-Impute)"],
}


def dataset(name, rep, seed, data_dir):
    rng = np.random.default_rng(seed + rep)
    if name.startswith("synthetic"):
        m = int(name.split("-")[1])
        n_train = round(15 * m * np.log(m))
        prob = make_low_rank_matrix(m, n_observed=2 * n_train, random_state=rng)
        train, val = split_entries(prob.observed, (0.5, 0.5), random_state=rng)
        obs = (prob.observed.rows, prob.observed.cols)

        def error(f):
            U, s, V = f
            return nmse_lowrank((U * s).cpu(), V.cpu(), prob.U, prob.V, exclude=obs)

        return CompletionProblem(train, validation=val, dtype="float64"), error, "NMSE"
    entries = load_movielens("100k", data_dir).entries
    train, val, test = split_entries(entries, (0.5, 0.25, 0.25), random_state=rng)
    cen = Centering("global", scale=True).fit(train)
    tr, va, te = (cen.transform(x) for x in (train, val, test))
    tracked = CompletionProblem(tr, validation=te, dtype="float64")

    def error(f):
        return tracked.validation_score(*f)

    return CompletionProblem(tr, validation=va, dtype="float64"), error, "RMSE"


def solve(kind, solver, problem, lam, param, rep):
    kw = {GRIDS[kind][0]: param}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if solver == "IRNN":
            return irnn(
                problem,
                lam=lam,
                regularizer=kind,
                random_state=rep,
                max_iter=1000,
                **kw,
            )
        inner = "apg" if solver == "TNNR(APG)" else "ais_impute"
        return dc_completion(
            problem,
            lam=lam,
            regularizer=kind,
            solver=inner,
            random_state=rep,
            max_outer_iter=10,
            **kw,
        )


def run(name, rep, args):
    problem, error, metric = dataset(name, rep, args.seed, args.data_dir)
    path = lambda_path(problem, postprocess=True, random_state=rep, n_lambdas=25)
    lam0 = path.best_lambda
    out = {
        "nuclear/AIS-Impute": dict(
            error=error(path.best_factors),
            rank=int(path.best_factors[1].numel()),
            seconds=float(path.times[path.best_index]),
        )
    }
    for kind, (pname, grid) in GRIDS.items():
        best = None
        for factor, param in itertools.product((0.5, 1.0, 2.0, 4.0), grid):
            res = solve(kind, "DC(AIS-Impute)", problem, lam0 * factor, param, rep)
            score = problem.validation_score(*res.x)
            if best is None or score < best[0]:
                best = (score, lam0 * factor, param)
        _, lam, param = best
        for solver in SOLVERS_OF[kind]:
            res = solve(kind, solver, problem, lam, param, rep)
            out[f"{kind}/{solver}"] = dict(
                error=error(res.x),
                rank=int(res.x[1].numel()),
                seconds=res.elapsed,
                lam=lam,
                param=f"{pname}={param:g}",
            )
    return dict(data=name, rep=rep, metric=metric, methods=out)


def configure():
    """The command line: datasets and repetitions."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="*", default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--estimators",
        action="store_true",
        help="MatrixCompletion(regularizer=...) on MovieLens instead",
    )
    p.add_argument(
        "--variants",
        nargs="*",
        type=json.loads,
        default=[],
        help="with --estimators: more MatrixCompletion options, one JSON each",
    )
    args = p.parse_args()
    _shared.setup(args)
    if args.estimators:
        args.datasets = args.datasets or (["100k"] if args.quick else MOVIELENS)
        args.reps = args.reps or (1 if args.quick else 3)
        return args
    args.datasets = args.datasets or (
        ["synthetic-250"]
        if args.quick
        else ["synthetic-250", "synthetic-1000", "movielens-100k"]
    )
    args.reps = args.reps or (1 if args.quick else 5)
    return args


def table_row(name, rs, key) -> list:
    """Table VIII's row of one regularizer/solver over the repetitions ``rs``."""
    ms = [r["methods"][key] for r in rs]
    mean, sd = _shared.mean_std([x["error"] for x in ms])
    kind = key.split("/")[0]
    ref = f"{kind}/DC(AIS-Impute)" if kind in GRIDS else None
    ratio = (
        _shared.median(
            [
                x["seconds"] / r["methods"][ref]["seconds"]
                for x, r in zip(ms, rs, strict=True)
            ]
        )
        if ref
        else float("nan")
    )
    return [
        name,
        key,
        f"{mean:.4f} ± {sd:.4f}",
        int(np.median([x["rank"] for x in ms])),
        _shared.median([x["seconds"] for x in ms]),
        ratio,
    ]


# -- the estimators on MovieLens (issue 24, part 3) ---------------------------------
MOVIELENS = ["100k", "1m", "latest-small"]


def estimator_configs(args) -> list[dict]:
    """Every regularizer with its defaults (the nuclear norm first: the
    reference of the ratios), then the ``--variants``."""
    others = [{"regularizer": r} for r in REGULARIZERS if r != "nuclear"]
    return [{"regularizer": "nuclear"}, *others, *args.variants]


def estimator_fit(train, test, seed: int, reps: int, options: dict) -> dict:
    """``MatrixCompletion(**options)`` on ``train``: medians of ``reps`` fits."""
    cpus, walls = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        model = MatrixCompletion(random_state=seed, **options).fit(train)
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
    return dict(
        options=options,
        rmse=-model.score(test),
        rank=model.rank_,
        lam=model.lam_,
        regularizer=repr(model.regularizer_),
        cpu=_shared.median(cpus),
        wall=_shared.median(walls),
    )


def estimator_run(args) -> list[dict]:
    """Every configuration on the 80/20 split of every dataset."""
    out = []
    for name in args.datasets:
        entries = load_movielens(name, args.data_dir).entries
        train, test = split_entries(
            entries, (0.8, 0.2), random_state=np.random.default_rng(args.seed)
        )
        rows = [
            estimator_fit(train, test, args.seed, args.reps, options)
            for options in estimator_configs(args)
        ]
        out.append(dict(data=name, fits=rows))
    return out


def estimator_report(args, results: list[dict]) -> None:
    """One table: RMSE, rank, CPU and CPU over the nuclear norm per dataset."""
    rows = []
    for r in results:
        base = r["fits"][0]  # regularizer="nuclear": the defaults
        for f in r["fits"]:
            label = ", ".join(f"{k}={v!r}" for k, v in f["options"].items())
            rows.append(
                [
                    r["data"],
                    f"MatrixCompletion({label})",
                    f"{f['rmse']:.4f}",
                    f["rank"],
                    round(f["cpu"], 2),
                    f"{f['cpu'] / base['cpu']:.2f}",
                    f"{100 * (f['rmse'] - base['rmse']) / base['rmse']:+.2f} %",
                ]
            )
    headers = ["data", "estimator", "test RMSE", "rank", "CPU s"]
    headers += ["CPU / nuclear", "RMSE vs nuclear"]
    table = _shared.markdown_table(headers, rows)
    print(table)
    config = {k: v for k, v in vars(args).items() if k != "out"}
    name = "completion_nonconvex_estimators" + ("_quick" if args.quick else "")
    _shared.write(name, args.out, config, dict(runs=results), table)


def main():
    args = configure()
    if args.estimators:
        estimator_report(args, estimator_run(args))
        return
    names = args.datasets
    runs = [run(n, r, args) for n in names for r in range(args.reps)]
    rows = []
    for name in names:
        rs = [r for r in runs if r["data"] == name]
        rows += [table_row(name, rs, key) for key in rs[0]["methods"]]
    table = _shared.markdown_table(
        [
            "data",
            "regularizer/solver",
            "NMSE or RMSE",
            "rank",
            "seconds",
            "time / DC(AIS-Impute)",
        ],
        rows,
    )
    print(table)
    _shared.write(
        "completion_nonconvex",
        args.out,
        dict(datasets=names, reps=args.reps),
        dict(runs=runs),
        table,
    )


if __name__ == "__main__":
    main()
