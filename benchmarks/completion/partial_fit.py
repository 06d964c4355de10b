"""MatrixCompletion.partial_fit: fold-in of new users and warm refits (issue 23).

Two measurements on MovieLens (1M by default), one seed:

1. Fold-in (``refit="new"``). ``--held-users`` users (500) are held out
   entirely, and 1 % of the other users' ratings are put aside for part 2.
   Model A is fitted with the defaults on the rest (positions, the full
   shape: the held-out users are rows without entries). Each held-out user's
   ratings are split 80 / 20 at random; A folds in the 80 %
   (``partial_fit(..., refit="new")``). Model B is a full default fit on
   the same rest plus those 80 %. Reported: the RMSE on the held-out users'
   20 % of A after the fold-in, of B, and of the offsets alone (what
   ``unknown="fallback"`` predicts for a user without data), with the times.
   Goal: A within 1 % of B.
2. Warm refit (``refit="all"``). B then receives the 1 % put aside with
   ``partial_fit(..., refit="all")``: AIS-Impute at B's ``lam_`` on every
   entry, warm-started from B's factors; against a cold fit at the same
   lambda, centering mode and regularizer on the same entries
   (``MatrixCompletion(lam=B.lam_, center=B.center_, regularizer=...)``).
   Reported: CPU seconds of each solve to reach the cold solve's final objective (and to
   within 0.1 % of it), from the solvers' histories, and the whole calls'
   wall times. Goal: >= 5x sooner. B here is refitted with
   ``regularizer="nuclear"`` (the same entries): on that convex problem the
   warm and the cold solves reach the same objective. The default's MCP
   refit freezes its weights at the start (a weighted nuclear norm), so its
   objective is not the one a cold MCP fit minimizes.

    python benchmarks/completion/partial_fit.py --quick   # ML-100K, 50 users
    python benchmarks/completion/partial_fit.py           # ML-1M, 500 users
"""

from __future__ import annotations

import copy
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import MatrixCompletion
from embedopt.data import ObservedEntries, load_movielens


def configure(argv=None):
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--dataset", default="1m", choices=["100k", "1m", "latest-small"])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--held-users", type=int, default=500)
    p.add_argument("--added", type=float, default=0.01, help="part 2's new share")
    args = p.parse_args(argv)
    if args.quick:
        args.dataset, args.held_users = "100k", 50
    return args


def _triple(e: ObservedEntries):
    return e.indices[:, 0], e.indices[:, 1], e.values


def split(entries: ObservedEntries, args):
    """(rest, added, held-out users' 80 %, their 20 %) as ObservedEntries."""
    rng = np.random.default_rng(args.seed)
    users = rng.choice(entries.shape[0], args.held_users, replace=False)
    held = np.isin(entries.indices[:, 0], users)
    others = np.flatnonzero(~held)
    added = rng.random(others.size) < args.added
    rows = np.flatnonzero(held)
    fold = rng.random(rows.size) < 0.8
    return tuple(
        entries.subset(i)
        for i in (others[~added], others[added], rows[fold], rows[~fold])
    )


def _rmse(model, test: ObservedEntries) -> float:
    return -model.score(_triple(test))


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def fold_in(entries, rest, fold, test, args) -> tuple[dict, MatrixCompletion]:
    """Part 1: fold-in against a full refit; returns B for part 2."""
    shape = entries.shape
    a, t_a = _timed(
        lambda: MatrixCompletion(random_state=args.seed, device=args.device).fit(
            _triple(rest), shape=shape
        )
    )
    offsets_only = -_offsets_score(a, test)
    _, t_fold = _timed(lambda: a.partial_fit(_triple(fold), refit="new"))
    both = ObservedEntries(
        np.concatenate([rest.indices, fold.indices]),
        np.concatenate([rest.values, fold.values]),
        shape,
    )
    b, t_b = _timed(
        lambda: MatrixCompletion(random_state=args.seed, device=args.device).fit(
            _triple(both), shape=shape
        )
    )
    out = dict(
        rmse_fold_in=_rmse(a, test),
        rmse_full_refit=_rmse(b, test),
        rmse_offsets_only=offsets_only,
        fit_a_s=t_a,
        fold_in_s=t_fold,
        full_refit_s=t_b,
        lam_a=a.lam_,
        lam_b=b.lam_,
        rank_a=a.rank_,
        rank_b=b.rank_,
        n_fold_entries=fold.nnz,
        n_test_entries=test.nnz,
    )
    out["ratio"] = out["rmse_fold_in"] / out["rmse_full_refit"]
    return out, b


def _offsets_score(model, test) -> float:
    """-RMSE of the fitted offsets alone (the prediction for an unseen user)."""
    pred = model.centering_.offsets(test.indices)
    pred -= model.centering_.row_offset_[test.indices[:, 0]]  # the user has none
    return -float(np.sqrt(np.mean((pred - test.values) ** 2)))


