"""Reading the user's own ids: the cost of mapping 10^7 rows (issue 22).

A ratings table of ``--rows`` rows, 10^6 distinct users and 10^5 distinct
items (no repeated (user, item) pair), with integer ids (sparse: drawn up to
10^9, as MovieLens movieIds are sparse) and with string ids
(``"user123456"``). Measured, median of ``--repeat`` runs:

* ``IdMap.fit`` of the user column alone, through pandas
  (``factorize(sort=True)``) and through NumPy alone (``np.unique``);
* the whole input stage of ``MatrixCompletion.fit`` (both id columns mapped,
  the values read, ``ObservedEntries`` built and validated, duplicates
  included), from a DataFrame and, without pandas, from a tuple of string
  arrays; and the same stage on positions 0..n-1 (no mapping) for contrast.

No solver runs.

    python benchmarks/completion/ids.py --quick   # 10^6 rows
    python benchmarks/completion/ids.py           # 10^7 rows
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared

N_USERS, N_ITEMS = 10**6, 10**5


def configure(argv=None):
    p = _shared.parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10**7)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.repeat = 10**6, 2
    _shared.setup(args)
    return args


def table(rows: int, seed: int):
    """Codes of ``rows`` distinct (user, item) pairs, their values, and the
    sparse integer ids of every user and item."""
    rng = np.random.default_rng(seed)
    lin = np.unique(rng.integers(0, N_USERS * N_ITEMS, int(rows * 1.01)))
    lin = rng.permutation(lin)[:rows]
    users, items = lin // N_ITEMS, lin % N_ITEMS
    user_ids = np.sort(rng.choice(10**9, N_USERS, replace=False))
    item_ids = np.sort(rng.choice(10**9, N_ITEMS, replace=False))
    values = rng.integers(1, 11, rows) / 2.0
    return users, items, user_ids, item_ids, values


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return _shared.median(times)


def input_stage(X):
    """What ``MatrixCompletion.fit`` does before any solver: read and map."""
    from embedopt.completion import MatrixCompletion

    model = MatrixCompletion()
    model._fit_maps = None
    return model._entries(X, None, None)


def run(args) -> dict:
    import pandas as pd

    import embedopt.data.ids as ids_module
    from embedopt.data import IdMap

    users, items, user_ids, item_ids, values = table(args.rows, args.seed)
    kinds = {
        "int": (user_ids[users], item_ids[items]),
        "str": (
            np.char.add("user", user_ids[users].astype(str)).astype(object),
            np.char.add("item", item_ids[items].astype(str)).astype(object),
        ),
    }
    numpy_only = ids_module._pandas
    results = {
        "positions": {
            "input stage": timed(
                lambda: input_stage((users, items, values)), args.repeat
            )
        }
    }
    for kind, (u, i) in kinds.items():
        frame = pd.DataFrame({"user": u, "item": i, "rating": values})
        row = {
            "IdMap.fit, pandas": timed(lambda u=u: IdMap.fit(u), args.repeat),
            "input stage, DataFrame": timed(
                lambda f=frame: input_stage(f), args.repeat
            ),
        }
        ids_module._pandas = lambda: None  # NumPy alone, as without pandas
        try:
            row["IdMap.fit, NumPy"] = timed(lambda u=u: IdMap.fit(u), args.repeat)
            if kind == "str":  # a tuple of strings is mapped without pandas
                row["input stage, tuple, NumPy"] = timed(
                    lambda u=u, i=i: input_stage((u, i, values)), args.repeat
                )
        finally:
            ids_module._pandas = numpy_only
        entries = input_stage(frame)
        assert entries.shape == (np.unique(users).size, np.unique(items).size)
        results[kind] = row
        print(kind, row, flush=True)
    return results


def report(args, results) -> None:
    columns = [
        "IdMap.fit, pandas",
        "IdMap.fit, NumPy",
        "input stage, DataFrame",
        "input stage, tuple, NumPy",
        "input stage",
    ]
    rows = [
        [kind, *(f"{r[c]:.2f}" if c in r else "" for c in columns)]
        for kind, r in results.items()
    ]
    text = _shared.markdown_table(["ids", *[f"{c} (s)" for c in columns]], rows)
    name = "completion_ids" + ("_quick" if args.quick else "")
    config = {"rows": args.rows, "users": N_USERS, "items": N_ITEMS}
    print(text)
    print("wrote", _shared.write(name, args.out, config, results, text))


def main(argv=None) -> None:
    args = configure(argv)
    report(args, run(args))


if __name__ == "__main__":
    main()
