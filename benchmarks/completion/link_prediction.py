"""Link prediction, Sec. 5.5 / Table X / Figure 8 of Yao & Kwok: signed networks.

Protocol of the paper on the one signed network available here (SNAP
Bitcoin Alpha; Epinions and Slashdot are not): a sources x targets matrix of
signs O_ij = sign(rating), users with fewer than two observations removed
(raters with < 2 ratings given, rated users with < 2 received; see
``embedopt.data.load_bitcoin_alpha``), the observed signs split at random
80 % train / 10 % validation / 10 % test, 5 repetitions. Each method selects
what it tunes on the validation signs, then uses training plus validation
signs for its final model; test accuracy of sign(X_ij) (the paper's
metric), test AUC of X_ij and CPU seconds (process time, selection
included) are reported as medians over the splits, with the spread (min to
max) and the paired margin of ``MatrixCompletion(loss="logistic")`` over
each peer.

Rows:

- AIS-Impute, logistic / squared hinge: ``MatrixCompletion(loss=...,
  random_state=rep).fit(train, validation=val)``, every other option left at
  its default (lambda path on the validation signs, refit on train + val).
- AIS-Impute, logistic, ``center="both"``: the same with row and column
  offsets fitted inside the loss (``embedopt.completion.binary``), the
  degree baseline's propensities as part of the model.
- AltMin (Chiang et al. 2014, the paper's peer): the factorized logistic
  loss ``sum log(1 + exp(-O_ij u_i^T v_j)) + mu/2 (|U|^2 + |V|^2)``,
  minimized alternately over U and V (L-BFGS on each block); rank and mu
  chosen on validation from a small grid.
- Degree baseline (Leskovec et al. 2010, degree features): logistic
  regression (scikit-learn) on the source's positive out-fraction, the
  target's positive in-fraction, log(1 + out-degree), log(1 + in-degree),
  from the training (+ validation) edges only; a training edge's own sign is
  left out of its features (leave-one-out), as a test edge's is.
- Surprise SVD on the +/-1 values (defaults, in its own environment via
  ``--peer-python``; "not installed" otherwise).
- Majority sign of the training (+ validation) edges.

    python benchmarks/completion/link_prediction.py --quick   # 1 split
    python benchmarks/completion/link_prediction.py --threads 1   # 5 splits
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

from _common import run_peer

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import MatrixCompletion
from embedopt.data import ObservedEntries, load_bitcoin_alpha, split_entries
from embedopt.optim import lbfgs

#: The paper's split (Sec. 5.5): train / validation / test.
FRACTIONS = (0.8, 0.1, 0.1)
#: AltMin's validation grid: (rank, mu).
ALTMIN_GRID = [(k, mu) for k in (5, 10, 20, 40) for mu in (1.0, 5.0, 20.0)]
OURS = "ais_logistic"


def auc(y, scores) -> float:
    """Area under the ROC curve of ``scores`` for the +1 labels (ties: half)."""
    from scipy.stats import rankdata

    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rankdata(scores)
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def metrics(test: ObservedEntries, scores, seconds, **extra) -> dict:
    """Test accuracy of the signs (score 0 counts as +1), AUC, CPU seconds."""
    scores = np.asarray(scores, dtype=float)
    acc = float(np.mean(np.where(scores >= 0, 1.0, -1.0) == test.values))
    return dict(accuracy=acc, auc=auc(test.values, scores), seconds=seconds, **extra)


def merged(a: ObservedEntries, b: ObservedEntries) -> ObservedEntries:
    """The entries of two disjoint splits together."""
    return ObservedEntries(
        np.concatenate([a.indices, b.indices]),
        np.concatenate([a.values, b.values]),
        a.shape,
        validate=False,
    )


# -- the methods ---------------------------------------------------------------------


def ais_impute(train, val, test, rep, **options) -> dict:
    """MatrixCompletion with defaults (and ``options``), validation given."""
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MatrixCompletion(random_state=rep, **options).fit(train, validation=val)
    secs = time.process_time() - t0
    scores = model.decision_function(test.indices)
    return metrics(test, scores, secs, rank=model.rank_, lam=model.lam_)


def _altmin_fit(entries, rank, mu, seed, max_outer=30, tol=1e-4):
    """Alternating L-BFGS on the factorized logistic loss; returns (U, V)."""
    g = torch.Generator().manual_seed(seed)
    m, n = entries.shape
    rows = torch.as_tensor(entries.rows)
    cols = torch.as_tensor(entries.cols)
    y = torch.as_tensor(entries.values, dtype=torch.float64)
    U = 0.1 * torch.randn(m, rank, generator=g, dtype=torch.float64)
    V = 0.1 * torch.randn(n, rank, generator=g, dtype=torch.float64)

    def block(A, B, a_idx, b_idx):
        def fun(X):
            x = (X[a_idx] * B[b_idx]).sum(1)
            d = (-y * torch.sigmoid(-x * y))[:, None] * B[b_idx]
            grad = torch.zeros_like(X).index_add_(0, a_idx, d) + mu * X
            value = F.softplus(-x * y).sum() + 0.5 * mu * (X * X).sum()
            return float(value), grad

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = lbfgs(fun, A.clone(), max_iter=20, tol=1e-8, owner="altmin")
        return res.x, fun(res.x)[0]

    before = np.inf
    for _ in range(max_outer):
        U, _ = block(U, V, rows, cols)
        V, value = block(V, U, cols, rows)
        if before - value <= tol * abs(value):
            break
        before = value
    return U, V


def _altmin_scores(U, V, entries) -> np.ndarray:
    r, c = torch.as_tensor(entries.rows), torch.as_tensor(entries.cols)
    return (U[r] * V[c]).sum(1).numpy()


def altmin(train, val, test, rep, grid=None) -> dict:
    """AltMin: (rank, mu) by validation accuracy, then refit on train + val."""
    t0 = time.process_time()
    best = None
    for k, mu in grid or ALTMIN_GRID:
        U, V = _altmin_fit(train, k, mu, rep)
        s = _altmin_scores(U, V, val)
        acc = float(np.mean(np.where(s >= 0, 1.0, -1.0) == val.values))
        if best is None or acc > best[0]:
            best = (acc, k, mu)
    _, k, mu = best
    U, V = _altmin_fit(merged(train, val), k, mu, rep)
    secs = time.process_time() - t0
    return metrics(test, _altmin_scores(U, V, test), secs, rank=k, mu=mu)


def degree_features(fit_on: ObservedEntries, at: ObservedEntries, own: bool):
    """Leskovec et al.'s degree features of the edges ``at`` from ``fit_on``.

    With ``own``, ``at`` is ``fit_on`` and each edge's own sign is left out.
    A user with no (other) edge gets the overall positive fraction.
    """
    m, n = fit_on.shape
    pos = (fit_on.values > 0).astype(float)
    out_pos = np.bincount(fit_on.rows, pos, m)[at.rows]
    out_deg = np.bincount(fit_on.rows, minlength=m)[at.rows].astype(float)
    in_pos = np.bincount(fit_on.cols, pos, n)[at.cols]
    in_deg = np.bincount(fit_on.cols, minlength=n)[at.cols].astype(float)
    if own:
        mine = (at.values > 0).astype(float)
        out_pos, in_pos = out_pos - mine, in_pos - mine
        out_deg, in_deg = out_deg - 1, in_deg - 1
    prior = pos.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        f_out = np.where(out_deg > 0, out_pos / out_deg, prior)
        f_in = np.where(in_deg > 0, in_pos / in_deg, prior)
    return np.c_[f_out, f_in, np.log1p(out_deg), np.log1p(in_deg)]


def degree_baseline(train, val, test, rep) -> dict:
    """Logistic regression on the degree features of train + val edges."""
    from sklearn.linear_model import LogisticRegression

    t0 = time.process_time()
    fit_on = merged(train, val)
    model = LogisticRegression(max_iter=1000)
    model.fit(degree_features(fit_on, fit_on, own=True), fit_on.values)
    scores = model.decision_function(degree_features(fit_on, test, own=False))
    return metrics(test, scores, time.process_time() - t0)


def majority(train, val, test, rep) -> dict:
    """The most frequent sign of train + val, everywhere (AUC 0.5)."""
    t0 = time.process_time()
    sign = 1.0 if np.mean(merged(train, val).values) >= 0 else -1.0
    return metrics(test, np.full(test.nnz, sign), time.process_time() - t0)


def surprise_svd(train, val, test, rep, python) -> dict | None:
    """Surprise's SVD (defaults) on the +/-1 values of train + val."""
    if python is None or not Path(python).exists():
        return None
    fit_on = merged(train, val)
    arrays = dict(
        tr_rows=fit_on.rows,
        tr_cols=fit_on.cols,
        tr_vals=fit_on.values,
        te_rows=test.rows,
        te_cols=test.cols,
        te_vals=test.values,
    )
    out = run_peer(python, "surprise_svd.py", arrays, rep, -1, 1, "--scores")
    if out is None:
        return None
    return metrics(test, np.asarray(out["scores"]), out["cpu_seconds"])


