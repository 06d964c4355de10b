"""New users for a fitted TwoTowerModel: fold-in, warm refit, cold start (issue 23).

MovieLens implicit feedback, per-user 80/20 split (``_common.movielens``),
exact top-10 over all items with the training pairs excluded:

1. **fold-in**: ``--held`` users (500) are left out of a fit on the other
   users; their 80 % training pairs are then added with
   ``partial_fit(refit="new")`` (each new row the exact ALS row given the
   items). P@10 / MAP@10 on their 20 % test pairs against the same users in
   a full fit on all training pairs (goal: within 1 % P@10).
2. **warm refit**: 1 % of the training pairs are held back from a fit and
   then added with ``partial_fit(refit="all")``: the time until its
   objective reaches the final objective of a cold fit on all the pairs,
   against the cold fit's time (goal: >= 5x sooner).
3. **cold start**: the ``--held`` users have no pairs at all; a model with a
   user tower over gender / age / occupation / zip (``--cold-towers``,
   item tower an id table) ranks items for them with
   ``recommend_for_features``; P@10 on all their pairs against the
   most-popular ranking. implicit's iALS cannot place a user without
   interactions (and implicit is not installed in this environment).

Usage::

    python benchmarks/similarity/serving.py --quick    # ML-100K, 100 users
    python benchmarks/similarity/serving.py            # ML-1M, 500 users
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


def _fit(data, seed, **kw):
    from embedopt.similarity import TwoTowerModel

    features = kw.pop("user_features", None)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter
        model = TwoTowerModel(random_state=seed, **kw).fit(data, user_features=features)
    return model, time.perf_counter() - t0


def _held_last(train, test, held):
    """The pairs with the held users' codes moved to the end (new positions)."""
    import numpy as np

    from embedopt.data import Interactions

    m = train.shape[0]
    code = np.empty(m, dtype=np.int64)
    rest = np.setdiff1d(np.arange(m), held)
    code[rest] = np.arange(rest.size)
    code[held] = np.arange(rest.size, m)
    return [
        Interactions(code[d.users], d.items, d.shape, d.values) for d in (train, test)
    ]


def _subset(data, keep, shape=None):
    from embedopt.data import Interactions

    return Interactions(data.users[keep], data.items[keep], shape or data.shape)


def fold_in(train, test, held, seed) -> dict:
    """P@10 of held users folded in against the same users in a full fit."""
    m = train.shape[0]
    first = m - held.size
    train, test = _held_last(train, test, held)
    test_held = _subset(test, test.users >= first)
    full, full_s = _fit(train, seed)
    base_pairs = _subset(train, train.users < first, (first, train.shape[1]))
    base, base_s = _fit(base_pairs, seed)
    new = train.users >= first
    t0 = time.perf_counter()
    base.partial_fit((train.users[new], train.items[new]))
    fold_s = time.perf_counter() - t0
    out = {"full_fit_s": full_s, "base_fit_s": base_s, "fold_in_s": fold_s}
    for name, model in (("full", full), ("fold_in", base)):
        r = ranking(model.user_embeddings_, model.item_embeddings_, train, test_held, K)
        out.update({f"{name}_{key}": v for key, v in r.items()})
    out["P_rel"] = out["fold_in_P@10"] / out["full_P@10"] - 1
    return out


def warm_refit(train, seed, fraction=0.01) -> dict:
    """Time of refit="all" after ``fraction`` new pairs to a cold fit's objective."""
    import numpy as np

    rng = np.random.default_rng(seed + 7)
    new = np.zeros(len(train), bool)
    new[rng.choice(len(train), round(fraction * len(train)), replace=False)] = True
    cold, cold_s = _fit(train, seed)
    warm, _ = _fit(_subset(train, ~new), seed)
    stamps = []  # wall clock at the end of each iteration, to place the solver's clock
    warm.set_params(callback=lambda state: stamps.append(time.perf_counter()))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.partial_fit((train.users[new], train.items[new]), refit="all")
    warm_s = time.perf_counter() - t0
    h = warm.history_
    # wall clock, as the cold fit's time: from the call of partial_fit to the
    # end of the first iteration whose point reaches the cold fit's objective
    # (history_ holds one row per iteration, the callback runs after each)
    hit = np.flatnonzero(h["objective"] <= cold.objective_)
    assert len(stamps) == warm.n_iter_ == h["objective"].size
    reach = stamps[int(hit[0])] - t0 if hit.size else float("nan")
    return {
        "new_pairs": int(new.sum()),
        "cold_fit_s": cold_s,
        "cold_iter": cold.n_iter_,
        "cold_objective": cold.objective_,
        "refit_all_s": warm_s,
        "refit_iter": warm.n_iter_,
        "refit_objective": warm.objective_,
        "refit_reach_s": reach,
        "reach_iter": int(hit[0]) + 1 if hit.size else None,
        "speedup": cold_s / reach if hit.size else float("nan"),
    }


