"""Pieces shared by the matrix/tensor completion benchmarks."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import _shared
from embedopt import ConvergenceWarning
from embedopt.completion import method_options, postprocess, proximal_completion

PEERS = Path(__file__).resolve().parent / "peers"


def fold_arrays(train, test) -> dict:
    """A train / test split as the arrays the rating peers read."""
    return dict(
        tr_rows=train.rows,
        tr_cols=train.cols,
        tr_vals=train.values,
        te_rows=test.rows,
        te_cols=test.cols,
        te_vals=test.values,
    )


def run_peer(python, script: str, arrays: dict, *extra):
    """Run ``peers/<script>`` on ``arrays`` (an .npz) with the peers' interpreter.

    Returns the last JSON line it prints, or None when the interpreter does
    not exist or the script printed none (its stderr tail is shown).
    """
    if python is None or not Path(python).exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, **arrays)
        proc = subprocess.run(
            [python, str(PEERS / script), str(path), *map(str, extra)],
            capture_output=True,
            text=True,
        )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if not lines:
        print(f"{script} failed:", proc.stderr[-300:], flush=True)
        return None
    return json.loads(lines[-1])


#: Relative objective gap that counts as "reached the final objective".
GAP = 1e-4
#: The four solvers of Tables III and XI, slowest first (AIS-Impute is the ratio base).
METHODS = ["apg", "soft_impute", "ais_impute_exact", "ais_impute"]


def solve_each(
    problem,
    lam,
    methods,
    *,
    tol,
    max_iter,
    seed,
    refit=True,
    f_star=None,
    stop_gap=None,
    time_limit=None,
):
    """Run each named solver from scratch at ``lam``; post-process the results.

    With ``f_star`` and ``stop_gap``, a solver stops as soon as its objective is
    within ``stop_gap`` (relative) of ``f_star``: the comparison needs each
    method to reach the final objective, not to run its own tolerance out.
    ``time_limit`` (solver seconds) bounds slow baselines.

    Returns a dict: method -> (label, SolverResult, post-processed factors,
    post-processing seconds). ``refit=False`` skips post-processing.
    """

    def stop(state):
        if time_limit is not None and state.elapsed > time_limit:
            return True
        if f_star is None or stop_gap is None:
            return False
        return (state.objective - f_star) / abs(f_star) <= stop_gap

    out = {}
    for key in methods:
        method = method_options(key)
        label = method["name"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = proximal_completion(
                problem,
                lam=lam,
                **method,
                tol=tol,
                max_iter=max_iter,
                random_state=seed,
                callback=stop,
            )
        t0 = time.perf_counter()
        if not refit:
            fac = res.x
        elif isinstance(res.x, tuple):
            fac = postprocess(problem, *res.x)
        else:
            fac = postprocess(problem, res.x)
        out[key] = (label, res, fac, time.perf_counter() - t0)
    return out


def reference_objective(problem, lam, seed, max_iter=5000):
    """F*: AIS-Impute run to a tight tolerance (relative change 1e-10)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = proximal_completion(
            problem,
            lam=lam,
            tol=1e-10,
            max_iter=max_iter,
            random_state=seed,
            name="reference",
        )
    return float(res.history["objective"].min())


def time_to_gap(history, f_star, gap=GAP):
    """Seconds and iterations until ``(F - F*) / |F*| <= gap`` (NaN if never)."""
    rel = (history["objective"] - f_star) / abs(f_star)
    seconds = _shared.time_to(history["time"], rel, gap)
    iters = _shared.time_to(history["iteration"], rel, gap)
    return seconds, iters if np.isnan(iters) else int(iters)


def plot_gaps(out, sizes, path):
    """Objective gap vs time (top) and iterations (bottom), one column per size."""
    plt = _shared.figure()
    fig, axes = plt.subplots(
        2, len(sizes), figsize=(4.5 * len(sizes), 7), squeeze=False
    )
    for j, m in enumerate(sizes):
        r = next(x for x in out if x["m"] == m)
        for run in r["runs"].values():
            h = run["history"]
            gap = np.maximum((h["objective"] - r["f_star"]) / abs(r["f_star"]), 1e-12)
            axes[0, j].semilogy(h["time"], gap, label=run["label"])
            axes[1, j].semilogy(h["iteration"], gap, label=run["label"])
        axes[0, j].set(
            title=f"m = {m}", xlabel="seconds", ylabel="(F - F*) / F*", xscale="log"
        )
        axes[1, j].set(xlabel="iterations", ylabel="(F - F*) / F*")
    axes[0, 0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
