"""MatrixCompletion with its defaults against the peers' defaults (issue 13).

What a user gets from ``MatrixCompletion(random_state=seed).fit(train)`` with
no other option, side by side with the peers called with their defaults, in
the same run, on the same splits:

- Yao & Kwok's Table III problem (rank 5, m = n = 1000, noise 0.05, 15 m log m
  observed entries, half of them for validation, passed as ``validation=``):
  test NMSE on every unobserved entry; peer fancyimpute ``SoftImpute()`` on
  the training + validation entries (it has no validation set), on the first
  seed only (its dense SVDs take minutes per fit).
- A rectangular synthetic problem the defaults were not tuned on (rank 8,
  1500 x 600, noise 0.1, 8 % observed, no validation passed).
- MovieLens-100K, MovieLens-1M (full run) and MovieLens latest-small (not
  tuned on; half-star ratings) in stars, one random 80/20 split per seed:
  test RMSE; peer Surprise ``SVD()``.

Peers run in their own environment (``--peer-python``, default
``.venv-peers/bin/python``; see requirements-peers.txt); without it their
columns are empty. Times are wall-clock seconds of the fit (Surprise's
includes predicting the test entries, a small part of it), one thread each
with ``--threads 1``.

    python benchmarks/completion/defaults.py --quick   # m = 300, ML-100K, 1 seed
    python benchmarks/completion/defaults.py           # all sets, 3 seeds
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

from _common import fold_arrays, run_peer

import _shared
from embedopt.completion import MatrixCompletion
from embedopt.data import load_movielens, make_low_rank_matrix, split_entries

ROOT = Path(__file__).resolve().parents[2]


def _fit(train, seed, **fit_kw):
    t0 = time.perf_counter()
    model = MatrixCompletion(random_state=seed).fit(train, **fit_kw)
    return model, time.perf_counter() - t0


def _run(dataset, tuned, metric, ours, secs, model, peer_name, peer, key) -> dict:
    """One seed's record: our value and fit, the peer's ``key`` (None if absent)."""
    return dict(
        dataset=dataset,
        tuned_on=tuned,
        metric=metric,
        ours=ours,
        ours_seconds=secs,
        rank=model.rank_,
        center=model.center_,
        peer=peer_name,
        peer_value=None if peer is None else peer[key],
        peer_seconds=None if peer is None else peer["seconds"],
    )


def synthetic(name, seed, python, *, m, n, rank, noise, n_obs, half, tuned):
    """One synthetic problem: test NMSE on every unobserved entry."""
    rng = np.random.default_rng(seed)
    prob = make_low_rank_matrix(
        m, n, rank=rank, noise_std=noise, n_observed=n_obs, random_state=rng
    )
    obs = prob.observed
    mask = np.ones((m, n), dtype=bool)
    mask[obs.rows, obs.cols] = False
    te_rows, te_cols = np.nonzero(mask)
    truth = prob.truth_at(te_rows, te_cols)
    if half:
        train, val = split_entries(obs, (0.5, 0.5), random_state=rng)
        model, secs = _fit(train, seed, validation=val)
    else:
        model, secs = _fit(obs, seed)
    pred = model.predict(te_rows, te_cols)
    nmse = float(np.linalg.norm(pred - truth) / np.linalg.norm(truth))
    # SoftImpute() fills a dense matrix and takes a full SVD per iteration
    # (about 400 s at m = 1000 here): the first seed only.
    peer = (
        None
        if seed
        else run_peer(
            python,
            "fancyimpute_defaults.py",
            dict(
                rows=obs.rows,
                cols=obs.cols,
                vals=obs.values,
                shape=np.array([m, n]),
                te_rows=te_rows,
                te_cols=te_cols,
                te_vals=truth,
            ),
        )
    )
    return _run(
        name,
        tuned,
        "test NMSE (unobserved entries)",
        nmse,
        secs,
        model,
        "fancyimpute SoftImpute()",
        peer,
        "nmse",
    )


def movielens(variant, seed, python, data_dir, *, tuned):
    """One 80/20 split of a MovieLens set: test RMSE in stars."""
    entries = load_movielens(variant, data_dir).entries
    train, test = split_entries(
        entries, (0.8, 0.2), random_state=np.random.default_rng(seed)
    )
    model, secs = _fit(train, seed)
    rmse = -model.score(test)
    lo, hi = float(entries.values.min()), float(entries.values.max())
    peer = run_peer(
        python,
        "surprise_svd.py",
        fold_arrays(train, test),
        seed,
        lo,
        hi,
    )
    return _run(
        f"MovieLens {variant} (80/20)",
        tuned,
        "test RMSE (stars)",
        rmse,
        secs,
        model,
        "Surprise SVD()",
        peer,
        "rmse",
    )


def problems(quick: bool):
    """(name, runner, kwargs) of every compared problem."""
    m = 300 if quick else 1000
    table3 = dict(
        m=m,
        n=m,
        rank=5,
        noise=0.05,
        n_obs=round(15 * m * np.log(m)),
        half=True,
        tuned=True,
    )
    out = [(f"Table III, m = {m} (half for validation)", synthetic, table3)]
    if not quick:
        out.append(
            (
                "rank 8, 1500 x 600, noise 0.1, 8 % observed",
                synthetic,
                dict(
                    m=1500,
                    n=600,
                    rank=8,
                    noise=0.1,
                    n_obs=72_000,
                    half=False,
                    tuned=False,
                ),
            )
        )
    out.append(("100k", movielens, dict(tuned=True)))
    if not quick:
        out.append(("latest-small", movielens, dict(tuned=False)))
        out.append(("1m", movielens, dict(tuned=True)))
    return out


def rows(quick: bool = False, seeds: int | None = None, python=None, data_dir=None):
    """Per problem: medians over seeds of ours and of the peer (see module doc)."""
    n_seeds = seeds or (1 if quick else 3)
    out = []
    for name, runner, kw in problems(quick):
        runs = []
        for seed in range(n_seeds):
            if runner is movielens:
                r = runner(name, seed, python, data_dir, **kw)
            else:
                r = runner(name, seed, python, **kw)
            print(json.dumps(r), flush=True)
            runs.append(r)
        first = runs[0]
        peer_vals = [r["peer_value"] for r in runs if r["peer_value"] is not None]
        peer_secs = [r["peer_seconds"] for r in runs if r["peer_seconds"] is not None]
        out.append(
            dict(
                estimator="MatrixCompletion()",
                dataset=first["dataset"],
                tuned_on=first["tuned_on"],
                metric=first["metric"],
                lower_is_better=True,
                ours=_shared.median([r["ours"] for r in runs]),
                ours_seconds=_shared.median([r["ours_seconds"] for r in runs]),
                peer=first["peer"],
                peer_value=_shared.median(peer_vals) if peer_vals else None,
                peer_seconds=_shared.median(peer_secs) if peer_secs else None,
                n_seeds=n_seeds,
                note=(
                    f"rank {int(np.median([r['rank'] for r in runs]))}, "
                    f"center={first['center']}"
                    + ("" if peer_vals else "; peer not installed")
                ),
                runs=runs,
            )
        )
    return out


def main():
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument(
        "--peer-python",
        default=str(ROOT / ".venv-peers" / "bin" / "python"),
        help="interpreter with fancyimpute and scikit-surprise",
    )
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()
    _shared.setup(args)
    rs = rows(args.quick, args.seeds, args.peer_python, args.data_dir)
    _shared.report_defaults("completion_defaults", args, rs)


if __name__ == "__main__":
    main()
