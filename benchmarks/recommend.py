"""Time of the one recommend surface: every ML-1M user, k = 10, rank 64, CPU.

``recommend(users, k, *, exclude_seen, items, filter_items)`` of every
recommender (``nn.RetrievalMixin``) scores chunks of users against all
candidate items and keeps a top-k per chunk, masking each user's seen items
from a CSR row slice, so no users x items matrix is ever formed. This times,
for the three recommenders fitted on MovieLens-1M at rank 64
(``MatrixCompletion`` with ``max_rank=64`` and a small fixed lambda, so the
rank reaches the cap; ``TwoTowerModel(64)``; ``TwoTowerRetrieval(64)``, whose
search is ADC over the items' PQ codes), on 1 and 2 torch threads:

- ``recommend(all 6,040 users, 10)`` (training items excluded),
- the same with ``filter_items`` (100 random items) and with ``items`` (1,000
  random candidates),
- ``similar_items(all items, 10)`` and ``similar_users(all users, 10)``,

each the median of 5 calls after one warm-up, and checks the first against a
naive dense ranking (the full score matrix, seen items set to -inf) where the
model scores exactly. The fits are short (the timing does not depend on how
well the factors fit).

Usage::

    python benchmarks/recommend.py --quick   # MatrixCompletion and TwoTowerModel
    python benchmarks/recommend.py           # also TwoTowerRetrieval
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _shared

import _shared

REPEATS = 5
RANK = 64


def _data():
    from embedopt.data import load_movielens

    return load_movielens("1m").entries


def _fit_completion(e, seed):
    from embedopt.completion import MatrixCompletion

    model = MatrixCompletion(
        lam=1.5, max_rank=RANK, max_iter=80, center="both", random_state=seed
    )
    return model.fit(e), True


def _fit_two_tower(e, seed):
    from embedopt.similarity import TwoTowerModel

    model = TwoTowerModel(RANK, max_iter=2, random_state=seed)
    return model.fit((e.rows, e.cols)), True


def _fit_retrieval(e, seed):
    from embedopt.quantization import TwoTowerRetrieval

    model = TwoTowerRetrieval(
        RANK, warmup_steps=50, n_steps=50, warm_start_iter=5, random_state=seed
    )
    return model.fit((e.rows, e.cols), shape=e.shape), False  # ADC: approximate


def _timed(fn) -> float:
    fn()  # warm-up
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _naive_agrees(model, ids) -> bool:
    """The top-10 of the dense score matrix with seen items at -inf."""
    import numpy as np
    import torch

    m = model.shape_[0]
    with torch.no_grad():
        scores = model._user_vectors(np.arange(m)) @ model._item_vectors(None).T
    dense = scores.double().numpy()
    dense[model._seen_pairs().nonzero()] = -np.inf
    want = -np.sort(-dense, axis=1)[:, :10]
    got = np.take_along_axis(dense, ids, 1)
    return bool(np.allclose(got, want, rtol=1e-6, atol=1e-6))


def measure(model, exact: bool, seed: int) -> dict:
    """Median seconds of each call, per thread count."""
    import numpy as np
    import torch

    m, n = model.shape_
    rng = np.random.default_rng(seed)
    users, all_items = np.arange(m), np.arange(n)
    banned = rng.choice(n, 100, replace=False)
    stock = rng.choice(n, 1000, replace=False)
    calls = {
        "recommend": lambda: model.recommend(users, 10),
        "recommend filter_items=100": lambda: model.recommend(
            users, 10, filter_items=banned
        ),
        "recommend items=1000": lambda: model.recommend(users, 10, items=stock),
        "similar_items (all)": lambda: model.similar_items(all_items, 10),
        "similar_users (all)": lambda: model.similar_users(users, 10),
    }
    out = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        out[threads] = {name: _timed(fn) for name, fn in calls.items()}
    ids, _ = model.recommend(users, 10)
    out["naive_agrees"] = _naive_agrees(model, ids) if exact else None
    return out


def main() -> int:
    p = _shared.parser(__doc__.splitlines()[0])
    args = p.parse_args()
    _shared.setup(args)
    e = _data()
    fits = [("MatrixCompletion", _fit_completion), ("TwoTowerModel", _fit_two_tower)]
    if not args.quick:
        fits.append(("TwoTowerRetrieval", _fit_retrieval))
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of short fits
        for name, fit in fits:
            model, exact = fit(e, args.seed)
            rank = getattr(model, "rank_", RANK)
            rows[name] = {"rank": rank, **measure(model, exact, args.seed)}
    calls = list(rows[next(iter(rows))][1])
    headers = ["model (ML-1M, 6,040 x 3,706)", "rank", "threads", *calls, "= naive"]
    table = [
        [
            name,
            r["rank"],
            t,
            *(f"{r[t][c]:.3f} s" for c in calls),
            {True: "yes", False: "NO", None: "(ADC)"}[r["naive_agrees"]],
        ]
        for name, r in rows.items()
        for t in (1, 2)
    ]
    md = _shared.markdown_table(headers, table)
    print(md)
    _shared.write(
        "recommend" + ("_quick" if args.quick else ""), args.out, vars(args), rows, md
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
