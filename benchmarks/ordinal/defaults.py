"""OrdinalEmbedding with its defaults against cblearn with its defaults (issue 13).

Every loss, default settings only on both sides: ``OrdinalEmbedding(p,
loss=...)`` and ``cblearn.embedding.<Loss>(p)`` (their scipy L-BFGS-B
estimators; SOE with its default ``n_init=10`` restarts). Only the seed is
set. Held-out triplet error and whole-fit seconds (validation and data
conversion included on both sides), one thread each, the two fits of a
seed run back to back (interleaved), medians over the seeds.

Datasets:

- ``planted-100``: Ma et al.'s Table I problem (100 points in 10-d, 10,000
  training and 10,000 held-out triplets, p = 10). The defaults were chosen
  on it.
- ``music``: the aset400 artist triplets (9,090 usable, 400 artists),
  random 80/20 split per seed, p = 9 (Sec. 5.3). Also used to choose.
- ``eurodist``: 21 cities, 2,000 random triplets of the road distances for
  training and all other triplets held out, p = 2. Not used to choose.
- ``clusters-300``: 300 points in 5 clusters in 3-d, 20,000 training
  triplets of which 5 % are answered wrongly, 10,000 correct held-out
  triplets, p = 3: another geometry, size and noise. Not used to choose.

    python benchmarks/ordinal/defaults.py --quick   # ~30 s, music left out
    python benchmarks/ordinal/defaults.py           # 10 seeds (music 5), ~5 min

``rows(quick, seeds)`` returns the table as dicts for the top-level
``benchmarks/defaults.py``. Writes benchmarks/results/ordinal_defaults.{json,md}.
"""

# ruff: noqa: I001  (_common must be imported before numpy/torch)
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _common
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

import _common as C  # first: it sets single-threading
import _shared

import time
import warnings

import numpy as np

from embedopt.data import (
    load_eurodist,
    load_music_triplets,
    make_all_triplets,
    make_planted_embedding,
    make_random_triplets,
    split_comparisons,
)
from embedopt.metrics import triplet_error
from embedopt.ordinal import OrdinalEmbedding

LOSSES = ["gnmds", "ckl", "ste", "tste", "soe"]
METRIC = "held-out triplet error"


# -- datasets: each returns (train, test, n_objects, p) for one seed ---------------
def planted_100(seed: int):
    prob = make_planted_embedding(random_state=1000 + seed)
    return prob.train, prob.test, 100, 10


def music(seed: int):
    comps = load_music_triplets().comparisons
    train, test = split_comparisons(comps, (0.8, 0.2), random_state=seed)
    return train, test, comps.n_objects, 9


def eurodist(seed: int):
    D = load_eurodist().distances
    train = make_random_triplets(distances=D, n_triplets=2000, random_state=seed)
    test = make_all_triplets(distances=D, exclude=train)
    return train, test, D.shape[0], 2


def clusters_300(seed: int):
    rng = np.random.default_rng(5000 + seed)
    centers = rng.normal(size=(5, 3))
    labels = rng.integers(0, 5, size=300)
    points = centers[labels] + 0.3 * rng.normal(size=(300, 3))
    train = make_random_triplets(points, 20_000, flip_rate=0.05, random_state=rng)
    test = make_random_triplets(points, 10_000, random_state=rng)
    return train, test, 300, 3


#: name -> (loader, tuned_on, description); music and eurodist need
#: $EMBEDOPT_DATA (their rows say so when it is missing)
DATASETS = {
    "planted-100": (planted_100, True, "Table I: 100 pts, 10-d, 10k+10k"),
    "music": (music, True, "aset400, 9,090 triplets, 80/20, p=9"),
    "eurodist": (eurodist, False, "21 cities, 2,000 triplets, p=2"),
    "clusters-300": (clusters_300, False, "5 clusters, 3-d, 20k, 5% flipped"),
}

#: Embedding dimension p per data set (also what its loader returns).
DIMENSIONS = {"planted-100": 10, "music": 9, "eurodist": 2, "clusters-300": 3}

#: Seeds per data set: full run, and --quick (well under a minute of CPU,
#: most of it cblearn's: on music its five fits take about 30 s per seed).
FULL_SEEDS = {"planted-100": 10, "music": 5, "eurodist": 10, "clusters-300": 10}
QUICK_SEEDS = {"planted-100": 3, "music": 0, "eurodist": 3, "clusters-300": 1}

_CB = {"gnmds": "GNMDS", "ckl": "CKL", "ste": "STE", "tste": "TSTE", "soe": "SOE"}


