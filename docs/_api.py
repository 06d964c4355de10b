"""Write the API reference pages from the packages' ``__all__``; read docstrings.

``docs/conf.py`` calls :func:`write_pages` before Sphinx reads the sources, so
the reference always lists every public name: one page per public package
(``docs/api/<package>.rst``, generated, not committed), its names grouped by
kind, each with its own autosummary page. ``tests/test_docs_site.py`` checks
that every public package and every name of its ``__all__`` is listed.
Plain Python (no Sphinx import), so the test runs without the docs extra.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import embedopt
from embedopt._core import BaseEstimator

#: The reference's packages in the order of its index: the method families
#: first, then the shared layers, then the command line.
PACKAGES = (
    "embedopt",
    "embedopt.completion",
    "embedopt.ordinal",
    "embedopt.sdp",
    "embedopt.quantization",
    "embedopt.similarity",
    "embedopt.data",
    "embedopt.metrics",
    "embedopt.optim",
    "embedopt.linalg",
    "embedopt.nn",
    "embedopt.cli",
)

#: The kinds a page groups its names by, in page order.
KINDS = (
    "Estimators",
    "Classes",
    "Functions",
    "Exceptions and warnings",
    "Registries and constants",
    "Modules",
)


def public_packages() -> list[str]:
    """``embedopt`` and its subpackages whose names do not start with ``_``."""
    found = ["embedopt"]
    for info in pkgutil.iter_modules(embedopt.__path__, "embedopt."):
        if info.ispkg and not info.name.rsplit(".", 1)[1].startswith("_"):
            found.append(info.name)
    return found


def kind_of(obj: object) -> str:
    """Which group of :data:`KINDS` a public object belongs to."""
    if inspect.ismodule(obj):
        return "Modules"
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "Exceptions and warnings"
        if issubclass(obj, BaseEstimator):
            return "Estimators"
        return "Classes"
    if callable(obj) and not hasattr(obj, "__args__"):  # not a type alias
        return "Functions"
    return "Registries and constants"


def grouped_names(package: str) -> dict[str, list[str]]:
    """The names of ``package.__all__`` by kind, each kind in ``__all__`` order."""
    module = importlib.import_module(package)
    groups: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for name in module.__all__:
        groups[kind_of(getattr(module, name))].append(name)
    return groups


def page(package: str) -> str:
    """The reStructuredText of one package's reference page."""
    title = f"``{package}``"
    lines = [
        f".. _api-{package}:",
        "",
        title,
        "=" * len(title),
        "",
        f".. automodule:: {package}",
        "   :no-members:",
        "",
        f".. currentmodule:: {package}",
        "",
    ]
    for kind, names in grouped_names(package).items():
        if not names:
            continue
        lines += [kind, "-" * len(kind), "", ".. autosummary::"]
        lines += ["   :toctree: generated/", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in names] + [""]
    return "\n".join(lines)


def write_pages(folder: Path) -> list[Path]:
    """Write ``<package>.rst`` for every package of :data:`PACKAGES` into ``folder``.

    A file whose text is unchanged is left alone, so Sphinx rebuilds nothing
    for it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for package in PACKAGES:
        path = folder / f"{package}.rst"
        text = page(package)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


#: Plain-text notation of the docstrings that reStructuredText would read as
#: markup: ``|Q|`` (a set's size) is a substitution reference there and
#: ``rank_`` (a fitted attribute) a hyperlink reference.
_SUBSTITUTION = re.compile(r"(?<![\w`|\\])\|(\w+)\|(?![\w`|])")
_REFERENCE = re.compile(r"(?<![\w`\\])([A-Za-z]\w*)_(?![\w`])")
#: Inline literals, roles and interpreted text (a literal may span lines).
_LITERAL = re.compile(r"(``.+?``|:\w+:`[^`]+`|`[^`]+`_?)", re.DOTALL)


def _is_literal(lines: list[str]) -> list[bool]:
    """Which lines are in a literal block (after ``::``) or a doctest block."""
    flags = []
    literal_indent = None  # inside a literal block: its introducing indent
    doctest = False  # inside a doctest block: from ">>>" to a blank line
    for line in lines:
        indent = len(line) - len(line.lstrip())
        doctest = bool(line.strip()) and (doctest or line.lstrip().startswith(">>>"))
        if literal_indent is not None and (not line.strip() or indent > literal_indent):
            flags.append(True)
            continue
        literal_indent = indent if line.rstrip().endswith("::") else None
        flags.append(doctest)
    return flags


def _escape_text(text: str) -> str:
    parts = _LITERAL.split(text)  # odd parts: literals and roles
    for j in range(0, len(parts), 2):
        parts[j] = _SUBSTITUTION.sub(r"\\|\1\\|", parts[j])
        parts[j] = _REFERENCE.sub(r"\1\\_", parts[j])
    return "".join(parts)


def escape_notation(lines: list[str]) -> list[str]:
    """Escape ``|Q|`` and ``rank_`` in docstring text so they read as written.

    Literal blocks (after a line ending ``::``), doctest blocks, inline
    literals and roles are left alone: there the text is already literal.
    """
    out: list[str] = []
    run: list[str] = []  # consecutive text lines, escaped together
    for line, literal in zip(lines, _is_literal(lines), strict=True):
        if not literal:
            run.append(line)
            continue
        if run:
            out += _escape_text("\n".join(run)).split("\n")
            run = []
        out.append(line)
    if run:
        out += _escape_text("\n".join(run)).split("\n")
    return out
