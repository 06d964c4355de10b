"""Every benchmark script imports and parses ``--help`` (no benchmark is run).

One subprocess for all scripts: each runs as ``__main__`` with its own folder
first on ``sys.path`` (as ``python benchmarks/<domain>/<name>.py`` would), and
the domain helper ``_common`` is forgotten between folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
DOMAINS = ("completion", "ordinal", "quantization", "sdp", "similarity")

DRIVER = r"""
import contextlib, io, json, runpy, sys
out = {}
for path in sys.argv[1:]:
    folder = path.rsplit("/", 1)[0]
    sys.path.insert(0, folder)
    sys.modules.pop("_common", None)
    sys.argv = [path, "--help"]
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            runpy.run_path(path, run_name="__main__")
        code = "no exit"
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:
        code = repr(exc)
    sys.path.remove(folder)
    out[path] = [code, text.getvalue()]
print(json.dumps(out))
"""


def scripts() -> list[Path]:
    """Every benchmark script: one folder per domain, plus the cross-domain
    ``benchmarks/defaults.py``, ``persistence.py`` and ``recommend.py``."""
    per_domain = sorted(
        p
        for d in DOMAINS
        for p in (BENCHMARKS / d).glob("*.py")
        if not p.name.startswith("_")
    )
    return [
        *per_domain,
        BENCHMARKS / "defaults.py",
        BENCHMARKS / "persistence.py",
        BENCHMARKS / "recommend.py",
    ]


def environment() -> dict:
    """This process's environment with this checkout's ``src`` first on the path."""
    env = dict(os.environ)
    src = str(BENCHMARKS.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def test_layout_one_folder_per_domain():
    assert (BENCHMARKS / "_shared.py").is_file()
    assert not list(BENCHMARKS.glob("*_common.py"))
    for d in DOMAINS:
        assert (BENCHMARKS / d / "README.md").is_file()
    assert len(scripts()) == 42
    # Every domain with a defaults comparison is run by benchmarks/defaults.py.
    import ast

    tree = ast.parse((BENCHMARKS / "defaults.py").read_text())
    listed = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DOMAINS"
    )
    assert {p.parent.name for p in scripts() if p.name == "defaults.py"} - {
        "benchmarks"
    } <= set(listed)


def test_every_benchmark_parses_help():
    r = subprocess.run(
        [sys.executable, "-c", DRIVER, *map(str, scripts())],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    results = json.loads(r.stdout.splitlines()[-1])
    for path, (code, text) in results.items():
        assert code == 0, f"{path}: {code}"
        assert text.startswith("usage: ") and "--quick" in text, path


@pytest.mark.slow
def test_quick_run_of_the_fastest_benchmark():
    # ~20 s on a loaded 2-core CPU; writes benchmarks/results/ (not tracked).
    script = BENCHMARKS / "quantization" / "rotation_cost.py"
    r = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert (BENCHMARKS / "results" / "quant_rotation_cost_quick.json").is_file()
