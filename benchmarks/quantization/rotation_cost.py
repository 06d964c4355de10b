"""Cost of one rotation update: Givens (GCD-R/G/S) vs SVD Procrustes vs Cayley.

For n in {64, 128, 256, 512, 1024}, on the CPU (and on CUDA when a device is
available), the median time of:

- the shared gradient ``G = X^T (X R - Y)`` of a batch (m = 1024 rows), reported
  separately because every method needs it;
- one GCD step split into its parts: directional derivatives
  ``A = G^T R - R^T G`` (O(n^3) matmul), pair selection (random O(n), greedy
  O(n^2 log n), steepest = exact max-weight matching by MILP), and applying
  n/2 disjoint rotations in O(n^2) (compared with multiplying by the dense
  rotation product, O(n^3));
- one OPQ step: SVD Procrustes of the n x n matrix ``X^T Y``;
- one Cayley step: forward ``R_0 (I - S)(I + S)^{-1}``, backward through the
  solve, update of S.

    python benchmarks/quantization/rotation_cost.py --quick
    python benchmarks/quantization/rotation_cost.py

Writes results/quant_rotation_cost[_quick].{json,md,png}.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _shared
import _shared


def _median_time(fn, repeats, sync):
    fn()  # warm-up
    sync()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _gcd_parts(R, G, repeats, steepest_max_n, sync) -> dict:
    """One GCD step in parts: derivatives, each pair selection, the rotations."""
    import torch

    from embedopt.linalg import apply_givens, givens_directional_derivatives
    from embedopt.optim import get_pair_selection

    n, dev = R.shape[0], R.device
    out = {}
    out["GCD: derivatives A"] = _median_time(
        lambda: givens_directional_derivatives(R, G), repeats, sync
    )
    A = givens_directional_derivatives(R, G)
    gen = torch.Generator().manual_seed(0)
    for name in ("random", "greedy", "steepest"):
        if name == "steepest" and n > steepest_max_n:
            out[f"GCD: select {name}"] = None
            continue
        rule = get_pair_selection(name)
        reps = repeats if name != "steepest" else max(1, repeats // 5)
        out[f"GCD: select {name}"] = _median_time(
            lambda rule=rule: rule(A, gen), reps, sync
        )
    i, j = get_pair_selection("random")(A, gen)
    theta = -1e-3 * A[i, j]
    Rc = R.clone()
    out["GCD: apply n/2 rotations (O(n^2))"] = _median_time(
        lambda: apply_givens(Rc, i, j, theta), repeats, sync
    )

    def dense_product():
        P = torch.eye(n, device=dev)
        c, s = torch.cos(theta), torch.sin(theta)
        P[i, i], P[j, j], P[i, j], P[j, i] = c, c, -s, s
        return R @ P

    out["dense rotation product (O(n^3), for reference)"] = _median_time(
        dense_product, repeats, sync
    )
    return out


def _baseline_parts(R, C, repeats, sync) -> dict:
    """One OPQ (SVD Procrustes) step and one Cayley step."""
    import torch

    from embedopt.linalg import cayley

    out = {"OPQ: SVD Procrustes": _median_time(lambda: _svd_step(C), repeats, sync)}
    w = torch.zeros(R.shape[0], R.shape[0], device=R.device, requires_grad=True)

    def cayley_step():
        S = torch.triu(w, 1)
        S = S - S.T
        f = -(R @ cayley(S) * C).sum()
        (gw,) = torch.autograd.grad(f, w)
        with torch.no_grad():
            w.sub_(1e-6 * gw)

    out["Cayley: forward + backward + update"] = _median_time(
        cayley_step, repeats, sync
    )
    return out


def bench(n, device, repeats, steepest_max_n, m=1024):
    """Median seconds of every part of one rotation update at dimension n."""
    import torch

    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(n)
    X = torch.randn(m, n, generator=g).to(dev)
    Y = torch.randn(m, n, generator=g).to(dev)
    R = torch.linalg.qr(torch.randn(n, n, generator=g))[0].to(dev)
    out = {}
    out["gradient (shared)"] = _median_time(lambda: X.T @ (X @ R - Y), repeats, sync)
    out.update(_gcd_parts(R, X.T @ (X @ R - Y), repeats, steepest_max_n, sync))
    out.update(_baseline_parts(R, X.T @ Y, repeats, sync))
    apply = out["GCD: apply n/2 rotations (O(n^2))"]
    for rule in ("random", "greedy", "steepest"):
        sel = out[f"GCD: select {rule}"]
        out[f"GCD-{rule[0].upper()} step total (excl. gradient)"] = (
            None if sel is None else out["GCD: derivatives A"] + sel + apply
        )
    return out


def _svd_step(C):
    # The Procrustes step of embedopt.linalg.procrustes once X^T Y is known
    # (that product is the shared gradient's cost).
    import torch

    U, _, Vh = torch.linalg.svd(C.double())
    return (U @ Vh).float()


def run(args) -> tuple[dict, tuple, int]:
    """Results per device and n, the n's and the repeats."""
    import torch

    ns = (64, 128, 256) if args.quick else (64, 128, 256, 512, 1024)
    repeats = args.repeats or (5 if args.quick else 11)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    results = {}
    for dev in devices:
        results[dev] = {}
        for n in ns:
            results[dev][n] = bench(n, dev, repeats, steepest_max_n=256)
            print(dev, n, {k: v for k, v in results[dev][n].items()}, flush=True)
    return results, ns, repeats


