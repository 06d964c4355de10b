"""Every estimator with its defaults against the peers' defaults, in one run.

Issue 13: users call ``Estimator().fit(data)``. Each domain's
``<domain>/defaults.py`` runs its estimators with no option set next to the
peer called with its own defaults (fancyimpute / Surprise, cblearn, faiss), on
the papers' data and on data the defaults were not tuned on; this script runs
them one after the other (each in its own process, as
``python benchmarks/<domain>/defaults.py``) and gathers their rows in one
table with quality and time ratios (ours / peer: below 1 is better for both
when lower is better).

    python benchmarks/defaults.py --quick          # CI-sized, about a minute
    python benchmarks/defaults.py --threads 1      # the full comparison
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _shared

import _shared

HERE = Path(__file__).resolve().parent

#: Domains with a ``defaults.py``, in the order of the mission.
DOMAINS = ("completion", "ordinal", "quantization")


def run_domain(domain: str, args, out: Path) -> list[dict]:
    """Run ``<domain>/defaults.py`` into ``out``; its rows (empty on failure)."""
    script = HERE / domain / "defaults.py"
    if not script.exists():
        return []
    cmd = [sys.executable, str(script), "--out", str(out)]
    if args.quick:
        cmd.append("--quick")
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.seeds:
        cmd += ["--seeds", str(args.seeds)]
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if proc.returncode != 0:
        print(f"{domain} failed:\n{proc.stderr[-2000:]}", flush=True)
        return []
    rows = []
    for path in sorted(out.glob("*.json")):
        data = json.loads(path.read_text())
        rows += data.get("results", {}).get("rows", data.get("rows", []))
    return rows


def main():
    p = _shared.parser(__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=None, help="seeds per problem")
    p.add_argument("--domains", nargs="*", default=list(DOMAINS), choices=DOMAINS)
    args = p.parse_args()
    rows = []
    for domain in args.domains:
        with tempfile.TemporaryDirectory() as tmp:
            got = run_domain(domain, args, Path(tmp))
        for r in got:
            r.pop("runs", None)
            r["domain"] = domain
        rows += got
    _shared.report_defaults("defaults", args, rows)


if __name__ == "__main__":
    main()
