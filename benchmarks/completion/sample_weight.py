"""AIS-Impute's time per iteration with and without sample weights (MovieLens).

Weights change the sparse part of ``Z_t`` from ``l'`` to ``w * l'`` on the
observed entries (one more elementwise product, O(|Omega|)) and the step from
``1 / rho`` to ``1 / (max(w) rho)``: an iteration should cost the same.

Protocol: MovieLens (100K by default), every rating, z-scored with the global
mean and standard deviation; one fixed lambda (``--lam-ratio`` times
lambda_max of the unweighted problem); AIS-Impute with ``tol=0`` and a fixed
``--iters`` (so every fit runs the same number of iterations) from scratch.
After one untimed fit of each, the variants are fitted in turn (a different
one first in each round), ``--reps`` times each: no weights; weights all 1
(the weighted code path, the same iterates bit for bit); weights drawn
uniformly in [0.5, 1.5] (other iterates, a similar rank). Reported: the
median over the fits of the CPU time per iteration (each fit's median over
iterations 2 to the last, in process time: a shared machine stretches the
wall clock and bursts of load hit single iterations) and of the wall time per
iteration (each fit's mean), their ratios to no weights, and the final rank.

    python benchmarks/completion/sample_weight.py --threads 1
    python benchmarks/completion/sample_weight.py --quick
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import Centering, CompletionProblem, ais_impute
from embedopt.data import load_movielens

VARIANTS = ("none", "ones", "uniform [0.5, 1.5]")


def weights(variant: str, n: int, seed: int):
    """The sample weights of one variant (None for no weights)."""
    if variant == "none":
        return None
    if variant == "ones":
        return np.ones(n)
    return np.random.default_rng(seed).uniform(0.5, 1.5, n)


def fit(entries, w, lam, args) -> dict:
    """One AIS-Impute fit of ``args.iters`` iterations; its time per iteration."""
    problem = CompletionProblem(
        entries, dtype=args.dtype, device=args.device, sample_weight=w
    )
    clock = _shared.CpuClock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # tol=0 never stops
        res = ais_impute(
            problem,
            lam=lam,
            tol=0.0,
            max_iter=args.iters,
            random_state=args.seed,
            callback=clock,
        )
    cpu = np.diff(clock.times)  # iterations 2.. (the first also starts the SVT)
    return dict(
        per_iter=float(np.median(cpu)),
        wall_per_iter=res.elapsed / res.n_iter,
        n_iter=res.n_iter,
        rank=int(res.x[1].numel()),
    )


def run(args) -> dict:
    """Every variant ``args.reps`` times, in turn; the fits of each variant."""
    entries = load_movielens(args.dataset, args.data_dir).entries
    entries = Centering("global", scale=True).fit(entries).transform(entries)
    plain = CompletionProblem(entries, dtype=args.dtype, device=args.device)
    lam = args.lam_ratio * plain.lambda_max()
    for v in VARIANTS:  # warm-up, not timed
        fit(entries, weights(v, entries.nnz, args.seed), lam, args)
    fits = {v: [] for v in VARIANTS}
    for rep in range(args.reps):
        k = rep % len(VARIANTS)  # a different variant first in each round
        for v in VARIANTS[k:] + VARIANTS[:k]:
            fits[v].append(fit(entries, weights(v, entries.nnz, args.seed), lam, args))
        print(rep, {v: round(f[-1]["per_iter"] * 1e3, 2) for v, f in fits.items()})
    return dict(lam=lam, nnz=entries.nnz, fits=fits)


def report(args, results) -> None:
    """The table: ms per iteration, ratio to no weights, iterations and rank."""
    fits = results["fits"]
    rows = []
    for v in VARIANTS:
        row = [args.dataset, v]
        for key in ("per_iter", "wall_per_iter"):
            t = _shared.median([f[key] for f in fits[v]])
            base = _shared.median([f[key] for f in fits["none"]])
            row += [f"{t * 1e3:.2f}", f"{t / base:.3f}"]
        rows.append([*row, args.iters, int(np.median([f["rank"] for f in fits[v]]))])
    headers = ["data", "sample_weight", "CPU ms / iteration", "ratio"]
    headers += ["wall ms / iteration", "ratio", "iterations", "rank"]
    table = _shared.markdown_table(headers, rows)
    print(table)
    _shared.write(
        "completion_sample_weight",
        args.out,
        dict(vars(args)),
        results,
        table,
    )


def configure():
    """The command line."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="100k")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--lam-ratio", type=float, default=0.1)
    p.add_argument("--dtype", default="float32")
    args = p.parse_args()
    _shared.setup(args)
    args.reps = args.reps or (2 if args.quick else 5)
    args.iters = args.iters or (20 if args.quick else 100)
    return args


if __name__ == "__main__":
    args = configure()
    report(args, run(args))
