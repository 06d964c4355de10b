"""Size on disk and save / load times of model files on MovieLens-1M.

``estimator.save(path)`` writes a ZIP of ``.npy`` arrays (stored, not
compressed) and one JSON document; ``embedopt.load(path)`` reads it back
without pickle. For two ML-1M models, ``MatrixCompletion()`` on the ratings
and ``TwoTowerModel()`` (embedding towers) on the ratings as implicit
feedback (per-user 80/20 split), this measures

- the file size against the bytes of the model's parameters (the factors
  ``U_, s_, V_`` and the centering offsets; the towers' weights) and against
  the bytes of every distinct array the file holds (parameters, histories,
  the training pairs that ``recommend`` excludes...),
- save and load times (median of 5), and pickle's size and times beside them,
- that the loaded model predicts bitwise the same.

Usage::

    python benchmarks/persistence.py --quick   # ML-1M, short fits
    python benchmarks/persistence.py           # ML-1M, default fits
"""

from __future__ import annotations

import pickle
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _shared

import _shared

REPEATS = 5


def _fit_completion(quick: bool, seed: int):
    from embedopt.completion import MatrixCompletion
    from embedopt.data import load_movielens

    entries = load_movielens("1m").entries
    extra = {"n_lambdas": 3, "max_iter": 30} if quick else {}
    model = MatrixCompletion(random_state=seed, **extra).fit(entries)
    params = [model.U_, model.s_, model.V_, *model.centering_.offsets_]
    what = f"rank {model.rank_}, {entries.nnz} ratings"
    return model, params, lambda m: m.predict(entries.rows, entries.cols), what


def _fit_two_tower(quick: bool, seed: int):
    from embedopt.data import load_movielens, split_by_user
    from embedopt.similarity import TwoTowerModel

    e = load_movielens("1m").entries
    train, _ = split_by_user((e.rows, e.cols), (0.8, 0.2), random_state=seed)
    extra = {"max_iter": 3} if quick else {}
    model = TwoTowerModel(random_state=seed, **extra).fit(train)
    params = [*model.user_tower_.parameters(), *model.item_tower_.parameters()]
    users = list(range(model.shape_[0]))
    what = f"k = {model.n_components}, {len(train)} training pairs"
    return model, params, lambda m: m.recommend(users, 10), what


def _nbytes(arrays) -> int:
    return sum(
        int(a.nbytes) if hasattr(a, "nbytes") else a.numel() * a.element_size()
        for a in arrays
    )


def _stored_bytes(path: Path) -> int:
    """Bytes of the distinct arrays the file holds (from its JSON table)."""
    import json
    import zipfile

    import numpy as np

    with zipfile.ZipFile(path) as zf:
        table = json.loads(zf.read("embedopt.json"))["arrays"]
    return sum(
        int(np.prod(a["shape"], dtype=np.int64)) * np.dtype(a["dtype"]).itemsize
        for a in table.values()
    )


def _timed(fn) -> tuple[float, object]:
    times, out = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure(name: str, model, params, output, folder: Path) -> dict:
    """Sizes and times of one fitted model (save, load, pickle)."""
    import numpy as np

    import embedopt

    path = folder / f"{name}.embedopt"
    save_s, _ = _timed(lambda: model.save(path))
    load_s, again = _timed(lambda: embedopt.load(path))
    expected, got = output(model), output(again)
    if not isinstance(expected, tuple):
        expected, got = (expected,), (got,)
    same = all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))
    blob = folder / f"{name}.pkl"
    pickle_save_s, _ = _timed(lambda: blob.write_bytes(pickle.dumps(model)))
    pickle_load_s, _ = _timed(lambda: pickle.loads(blob.read_bytes()))
    size = path.stat().st_size
    return {
        "file_bytes": size,
        "param_bytes": _nbytes(params),
        "stored_array_bytes": _stored_bytes(path),
        "save_s": save_s,
        "load_s": load_s,
        "pickle_bytes": blob.stat().st_size,
        "pickle_save_s": pickle_save_s,
        "pickle_load_s": pickle_load_s,
        "bitwise_same": bool(same),
    }


def main() -> int:
    p = _shared.parser(__doc__.splitlines()[0])
    args = p.parse_args()
    _shared.setup(args)
    rows = {}
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")  # ConvergenceWarning of short fits
        for name, fit in (
            ("MatrixCompletion", _fit_completion),
            ("TwoTowerModel", _fit_two_tower),
        ):
            model, params, output, what = fit(args.quick, args.seed)
            rows[name] = {
                **measure(name, model, params, output, Path(tmp)),
                "what": what,
            }
    mb = 1e6
    headers = [
        *(
            "model (ML-1M)",
            "fit",
            "file MB",
            "params MB",
            "file / params",
            "distinct arrays MB",
        ),
        *("save s", "load s", "pickle MB", "pickle save s", "pickle load s"),
        "same predictions",
    ]
    table = [
        [
            name,
            r["what"],
            f"{r['file_bytes'] / mb:.2f}",
            f"{r['param_bytes'] / mb:.2f}",
            f"{r['file_bytes'] / r['param_bytes']:.2f}",
            f"{r['stored_array_bytes'] / mb:.2f}",
            f"{r['save_s']:.3f}",
            f"{r['load_s']:.3f}",
            f"{r['pickle_bytes'] / mb:.2f}",
            f"{r['pickle_save_s']:.3f}",
            f"{r['pickle_load_s']:.3f}",
            "yes" if r["bitwise_same"] else "NO",
        ]
        for name, r in rows.items()
    ]
    md = _shared.markdown_table(headers, table)
    print(md)
    stem = "persistence" + ("_quick" if args.quick else "")
    _shared.write(stem, args.out, vars(args), rows, md)
    return 0 if all(r["bitwise_same"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
