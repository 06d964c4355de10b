"""Tensor completion on real 3- and 4-way tensors against tuned masked CP / Tucker.

Tensors (``embedopt.data.load_movielens_tensor`` / ``load_image_tensor``):
MovieLens-100K as user x item x weekday and x weekday x hour bucket (80 % of
the ratings for training, 20 % test), the astronaut image downsampled 4x as
128 x 128 x 3 (20 % of the cells observed) and its 4-way stacks 128 x 128 x 3
x 8, "blur" (focal stack) and "pan" (panning video) (10 % observed). Methods:

- ``TensorCompletion()`` with its defaults (lambda, centering chosen inside);
- tensorly's masked CP (``parafac(..., mask=...)``) and masked Tucker
  (``tucker(..., mask=...)``, rank min(r, I_d) per mode), on the training
  values minus their mean, the rank r chosen on a validation tenth of the
  training entries (never the test entries), then refitted on all of them;
- ``MatrixCompletion()`` on one unfolding, the mode chosen on the same
  validation tenth.

Held-out NMSE ``||P(X - O)|| / ||P(O)||`` on the test entries (RMSE too for
ratings), CPU seconds of the final fit (the peers' rank search is reported
apart), ranks; medians and spread over repeated splits.

    python benchmarks/completion/real_tensors.py --quick   # 2 tensors, 1 split
    python benchmarks/completion/real_tensors.py           # 5 tensors, 3 splits
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _shared
from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.data import (
    ObservedEntries,
    load_image_tensor,
    load_movielens_tensor,
    split_entries,
)

#: name -> (builder, training fraction)
TENSORS = {
    "ml100k x weekday": (lambda d: load_movielens_tensor("100k", path=d), 0.8),
    "ml100k x weekday x hour": (
        lambda d: load_movielens_tensor("100k", ("weekday", "hour"), path=d),
        0.8,
    ),
    "astronaut 128x128x3": (lambda d: load_image_tensor(downsample=4, path=d), 0.2),
    "astronaut blur stack": (
        lambda d: load_image_tensor(downsample=4, stack="blur", path=d),
        0.1,
    ),
    "astronaut pan video": (
        lambda d: load_image_tensor(downsample=4, stack="pan", path=d),
        0.1,
    ),
}
QUICK = ["astronaut 128x128x3", "astronaut blur stack"]
RANKS = (2, 4, 8, 16, 32)


def nmse(pred, y) -> float:
    return float(np.linalg.norm(pred - y) / np.linalg.norm(y))


def rmse(pred, y) -> float:
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def timed(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def peer_fit(train: ObservedEntries, kind: str, rank: int, seed: int):
    """A tensorly masked CP / Tucker fit; returns a predictor of positions."""
    import tensorly as tl
    from tensorly.decomposition import parafac, tucker

    mu = float(train.values.mean())
    T = np.zeros(train.shape)
    M = np.zeros(train.shape, dtype=bool)
    idx = tuple(train.indices.T)
    T[idx], M[idx] = train.values - mu, True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "cp":
            R = tl.cp_to_tensor(
                parafac(T, rank, mask=M, init="random", tol=1e-6, random_state=seed)
            )
        else:
            ranks = [min(rank, s) for s in train.shape]
            R = tl.tucker_to_tensor(
                tucker(T, ranks, mask=M, init="svd", tol=1e-6, random_state=seed)
            )
    return lambda pos: R[tuple(pos.T)] + mu


def tuned_peer(train, test, kind, ranks, seed):
    """Rank chosen on a validation tenth of ``train``, refitted on all of it."""
    fit, val = split_entries(train, (0.9, 0.1), random_state=seed + 1)
    (scores, search_s) = timed(
        lambda: [
            nmse(peer_fit(fit, kind, r, seed)(val.indices), val.values) for r in ranks
        ]
    )
    best = ranks[int(np.argmin(scores))]
    pred, sec = timed(lambda: peer_fit(train, kind, best, seed)(test.indices))
    return pred, sec, f"{best}", search_s


def unfolded(entries: ObservedEntries, d: int) -> ObservedEntries:
    """The mode-d unfolding as matrix entries (column: the other modes, C order)."""
    others = [k for k in range(entries.ndim) if k != d]
    col = np.ravel_multi_index(
        tuple(entries.indices[:, k] for k in others),
        [entries.shape[k] for k in others],
    )
    n = int(np.prod([entries.shape[k] for k in others]))
    return ObservedEntries(
        (entries.indices[:, d], col), entries.values, (entries.shape[d], n)
    )


def matrix_on_unfolding(train, test, seed):
    """MatrixCompletion() on the unfolding that validates best."""
    fit, val = split_entries(train, (0.9, 0.1), random_state=seed + 1)
    scores = []
    for d in range(train.ndim):
        m = MatrixCompletion(random_state=seed).fit(unfolded(fit, d))
        u = unfolded(val, d)
        scores.append(nmse(m.predict(u.indices), u.values))
    d = int(np.argmin(scores))
    m, sec = timed(lambda: MatrixCompletion(random_state=seed).fit(unfolded(train, d)))
    u = unfolded(test, d)
    return m.predict(u.indices), sec, f"mode {d + 1}: {m.rank_}", 0.0


def tensor_default(train, test, seed):
    m, sec = timed(lambda: TensorCompletion(random_state=seed).fit(train))
    if getattr(m, "model_", "latent") == "cp":
        ranks = f"CP {m.cp_rank_} (ridge {m.cp_ridge_:g})"
    else:
        ranks = "latent " + ",".join(map(str, m.ranks_))
    return m.predict(test.indices), sec, ranks, 0.0


def run_one(name, rep, args) -> dict:
    build, frac = TENSORS[name]
    entries = build(args.data_dir)
    train, test = split_entries(entries, (frac, 1 - frac), random_state=args.seed + rep)
    seed = args.seed + rep
    methods = {
        "TensorCompletion()": lambda: tensor_default(train, test, seed),
        "MatrixCompletion() on an unfolding": lambda: matrix_on_unfolding(
            train, test, seed
        ),
    }
    if args.peers:
        methods["tensorly masked CP (tuned)"] = lambda: tuned_peer(
            train, test, "cp", args.ranks, seed
        )
        methods["tensorly masked Tucker (tuned)"] = lambda: tuned_peer(
            train, test, "tucker", args.ranks, seed
        )
    out = {}
    for method, fn in methods.items():
        pred, sec, ranks, search = fn()
        out[method] = dict(
            nmse=nmse(pred, test.values),
            rmse=rmse(pred, test.values),
            seconds=sec,
            ranks=ranks,
            search_seconds=search,
        )
        print(name, rep, method, {k: v for k, v in out[method].items()}, flush=True)
    return dict(tensor=name, shape=entries.shape, rep=rep, runs=out)


def configure():
    """The command line: tensors, splits, the peers' rank grid."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None, help="default $EMBEDOPT_DATA")
    p.add_argument("--tensors", nargs="*", default=None, choices=list(TENSORS))
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--ranks", type=int, nargs="*", default=None)
    args = p.parse_args()
    _shared.setup(args)
    args.tensors = args.tensors or (QUICK if args.quick else list(TENSORS))
    args.reps = args.reps or (1 if args.quick else 3)
    args.ranks = args.ranks or ([4, 16] if args.quick else list(RANKS))
    try:
        import tensorly  # noqa: F401

        args.peers = True
    except ImportError:
        print("tensorly not installed: the masked CP / Tucker peers are skipped")
        args.peers = False
    return args