def _ours(loss, train, test, n, p, seed, options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model = OrdinalEmbedding(p, loss=loss, random_state=seed, **options).fit(
            train, n_objects=n
        )
        seconds = time.perf_counter() - t0
    names = sorted({type(w.message).__name__ for w in caught})
    return 1.0 - model.score(test), seconds, names, model.solver_


def _peer(loss, train, test, n, p, seed):
    from cblearn import embedding as E

    est = getattr(E, _CB[loss])(p, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(train.indices, n_objects=n)
        seconds = time.perf_counter() - t0
    return triplet_error(est.embedding_, test.indices), seconds


def run(
    quick: bool = False,
    seeds: int | None = None,
    datasets=None,
    losses=None,
    options=None,
    peer: bool = True,
) -> dict:
    """Fit every (dataset, loss, seed), ours and the peer back to back.

    ``options`` (OrdinalEmbedding arguments) and ``peer=False`` are for
    experiments with other settings; the table runs the defaults.
    """
    have_peer = peer and C.have_cblearn()
    names = datasets or list(DATASETS)
    options = options or {}
    out = {}
    for name in names:
        load = DATASETS[name][0]
        n_seeds = seeds or (QUICK_SEEDS if quick else FULL_SEEDS)[name]
        if n_seeds == 0:
            continue
        for seed in range(n_seeds):
            try:
                train, test, n, p = load(seed)
            except Exception as exc:  # a real set missing: rows say so
                for loss in losses or LOSSES:
                    out.setdefault(
                        (name, loss),
                        {"p": DIMENSIONS[name], "missing": repr(exc)[:100]},
                    )
                break
            for loss in losses or LOSSES:
                r = out.setdefault((name, loss), {"p": p})
                err, sec, warned, solver = _ours(loss, train, test, n, p, seed, options)
                r.setdefault("ours", []).append(err)
                r.setdefault("ours_seconds", []).append(sec)
                r.setdefault("warnings", []).extend(warned)
                r.setdefault("solver", set()).add(solver)
                if have_peer:
                    perr, psec = _peer(loss, train, test, n, p, seed)
                    r.setdefault("peer", []).append(perr)
                    r.setdefault("peer_seconds", []).append(psec)
    return out


def _median(xs):
    return float(np.median(xs)) if xs else None


def rows(quick: bool = False, seeds: int | None = None) -> list[dict]:
    """One row per (estimator, dataset): medians of ours and cblearn's defaults.

    Parameters
    ----------
    quick : bool
        Fewer seeds and no music (:data:`QUICK_SEEDS`), well under a minute.
    seeds : int, optional
        Seeds per data set, all of them (default :data:`FULL_SEEDS`).

    Returns
    -------
    list of dict
        Keys: estimator, dataset, tuned_on, metric, lower_is_better, ours,
        ours_seconds, peer, peer_value, peer_seconds, n_seeds, note.
    """
    return _rows(run(quick, seeds))


def _rows(raw: dict) -> list[dict]:
    have_peer = C.have_cblearn()
    out = []
    for (name, loss), r in raw.items():
        _, tuned, desc = DATASETS[name]
        p = r["p"]
        note = desc
        if "missing" in r:
            note = f"dataset missing: {r['missing']}"
        elif r.get("warnings"):
            note += "; warnings: " + ", ".join(sorted(set(r["warnings"])))
        if "solver" in r:
            note += "; solver " + "/".join(sorted(r["solver"]))
        if not have_peer:
            note += "; cblearn not installed"
        extra = ", n_init=10 by default" if loss == "soe" else ""
        out.append(
            {
                "estimator": f"OrdinalEmbedding({p}, loss={loss!r})",
                "dataset": name,
                "tuned_on": tuned,
                "metric": METRIC,
                "lower_is_better": True,
                "ours": _median(r.get("ours")),
                "ours_seconds": _median(r.get("ours_seconds")),
                "peer": f"cblearn.embedding.{_CB[loss]}({p}){extra}",
                "peer_value": _median(r.get("peer")),
                "peer_seconds": _median(r.get("peer_seconds")),
                "n_seeds": len(r.get("ours", [])),
                "note": note,
            }
        )
    return out


def markdown(table: list[dict]) -> str:
    head = [
        "estimator",
        "dataset",
        "tuned on",
        "error ours",
        "error cblearn",
        "s ours",
        "s cblearn",
        "cblearn s / ours",
        "seeds",
    ]
    body = []
    for r in table:
        ratio = (
            r["peer_seconds"] / r["ours_seconds"]
            if r["peer_seconds"] and r["ours_seconds"]
            else None
        )
        body.append(
            [
                r["estimator"],
                r["dataset"],
                "yes" if r["tuned_on"] else "no",
                C.fmt(r["ours"]),
                C.fmt(r["peer_value"]),
                C.fmt(r["ours_seconds"]),
                C.fmt(r["peer_seconds"]),
                f"{ratio:.1f}x" if ratio else "-",
                r["n_seeds"],
            ]
        )
    return (
        f"Defaults against defaults: median {METRIC} and whole-fit seconds "
        "(1 thread, interleaved), cblearn 0.4.0 with its own defaults.\n\n"
        + _shared.markdown_table(head, body)
        + "\n"
    )


def main(argv=None):
    ap = _shared.parser(__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=None, help="seeds per dataset")
    args = ap.parse_args(argv)
    _shared.setup(args)
    t0 = time.perf_counter()
    raw = run(args.quick, args.seeds, options={"device": args.device})
    table = _rows(raw)
    md = markdown(table)
    payload = {
        "experiment": "ordinal defaults vs cblearn defaults (issue 13)",
        "command": _shared.command(),
        "config": {"quick": args.quick, "seeds": args.seeds, "device": args.device},
        "versions": _shared.environment("cblearn"),
        "rows": table,
        # per seed, in seed order (ours and cblearn's fits of a seed side by side)
        "per_seed": {
            f"{name}|{loss}": {
                k: v
                for k, v in r.items()
                if k in ("ours", "ours_seconds", "peer", "peer_seconds")
            }
            for (name, loss), r in raw.items()
        },
        "wall_seconds": time.perf_counter() - t0,
    }
    path, _ = _shared.write_outputs("ordinal_defaults", payload, md, args.out)
    print(md)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
