"""Where SVRG-SBB starts to beat L-BFGS: the threshold of ``solver="auto"``.

``OrdinalEmbedding(10, solver=...)`` with every other parameter at its
default, on planted problems of growing size (n_objects = |Q| / 100, at
least 100: 10^4 triplets is Ma et al.'s Table I problem; points from
N(0, I/20) in 10-d, 10^4 held-out triplets), one thread. Per size and loss,
medians over the seeds of the whole-fit CPU seconds and of the held-out
triplet error of:

- ``solver="lbfgs"`` (what ``"auto"`` runs up to ``AUTO_LBFGS_MAX_COMPARISONS``);
- ``solver="svrg_sbb"`` with m = |Q| and with m = |Q| / 4 (the estimator's
  default above the threshold), compiled inner steps.

SVRG-SBB "wins" a size when it is faster than L-BFGS and its held-out error
is at most L-BFGS's + 0.005.

    python benchmarks/ordinal/threshold.py --quick   # STE, |Q| <= 10^5 (~30 s)
    python benchmarks/ordinal/threshold.py           # 3 losses, 3 seeds (~10 min)

Writes benchmarks/results/ordinal_threshold.{json,md}.
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common  # noqa: F401  (first: it sets single-threading)
import _shared

import argparse
import time
import warnings

import numpy as np

from embedopt.data import make_planted_embedding
from embedopt.metrics import triplet_error
from embedopt.ordinal import OrdinalEmbedding
from embedopt.ordinal.solvers import AUTO_LBFGS_MAX_COMPARISONS

#: How much worse a held-out error may be and still count as a win.
SLACK = 0.005


def configs(quick: bool):
    sizes = [10_000, 30_000, 100_000] if quick else [
        10_000, 20_000, 30_000, 50_000, 100_000, 300_000
    ]  # fmt: skip
    losses = ["ste"] if quick else ["ste", "gnmds", "tste"]
    return sizes, losses


def fit(train, test, n, loss, seed, **kw):
    """CPU seconds of the whole fit, held-out error, solver that ran."""
    est = OrdinalEmbedding(10, loss=loss, random_state=seed, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(train, n_objects=n)
        seconds = time.process_time() - t0
    return seconds, triplet_error(est.embedding_, test), est.n_iter_


def run(sizes, losses, seeds):
    out = {}
    for m in sizes:
        n = max(100, m // 100)
        for seed in range(seeds):
            data = make_planted_embedding(
                n, 10, n_train=m, n_test=10_000, random_state=500 + seed
            )
            for loss in losses:
                variants = {
                    "lbfgs": {"solver": "lbfgs"},
                    "svrg_sbb m=|Q|": {"solver": "svrg_sbb", "update_frequency": m},
                    "svrg_sbb m=|Q|/4": {
                        "solver": "svrg_sbb",
                        "update_frequency": m // 4,
                    },
                }
                for label, kw in variants.items():
                    s, err, it = fit(data.train, data.test, n, loss, seed, **kw)
                    r = out.setdefault((m, loss, label), {"s": [], "err": [], "it": []})
                    r["s"].append(s)
                    r["err"].append(err)
                    r["it"].append(it)
            print(f"|Q| = {m}, seed {seed} done", flush=True)
    return out


def markdown(out, sizes, losses, seeds) -> str:
    lines = [
        f"Whole-fit CPU seconds / held-out error (medians of {seeds} seeds), "
        "OrdinalEmbedding(10) defaults except the solver, 1 thread. `wins`: "
        f"SVRG-SBB faster than L-BFGS at an error at most {SLACK} higher "
        f"(today's threshold: L-BFGS up to {AUTO_LBFGS_MAX_COMPARISONS:,}).",
        "",
        "| loss | \\|Q\\| | objects | L-BFGS | SVRG-SBB m=\\|Q\\| "
        "| SVRG-SBB m=\\|Q\\|/4 | L-BFGS / best SVRG-SBB | wins |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for loss in losses:
        for m in sizes:
            cells, med = [], {}
            for label in ("lbfgs", "svrg_sbb m=|Q|", "svrg_sbb m=|Q|/4"):
                r = out[(m, loss, label)]
                med[label] = (float(np.median(r["s"])), float(np.median(r["err"])))
                cells.append(f"{med[label][0]:.2f} s / {med[label][1]:.3f}")
            lb = med["lbfgs"]
            ok = [v for k, v in med.items() if k != "lbfgs" and v[1] <= lb[1] + SLACK]
            best = min((v[0] for k, v in med.items() if k != "lbfgs"))
            wins = "yes" if ok and min(v[0] for v in ok) < lb[0] else "no"
            lines.append(
                f"| {loss} | {m:,} | {max(100, m // 100):,} | "
                + " | ".join(cells)
                + f" | {lb[0] / best:.2f}x | {wins} |"
            )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="STE, |Q| <= 10^5")
    ap.add_argument("--seeds", type=int, default=None)
    args = ap.parse_args(argv)
    sizes, losses = configs(args.quick)
    seeds = args.seeds or (1 if args.quick else 3)
    t0 = time.perf_counter()
    out = run(sizes, losses, seeds)
    md = markdown(out, sizes, losses, seeds)
    payload = {
        "experiment": "solver='auto' threshold: L-BFGS vs SVRG-SBB by size",
        "config": {"sizes": sizes, "losses": losses, "seeds": seeds,
                   "quick": args.quick, "slack": SLACK},
        "versions": _shared.environment("numba"),
        "results": {f"{m}|{lo}|{la}": r for (m, lo, la), r in out.items()},
        "wall_seconds": time.perf_counter() - t0,
    }  # fmt: skip
    path, _ = _shared.write_outputs("ordinal_threshold", payload, md)
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