def report(args, out) -> None:
    """The table (median and spread over splits, ratio to TensorCompletion())."""
    rows = []
    for name in args.tensors:
        rs = [r for r in out if r["tensor"] == name]
        base = [r["runs"]["TensorCompletion()"]["nmse"] for r in rs]
        for method in rs[0]["runs"]:
            rr = [r["runs"][method] for r in rs]
            nm = [x["nmse"] for x in rr]
            rows.append(
                [
                    name,
                    "x".join(map(str, rs[0]["shape"])),
                    method,
                    f"{_shared.median(nm):.4f} ({min(nm):.4f}-{max(nm):.4f})",
                    f"{_shared.median([x['rmse'] for x in rr]):.4f}",
                    f"{_shared.median(np.divide(nm, base)):.2f}",
                    rr[0]["ranks"],
                    f"{_shared.median([x['seconds'] for x in rr]):.1f}",
                    f"{_shared.median([x['search_seconds'] for x in rr]):.1f}",
                ]
            )
    table = _shared.markdown_table(
        [
            "tensor",
            "shape",
            "method",
            "test NMSE (min-max)",
            "test RMSE",
            "NMSE / TensorCompletion()",
            "ranks (split 0)",
            "fit CPU s",
            "rank search CPU s",
        ],
        rows,
    )
    print(table)
    _shared.write(
        "completion_real_tensors",
        args.out,
        dict(tensors=args.tensors, reps=args.reps, ranks=args.ranks),
        dict(runs=out),
        table,
    )


def main():
    args = configure()
    out = [run_one(n, rep, args) for n in args.tensors for rep in range(args.reps)]
    report(args, out)


if __name__ == "__main__":
    main()
