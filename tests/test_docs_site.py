"""The documentation site covers every public name and can render every example.

The API reference pages are written by ``docs/_api.py`` (plain Python, no
Sphinx needed here); the build itself (``python -m sphinx -W --keep-going -b
html docs docs/_build/html``) runs in ``.ci/run`` with the ``docs`` extra.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load_api():
    spec = importlib.util.spec_from_file_location("_docs_api", DOCS / "_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


API = _load_api()


def test_every_public_package_has_a_reference_page():
    assert set(API.PACKAGES) == set(API.public_packages()), (
        "add the package to PACKAGES in docs/_api.py (or drop a removed one)"
    )


@pytest.mark.parametrize("package", API.PACKAGES)
def test_the_reference_lists_every_name_of_all(package):
    listed = re.findall(r"^   ([^:\s]\S*)$", API.page(package), flags=re.MULTILINE)
    module = importlib.import_module(package)
    assert sorted(listed) == sorted(module.__all__)


def test_the_pages_are_written_once(tmp_path):
    paths = API.write_pages(tmp_path)
    assert [p.name for p in paths] == [f"{p}.rst" for p in API.PACKAGES]
    mtimes = [p.stat().st_mtime_ns for p in paths]
    API.write_pages(tmp_path)  # unchanged text: Sphinx must not re-read them
    assert [p.stat().st_mtime_ns for p in paths] == mtimes


@pytest.mark.parametrize(
    "path", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name
)
def test_every_example_has_a_gallery_title(path):
    # sphinx-gallery takes the title from an underlined first line of the
    # module docstring, and the figures from plt.show()
    doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    title, underline = doc.splitlines()[:2]
    assert title and underline == "=" * len(title)
    assert "plt.show()" in path.read_text()


def test_one_guide_page_per_domain():
    index = (DOCS / "guide" / "index.rst").read_text()
    for domain in ("completion", "ordinal", "sdp", "quantization", "similarity"):
        assert (DOCS / "guide" / f"{domain}.rst").exists()
        assert f"\n   {domain}\n" in index


def test_plain_text_notation_is_escaped_outside_literals():
    lines = [
        "Costs O(|Q| p) for the |Omega| entries; see rank_ and ``rank_``.",
        "A :func:`f_` role, a `link <https://x.org>`_ and ||x||^2 stay.",
        "",
        "Example::",
        "",
        "    model.rank_, |Q|",
        "Back to text: U_.",
        ">>> model.rank_",
        "5",
        "",
        "After the doctest: s_.",
    ]
    assert API.escape_notation(lines) == [
        r"Costs O(\|Q\| p) for the \|Omega\| entries; see rank\_ and ``rank_``.",
        "A :func:`f_` role, a `link <https://x.org>`_ and ||x||^2 stay.",
        "",
        "Example::",
        "",
        "    model.rank_, |Q|",
        r"Back to text: U\_.",
        ">>> model.rank_",
        "5",
        "",
        r"After the doctest: s\_.",
    ]


def test_an_inline_literal_over_two_lines_is_left_alone():
    lines = ["with ``A_i = sum_{e in row i} c_e +", "    g_i G`` and rank_."]
    assert API.escape_notation(lines) == [lines[0], r"    g_i G`` and rank\_."]
