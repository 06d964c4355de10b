"""Cost of sample_weight: a weighted epoch / full pass against an unweighted one.

Planted 10-d points, random triplets, STE, p = 10, float32, one thread.
Weighted runs draw one weight per triplet from U(0, 2). Measured in CPU time
(the process clock: the wall clock of the shared machine moved by +-40 %
between runs), with the weighted and unweighted runs interleaved in ABBA
order (median of ``--repeats`` each):

- one SVRG-SBB epoch (b = 100, m = |Q|; epochs 2.. of each run, the first
  also holds the step-size probe);
- one full pass ``value_and_grad`` (what every L-BFGS evaluation costs),
  through the pair-incidence product (1,000 objects) and through the n x n
  distance matrix (100 objects, 10^4 triplets).

    python benchmarks/ordinal/weights.py            # 10^5 triplets, ~30 s
    python benchmarks/ordinal/weights.py --quick    # 3 10^4 triplets, ~10 s

Writes benchmarks/results/ordinal_weights.{json,md}.
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C  # noqa: F401  first: it sets single-threading
import _shared

import argparse
import time
import warnings

import numpy as np
import torch

from embedopt.data import make_planted_embedding
from embedopt.ordinal import OrdinalProblem, get_loss, svrg_sbb


def epoch_seconds(train, weights, epochs, seed):
    """Median CPU time of the epochs after the first of one SVRG-SBB run."""
    clock = _shared.CpuClock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = svrg_sbb(
            train,
            10,
            max_iter=epochs,
            tol=0,
            random_state=seed,
            device="cpu",
            sample_weight=weights,
            callback=clock,
        )
    assert res.n_iter == epochs
    return float(np.median(np.diff(clock.times)))


def pass_seconds(train, weights, seed, calls=None):
    """Mean CPU time of ``calls`` full passes (after one that builds the caches);
    default about 2 10^6 comparisons' worth, so that one measurement takes
    tenths of a second whatever |Q|."""
    calls = calls or max(10, round(2e6 / len(train)))
    problem = OrdinalProblem(train, get_loss("ste", 10), sample_weight=weights)
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(problem.n_objects, 10, generator=gen) * 0.1
    problem.value_and_grad(X)
    t0 = time.process_time()
    for _ in range(calls):
        problem.value_and_grad(X)
    return (time.process_time() - t0) / calls, problem.dense


def interleaved(measure, train, weights, repeats):
    """Median over ``repeats`` of ``measure`` without and with the weights
    (in the order AB, BA, AB, ...: a drift of the machine's load cancels)."""
    plain, weighted = [], []
    for r in range(repeats):
        if r % 2:
            weighted.append(measure(train, weights, r))
            plain.append(measure(train, None, r))
        else:
            plain.append(measure(train, None, r))
            weighted.append(measure(train, weights, r))
    return _shared.median(plain), _shared.median(weighted)


def run(args):
    rows = []
    sizes = [(1000, args.triplets, "epoch"), (1000, args.triplets, "pass")]
    sizes.append((100, 10_000, "pass"))  # n^2 <= 2 |Q|: the n x n pass
    for n, m, what in sizes:
        prob = make_planted_embedding(n, 10, n_train=m, n_test=10, random_state=0)
        w = np.random.default_rng(0).uniform(0.0, 2.0, m)
        if what == "epoch":

            def measure(t, ww, r):
                return epoch_seconds(t, ww, args.epochs, r)

            label = "SVRG-SBB epoch (b = 100, m = all)"
        else:
            dense = pass_seconds(prob.train, None, 0, calls=1)[1]

            def measure(t, ww, r):
                return pass_seconds(t, ww, r)[0]

            label = "full pass, " + ("n x n distances" if dense else "incidence")
        plain, weighted = interleaved(measure, prob.train, w, args.repeats)
        rows.append([label, n, m, plain, weighted, weighted / plain])
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 10^4 triplets")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=4)
    args = ap.parse_args(argv)
    args.triplets = 30_000 if args.quick else 100_000
    t0 = time.perf_counter()
    rows = run(args)
    headers = ["what", "objects", "triplets", "unweighted (CPU s)", "weighted (CPU s)"]
    md = _shared.markdown_table([*headers, "ratio"], rows)
    payload = {
        "experiment": "cost of sample_weight",
        "config": vars(args),
        "versions": _shared.environment(),
        "rows": rows,
        "wall_seconds": time.perf_counter() - t0,
    }
    text = f"# ordinal_weights\n\nCommand: `{_shared.command()}`\n\n{md}\n"
    path, _ = _shared.write_outputs("ordinal_weights", payload, text)
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
