"""Importing embedopt changes no process-wide state (warning filters, seeds)."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "embedopt"
FORBIDDEN = {
    ("warnings", "filterwarnings"),
    ("warnings", "simplefilter"),
    ("warnings", "resetwarnings"),
    ("torch", "manual_seed"),
    ("random", "seed"),
}


def _module_level_calls(tree):
    """Calls executed at import: outside every function and class body."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _dotted(func) -> tuple:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return tuple(reversed(parts))


@pytest.mark.parametrize(
    "path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC))
)
def test_no_global_state_changed_at_import(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for call in _module_level_calls(tree):
        name = _dotted(call.func)
        assert name[-2:] not in FORBIDDEN, (
            f"{path.relative_to(SRC)}:{call.lineno} calls {'.'.join(name)} at "
            "import; scope it with warnings.catch_warnings() or a generator"
        )


def test_the_check_sees_a_module_level_filter():
    tree = ast.parse("import warnings\nwarnings.filterwarnings('ignore')\n")
    assert [_dotted(c.func) for c in _module_level_calls(tree)] == [
        ("warnings", "filterwarnings")
    ]
