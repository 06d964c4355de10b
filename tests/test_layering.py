"""The one-way import rule of DESIGN.md, checked on the source tree.

``cli -> domain packages -> optim, nn -> linalg -> data, metrics -> _core``:
a package imports only itself and packages of lower layers, so a domain
package never imports another domain package, and nothing imports cli.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "embedopt"
LAYER = {
    "_core": 0,
    "data": 1,
    "metrics": 1,
    "linalg": 2,
    "optim": 3,
    "nn": 3,
    "completion": 4,
    "ordinal": 4,
    "quantization": 4,
    "sdp": 4,
    "similarity": 4,
    "cli": 5,
}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0] if len(rel) > 1 else "embedopt"


def _imported_packages(path: Path):
    """(line, package) of every embedopt package imported by the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    depth = len(path.relative_to(SRC).parts) - 1  # folders below embedopt/
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = (node.module or "").split(".")
            if node.level == depth + 1 and parts[0]:
                yield node.lineno, parts[0]  # from ..pkg import x
            elif node.level == depth + 1:
                for alias in node.names:  # from .. import pkg
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "embedopt" and len(parts) > 1:
                yield node.lineno, parts[1]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "embedopt" and len(parts) > 1:
                    yield node.lineno, parts[1]


MODULES = sorted(p for p in SRC.rglob("*.py") if _package(p) in LAYER)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_one_way(path):
    own = _package(path)
    for line, pkg in _imported_packages(path):
        if pkg == own or pkg not in LAYER:
            continue
        assert LAYER[pkg] < LAYER[own], (
            f"{path.relative_to(SRC)}:{line} imports embedopt.{pkg} "
            f"(layer {LAYER[pkg]}) from embedopt.{own} (layer {LAYER[own]})"
        )


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(LAYER), packages - set(LAYER)
