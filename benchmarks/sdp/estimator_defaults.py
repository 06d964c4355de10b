"""The sdp estimators with their defaults: which solver should ``solver="auto"`` run.

``KernelLearning(random_state=s).fit(X, y)`` (NPKL: rank 10, lambda = 1,
5-NN Laplacian, n // 2 pairs of each kind sampled from the labels) and
``ColoredMVU(random_state=s).fit(X, y)`` (CMVU: rank 2, 5-NN pairs,
lambda = 1), every parameter at its default (``max_iter``, ``tol``
included) except the solver, which runs through the estimator default
(``default``: what ``solver_`` says it resolved to) and each solver by name,
on ``--device`` (``cuda`` measures what ``"auto"`` picks there).
Per fit: process time and wall time of ``fit`` (one thread), the final
objective ``objective_``, ``n_iter_``, ``stop_reason_``, whether a
``ConvergenceWarning`` was raised, and the quality a user sees: the Rand
index (Rand 1971, all pairs) of ``cluster(n_classes)`` against the labels
(NPKL), the leave-one-out 1-NN accuracy of the embedding (CMVU): each
estimator's ``score(X, y)``. The
solvers run interleaved within each repeat (seeds ``--seed`` ...);
the table holds medians over the repeats, and each solver's time and
objective relative to AAGD's fit of the same seed (median of the per-seed
ratios).

    python benchmarks/sdp/estimator_defaults.py --quick   # digits n = 300, 2 seeds
    python benchmarks/sdp/estimator_defaults.py           # 4 problems, 5 seeds

Data: the 8x8 digits (``embedopt.data.load_digits``) and LIBSVM adult a1a
(``$EMBEDOPT_DATA/libsvm-adult/a1a``, ``embedopt.data.load_libsvm``).
Writes results/sdp_estimator_defaults[_quick].{json,md}.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
from _common import adult, digits  # first: one BLAS thread before NumPy loads

import _shared

SOLVERS = ("default", "aagd", "bm_lbfgs", "bm_agd")
#: (estimator, data set, n): the problems of the full and the quick mode.
FULL = [("npkl", "digits", 1797), ("npkl", "a1a", None)]
FULL += [("cmvu", "digits", 300), ("cmvu", "digits", 1797)]
QUICK = [("npkl", "digits", 300), ("cmvu", "digits", 300)]
#: f* of a seed: BM-L-BFGS at rank n_components from the fits' start, run to
#: rounding level (CMVU at rank 2 is the nonconvex rank-2 problem: the best
#: value found from that start, not the SDP's optimum).
REFERENCE = {"tol": 0.0, "max_iter": 20_000}


def _args():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=None, help="default 2 quick, 5")
    p.add_argument(
        "--solvers",
        nargs="+",
        default=list(SOLVERS),
        help="'default' (no solver given) and solver names",
    )
    p.add_argument(
        "--no-reference",
        action="store_true",
        help="skip f* (BM-L-BFGS at tol 0 from the same start, per seed)",
    )
    p.add_argument(
        "--problems",
        nargs="+",
        default=None,
        help="estimator:data[:n], e.g. npkl:digits:1797 npkl:a1a cmvu:digits:300",
    )
    return p.parse_args()


def _problems(args):
    if args.problems is None:
        return QUICK if args.quick else FULL
    out = []
    for spec in args.problems:
        est, data, *n = spec.split(":")
        out.append((est, data, int(n[0]) if n else None))
    return out


def _data(name, n):
    if name == "a1a":
        X, y = adult("a1a")
        return (X[:n], y[:n]) if n else (X, y)
    return digits(n)


def _fit(kind, solver, X, y, seed, device="cpu", **extra):
    """One default fit (``extra``: non-default options); its record (times,
    objective, quality, warnings)."""
    from embedopt import ConvergenceWarning
    from embedopt.sdp import ColoredMVU, KernelLearning

    options = {} if solver == "default" else {"solver": solver}
    est = (KernelLearning if kind == "npkl" else ColoredMVU)(
        random_state=seed, device=device, **options, **extra
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0, w0 = time.process_time(), time.perf_counter()
        est.fit(X, y)
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    # the Rand index of cluster(n_classes) (NPKL), the 1-NN accuracy (CMVU)
    quality = est.score(X, y)
    return {
        "solver": getattr(est, "solver_", est.solver),
        "cpu_s": cpu,
        "wall_s": wall,
        "objective": float(est.objective_),
        "n_iter": int(est.n_iter_),
        "stop_reason": est.stop_reason_,
        "convergence_warning": any(
            issubclass(w.category, ConvergenceWarning) for w in caught
        ),
        "warnings": sorted({w.category.__name__ for w in caught}),
        "quality": quality,
    }


def _rows(key, runs, solvers):
    """Table rows of one problem: medians over the seeds, ratios to AAGD."""
    import numpy as np

    rows = []
    base = runs.get("aagd")
    for name in solvers:
        recs = runs[name]
        med = {
            k: _shared.median([r[k] for r in recs])
            for k in ("cpu_s", "wall_s", "objective", "rel_error", "quality")
        }
        cpu_ratio = rel_f = ""
        if base is not None:
            cpu_ratio = _shared.median(
                [b["cpu_s"] / r["cpu_s"] for r, b in zip(recs, base, strict=True)]
            )
            rel_f = _shared.median(
                [
                    (r["objective"] - b["objective"]) / abs(b["objective"])
                    for r, b in zip(recs, base, strict=True)
                ]
            )
        stops = sorted({r["stop_reason"] for r in recs})
        warned = sum(r["convergence_warning"] for r in recs)
        resolved = sorted({r["solver"] for r in recs})
        label = name if name != "default" else f"default ({', '.join(resolved)})"
        rows.append(
            [
                *key,
                label,
                med["cpu_s"],
                med["wall_s"],
                cpu_ratio,
                med["objective"],
                f"{rel_f:+.1e}" if isinstance(rel_f, float) else rel_f,
                f"{med['rel_error']:.1e}",
                int(np.median([r["n_iter"] for r in recs])),
                "/".join(stops),
                f"{warned}/{len(recs)}",
                round(100 * med["quality"], 2),
            ]
        )
    return rows


def _configure():
    """The options, the problems with their data, and the number of repeats."""
    args = _args()
    _shared.limit_threads(args.threads or 1)
    problems = _problems(args)
    repeats = args.repeats or (2 if args.quick else 5)
    loaded = {(d, n): _data(d, n) for _, d, n in problems}
    return args, problems, repeats, loaded


def _run_repeat(args, problems, loaded, runs, seed) -> None:
    """One seed: the reference and every solver's fit on every problem."""
    for p in problems:
        X, y = loaded[p[1:]]
        f_ref = float("inf")
        if not args.no_reference:  # off the table's clock
            ref = _fit(p[0], "bm_lbfgs", X, y, seed, args.device, **REFERENCE)
            f_ref = ref["objective"]
        for solver in args.solvers:
            runs[p][solver].append(_fit(p[0], solver, X, y, seed, args.device))
        # f*: the best objective of this seed (the reference, or a fit)
        f_ref = min([f_ref] + [runs[p][s][-1]["objective"] for s in args.solvers])
        for solver in args.solvers:
            rec = runs[p][solver][-1]
            rec["f_ref"] = f_ref
            rec["rel_error"] = (rec["objective"] - f_ref) / abs(f_ref)
            print(
                seed,
                *p,
                f"rel err {rec['rel_error']:.2e}",
                solver,
                rec["solver"],
                f"cpu {rec['cpu_s']:.3f} s wall {rec['wall_s']:.3f} s",
                f"f {rec['objective']:.10g} it {rec['n_iter']}",
                rec["stop_reason"],
                "ConvergenceWarning" if rec["convergence_warning"] else "",
                f"quality {rec['quality']:.4f}",
                flush=True,
            )


