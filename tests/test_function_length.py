"""No function in ``src/`` or ``benchmarks/`` runs past about a screen.

Issue 21's habit: a function whose body (after its docstring) has more than
``MAX_LINES`` non-blank lines is split into named steps (an estimator's
``fit`` into resolve / build / solve / store; a benchmark's ``main`` into
configure / run / report).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    body = node.body
    first = body[0]
    is_doc = isinstance(first, ast.Expr) and isinstance(
        getattr(first, "value", None), ast.Constant
    )
    if is_doc and isinstance(first.value.value, str):
        if len(body) == 1:
            return 0
        first = body[1]
    return sum(1 for line in lines[first.lineno - 1 : node.end_lineno] if line.strip())


def _long_functions() -> list[str]:
    found = []
    for folder in ("src", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = path.read_text().splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = _body_lines(node, lines)
                    if n > MAX_LINES:
                        where = path.relative_to(ROOT)
                        found.append(f"{where}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_function_is_longer_than_a_screen():
    assert not _long_functions()


def test_the_measure_counts_the_body_after_the_docstring():
    source = 'def f():\n    """Doc.\n\n    More.\n    """\n    a = 1\n\n    return a\n'
    node = ast.parse(source).body[0]
    assert _body_lines(node, source.splitlines()) == 2