# -- configure / run / report --------------------------------------------------------


METHODS = {
    "ais_logistic": "AIS-Impute, logistic (MatrixCompletion defaults)",
    "ais_squared_hinge": "AIS-Impute, squared hinge (defaults)",
    "ais_logistic_offsets": "AIS-Impute, logistic, center='both' (offsets in the loss)",
    "altmin": "AltMin, factorized logistic (Chiang et al.)",
    "degree": "Degree baseline, logistic regression (Leskovec et al.)",
    "surprise": "Surprise SVD on +/-1 (defaults)",
    "majority": "Majority sign",
}


def configure():
    """The command line: splits, methods, the peers' interpreter."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--methods", nargs="*", default=None, choices=list(METHODS))
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--peer-python",
        default=None,
        help="interpreter with scikit-surprise (benchmarks/completion/"
        "requirements-peers.txt); without it the Surprise row says so",
    )
    args = p.parse_args()
    _shared.setup(args)
    args.reps = args.reps or (1 if args.quick else 5)
    args.methods = args.methods or list(METHODS)
    return args


def run(rep, entries, args) -> dict:
    """Every method on split ``rep``."""
    train, val, test = split_entries(
        entries, FRACTIONS, random_state=np.random.default_rng(args.seed + rep)
    )
    seed = args.seed + rep
    calls = {
        "ais_logistic": lambda: ais_impute(train, val, test, seed, loss="logistic"),
        "ais_squared_hinge": lambda: ais_impute(
            train, val, test, seed, loss="squared_hinge"
        ),
        "ais_logistic_offsets": lambda: ais_impute(
            train, val, test, seed, loss="logistic", center="both"
        ),
        "altmin": lambda: altmin(train, val, test, seed),
        "degree": lambda: degree_baseline(train, val, test, seed),
        "surprise": lambda: surprise_svd(train, val, test, seed, args.peer_python),
        "majority": lambda: majority(train, val, test, seed),
    }
    return {key: calls[key]() for key in args.methods}


def run_all(args) -> list[dict]:
    """Every method on every split."""
    net = load_bitcoin_alpha(args.data_dir)
    print(
        f"{net.name}: {net.entries.shape[0]} x {net.entries.shape[1]}, "
        f"{net.entries.nnz} signs, {np.mean(net.entries.values > 0):.1%} positive",
        flush=True,
    )
    runs = []
    for rep in range(args.reps):
        r = run(rep, net.entries, args)
        runs.append(r)
        print(
            rep,
            {k: None if v is None else round(v["accuracy"], 4) for k, v in r.items()},
            flush=True,
        )
    return runs


def _spread(xs) -> str:
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    if not xs:
        return ""
    return f"{_shared.median(xs):.4f} [{min(xs):.4f}, {max(xs):.4f}]"


def summarize(runs, key) -> tuple[list, dict]:
    """The table row and summary of one method: medians, ranges, paired margins."""
    label = METHODS[key]
    ms = [r[key] for r in runs]
    if any(m is None for m in ms):
        return [label, "not installed", "", "", "", ""], {}
    margins = [
        r[OURS]["accuracy"] - m["accuracy"]
        for r, m in zip(runs, ms, strict=True)
        if OURS in r
    ]
    ranks = [m["rank"] for m in ms if "rank" in m]
    row = [
        label,
        _spread([m["accuracy"] for m in ms]),
        _spread([m["auc"] for m in ms]),
        _spread([m["seconds"] for m in ms]),
        "" if key == OURS else _spread(margins),
        int(np.median(ranks)) if ranks else "",
    ]
    summary = dict(
        accuracy=_shared.median([m["accuracy"] for m in ms]),
        auc=_shared.median([m["auc"] for m in ms]),
        seconds=_shared.median([m["seconds"] for m in ms]),
        margin_of_ours=_shared.median(margins) if key != OURS else None,
        min_margin_of_ours=min(margins) if margins and key != OURS else None,
    )
    return row, summary


def report(args, runs) -> None:
    """The table (medians [min, max] over splits), JSON and Markdown."""
    rows, summary = [], {}
    for key in args.methods:
        row, summary[key] = summarize(runs, key)
        rows.append(row)
    table = _shared.markdown_table(
        [
            "method",
            "test accuracy",
            "test AUC",
            "CPU s (selection incl.)",
            "logistic AIS-Impute minus this (accuracy, paired)",
            "rank",
        ],
        rows,
    )
    print(table)
    _shared.write(
        "completion_link_prediction" + ("_quick" if args.quick else ""),
        args.out,
        dict(reps=args.reps, fractions=FRACTIONS, threads=args.threads),
        dict(summary=summary, runs=runs),
        table,
    )


def main():
    args = configure()
    runs = run_all(args)
    report(args, runs)


if __name__ == "__main__":
    main()
