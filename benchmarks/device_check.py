"""One short CPU-vs-CUDA check of every estimator's defaults, side by side.

For a lent GPU machine (DEVELOPERS.md, "A GPU session"): each estimator is
fitted with its defaults on a problem large enough for the device to matter,
once on the CPU and once on CUDA (after a small CUDA warm-up fit), with the
same seed; the table gives both fit times, their ratio and the quality metric
of each run, so a CUDA result that differs from the CPU's shows as well.

    python benchmarks/device_check.py            # needs CUDA and $EMBEDOPT_DATA
    python benchmarks/device_check.py --only pq  # one row

Writes the Markdown table to stdout (and ``--out`` if given).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.data import (
    load_digits,
    load_movielens,
    make_correlated_gaussian,
    make_low_rank_matrix,
    make_low_rank_tensor,
    make_planted_embedding,
    split_by_user,
)
from embedopt.ordinal import OrdinalEmbedding
from embedopt.quantization import ProductQuantizer, TwoTowerRetrieval
from embedopt.sdp import KernelLearning
from embedopt.similarity import TwoTowerModel


def _completion():
    prob = make_low_rank_matrix(2000, rank=5, random_state=0)
    rng = np.random.default_rng(1)
    rows, cols = rng.integers(0, 2000, 100_000), rng.integers(0, 2000, 100_000)
    truth = prob.truth_at(rows, cols)

    def quality(est):
        err = est.predict(np.column_stack([rows, cols])) - truth
        return f"NMSE {np.sum(err**2) / np.sum(truth**2):.3e}"

    return lambda dev: MatrixCompletion(random_state=0, device=dev).fit(
        prob.observed
    ), quality


def _tensor():
    prob = make_low_rank_tensor(100, n_observed=200_000, random_state=0)
    return lambda dev: TensorCompletion(random_state=0, device=dev).fit(
        prob.observed
    ), lambda est: f"lambda {est.lam_:.3g}"


def _ordinal():
    prob = make_planted_embedding(
        1000, 10, n_train=100_000, n_test=10_000, random_state=0
    )
    return lambda dev: OrdinalEmbedding(
        10, solver="svrg_sbb", random_state=0, device=dev
    ).fit(prob.train), lambda est: f"test acc {est.score(prob.test):.3f}"


def _kernel():
    data = load_digits()
    return lambda dev: KernelLearning(random_state=0, device=dev).fit(
        data.X, y=data.y
    ), lambda est: f"Rand {est.score(data.X, data.y):.3f}"


def _pq():
    X = make_correlated_gaussian(50_000, 128, random_state=0)
    return lambda dev: ProductQuantizer(16, 256, random_state=0, device=dev).fit(
        X
    ), lambda est: f"distortion {-est.score(X):.4g}"


def _two_tower():
    ratings = load_movielens("100k")
    train, test = split_by_user(
        (ratings.entries.indices[:, 0], ratings.entries.indices[:, 1]),
        (0.8, 0.2),
        random_state=0,
    )
    return lambda dev: TwoTowerModel(random_state=0, device=dev).fit(
        train
    ), lambda est: f"P@10 {est.evaluate(test)['precision@10']:.4f}"


def _retrieval():
    ratings = load_movielens("100k")
    idx = ratings.entries.indices
    return lambda dev: TwoTowerRetrieval(
        n_steps=300, warmup_steps=300, random_state=0, device=dev
    ).fit((idx[:, 0], idx[:, 1])), lambda est: f"loss {est.objective_:.4f}"


CASES: dict[str, Callable] = {
    "completion": _completion,
    "tensor": _tensor,
    "ordinal": _ordinal,
    "sdp": _kernel,
    "pq": _pq,
    "two_tower": _two_tower,
    "retrieval": _retrieval,
}


def _timed(fit, dev):
    if dev == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    est = fit(dev)
    if dev == "cuda":
        torch.cuda.synchronize()
    return est, time.perf_counter() - t0


def run(name: str, devices=("cpu", "cuda")) -> str:
    try:
        fit, quality = CASES[name]()
        rows = {}
        for dev in devices:
            if dev == "cuda":
                _timed(fit, dev)  # warm-up: kernels, cuBLAS handles
            est, seconds = _timed(fit, dev)
            rows[dev] = (seconds, quality(est), est.solver_)
        (tc, qc, sc), (tg, qg, sg) = rows[devices[0]], rows[devices[-1]]
        solver = sc if sc == sg else f"{sc} / {sg}"  # auto may differ on CUDA
        times = f"{tc:.2f} | {tg:.2f} | {tc / tg:.1f}x"
        return f"| {name} | {solver} | {times} | {qc} | {qg} |"
    except Exception as exc:  # a broken row must not hide the others
        return f"| {name} | error | | | | {type(exc).__name__}: {exc} | |"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    p.add_argument("--out", default=None)
    p.add_argument(
        "--devices", nargs=2, default=["cpu", "cuda"], help=argparse.SUPPRESS
    )
    args = p.parse_args()
    warnings.simplefilter("ignore")
    lines = [
        "| estimator | solver | CPU s | CUDA s | CPU / CUDA | CPU quality "
        "| CUDA quality |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in args.only or CASES:
        lines.append(run(name, tuple(args.devices)))
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as fh:
            gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-"
            fh.write(f"{gpu}, torch {torch.__version__}\n\n")
            fh.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
