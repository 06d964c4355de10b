"""Cost per oracle vs m + n: value, gradient and Gauss-Newton product of the
all-pairs objective against the naive O(mn) computation (issue 12, benchmark 3).

Synthetic implicit feedback: m users and n items (``m = ratio * n``), each user
with ``--per-user`` observed items drawn from a skewed item popularity (so
``|O| ~ per_user * m`` grows like m + n), k = 32, float32 towers of two kinds:

- ``embedding``: one learned row per id (:class:`~embedopt.nn.EmbeddingTower`);
- ``mlp``: :class:`~embedopt.nn.MLPTower` (hidden ``--hidden``) over two
  categorical features and 8 dense ones per entity.

The objective is ``AllPairsObjective`` with square loss, imputation 0 on the
unobserved pairs, ``omega`` and ``lam``, at the towers' random initial point.
Per size and tower kind, the median wall-clock seconds (``--repeats`` runs
after one warm-up; 3 where one call takes over a second) and the mean user and
system CPU seconds of:

- ``value``: a fresh point each run (forward passes, Gramians, observed scores);
- ``value_and_grad``: a fresh point each run (what a line search or a Newton
  iteration pays once);
- ``gnvp``: at the point of the last gradient (what each CG step pays: the
  embeddings, Gramians and the towers' reverse graph are reused).

The naive computation forms the dense m x n ``Yhat = P Q^T`` (the towers run
once on all entities; ``W = 1`` on O and ``omega`` elsewhere): value
``0.5 sum W (Yhat - Y)^2`` in place, gradient by autograd through it,
Gauss-Newton product ``J^T (W * J v)`` by ``torch.func.jvp`` / ``vjp`` of
``theta -> Yhat`` (its reverse graph built once per point, as for ours);
``--naive-repeats`` runs. It runs for ``m + n <= --naive-max`` where its
dense arrays fit in half of the available memory, and is checked against ours
at the same point: values must agree to 1e-5 (relative; the script exits with
status 1 otherwise); gradient and Gauss-Newton product differences are
reported.

Each tower kind runs in a fresh process, sizes in increasing order. Peak memory
per phase: the process's peak resident set (VmHWM) is reset before each phase
(Linux ``/proc/self/clear_refs``) and read after it; "extra" is the peak minus
the resident set at the phase's start (the problem data and, for the naive
phase, our run's leftovers belong to the latter). Where the reset is refused,
the numbers are the process's peak so far (``peak_reset`` in the JSON).

The empirical scaling is the least-squares slope of log(seconds) against
log(m + n) over the sizes ``>= --fit-min`` (fixed per-call overheads flatten
the smallest ones): ~1 means linear, ~2 quadratic; fitted to wall-clock and to
user CPU seconds (the arithmetic, without the kernel's page zeroing).

    python benchmarks/similarity/cost.py --quick        # m + n up to 2*10^4, < 1 min
    python benchmarks/similarity/cost.py                # up to 10^6, ~5 min

Default ``--threads 1`` (torch and BLAS pools): the machine the README's
numbers come from has 2 cores shared with other jobs. Writes
results/similarity_cost[_quick].{json,md,png}.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared

SIZES = {  # m + n
    "quick": [1_000, 3_000, 10_000, 20_000],
    "full": [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000],
}
NAIVE_MAX = {"quick": 10_000, "full": 30_000}
FIT_MIN = {"quick": 3_000, "full": 10_000}
# Dense m x n float32 arrays the naive computation holds at its peak (Y, the
# observed mask, W, Ytilde, Yhat, the terms and autograd's saved
# intermediates), for the memory guard.
NAIVE_ARRAYS = 12
ORACLES = ("value", "value_and_grad", "gnvp")
VALUE_RTOL = 1e-5  # ours vs naive, float32 towers
TOWERS = ("embedding", "mlp")


def _args(argv=None):
    p = _shared.parser(__doc__.splitlines()[0])
    p.set_defaults(threads=1)
    p.add_argument("--sizes", type=float, nargs="+", default=None, help="m + n")
    p.add_argument("--towers", nargs="+", default=list(TOWERS), choices=TOWERS)
    p.add_argument("--ratio", type=float, default=1.0, help="m / n")
    p.add_argument("--per-user", type=int, default=20, help="observed items per user")
    p.add_argument("--k", type=int, default=32, help="n_components")
    p.add_argument("--hidden", type=int, default=64, help="MLP hidden width")
    p.add_argument("--omega", type=float, default=0.2)
    p.add_argument("--lam", type=float, default=1e-3)
    p.add_argument("--repeats", type=int, default=5, help="timed runs per oracle")
    p.add_argument(
        "--naive-repeats", type=int, default=3, help="timed runs per naive oracle"
    )
    p.add_argument(
        "--naive-max",
        type=float,
        default=None,
        help="largest m + n of the naive O(mn) computation "
        f"(default {NAIVE_MAX['quick']:g} quick, {NAIVE_MAX['full']:g})",
    )
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--fit-min",
        type=float,
        default=None,
        help="smallest m + n in the slope fits "
        f"(default {FIT_MIN['quick']:g} quick, {FIT_MIN['full']:g})",
    )
    args = p.parse_args(argv)
    mode = "quick" if args.quick else "full"
    args.sizes = [int(s) for s in (args.sizes or SIZES[mode])]
    if args.naive_max is None:
        args.naive_max = NAIVE_MAX[mode]
    if args.fit_min is None:
        args.fit_min = FIT_MIN[mode]
    return args


# -- memory ------------------------------------------------------------------------
class _Phase:
    """Peak resident memory of a block: ``.peak_gb`` and ``.extra_gb``."""

    def __enter__(self):
        gc.collect()
        base_mb = _shared.reset_peak_rss()  # NaN where the kernel refuses
        self.reset = base_mb == base_mb
        self.base_gb = base_mb / 1024 if self.reset else _shared.peak_rss_gb()
        return self

    def __exit__(self, *exc):
        self.peak_gb = _shared.peak_rss_gb()
        self.extra_gb = self.peak_gb - self.base_gb


# -- problem -----------------------------------------------------------------------
def sizes_mn(total: int, ratio: float) -> tuple[int, int]:
    """(m, n) with ``m + n = total`` and ``m / n ~ ratio``."""
    n = max(1, round(total / (1.0 + ratio)))
    return total - n, n


def pairs(m: int, n: int, per_user: int, seed: int):
    """``per_user`` distinct items per user (fewer if n is smaller), drawn with
    probability ~ (rank + 10)^-0.8: a popularity skew like that of real
    catalogues, in O(m per_user log) work."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per = min(per_user, n)
    w = (np.arange(n) + 10.0) ** -0.8
    cdf = np.cumsum(w / w.sum())
    perm = rng.permutation(n)  # popular items are not the low ids
    # Draw extra candidates and keep each user's first `per` distinct ones.
    draws = per + max(4, per // 2)
    cand = perm[np.minimum(np.searchsorted(cdf, rng.random((m, draws))), n - 1)]
    cand.sort(axis=1)
    fresh = np.ones_like(cand, dtype=bool)
    fresh[:, 1:] = cand[:, 1:] != cand[:, :-1]
    # Among the distinct ones, a random subset of `per` (their order is random).
    keys = np.where(fresh, rng.random(cand.shape), 2.0)
    keep = np.argsort(keys, axis=1)[:, :per]
    cols = np.take_along_axis(cand, keep, 1)
    ok = np.take_along_axis(fresh, keep, 1)
    rows = np.broadcast_to(np.arange(m)[:, None], cols.shape)
    return rows[ok].astype(np.int64), cols[ok].astype(np.int64)


def towers(kind: str, m: int, n: int, k: int, hidden: int, seed: int):
    """The (user, item) towers of one size, float32 on the CPU."""
    import numpy as np
    import torch

    from embedopt.data import as_side_features
    from embedopt.nn import EmbeddingTower, MLPTower

    g = torch.Generator().manual_seed(seed)
    if kind == "embedding":
        return (
            EmbeddingTower(m, k, std=0.1, generator=g),
            EmbeddingTower(n, k, std=0.1, generator=g),
        )
    rng = np.random.default_rng(seed + 1)
    out = []
    for name, count, cards in (("user", m, (20, 200)), ("item", n, (50, 1000))):
        feats = {
            "a": rng.integers(0, cards[0], count),
            "b": rng.integers(0, cards[1], count),
            "x": rng.normal(size=(count, 8)),
        }
        out.append(
            MLPTower(
                as_side_features(feats, count, name),
                k,
                hidden=hidden,
                normalize=False,
                generator=g,
            )
        )
    return tuple(out)


def objective(kind, total, args):
    from embedopt.similarity import AllPairsObjective

    m, n = sizes_mn(total, args.ratio)
    ut, it = towers(kind, m, n, args.k, args.hidden, args.seed)
    rows, cols = pairs(m, n, args.per_user, args.seed)
    obj = AllPairsObjective(ut, it, (rows, cols), omega=args.omega, lam=args.lam)
    return obj, (rows, cols)


# -- timing ------------------------------------------------------------------------
def _timed(out: dict, name: str, fn, repeats: int) -> None:
    """``out[name]``: median wall-clock seconds of ``repeats`` runs of ``fn()``
    (at most 3 when the warm-up took over a second) after one warm-up;
    ``out[name + "_cpu"]``: mean user and system CPU seconds per run (system
    time is mostly the kernel zero-filling the pages of fresh large
    temporaries)."""
    t0 = time.perf_counter()
    fn()
    if time.perf_counter() - t0 > 1.0:
        repeats = min(repeats, 3)
    ts = []
    # getrusage, not os.times: microseconds, not 10 ms clock ticks.
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    out[name] = statistics.median(ts)
    out[name + "_cpu"] = {
        "user": (c1.ru_utime - c0.ru_utime) / repeats,
        "system": (c1.ru_stime - c0.ru_stime) / repeats,
    }


def _fresh(x):
    # New tensors: the objective caches the last point's embeddings by identity.
    return tuple(t.clone() for t in x)


def _direction(x, seed):
    import torch

    g = torch.Generator().manual_seed(seed + 7)
    return tuple(torch.randn(t.shape, generator=g, dtype=t.dtype) for t in x)


def time_fast(obj, args) -> dict:
    x0 = obj.initial_point()
    v = _direction(x0, args.seed)
    out = {}
    with _Phase() as mem:
        _timed(out, "value", lambda: obj.value(_fresh(x0)), args.repeats)
        _timed(
            out, "value_and_grad", lambda: obj.value_and_grad(_fresh(x0)), args.repeats
        )
        obj.value_and_grad(x0)
        _timed(out, "gnvp", lambda: obj.gnvp(x0, v), args.repeats)
    out.update(peak_gb=mem.peak_gb, extra_gb=mem.extra_gb, peak_reset=mem.reset)
    return out


class Naive:
    """The dense O(mn) value, gradient and Gauss-Newton product of ``obj``'s
    objective, from the library's reference
    (:func:`embedopt.similarity.dense_objective`): the gradient by autograd,
    the product ``J^T H J v`` with H the (diagonal) curvature of the data
    term in the predictions."""

    def __init__(self, obj):
        self.obj = obj

    def _yhat(self, *params):
        from torch.func import functional_call

        xu, xv = self.obj.split(params)
        P, Q = (
            functional_call(s.tower, dict(zip(s.names, xs, strict=True)), (s.inputs,))
            for s, xs in zip(self.obj.sides, (xu, xv), strict=True)
        )
        return P @ Q.T

    def value(self, x) -> float:
        import torch

        from embedopt.similarity import dense_objective

        with torch.no_grad():
            return float(dense_objective(self.obj, x))

    def value_and_grad(self, x):
        import torch

        from embedopt.similarity import dense_objective

        xs = tuple(t.detach().requires_grad_(True) for t in x)
        f = dense_objective(self.obj, xs)
        return float(f.detach()), torch.autograd.grad(f, xs)

    def linearize(self, x):
        """At ``x`` (once per point): the reverse-mode pullback of ``theta ->
        Yhat`` and the curvature of the data term in the predictions, a
        diagonal (the terms are separable), so ``H 1`` is all of it."""
        import torch
        from torch.func import grad, jvp, vjp

        from embedopt.similarity import dense_objective

        self.x = tuple(x)
        Yhat, self.pull = vjp(self._yhat, *x)
        data = grad(lambda Y: dense_objective(self.obj, self.x, yhat=Y))
        _, self.H = jvp(data, (Yhat.detach(),), (torch.ones_like(Yhat),))

    def gnvp(self, v):
        from torch.func import jvp

        _, dY = jvp(self._yhat, self.x, tuple(v))
        out = self.pull(dY.mul_(self.H))
        return tuple(g + self.obj.lam * d for g, d in zip(out, v, strict=True))


def _rel(a, b) -> float:
    """Relative difference of ``a`` from ``b``: numbers, or tuples of tensors
    (Euclidean norm over all of them)."""
    if isinstance(a, (tuple, list)):
        num = sum(
            float(((s.double() - t.double()) ** 2).sum())
            for s, t in zip(a, b, strict=True)
        )
        den = sum(float((t.double() ** 2).sum()) for t in b)
        return (num / den) ** 0.5
    return abs(a - b) / abs(b)


def time_naive(obj, args) -> dict:
    x0 = obj.initial_point()
    v = _direction(x0, args.seed)
    out = {}
    with _Phase() as mem:
        f_ref, g_ref, h_ref = _naive_oracles(Naive(obj), x0, v, args.naive_repeats, out)
    f, g = obj.value_and_grad(x0)
    h = obj.gnvp(x0, v)
    out.update(
        peak_gb=mem.peak_gb,
        extra_gb=mem.extra_gb,
        peak_reset=mem.reset,
        value_rel_diff=_rel(f, f_ref),
        grad_rel_diff=_rel(g, g_ref),
        gnvp_rel_diff=_rel(h, h_ref),
    )
    out["value_agrees"] = out["value_rel_diff"] <= VALUE_RTOL
    return out


def _naive_oracles(naive, x0, v, repeats, out):
    """Time the naive oracles into ``out``; return their results at ``x0``
    (the dense arrays are freed when this returns)."""
    _timed(out, "value", lambda: naive.value(x0), repeats)
    _timed(out, "value_and_grad", lambda: naive.value_and_grad(x0), repeats)
    naive.linearize(x0)
    _timed(out, "gnvp", lambda: naive.gnvp(v), repeats)
    return (*naive.value_and_grad(x0), naive.gnvp(v))


def naive_fits(m: int, n: int) -> tuple[bool, float]:
    """Whether the naive computation's dense arrays fit in half of the memory
    available now (the machine is shared); and their estimated GiB."""
    need = NAIVE_ARRAYS * 4 * m * n / 2**30
    avail = _meminfo_gb("MemAvailable")
    return need <= 0.5 * avail, need


def _meminfo_gb(field: str) -> float:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return float("inf")
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20
    return float("inf")


# -- runs --------------------------------------------------------------------------
def run_towers(kind: str, args) -> list[dict]:
    """Every size of one tower kind (in this process)."""
    runs = []
    for total in args.sizes:
        t0 = time.perf_counter()
        obj, (rows, cols) = objective(kind, total, args)
        build = time.perf_counter() - t0
        m, n = obj.shape
        rec = {
            "towers": kind,
            "m_plus_n": m + n,
            "m": m,
            "n": n,
            "n_observed": obj.n_observed,
            "n_params": sum(t.numel() for t in obj.initial_point()),
            "build_s": build,
            "ours": time_fast(obj, args),
        }
        if m + n <= args.naive_max:
            fits, need = naive_fits(m, n)
            if fits:
                rec["naive"] = time_naive(obj, args)
            else:
                rec["naive_skipped"] = f"needs ~{need:.1f} GiB"
        del obj, rows, cols
        runs.append(rec)
        _print_run(rec)
    return runs


def _in_subprocess(kind: str, argv: list[str]) -> list[dict]:
    """:func:`run_towers` in a fresh process (its own peak memory)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.json"
        cmd = [sys.executable, __file__, *argv, "--worker", kind, "--result", str(path)]
        subprocess.run(cmd, check=True)
        return json.loads(path.read_text())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _args(argv)
    _shared.setup(args)
    if args.worker:
        runs = run_towers(args.worker, args)
        Path(args.result).write_text(json.dumps(runs))
        return 0
    runs = [r for kind in args.towers for r in _in_subprocess(kind, argv)]
    table, fits = _tables(runs, args)
    print(table)
    stem = "similarity_cost" + ("_quick" if args.quick else "")
    config = dict(vars(args))
    # glibc's allocator settings change the system time (see the README).
    config["malloc_env"] = {k: v for k, v in os.environ.items() if "MALLOC" in k}
    _shared.write(stem, args.out, config, {"runs": runs, "slopes": fits}, table)
    if not args.no_plots:
        _plot(runs, args, Path(args.out) / f"{stem}.png")
    bad = [r for r in runs if not r.get("naive", {}).get("value_agrees", True)]
    for r in bad:
        print(
            f"error: {r['towers']} m + n = {r['m_plus_n']}: values differ by "
            f"{r['naive']['value_rel_diff']:.2e} > {VALUE_RTOL:g} (relative)",
            file=sys.stderr,
        )
    return 1 if bad else 0


# -- report ------------------------------------------------------------------------
def slope(sizes, seconds, fit_min) -> float:
    """Least-squares slope of log(seconds) on log(m + n) over sizes >= fit_min."""
    import numpy as np

    pts = [(s, t) for s, t in zip(sizes, seconds, strict=True) if s >= fit_min]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def _cpu(o: dict, k: str) -> float:
    return o[f"{k}_cpu"]["user"] + o[f"{k}_cpu"]["system"]


def _print_run(rec) -> None:
    parts = [
        f"{rec['towers']:9s} m+n={rec['m_plus_n']:>8d} |O|={rec['n_observed']:>9d}"
    ]
    for impl in ("ours", "naive"):
        if impl in rec:
            o = rec[impl]
            parts.append(
                f"{impl}: "
                + " ".join(f"{k}={o[k]:.3g}s" for k in ORACLES)
                + f" peak={o['peak_gb']:.2f}GB"
            )
    if "naive" in rec:
        parts.append(f"value rel. diff {rec['naive']['value_rel_diff']:.1e}")
    print("  ".join(parts), flush=True)


def _tables(runs, args):
    """The Markdown report (cost per oracle, naive / ours, scaling) and the fits."""
    rows = _cost_rows(runs)
    compare = _compare_rows(runs)
    fits, fit_rows = _scaling_fits(runs, args)
    skipped = [
        f"{r['towers']} m + n = {r['m_plus_n']:,} ({r['naive_skipped']})"
        for r in runs
        if "naive_skipped" in r
    ]
    table = (
        f"Synthetic implicit feedback, m = {args.ratio:g} n, {args.per_user} "
        f"observed items per user, k = {args.k}, float32, square loss, omega "
        f"{args.omega:g}, lam {args.lam:g}, MLP hidden {args.hidden}; wall-clock "
        f"median of {args.repeats} runs (naive: {args.naive_repeats}; 3 where a "
        f"call takes over 1 s) after a warm-up, {args.threads} thread(s). GN "
        "product: at the point of the last gradient (one CG step). µs per entity: "
        "wall-clock / (m + n), flat when the cost is linear. CPU: user + "
        "system seconds per call; system time is the kernel zero-filling fresh "
        "pages. Peak: the process's peak resident set during the phase; extra: "
        "peak minus the resident set at its start.\n\n"
        + _shared.markdown_table(_COST_HEADERS, rows)
        + "\n\nNaive / ours (wall-clock) and relative differences at the same point\n\n"
        + _shared.markdown_table(
            [
                "towers",
                "m + n",
                "value",
                "gradient",
                "GN product",
                "rel. diff value",
                "rel. diff gradient",
                "rel. diff GN product",
            ],
            compare,
        )
        + (f"\n\nNaive skipped (memory): {'; '.join(skipped)}." if skipped else "")
        + "\n\nEmpirical scaling: slope of log(seconds) vs log(m + n)\n\n"
        + _shared.markdown_table(
            [
                "towers",
                "computation",
                "m + n fitted",
                "value",
                "gradient",
                "GN product",
                "gradient, user CPU",
                "GN product, user CPU",
            ],
            fit_rows,
        )
    )
    return table, fits


_COST_HEADERS = [
    "towers",
    "m + n",
    "|O|",
    "computation",
    "value s",
    "gradient s",
    "GN product s",
    "gradient / GN µs per entity",
    "gradient / GN CPU s",
    "system share of CPU (grad / GN; >= 0.05 s)",
    "peak / extra GB",
]


def _cost_rows(runs) -> list:
    """One row per size and computation: seconds, CPU and memory per oracle."""
    rows = []
    for r in runs:
        for impl in ("ours", "naive"):
            o = r.get(impl)
            if o is None:
                continue
            cpu = [_cpu(o, k) for k in ("value_and_grad", "gnvp")]
            sys_share = [
                o[f"{k}_cpu"]["system"] / c if c > 0 else float("nan")
                for k, c in zip(("value_and_grad", "gnvp"), cpu, strict=True)
            ]
            rows.append(
                [
                    r["towers"],
                    f"{r['m_plus_n']:,}",
                    f"{r['n_observed']:,}",
                    impl,
                    o["value"],
                    o["value_and_grad"],
                    o["gnvp"],
                    " / ".join(
                        f"{o[k] / r['m_plus_n'] * 1e6:.3g}"
                        for k in ("value_and_grad", "gnvp")
                    ),
                    f"{cpu[0]:.3g} / {cpu[1]:.3g}",
                    " / ".join(
                        f"{s:.0%}" if c >= 0.05 else "-"
                        for s, c in zip(sys_share, cpu, strict=True)
                    ),
                    f"{o['peak_gb']:.2f} / {max(o['extra_gb'], 0.0):.2f}",
                ]
            )
    return rows


def _compare_rows(runs) -> list:
    """Naive / ours per size, and their relative differences."""
    compare = []
    for r in runs:
        o, nv = r["ours"], r.get("naive")
        if nv is None:
            continue
        compare.append(
            [r["towers"], f"{r['m_plus_n']:,}"]
            + [f"{nv[k] / o[k]:.3g}" for k in ORACLES]
            + [
                f"{nv[k]:.1e}"
                for k in ("value_rel_diff", "grad_rel_diff", "gnvp_rel_diff")
            ]
        )
    return compare


def _scaling_fits(runs, args):
    """Slopes of log(seconds) vs log(m + n) per towers and computation."""
    fits = {}
    fit_rows = []
    for kind in args.towers:
        rs = [r for r in runs if r["towers"] == kind]
        for impl in ("ours", "naive"):
            have = [r for r in rs if impl in r]
            if not have:
                continue
            sizes = [r["m_plus_n"] for r in have]
            # The naive sizes are all small: fit them all.
            lo = args.fit_min if impl == "ours" else 0
            fit = {k: slope(sizes, [r[impl][k] for r in have], lo) for k in ORACLES}
            for k in ("value_and_grad", "gnvp"):
                fit[f"{k}_user_cpu"] = slope(
                    sizes, [max(r[impl][f"{k}_cpu"]["user"], 1e-6) for r in have], lo
                )
            fits[f"{kind}/{impl}"] = fit
            span = [s for s in sizes if s >= lo]
            fit_rows.append(
                [kind, impl, f"{min(span):,} - {max(span):,}" if span else ""]
                + [fit[k] for k in ORACLES]
                + [fit["value_and_grad_user_cpu"], fit["gnvp_user_cpu"]]
            )
    return fits, fit_rows


def _plot(runs, args, path) -> None:
    plt = _shared.figure()
    fig, axes = plt.subplots(1, len(args.towers), figsize=(5.5 * len(args.towers), 4))
    axes = [axes] if len(args.towers) == 1 else list(axes)
    styles = {"value": "o", "value_and_grad": "s", "gnvp": "^"}
    colors = {"value": "C0", "value_and_grad": "C1", "gnvp": "C2"}
    labels = {"value": "value", "value_and_grad": "gradient", "gnvp": "GN product"}
    for ax, kind in zip(axes, args.towers, strict=True):
        rs = [r for r in runs if r["towers"] == kind]
        for impl, line in (("ours", "-"), ("naive", "--")):
            have = [r for r in rs if impl in r]
            for k in ORACLES:
                ax.plot(
                    [r["m_plus_n"] for r in have],
                    [r[impl][k] for r in have],
                    line,
                    marker=styles[k],
                    color=colors[k],
                    label=f"{impl}: {labels[k]}",
                )
        # Guides through our smallest gradient time: slope 1 over every size,
        # slope 2 over the naive ones.
        x0, t0 = rs[0]["m_plus_n"], rs[0]["ours"]["value_and_grad"]
        ends = {
            1: max(r["m_plus_n"] for r in rs),
            2: max((r["m_plus_n"] for r in rs if "naive" in r), default=x0),
        }
        for power, style in ((1, ":"), (2, "-.")):
            xs = [x0, ends[power]]
            ax.plot(
                xs,
                [t0 * (x / x0) ** power for x in xs],
                style,
                color="gray",
                lw=0.8,
                label=f"~ (m + n)^{power}",
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="m + n",
            ylabel="seconds (wall-clock)",
            title=f"{kind} towers, k = {args.k}",
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
