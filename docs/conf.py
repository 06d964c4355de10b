"""Sphinx configuration of the embedopt documentation site.

Build (from the repository root, with ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The API reference pages are written from the packages' ``__all__`` by
``docs/_api.py`` before Sphinx reads the sources; the gallery runs
``examples/*.py`` with sphinx-gallery and keeps their figures.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import matplotlib
from sphinx.pycode import ModuleAnalyzer

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import _api  # noqa: E402

import embedopt  # noqa: E402
from embedopt._core.registry import Registry  # noqa: E402

_api.write_pages(DOCS / "api")

project = "embedopt"
author = "embedopt developers"
copyright = "embedopt developers"
release = embedopt.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb"]
templates_path = ["_templates"]

# -- API reference ------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- Gallery ------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"\.py$",  # run every example, not only plot_*.py
    "download_all_examples": False,
    "remove_config_comments": True,
    "only_warn_on_example_error": False,
    "abort_on_example_error": True,
    "within_subsection_order": "FileNameSortKey",
    # "Examples using X" at the end of each API page (the minigallery of the
    # autosummary templates)
    "doc_module": ("embedopt",),
    "backreferences_dir": "api/backreferences",
}

# -- HTML ---------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"embedopt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
html_show_sourcelink = False


def _source_comment(name: str, obj: object) -> list[str]:
    """The ``#:`` comment of ``obj`` where it is defined, in a submodule of the
    package that re-exports it as ``name`` (autodoc reads only that package)."""
    package, attr = name.rsplit(".", 1)
    path = importlib.import_module(package).__path__
    for info in pkgutil.iter_modules(path, package + "."):
        if info.name.endswith("__main__"):  # importing it runs the command
            continue
        module = importlib.import_module(info.name)
        if getattr(module, attr, None) is not obj:
            continue
        comment = ModuleAnalyzer.for_module(info.name).find_attr_docs()
        if ("", attr) in comment:
            return [line for line in comment["", attr] if line.strip()]
    return []


def _describe_constant(app, what, name, obj, options, lines):
    """A registry or constant: say what it holds (its value is not shown).

    One without a ``#:`` comment of its own would otherwise show the
    docstring of its type (a registry the ``Registry`` class's documentation).
    """
    if what != "data":
        return
    if "\n".join(lines).strip() == (inspect.getdoc(type(obj)) or "").strip():
        lines[:] = _source_comment(name, obj)
    if lines:
        lines.append("")
    if isinstance(obj, Registry):
        names = ", ".join(f'``"{key}"``' for key in obj)
        lines.append(f"A registry of {obj.kind}s, by name: {names}.")
    elif isinstance(obj, dict):
        keys = ", ".join(f"``{key}``" for key in obj)
        lines.append(f"A dict with the keys {keys}.")
    else:
        lines.append(f"The value: ``{obj!r}``.")


def _escape_notation(app, what, name, obj, options, lines):
    """``|Q|`` and ``rank_`` in a docstring's text mean what ``help()`` shows."""
    lines[:] = _api.escape_notation(lines)


def setup(app):
    # before numpydoc (priority 500), which rewrites the lines
    app.connect("autodoc-process-docstring", _describe_constant, priority=400)
    app.connect("autodoc-process-docstring", _escape_notation)