def warm_refit(b: MatrixCompletion, added: ObservedEntries, args) -> dict:
    """Part 2: ``partial_fit(refit="all")`` against a cold fit at B's lambda."""
    warm = copy.deepcopy(b)
    clock_w = _shared.CpuClock()
    warm.set_params(callback=clock_w)
    _, t_warm = _timed(lambda: warm.partial_fit(_triple(added), refit="all"))
    everything = warm.entries_
    clock_c = _shared.CpuClock()
    cold = MatrixCompletion(
        lam=b.lam_,
        center=b.center_,
        regularizer=b.regularizer,
        random_state=args.seed,
        device=args.device,
        callback=clock_c,
    )
    _, t_cold = _timed(lambda: cold.fit(_triple(everything), shape=everything.shape))
    f_cold = float(cold.history_["objective"][-1])
    f_warm = np.asarray(warm.history_["objective"])
    f_cold_path = np.asarray(cold.history_["objective"])
    out = dict(
        lam=b.lam_,
        n_added=added.nnz,
        objective_cold=f_cold,
        objective_warm=float(f_warm[-1]),
        iters_cold=cold.n_iter_,
        iters_warm=warm.n_iter_,
        wall_cold_s=t_cold,
        wall_warm_s=t_warm,
    )
    for name, gap in (("exact", 0.0), ("0.1%", 1e-3)):
        target = f_cold * (1 + gap)
        tc = _shared.time_to(clock_c.times, f_cold_path, target)
        tw = _shared.time_to(clock_w.times, f_warm, target)
        out[f"cpu_cold_to_{name}_s"], out[f"cpu_warm_to_{name}_s"] = tc, tw
        out[f"speedup_{name}"] = tc / tw if tw > 0 else float("inf")
    # the solves alone: wall seconds from each solve's start (its history),
    # without the setup both share (centering, the sparse structure)
    tc = _shared.time_to(cold.history_["time"], f_cold_path, f_cold)
    tw = _shared.time_to(warm.history_["time"], f_warm, f_cold)
    out["solve_cold_to_exact_s"], out["solve_warm_to_exact_s"] = tc, tw
    out["speedup_solve"] = tc / tw if tw > 0 else float("inf")
    return out


def table(r1: dict, r2: dict) -> str:
    t1 = _shared.markdown_table(
        ["", "RMSE on the held-out users' 20 %", "seconds"],
        [
            [
                "A + partial_fit(refit='new')",
                f"{r1['rmse_fold_in']:.4f}",
                f"{r1['fold_in_s']:.2f} (fold-in; fit {r1['fit_a_s']:.1f})",
            ],
            [
                "B: full refit",
                f"{r1['rmse_full_refit']:.4f}",
                f"{r1['full_refit_s']:.1f}",
            ],
            ["offsets only (no user row)", f"{r1['rmse_offsets_only']:.4f}", ""],
            ["fold-in / full refit", f"{r1['ratio']:.4f}", ""],
        ],
    )
    t2 = _shared.markdown_table(
        ["", "cold fit", "partial_fit(refit='all')", "speed-up"],
        [
            [
                "CPU s to the cold objective",
                _num(r2["cpu_cold_to_exact_s"]),
                _num(r2["cpu_warm_to_exact_s"]),
                _num(r2["speedup_exact"]),
            ],
            [
                "CPU s to within 0.1 %",
                _num(r2["cpu_cold_to_0.1%_s"]),
                _num(r2["cpu_warm_to_0.1%_s"]),
                _num(r2["speedup_0.1%"]),
            ],
            [
                "solver wall s to the cold objective (no setup)",
                _num(r2["solve_cold_to_exact_s"]),
                _num(r2["solve_warm_to_exact_s"]),
                _num(r2["speedup_solve"]),
            ],
            ["iterations", str(r2["iters_cold"]), str(r2["iters_warm"]), ""],
            [
                "wall s of the call",
                _num(r2["wall_cold_s"]),
                _num(r2["wall_warm_s"]),
                "",
            ],
            [
                "final objective",
                f"{r2['objective_cold']:.6g}",
                f"{r2['objective_warm']:.6g}",
                "",
            ],
        ],
    )
    return f"Fold-in\n\n{t1}\n\nWarm refit ({r2['n_added']} entries added)\n\n{t2}"


def _num(x) -> str:
    return "never" if not np.isfinite(x) else f"{x:.2f}"


def main(argv=None) -> None:
    args = configure(argv)
    _shared.setup(args)
    warnings.simplefilter("ignore", ConvergenceWarning)
    entries = load_movielens(args.dataset, args.data_dir).entries
    rest, added, fold, test = split(entries, args)
    r1, b = fold_in(entries, rest, fold, test, args)
    b = MatrixCompletion(
        regularizer="nuclear", random_state=args.seed, device=args.device
    ).fit(_triple(b.entries_), shape=b.entries_.shape)
    r2 = warm_refit(b, added, args)
    text = table(r1, r2)
    print(text)
    path = _shared.write(
        f"partial_fit_{args.dataset}",
        args.out,
        vars(args),
        dict(fold_in=r1, refit_all=r2),
        text,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