_HEADERS = [
    "estimator",
    "data",
    "n",
    "solver",
    "CPU s",
    "wall s",
    "AAGD CPU / this",
    "objective",
    "(f - f_AAGD) / |f_AAGD|",
    "(f - f*) / |f*|",
    "iterations",
    "stop",
    "ConvergenceWarning",
    "RI / 1-NN (%)",
]


def _report(args, problems, repeats, loaded, runs) -> None:
    """The table of medians, written with the per-fit records."""
    rows = []
    for p in problems:
        n = len(loaded[p[1:]][1])
        rows += _rows((p[0], p[1], n), runs[p], args.solvers)
    table = _shared.markdown_table(_HEADERS, rows)
    name = "sdp_estimator_defaults" + ("_quick" if args.quick else "")
    config = {**vars(args), "problems": problems, "repeats": repeats}
    results = {":".join(map(str, p)): runs[p] for p in problems}
    path = _shared.write(name, args.out, config, results, table)
    print(table)
    print("wrote", path)


def main():
    args, problems, repeats, loaded = _configure()
    runs = {p: {s: [] for s in args.solvers} for p in problems}
    for rep in range(repeats):
        _run_repeat(args, problems, loaded, runs, args.seed + rep)
    _report(args, problems, repeats, loaded, runs)


if __name__ == "__main__":
    main()
