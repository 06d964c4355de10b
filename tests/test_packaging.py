"""Install lines and extras tell the truth: every extra a document or an error
message names exists in pyproject.toml, and every extra is there for a reason."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


def _extras() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["optional-dependencies"]


def _named_extras(text: str) -> set[str]:
    """Extras in install commands: ``pip install -e ".[a,b]"``, ``embedopt[a]``."""
    found = set()
    for group in re.findall(r"(?:\.|embedopt)\[([a-z0-9_,\- ]+)\]", text):
        found |= {name.strip() for name in group.split(",")}
    return found


def test_extras_named_in_the_documents_exist():
    docs = [
        ROOT / "README.md",
        ROOT / "DEVELOPERS.md",
        *ROOT.glob("benchmarks/**/*.md"),
    ]
    extras = _extras()
    for doc in docs:
        missing = _named_extras(doc.read_text()) - set(extras)
        assert not missing, f"{doc.relative_to(ROOT)} names unknown extras {missing}"


def test_every_extra_is_used():
    # test: the README's test command; faiss: quantization.to_faiss;
    # exact: sdp.solve_exact (CVXPY); docs: the README's documentation
    # command, which .ci/run runs
    assert set(_extras()) == {"test", "faiss", "exact", "docs"}
    assert any(req.startswith("cvxpy") for req in _extras()["exact"])
    assert any(req.startswith("faiss-cpu") for req in _extras()["faiss"])
    assert any(req.startswith("sphinx>") for req in _extras()["docs"])
    assert '".[docs]"' in (ROOT / ".ci" / "run").read_text()


def test_to_faiss_without_faiss_names_the_extra(monkeypatch):
    from embedopt.quantization import ProductQuantizer, to_faiss
    from embedopt.quantization.faiss_io import FAISS_INSTALL

    assert _named_extras(FAISS_INSTALL) == {"faiss"}
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss -> ImportError
    with pytest.raises(ImportError, match=re.escape(FAISS_INSTALL)):
        to_faiss(ProductQuantizer(2, 4))


def test_the_package_ships_its_annotations():
    # PEP 561: type checkers read embedopt's annotations only with py.typed
    # in the installed package
    with open(ROOT / "pyproject.toml", "rb") as fh:
        package_data = tomllib.load(fh)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["embedopt"]
    assert (ROOT / "src" / "embedopt" / "py.typed").is_file()


def test_the_claimed_pythons_are_the_tested_ones():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    claimed = sorted(
        (int(v.split(".")[1]), v)
        for c in project["classifiers"]
        if (v := c.removeprefix("Programming Language :: Python :: ")).count(".")
    )
    oldest, newest = claimed[0][1], claimed[-1][1]
    assert project["requires-python"] == f">={oldest}"
    # the ends of the range run the smoke tests in CI, the README says so
    script = (ROOT / ".ci" / "other_pythons").read_text()
    assert f'versions=("${{@:-{oldest} {newest}}}")' in script
    assert f"Python {oldest} to {newest}" in (ROOT / "README.md").read_text()
    no_gaps = [f"3.{m}" for m in range(claimed[0][0], claimed[-1][0] + 1)]
    assert [v for _, v in claimed] == no_gaps
