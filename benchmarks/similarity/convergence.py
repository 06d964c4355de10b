"""Convergence of the all-pairs solvers: objective and test P@10 against time.

One MovieLens implicit-feedback problem (per-user 80/20 split), one tower
pair (``--towers``: embedding tables, or nn.ConcatTower with side features),
the objective of ``TwoTowerModel``'s defaults (square loss, imputation 0 on
the unobserved pairs, omega = 0.2, lam = 10), the same starting point for
every method, and a wall-clock budget per method. Methods: Gauss-Newton-CG
(the paper's; CG capped at 10 and 50 iterations), gradient descent with
Armijo line search (plain and scaled by the Gauss-Newton diagonal), and the
stochastic / alternating baselines (Adam on sampled pairs and on row x
column blocks, with the library's default learning rate and batch, an
epoch being as many pairs as observed ones; ALS for embedding tables).
The exact objective is recorded after every outer iteration; P@10 on
the test pairs after each, outside the timed part.

Reports, per method: the best objective, its test P@10, and the time to
reach the best objective of the best stochastic method (the issue's goal:
Gauss-Newton reaches Adam's best objective at least 3x sooner).

Usage::

    python benchmarks/similarity/convergence.py --quick           # ML-100K, 20 s
    python benchmarks/similarity/convergence.py --towers concat   # ML-1M, 300 s
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import movielens, ranking

import _shared

K = 10


def _objective(train, users, items, towers, seed):
    import torch

    from embedopt.data import as_side_features
    from embedopt.nn import ConcatTower, EmbeddingTower
    from embedopt.similarity import AllPairsObjective, TwoTowerModel

    d = TwoTowerModel().get_params()
    m, n = train.shape
    g = torch.Generator().manual_seed(seed)
    k = d["n_components"]
    if towers == "embedding":
        ut = EmbeddingTower(m, k, std=0.1, generator=g)
        it = EmbeddingTower(n, k, std=0.1, generator=g)
    else:
        uf = as_side_features(users, m, "user")
        vf = as_side_features(items, n, "item")
        h = d["hidden"]
        ut = ConcatTower(m, k, uf, hidden=h, id_std=0.1, normalize=False, generator=g)
        it = ConcatTower(n, k, vf, hidden=h, id_std=0.1, normalize=False, generator=g)
    return AllPairsObjective(ut, it, train, omega=d["omega"], lam=d["lam"])


def _methods(towers):
    from embedopt import similarity as sim

    out = {
        "GN-CG (cg<=10)": (sim.gauss_newton, {"cg_max_iter": 10}),
        "GN-CG (cg<=50)": (sim.gauss_newton, {"cg_max_iter": 50}),
        "GD + Armijo": (sim.gradient_descent, {}),
        "scaled GD + Armijo": (sim.gradient_descent, {"scaling": "diagonal"}),
        # An epoch of the stochastic methods: as many pairs as observed ones.
        "Adam, sampled pairs": (sim.stochastic, {"sampling": "pairs"}),
        "Adam, row x column blocks": (sim.stochastic, {"sampling": "blocks"}),
    }
    if towers == "embedding":
        out["ALS"] = (sim.als, {})
    return out


def _run(solver, options, objective, x0, budget, train, test):
    records = []

    def callback(state):
        P, Q = objective.embeddings(state.x)
        records.append(ranking(P.numpy(), Q.numpy(), train, test, K)[f"P@{K}"])
        return state.elapsed > budget

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solver(
            objective, x0, max_iter=100000, tol=0.0, callback=callback, **options
        )
    wall = time.perf_counter() - t0
    h = res.history
    return {
        "time": list(map(float, h["time"])),
        "objective": list(map(float, h["objective"])),
        f"P@{K}": records,
        "n_iter": res.n_iter,
        "wall_s": wall,
    }


def _configure():
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="100k or 1m (default: 100k quick, 1m)")
    p.add_argument("--towers", default="embedding", choices=["embedding", "concat"])
    p.add_argument("--budget", type=float, default=None, help="seconds per method")
    args = p.parse_args()
    _shared.setup(args)
    name = args.data or ("100k" if args.quick else "1m")
    budget = args.budget or (20.0 if args.quick else 300.0)
    return args, name, budget


def _run_all(args, name, budget) -> dict:
    train, test, users, items = movielens(name, args.seed)
    objective = _objective(train, users, items, args.towers, args.seed)
    x0 = objective.initial_point()
    runs = {}
    for label, (solver, options) in _methods(args.towers).items():
        if solver.__name__ == "stochastic":
            options = {**options, "pairs_per_epoch": objective.n_observed}
        runs[label] = _run(solver, options, objective, x0, budget, train, test)
        print(
            f"{label}: {runs[label]['n_iter']} iterations, best objective "
            f"{min(runs[label]['objective']):.6g}",
            flush=True,
        )
    return runs


def _report(runs, args, name, budget) -> None:
    stochastic = [k for k in runs if "Adam" in k]
    target = min(min(runs[k]["objective"]) for k in stochastic) if stochastic else None
    headers = [
        "method",
        "iterations",
        "best objective",
        f"P@{K} at end",
        "time to target (s)",
    ]
    rows = []
    for label, r in runs.items():
        reached = (
            _shared.time_to(r["time"], r["objective"], target)
            if target is not None
            else None
        )
        rows.append(
            [
                label,
                r["n_iter"],
                f"{min(r['objective']):.6g}",
                f"{r[f'P@{K}'][-1]:.4f}" if r[f"P@{K}"] else "",
                f"{reached:.2f}" if target is not None else "",
            ]
        )
    md = (
        f"MovieLens-{name}, {args.towers} towers, budget {budget:g} s per method; "
        f"target = best objective of the stochastic methods ({target})\n\n"
        + _shared.markdown_table(headers, rows)
    )
    print(md)
    stem = f"similarity_convergence_{name}_{args.towers}" + (
        "_quick" if args.quick else ""
    )
    _shared.write(stem, args.out, vars(args), runs, md)
    if not args.no_plots:
        _plot(runs, Path(args.out) / f"{stem}.png")


def _plot(runs, path) -> None:
    plt = _shared.figure()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, r in runs.items():
        axes[0].plot(r["time"], r["objective"], label=label)
        axes[1].plot(r["time"], r[f"P@{K}"], label=label)
    axes[0].set(xlabel="time (s)", ylabel="objective", yscale="log")
    axes[1].set(xlabel="time (s)", ylabel=f"test P@{K}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    args, name, budget = _configure()
    _report(_run_all(args, name, budget), args, name, budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
