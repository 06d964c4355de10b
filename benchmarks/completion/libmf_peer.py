"""LIBMF, the peer to beat on explicit ratings (issue 24): ML-100K, ML-1M, latest-small.

One random 80/20 split per dataset (``--seed``, default 0), one thread each:

- LIBMF (``mf-train`` / ``mf-predict`` of github.com/cjlin1/libmf, built with
  ``make``; given by its folder, ``--libmf /path/to/libmf``, never part of the
  repository; without it the rows say "not given"): ``k`` x ``l2`` of
  ``--grid-k`` x ``--grid-l2`` chosen on a 10 % validation split of the
  *training* ratings (never the test ratings), then retrained on all the
  training ratings with ``-s 1`` (one thread) and the other options at
  LIBMF's defaults (20 iterations). Its times are those of that final
  ``mf-train`` process only (CPU: the child's user + system time), which
  include reading the text file of ratings (LIBMF has no other entry point
  from here): an upper bound on its training time.
- ``MatrixCompletion()`` with its defaults (``random_state=seed``): CPU
  (``time.process_time``) and wall time of ``fit``, with torch and the BLAS
  limited to ``--threads`` (default 1).
- Surprise's ``SVD()`` with its defaults, in the peers' environment
  (``--peer-python``; "not installed" without it).

Times are medians of ``--reps`` runs (3; 1 with ``--quick``); on a loaded
machine compare the CPU columns. ``--variants`` adds rows of
``MatrixCompletion(**options)`` (JSON objects) to measure a lever against
the defaults, and ``--lsp THETA ...`` a row of the log-sum penalty by
DC(AIS-Impute) (lambda and theta chosen on the same validation split as
LIBMF's; see :func:`lsp`), ``--wtn ALPHA ...`` one of the smoothed
weighted nuclear norm (see :func:`wtn`). ``--profile`` also writes where the CPU time of
``MatrixCompletion().fit`` goes on the ML-1M split (cProfile on the CPU
clock; ``--profile --datasets`` with no dataset runs the profile alone).

    python benchmarks/completion/libmf_peer.py --quick --libmf /tmp/libmf
    python benchmarks/completion/libmf_peer.py --libmf /tmp/libmf --profile
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared

from _common import fold_arrays, run_peer

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import (
    Centering,
    CompletionProblem,
    MatrixCompletion,
    dc_completion,
    lambda_path,
    method_options,
    proximal_completion,
)
from embedopt.data import ObservedEntries, load_movielens, split_entries

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ["100k", "1m", "latest-small"]
GRID_K = [16, 32, 64, 128]
GRID_L2 = [0.02, 0.05, 0.1]
#: DC iterations of the log-sum-penalty lever (its validation RMSE is flat after 2-3).
LSP_OUTER = 5


# -- LIBMF -------------------------------------------------------------------------
def _write_ratings(path: Path, entries) -> Path:
    """One ``u i r`` line per rating (LIBMF's text format)."""
    np.savetxt(
        path,
        np.c_[entries.rows, entries.cols, entries.values],
        fmt=["%d", "%d", "%.10g"],
    )
    return path


def _timed(cmd: list) -> tuple[float, float]:
    """Run ``cmd``; wall seconds and the child's CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed: {proc.stderr[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _train(libmf: Path, data: Path, model: Path, k: int, l2: float, t: int = 20):
    """``mf-train`` on one thread, ``t`` iterations (LIBMF's default 20);
    its (wall, CPU) seconds."""
    cmd = [libmf / "mf-train", "-k", k, "-l2", l2, "-t", t, "-s", 1, "--quiet"]
    return _timed([str(c) for c in [*cmd, data, model]])


def _rmse(libmf: Path, data: Path, model: Path, truth: np.ndarray) -> float:
    """RMSE of ``mf-predict``'s predictions of ``data`` (computed here)."""
    out = model.with_suffix(".pred")
    _timed([str(libmf / "mf-predict"), str(data), str(model), str(out)])
    pred = np.loadtxt(out, ndmin=1)
    return float(np.sqrt(np.mean((pred - truth) ** 2)))


def libmf_select(libmf: Path, tmp: Path, train, seed: int, grid) -> dict:
    """Validation RMSE of every (k, l2) on a 90/10 split of ``train``."""
    fit, val = split_entries(
        train, (0.9, 0.1), random_state=np.random.default_rng(seed)
    )
    fit_path = _write_ratings(tmp / "fit.txt", fit)
    val_path = _write_ratings(tmp / "val.txt", val)
    scores = {}
    for k, l2 in grid:
        model = tmp / f"k{k}_l{l2}.model"
        _train(libmf, fit_path, model, k, l2)
        scores[(k, l2)] = _rmse(libmf, val_path, model, val.values)
    return scores


def libmf(args, train, test) -> dict | None:
    """LIBMF: setting chosen on validation, final train timed ``reps`` times."""
    if args.libmf is None:
        return None
    folder = Path(args.libmf)
    grid = [(k, l2) for k in args.grid_k for l2 in args.grid_l2]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        scores = libmf_select(folder, tmp, train, args.seed, grid)
        k, l2 = min(scores, key=scores.get)
        tr_path = _write_ratings(tmp / "train.txt", train)
        te_path = _write_ratings(tmp / "test.txt", test)
        model = tmp / "final.model"
        times = [_train(folder, tr_path, model, k, l2) for _ in range(args.reps)]
        rmse = _rmse(folder, te_path, model, test.values)
    return dict(
        k=k,
        l2=l2,
        rmse=rmse,
        wall=_shared.median([t[0] for t in times]),
        cpu=_shared.median([t[1] for t in times]),
        grid={f"k={a} l2={b}": v for (a, b), v in scores.items()},
    )


def libmf_epochs(args, train, test, k: int, l2: float) -> list[dict]:
    """LIBMF's RMSE against its number of iterations at the validated (k, l2).

    For each ``t`` of ``--libmf-epochs``: validation RMSE (trained on the
    same 90 % of the training ratings as :func:`libmf_select`), then test
    RMSE and CPU time trained on all of them. Shows whether LIBMF's
    default 20 iterations is a converged fit or an early stop.
    """
    folder = Path(args.libmf)
    fit, val = split_entries(
        train, (0.9, 0.1), random_state=np.random.default_rng(args.seed)
    )
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        paths = {
            key: _write_ratings(tmp / f"{key}.txt", part)
            for key, part in dict(fit=fit, val=val, train=train, test=test).items()
        }
        model = tmp / "epochs.model"
        for t in args.libmf_epochs:
            _train(folder, paths["fit"], model, k, l2, t)
            val_rmse = _rmse(folder, paths["val"], model, val.values)
            _, cpu = _train(folder, paths["train"], model, k, l2, t)
            rmse = _rmse(folder, paths["test"], model, test.values)
            rows.append(dict(t=t, val_rmse=val_rmse, rmse=rmse, cpu=cpu))
    return rows


# -- ours and Surprise --------------------------------------------------------------
def ours(train, test, seed: int, reps: int, options: dict) -> dict:
    """``MatrixCompletion(**options)``: medians of ``reps`` fits' times."""
    walls, cpus = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        model = MatrixCompletion(random_state=seed, **options).fit(train)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    path = model.path_ or {}
    return dict(
        options=options,
        rmse=-model.score(test),
        rank=model.rank_,
        center=model.center_,
        lam=model.lam_,
        n_lambdas=len(path.get("lambdas", [])),
        path_ranks=[int(x) for x in path.get("ranks", [])],
        wall=_shared.median(walls),
        cpu=_shared.median(cpus),
    )


def _lsp(problem, init, lam: float, theta: float, seed: int):
    """DC(AIS-Impute) with the log-sum penalty, the estimator's solver options."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return dc_completion(
            problem,
            init,
            lam=lam,
            regularizer="lsp",
            theta=theta,
            tol=1e-3,
            power_iters=1,
            max_outer_iter=LSP_OUTER,
            random_state=seed,
        ).x


def lsp(train, test, seed: int, thetas) -> dict:
    """Lever (c): the log-sum penalty instead of the nuclear norm.

    The estimator's path (``center="both"``, raw solutions: on ratings the
    post-processed ones lose) on a 90/10 split of ``train``; then DC(AIS-Impute)
    with the LSP from the path's solutions at the selected lambda and the two
    before it, for every ``theta``; the (lambda, theta) that validates best is
    solved again on all of ``train`` (warm-started). CPU time of all of it.
    """
    c0, t0 = time.process_time(), time.perf_counter()
    rng = np.random.default_rng(seed)
    fit, val = split_entries(train, (0.9, 0.1), random_state=rng)
    cen = Centering("both").fit(fit)
    prob = CompletionProblem(
        cen.transform(fit), validation=cen.transform(val), dtype="float32"
    )
    path = lambda_path(
        prob, postprocess=False, tol=1e-3, power_iters=1, random_state=seed
    )
    scores = {}
    for j in range(max(path.best_index - 2, 0), path.best_index + 1):
        for theta in thetas:
            x = _lsp(prob, path.factors[j], path.lambdas[j], theta, seed)
            scores[(j, theta)] = (prob.validation_score(*x), x)
    (j, theta), (_, x) = min(scores.items(), key=lambda kv: kv[1][0])
    cen = Centering("both").fit(train)
    # The test entries ride along as "validation" to be scored at the end;
    # DC records their RMSE per iteration but never uses it to stop.
    full = CompletionProblem(
        cen.transform(train), validation=cen.transform(test), dtype="float32"
    )
    x = _lsp(full, x, path.lambdas[j], theta, seed)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return dict(
        label=f"DC(AIS-Impute), LSP theta={theta:g} lam={path.lambdas[j]:.3g}",
        options={"regularizer": "lsp", "theta": theta, "lam": path.lambdas[j]},
        rmse=full.validation_score(*x),  # offsets are additive: stars
        rank=int(x[1].numel()),
        n_lambdas=len(path.lambdas),
        wall=wall,
        cpu=cpu,
        grid={
            f"lam={path.lambdas[a]:.4g} theta={b}": v[0] for (a, b), v in scores.items()
        },
    )


def _weighted(centered, counts, alpha: float):
    """The change of variables of the smoothed weighted nuclear norm.

    ``||diag(a) X diag(b)||_*`` with ``a_i^2 = (1 - alpha) n_i / mean(n) +
    alpha`` (``n_i``: the row's training entries; ``b`` likewise for the
    columns) is the nuclear norm of ``Y = diag(a) X diag(b)``, and
    ``(X_ij - O_ij)^2 = w_ij (Y_ij - a_i b_j O_ij)^2`` with ``w_ij = 1 /
    (a_i b_j)^2``. Returns the entries of Y's problem, their weights and the
    per-entry scale ``a_i b_j`` (alpha = 1: the plain nuclear norm).
    """
    a, b = (np.sqrt((1 - alpha) * c / c.mean() + alpha) for c in counts)
    scale = a[centered.rows] * b[centered.cols]
    entries = ObservedEntries(
        centered.indices, centered.values * scale, centered.shape, validate=False
    )
    return entries, 1.0 / scale**2, scale


def _counts(entries) -> tuple:
    m, n = entries.shape
    return (
        np.bincount(entries.rows, minlength=m).astype(float),
        np.bincount(entries.cols, minlength=n).astype(float),
    )


def _wtn_problem(cen, train, other, alpha):
    """Y's problem on ``train`` with ``other`` as validation (the true errors)."""
    counts = _counts(train)
    tr, w, _ = _weighted(cen.transform(train), counts, alpha)
    va, wv, scale = _weighted(cen.transform(other), counts, alpha)
    prob = CompletionProblem(
        tr, validation=va, sample_weight=w, validation_weight=wv, dtype="float32"
    )
    return prob, scale


def wtn(train, test, seed: int, alphas) -> dict:
    """Lever (d): the smoothed weighted nuclear norm (see :func:`_weighted`).

    The estimator's path (``center="both"``, raw solutions, patience 1) on Y's
    problem of a 90/10 split of ``train`` for every ``alpha``; the (alpha,
    lambda) that validates best (weighted validation RMSE: the true one up to
    a constant factor) is solved again on all of ``train``, warm-started at
    that lambda. CPU time of all of it.
    """
    c0, t0 = time.process_time(), time.perf_counter()
    fit, val = split_entries(
        train, (0.9, 0.1), random_state=np.random.default_rng(seed)
    )
    cen = Centering("both").fit(fit)
    best, grid = None, {}
    for alpha in alphas:
        prob, scale = _wtn_problem(cen, fit, val, alpha)
        path = lambda_path(
            prob, postprocess=False, tol=1e-3, power_iters=1, random_state=seed
        )
        rmse = _wtn_rmse(cen.transform(val), path.best_factors, scale)
        grid[f"alpha={alpha:g} lam={path.best_lambda:.4g}"] = rmse
        if best is None or rmse < best[0]:
            best = (rmse, alpha, path, path.best_factors)
    _, alpha, path, x = best
    lam = path.best_lambda
    cen = Centering("both").fit(train)
    full, scale = _wtn_problem(cen, train, test, alpha)
    res = proximal_completion(
        full,
        x,
        lam=lam,
        lam_start=lam,
        **method_options("ais_impute"),
        tol=1e-3,
        power_iters=1,
        random_state=seed,
    )
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return dict(
        label=f"weighted nuclear norm, alpha={alpha:g} lam={lam:.3g}",
        options={"alpha": alpha, "lam": lam},
        rmse=_wtn_rmse(cen.transform(test), res.x, scale),
        rank=int(res.x[1].numel()),
        n_lambdas=len(path.lambdas),
        wall=wall,
        cpu=cpu,
        grid=grid,
    )


def _wtn_rmse(centered, x, scale) -> float:
    """RMSE of ``X = Y / (a_i b_j)`` on centered entries (offsets cancel)."""
    U, s, V = (t.double().cpu().numpy() for t in x)
    y = np.einsum("ij,ij->i", U[centered.rows] * s, V[centered.cols])
    return float(np.sqrt(np.mean((y / scale - centered.values) ** 2)))


def surprise(args, train, test, entries) -> dict | None:
    """Surprise's SVD() in the peers' environment (None when not installed)."""
    lo, hi = float(entries.values.min()), float(entries.values.max())
    out = run_peer(
        args.peer_python,
        "surprise_svd.py",
        fold_arrays(train, test),
        args.seed,
        lo,
        hi,
    )
    return None if out is None else dict(rmse=out["rmse"], wall=out["seconds"])


def run_dataset(variant: str, args) -> dict:
    """Every method on the 80/20 split of one dataset."""
    entries = load_movielens(variant, args.data_dir).entries
    train, test = split_entries(
        entries, (0.8, 0.2), random_state=np.random.default_rng(args.seed)
    )
    out = dict(dataset=variant, n_train=train.values.size, n_test=test.values.size)
    out["libmf"] = libmf(args, train, test)
    print(variant, "libmf", json.dumps(_shared._jsonable(out["libmf"])), flush=True)
    if args.libmf_epochs and out["libmf"] is not None:
        peer = out["libmf"]
        out["libmf_epochs"] = libmf_epochs(args, train, test, peer["k"], peer["l2"])
    out["ours"] = []
    for options in args.variants:
        r = ours(train, test, args.seed, args.reps, options)
        out["ours"].append(r)
        print(variant, "ours", json.dumps(_shared._jsonable(r)), flush=True)
    if args.lsp:
        r = lsp(train, test, args.seed, args.lsp)
        out["ours"].append(r)
        print(variant, "lsp", json.dumps(_shared._jsonable(r)), flush=True)
    if args.wtn:
        r = wtn(train, test, args.seed, args.wtn)
        out["ours"].append(r)
        print(variant, "wtn", json.dumps(_shared._jsonable(r)), flush=True)
    out["surprise"] = surprise(args, train, test, entries)
    return out


# -- profile -----------------------------------------------------------------------
#: Profile rows: (label, file suffix, function, "cum" or "own" time).
PROFILE_ROWS = [
    ("fit, total", "completion/estimators.py", "fit", "cum"),
    (
        "  centering, validation split, CSR structures",
        "estimators.py",
        "_problems",
        "cum",
    ),
    ("    of which: centering selection", "centering.py", "select_centering", "cum"),
    ("  lambda path", "completion/path.py", "lambda_path", "cum"),
    ("    its solves", "completion/path.py", "solve", "cum"),
    ("    post-processing to score", "completion/path.py", "_score", "cum"),
    ("    rank-r refinements (ALS) to score", "completion/path.py", "better", "cum"),
    ("  refit on all entries + post-process", None, None, "refit"),
    ("SVT (power method), all solves", "completion/svt.py", "__call__", "cum"),
    ("  power method", "linalg/svd.py", "power_method", "cum"),
    ("  orthonormalize (all calls)", "linalg/svd.py", "orthonormalize", "cum"),
    ("  thin SVD (Gram eigh)", "linalg/svd.py", "thin_svd", "cum"),
    ("  warm-start basis", "linalg/svd.py", "warm_start_basis", "cum"),
    ("sparse products: scipy csc_matvecs", "~", "csc_matvecs>", "own"),
    ("sparse products: torch CSR @ dense", "linalg/sparse.py", "matmul", "own"),
    ("sparse products: sampled_addmm", "~", "sparse_sampled_addmm>", "own"),
    ("low-rank part of operator products", "linalg/operators.py", "matmul", "own+"),
    ("objective (loss on Omega)", "completion/problem.py", "loss_total", "cum"),
]


def _profile_value(stats: dict, suffix: str, func: str, kind: str) -> float:
    """Summed cumulative ("cum") or own ("own") seconds of matching functions."""
    total = 0.0
    for (path, _, name), (_, _, own, cum, _) in stats.items():
        if not path.endswith(suffix):
            continue
        if name == func or (func.endswith(">") and name.endswith(func)):
            total += cum if kind == "cum" else own
        elif kind == "own+" and name == "rmatmul":
            total += own  # operators.py: matmul and rmatmul, own time
    return total


class _Iterations:
    """Callback: the iterations of each solve (a solve restarts at 1)."""

    def __init__(self):
        self.counts: list[int] = []

    def __call__(self, state) -> None:
        if state.iteration == 1:
            self.counts.append(0)
        self.counts[-1] += 1


def profile(args) -> dict:
    """cProfile (CPU clock) of ``MatrixCompletion().fit`` on the ML-1M split."""
    import cProfile
    import pstats

    entries = load_movielens("1m", args.data_dir).entries
    train, _ = split_entries(
        entries, (0.8, 0.2), random_state=np.random.default_rng(args.seed)
    )
    counter = _Iterations()
    prof = cProfile.Profile(time.process_time)
    model = MatrixCompletion(random_state=args.seed, callback=counter)
    prof.runcall(model.fit, train)
    stats = pstats.Stats(prof).stats
    values = {}
    for label, suffix, func, kind in PROFILE_ROWS:
        if kind == "refit":
            values[label] = _profile_value(
                stats, "completion/path.py", "fit_path", "cum"
            ) - _profile_value(stats, "completion/path.py", "lambda_path", "cum")
        else:
            values[label] = _profile_value(stats, suffix, func, kind)
    path = model.path_
    return dict(
        seconds=values,
        rank=model.rank_,
        lambdas=[float(x) for x in path["lambdas"]],
        path_ranks=[int(x) for x in path["ranks"]],
        path_scores=[round(float(x), 4) for x in path["scores"]],
        iterations=counter.counts,
        refined=[bool(x) for x in path["refined"]],
        postprocessed=[bool(x) for x in path["postprocessed"]],
    )


def profile_table(prof: dict) -> str:
    """CPU seconds and share of the total per profile row, and the path."""
    total = prof["seconds"]["fit, total"]
    rows = [
        [label, round(v, 2), f"{100 * v / total:.0f} %"]
        for label, v in prof["seconds"].items()
    ]
    table = _shared.markdown_table(["where (cProfile, CPU)", "s", "share"], rows)
    its = prof["iterations"]
    path = (
        f"rank {prof['rank']}; {len(prof['lambdas'])} lambdas solved, ranks "
        f"{prof['path_ranks']}, validation RMSE "
        f"{prof['path_scores']}; iterations per solve "
        f"(path, then refit): {its}"
    )
    return table + "\n\n" + path


# -- report ------------------------------------------------------------------------
def _label(options: dict) -> str:
    inner = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"MatrixCompletion({inner})"


def table_rows(r: dict) -> list[list]:
    """One row per method of one dataset, times and RMSE relative to LIBMF."""
    peer = r["libmf"]
    rows = []
    if peer is None:
        rows.append([r["dataset"], "LIBMF", "not given", "", "", "", "", "", ""])
    else:
        name = f"LIBMF -k {peer['k']} -l2 {peer['l2']} (validated)"
        rows.append([r["dataset"], name, round(peer["rmse"], 4), "", ""])
        rows[-1] += [round(peer["cpu"], 2), round(peer["wall"], 2), "1", ""]
    for o in r["ours"]:
        name = o.get("label") or _label(o["options"])
        row = [r["dataset"], name, round(o["rmse"], 4), o["rank"]]
        row.append(o["n_lambdas"])
        row += [round(o["cpu"], 2), round(o["wall"], 2)]
        if peer is None:
            row += ["", ""]
        else:
            gap = 100 * (o["rmse"] - peer["rmse"]) / peer["rmse"]
            row += [f"{o['cpu'] / peer['cpu']:.2f}", f"{gap:+.1f} %"]
        rows.append(row)
    sp = r["surprise"]
    if sp is None:
        rows.append([r["dataset"], "Surprise SVD()", "not installed"] + [""] * 6)
    else:
        rows.append([r["dataset"], "Surprise SVD()", round(sp["rmse"], 4), "", ""])
        rows[-1] += ["", round(sp["wall"], 2), "", ""]
    return rows


HEADERS = [
    "data",
    "method",
    "test RMSE",
    "rank",
    "lambdas",
    "CPU s",
    "wall s",
    "CPU time / LIBMF",
    "RMSE vs LIBMF",
]


def epochs_table(results: list[dict]) -> str:
    """LIBMF's validation and test RMSE per iteration count ("" without rows)."""
    rows = []
    for r in results:
        setting = f"-k {r['libmf']['k']} -l2 {r['libmf']['l2']}" if r["libmf"] else ""
        for e in r.get("libmf_epochs", []):
            rmses = [round(e["val_rmse"], 4), round(e["rmse"], 4)]
            rows.append([r["dataset"], setting, e["t"], *rmses, round(e["cpu"], 2)])
    if not rows:
        return ""
    headers = ["data", "setting", "-t", "validation RMSE", "test RMSE", "CPU s"]
    return "\n\nLIBMF against its iterations (-t):\n\n" + _shared.markdown_table(
        headers, rows
    )


def report(args, results: list[dict], prof: dict | None) -> None:
    """The table (and profile), printed and written as JSON + Markdown."""
    rows = [row for r in results for row in table_rows(r)]
    table = _shared.markdown_table(HEADERS, rows)
    table += epochs_table(results)
    if prof is not None:
        table += "\n\nProfile of MatrixCompletion().fit, ML-1M:\n\n"
        table += profile_table(prof)
    print(table)
    name = "completion_libmf" + ("_quick" if args.quick else "")
    config = {k: v for k, v in vars(args).items() if k not in ("out",)}
    _shared.write(name, args.out, config, dict(runs=results, profile=prof), table)


def configure():
    """The command line: LIBMF's folder, datasets, grid, repetitions, variants."""
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.set_defaults(threads=1)
    p.add_argument("--libmf", default=None, help="folder of mf-train / mf-predict")
    p.add_argument(
        "--datasets", nargs="*", default=None, help="none given: no comparison"
    )
    p.add_argument("--grid-k", nargs="*", type=int, default=GRID_K)
    p.add_argument("--grid-l2", nargs="*", type=float, default=GRID_L2)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument(
        "--variants",
        nargs="*",
        type=json.loads,
        default=[{}],
        help="MatrixCompletion options, one JSON object per row ({} = defaults)",
    )
    p.add_argument(
        "--lsp",
        nargs="*",
        type=float,
        default=None,
        help="thetas of the log-sum-penalty row (lever (c); none: no row)",
    )
    p.add_argument(
        "--wtn",
        nargs="*",
        type=float,
        default=None,
        help="alphas of the weighted-nuclear-norm row (lever (d); none: no row)",
    )
    p.add_argument(
        "--libmf-epochs",
        nargs="*",
        type=int,
        default=None,
        help="LIBMF iteration counts to compare at the validated (k, l2)",
    )
    p.add_argument("--profile", action="store_true")
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--peer-python",
        default=str(ROOT / ".venv-peers" / "bin" / "python"),
        help="interpreter with scikit-surprise (skipped when absent)",
    )
    args = p.parse_args()
    _shared.setup(args)
    if args.datasets is None:  # an empty --datasets: the profile only
        args.datasets = ["100k"] if args.quick else DATASETS
    args.reps = args.reps or (1 if args.quick else 3)
    if args.quick:
        args.grid_k, args.grid_l2 = args.grid_k[:2], args.grid_l2[:2]
    return args


def main():
    args = configure()
    results = [run_dataset(variant, args) for variant in args.datasets]
    prof = profile(args) if args.profile else None
    report(args, results, prof)


if __name__ == "__main__":
    main()