def cold_start(train, test, user_features, held, seed, towers) -> dict:
    """P@10 of users placed by their features only, and of the popular items."""
    import numpy as np

    from embedopt.nn import pairs_by_user, ranking_metrics

    m = train.shape[0]
    keep = np.setdiff1d(np.arange(m), held)
    code = np.full(m, -1)
    code[keep] = np.arange(keep.size)
    rest = np.isin(train.users, keep)
    from embedopt.data import Interactions

    base = Interactions(
        code[train.users[rest]], train.items[rest], (keep.size, train.shape[1])
    )
    relevant_pairs = Interactions(
        np.concatenate([train.users, test.users]),
        np.concatenate([train.items, test.items]),
        train.shape,
    )
    cold = _subset(relevant_pairs, np.isin(relevant_pairs.users, held))
    users, relevant = pairs_by_user(cold)
    feats = {key: v[keep] for key, v in user_features.items()}
    popular = np.argsort(
        -np.bincount(base.items, minlength=train.shape[1]), kind="stable"
    )
    ids = np.tile(popular[:K], (users.size, 1))
    out = {f"popular_{k}": v for k, v in ranking_metrics(ids, relevant, K).items()}
    for tower in towers:
        model, seconds = _fit(
            base, seed, user_tower=tower, item_tower="embedding", user_features=feats
        )
        query = {key: v[users] for key, v in user_features.items()}
        ids, _ = model.recommend_for_features(query, k=K)
        r = ranking_metrics(ids, relevant, K)
        out.update({f"{tower}_{k}": v for k, v in r.items()})
        out[f"{tower}_fit_s"] = seconds
        out[f"{tower}_solver"] = f"{model.n_iter_} iterations of {model.solver_}"
    return out


def main() -> int:
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="100k or 1m (default: 100k quick, 1m)")
    p.add_argument(
        "--held", type=int, default=None, help="held-out users (100 quick, 500)"
    )
    p.add_argument(
        "--parts", nargs="+", default=["fold", "refit", "cold"], help="what to run"
    )
    p.add_argument(
        "--cold-towers", nargs="+", default=["mlp", "hybrid"], help="user towers"
    )
    args = p.parse_args()
    _shared.setup(args)
    import numpy as np

    name = args.data or ("100k" if args.quick else "1m")
    n_held = args.held or (100 if args.quick else 500)
    train, test, users, _ = movielens(name, args.seed)
    held = np.sort(
        np.random.default_rng(args.seed).choice(train.shape[0], n_held, replace=False)
    )
    results, lines = (
        {},
        [
            f"MovieLens-{name}, implicit, per-user 80/20 split (seed {args.seed}), "
            f"{n_held} held-out users, TwoTowerModel() defaults unless said\n"
        ],
    )
    if "fold" in args.parts:
        r = results["fold_in"] = fold_in(train, test, held, args.seed)
        lines.append(_fold_table(r))
    if "refit" in args.parts:
        r = results["warm_refit"] = warm_refit(train, args.seed)
        lines.append(_refit_table(r))
    if "cold" in args.parts:
        r = results["cold_start"] = cold_start(
            train, test, users, held, args.seed, args.cold_towers
        )
        lines.append(_cold_table(r, args.cold_towers))
    md = "\n\n".join(lines)
    print(md)
    stem = f"similarity_serving_{name}" + ("_quick" if args.quick else "")
    _shared.write(stem, args.out, vars(args), results, md)
    return 0


def _fold_table(r) -> str:
    rows = [
        [
            "full fit (all training pairs)",
            r["full_P@10"],
            r["full_MAP@10"],
            f"{r['full_fit_s']:.1f}",
        ],
        [
            'fit without them + partial_fit(refit="new")',
            r["fold_in_P@10"],
            r["fold_in_MAP@10"],
            f"{r['base_fit_s']:.1f} + {r['fold_in_s']:.3f}",
        ],
    ]
    rows = [[a, f"{b:.4f}", f"{c:.4f}", d] for a, b, c, d in rows]
    return (
        "Fold-in of the held-out users (their 80 % pairs), P@10 on their test pairs: "
        f"{100 * r['P_rel']:+.2f} % against the full fit\n\n"
        + _shared.markdown_table(["held-out users", "P@10", "MAP@10", "fit s"], rows)
    )


def _refit_table(r) -> str:
    reach = (
        "not reached"
        if r["reach_iter"] is None
        else (
            f"{r['refit_reach_s']:.2f} s (after {r['reach_iter']} iterations), "
            f"{r['speedup']:.1f}x sooner"
        )
    )
    rows = [
        [
            "cold fit on all pairs",
            f"{r['cold_objective']:.1f}",
            r["cold_iter"],
            f"{r['cold_fit_s']:.2f}",
            "",
        ],
        [
            f'partial_fit({r["new_pairs"]} new pairs, refit="all")',
            f"{r['refit_objective']:.1f}",
            r["refit_iter"],
            f"{r['refit_all_s']:.2f}",
            reach,
        ],
    ]
    return "Warm refit after 1 % new pairs\n\n" + _shared.markdown_table(
        ["run", "objective", "iterations", "s", "cold fit's objective reached"], rows
    )


def _cold_table(r, towers) -> str:
    rows = [
        [
            "most popular",
            *(f"{r[f'popular_{m}@{K}']:.4f}" for m in ("precision", "map")),
            "",
            "",
        ]
    ]
    for t in towers:
        rows.append(
            [
                f"recommend_for_features, user_tower={t!r}",
                *(f"{r[f'{t}_{m}@{K}']:.4f}" for m in ("precision", "map")),
                f"{r[f'{t}_fit_s']:.1f}",
                r[f"{t}_solver"],
            ]
        )
    rows.append(
        [
            "implicit iALS",
            "n/a",
            "n/a",
            "",
            "cannot place a user without pairs (not installed)",
        ]
    )
    return (
        "Cold-start users (no pairs; gender, age, occupation, zip), all their "
        "pairs relevant\n\n"
        + _shared.markdown_table(["method", "P@10", "MAP@10", "fit s", "notes"], rows)
    )


if __name__ == "__main__":
    sys.exit(main())