def _device_rows(res, ns) -> list[list]:
    """One device's rows: every operation, then the ratios to GCD-R / GCD-G."""
    keys = list(next(iter(res.values())).keys())
    rows = [
        [k] + ["-" if res[n][k] is None else f"{res[n][k]:.2e}" for n in ns]
        for k in keys
    ]
    # Ratios measured in the same run.
    for base in ("OPQ: SVD Procrustes", "Cayley: forward + backward + update"):
        for rule in ("R", "G"):
            key = f"GCD-{rule} step total (excl. gradient)"
            rows.append(
                [f"ratio {base.split(':')[0]} / GCD-{rule}"]
                + [f"{res[n][base] / res[n][key]:.1f}x" for n in ns]
            )
    return rows


def report(args, results, ns, repeats) -> str:
    """The Markdown report: one table per device."""
    md = [
        "# Cost of one rotation update (median seconds)\n\n",
        f"{args.threads} thread(s), median of {repeats} repeats (steepest: "
        f"{max(1, repeats // 5)}); batch m = 1024 for the shared gradient. "
        "GCD-S selection is an exact MILP on the CPU and is skipped above n = "
        "256 (8.5 s at n = 256 in the quick run).\n",
    ]
    for dev, res in results.items():
        md.append(f"\n## {dev}\n\n")
        header = ["operation"] + [f"n={n}" for n in ns]
        md.append(_shared.markdown_table(header, _device_rows(res, ns)) + "\n")
    return "".join(md)


def _plot(results, ns, path) -> None:
    plt = _shared.figure()

    fig, ax = plt.subplots(figsize=(7, 5))
    for k in (
        "gradient (shared)",
        "GCD-R step total (excl. gradient)",
        "GCD-G step total (excl. gradient)",
        "GCD-S step total (excl. gradient)",
        "OPQ: SVD Procrustes",
        "Cayley: forward + backward + update",
    ):
        xs = [n for n in ns if results["cpu"][n][k] is not None]
        ax.loglog(xs, [results["cpu"][n][k] for n in xs], "o-", label=k)
    ax.set_xlabel("n")
    ax.set_ylabel("seconds per update (CPU)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=None)
    args = p.parse_args(argv)
    _shared.limit_threads(args.threads, environ=True)
    results, ns, repeats = run(args)
    md = report(args, results, ns, repeats)
    tag = "quant_rotation_cost" + ("_quick" if args.quick else "")
    payload = dict(
        config=dict(ns=ns, repeats=repeats, threads=args.threads, quick=args.quick),
        versions=_shared.versions("faiss", "nanopq"),
        device=_shared.device_info(),
        results=results,
    )
    js, mdp = _shared.write_outputs(tag, payload, md)
    _plot(results, ns, _shared.RESULTS / f"{tag}.png")
    print(md)
    print(f"wrote {js}, {mdp}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
