"""Table XI and Figure 9 of Yao & Kwok: synthetic tensor completion.

An m x m x 3 tensor ``C x_1 A_1 x_2 A_2 x_3 A_3`` (all N(0, 1), multilinear
rank (3, 3, 3): low rank in modes 1-2 only), N(0, 0.05^2) noise, 45 m log m
observed entries, half for training and half for validation (lambda chosen on
it, post-processed, with ``lambda_d = (1, 1, sqrt(m/3)) lambda``). Then APG,
Soft-Impute, AIS-Impute (exact) and AIS-Impute solve the same problem from
scratch at that lambda. Reported: NMSE on all unobserved entries
without/with post-processing, per-mode ranks, post-processing time, and time /
iterations to reach the final objective (relative gap 1e-4 to the best
objective any method found), with ratios to AIS-Impute from the same run.

    python benchmarks/completion/tensor.py --quick   # m in {125, 500}, 1 rep
    python benchmarks/completion/tensor.py           # m in {125, 500, 2000}, 5 reps
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C

import _shared
from embedopt.completion import (
    CompletionProblem,
    lambda_path,
)
from embedopt.data import make_low_rank_tensor, split_entries

METHODS = C.METHODS


def dense(factors, shape):
    """``sum_d fold_d(U_d diag(s_d) V_d^T)`` as a dense array (small tensors)."""
    X = np.zeros(shape)
    for d, (U, s, V) in enumerate(factors):
        others = [k for k in range(len(shape)) if k != d]
        M = ((U * s) @ V.T).cpu().numpy()
        X += np.moveaxis(M.reshape([shape[d]] + [shape[k] for k in others]), 0, d)
    return X


def run_one(m, rep, args):
    rng = np.random.default_rng(args.seed + 1000 * rep + m)
    prob = make_low_rank_tensor(m, random_state=rng)
    train, val = split_entries(prob.observed, (0.5, 0.5), random_state=rng)
    problem = CompletionProblem(
        train, validation=val, device=args.device, dtype="float64"
    )
    T = prob.dense()
    mask = np.ones(T.shape, dtype=bool)
    mask[tuple(prob.observed.indices.T)] = False
    norm = np.linalg.norm(T[mask])

    def nmse(factors):
        return float(np.linalg.norm((dense(factors, T.shape) - T)[mask]) / norm)

    path = lambda_path(problem, postprocess=True, random_state=rep, n_lambdas=25)
    lam = path.best_lambda
    f_ref = C.reference_objective(problem, lam, rep)
    runs = {}
    for name, (label, res, pp, pp_time) in C.solve_each(
        problem,
        lam,
        METHODS,
        tol=args.tol,
        max_iter=args.max_iter,
        time_limit=args.time_limit,
        seed=rep,
        f_star=f_ref,
        stop_gap=C.GAP / 10,
    ).items():
        runs[name] = dict(
            label=label,
            history=res.history,
            n_iter=res.n_iter,
            elapsed=res.elapsed,
            nmse=nmse(res.x),
            nmse_pp=nmse(pp),
            ranks=[int(f[1].numel()) for f in res.x],
            pp_time=pp_time,
            objective=float(res.history["objective"][-1]),
        )
    f_star = min([f_ref] + [r["objective"] for r in runs.values()])
    for r in runs.values():
        r["time_to_final"], r["iters_to_final"] = C.time_to_gap(r["history"], f_star)
    return dict(
        m=m, rep=rep, lam=lam, sparsity=train.nnz / T.size, f_star=f_star, runs=runs
    )


def configure():
    """The command line: sizes, repetitions, the solvers' limits."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--max-iter", type=int, default=3000)
    p.add_argument(
        "--time-limit",
        type=float,
        default=600.0,
        help="solver seconds after which a method is stopped",
    )
    args = p.parse_args()
    _shared.setup(args)
    args.sizes = args.sizes or ([125, 500] if args.quick else [125, 500, 2000])
    args.reps = args.reps or (1 if args.quick else 5)
    return args


def run_all(args) -> list[dict]:
    """Every size and repetition."""
    out = []
    for m in args.sizes:
        for rep in range(args.reps):
            r = run_one(m, rep, args)
            out.append(r)
            print(
                m,
                rep,
                {
                    k: (round(v["nmse_pp"], 4), round(v["time_to_final"], 2))
                    for k, v in r["runs"].items()
                },
                flush=True,
            )
    return out


def summarize(m, rs, name) -> tuple[list, dict]:
    """The table row and the summary of one method at size m."""
    rr = [r["runs"][name] for r in rs]
    nm, ns = _shared.mean_std([x["nmse"] for x in rr])
    pm, ps = _shared.mean_std([x["nmse_pp"] for x in rr])
    ratio = _shared.median(
        [
            x["time_to_final"] / r["runs"]["ais_impute"]["time_to_final"]
            for x, r in zip(rr, rs, strict=True)
        ]
    )
    row = [
        m,
        f"{100 * rs[0]['sparsity']:.1f}%",
        rr[0]["label"],
        f"{nm:.4f} ± {ns:.4f}",
        f"{pm:.4f} ± {ps:.4f}",
        ",".join(str(x) for x in rr[0]["ranks"]),
        _shared.median([x["pp_time"] for x in rr]),
        _shared.median([x["iters_to_final"] for x in rr]),
        _shared.median([x["time_to_final"] for x in rr]),
        ratio,
    ]
    return row, dict(nmse=nm, nmse_pp=pm, time_ratio_vs_ais=ratio)


def report(args, out) -> None:
    """The tensor table, JSON and Markdown."""
    rows, summary = [], {}
    for m in args.sizes:
        rs = [r for r in out if r["m"] == m]
        for name in METHODS:
            row, summary[f"{m}/{name}"] = summarize(m, rs, name)
            rows.append(row)
    table = _shared.markdown_table(
        [
            "m",
            "sparsity (train)",
            "method",
            "NMSE",
            "NMSE (post-proc.)",
            "ranks",
            "post-proc. s",
            f"iters to gap {C.GAP:g}",
            f"s to gap {C.GAP:g}",
            "time / AIS-Impute",
        ],
        rows,
    )
    print(table)
    _shared.write(
        "completion_tensor",
        args.out,
        dict(sizes=args.sizes, reps=args.reps, tol=args.tol, max_iter=args.max_iter),
        dict(summary=summary, runs=out),
        table,
    )


def main():
    args = configure()
    out = run_all(args)
    report(args, out)
    if not args.no_plots:
        C.plot_gaps(out, args.sizes, f"{args.out}/completion_tensor.png")


if __name__ == "__main__":
    main()
