"""MovieLens under the protocol users know from Surprise: 5-fold CV, stars.

Each fold trains ``MatrixCompletion()`` with its defaults (ridge row/column
offsets, lambda chosen on 10% of the training entries held out, raw or
post-processed solution picked on them, refit on all training entries) and
reports the test RMSE in stars. Reference: Surprise's SVD benchmark table
(5-fold CV) lists RMSE 0.934 on ML-100K and 0.873 on ML-1M; with
``--peer-python`` pointing at an environment with scikit-surprise (see
completion/requirements-peers.txt), its SVD also runs on the same folds.

    python benchmarks/completion/surprise_cv.py --quick   # 100K, 2 folds
    python benchmarks/completion/surprise_cv.py           # 100K and 1M, 5 folds
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

from _common import fold_arrays, run_peer

import _shared
from embedopt.completion import MatrixCompletion
from embedopt.data import kfold_entries, load_movielens

SURPRISE_SVD = {"100k": 0.934, "1m": 0.873}


def surprise_svd(args, train, test, seed):
    """Surprise's SVD on the same fold, in the peers' environment (or None)."""
    out = run_peer(
        args.peer_python,
        "surprise_svd.py",
        fold_arrays(train, test),
        seed,
    )
    return None if out is None else (out["rmse"], out["seconds"])


def configure():
    """The command line: datasets, folds, the peers' interpreter."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="*", default=None)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--peer-python",
        default=str(Path.cwd() / ".venv-peers/bin/python"),
        help="interpreter with scikit-surprise (skipped when absent)",
    )
    args = p.parse_args()
    _shared.setup(args)
    args.datasets = args.datasets or (["100k"] if args.quick else ["100k", "1m"])
    args.n_eval = 2 if args.quick else args.folds
    return args


def run_dataset(variant, args) -> tuple[list, list]:
    """Ours and Surprise's SVD on the first ``n_eval`` folds of one dataset."""
    entries = load_movielens(variant, args.data_dir).entries
    ours, peer = [], []
    folds = kfold_entries(entries, args.folds, random_state=args.seed)
    for k, (train, test) in enumerate(folds):
        if k >= args.n_eval:
            break
        t0 = time.perf_counter()
        model = MatrixCompletion(random_state=k, device=args.device).fit(train)
        secs = time.perf_counter() - t0
        ours.append((-model.score(test), secs, model.rank_))
        sp = surprise_svd(args, train, test, k)
        if sp is not None:
            peer.append(sp)
        print(variant, k, ours[-1], sp, flush=True)
    return ours, peer


def dataset_rows(variant, ours, peer) -> tuple[list, dict]:
    """The table rows (ours, Surprise's, the published one) and the JSON entry."""
    m, s = _shared.mean_std([o[0] for o in ours])
    ours_time = _shared.median([o[1] for o in ours])
    rank = int(np.median([o[2] for o in ours]))
    rows = [[variant, "embedopt MatrixCompletion()", f"{m:.4f} ± {s:.4f}"]]
    rows[0] += [ours_time, rank]
    if peer:
        pm, ps = _shared.mean_std([x[0] for x in peer])
        peer_time = _shared.median([x[1] for x in peer])
        rows.append([variant, "Surprise SVD (same folds)", f"{pm:.4f} ± {ps:.4f}"])
        rows[-1] += [peer_time, 100]
    published = f"{SURPRISE_SVD[variant]:.3f}"
    rows.append([variant, "Surprise SVD (published table)", published, "", ""])
    return rows, dict(rmse=m, rmse_sd=s, folds=ours, surprise=peer)


def main():
    args = configure()
    rows, results = [], {}
    for variant in args.datasets:
        ours, peer = run_dataset(variant, args)
        more, results[variant] = dataset_rows(variant, ours, peer)
        rows += more
    table = _shared.markdown_table(
        ["data", "method", "RMSE (stars)", "seconds/fold", "rank"], rows
    )
    print(table)
    _shared.write(
        "completion_surprise",
        args.out,
        dict(datasets=args.datasets, folds=args.folds, evaluated=args.n_eval),
        results,
        table,
    )


if __name__ == "__main__":
    main()
