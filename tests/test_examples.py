"""Every script in examples/ runs as written and prints its key result."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # no window: plt.show() in the examples returns at once
import matplotlib.pyplot as plt

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, capsys) -> str:
    # In-process (runpy) rather than a subprocess, which would import torch again.
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    plt.close("all")  # each example draws one figure (the docs gallery shows it)
    return capsys.readouterr().out


def number_after(label: str, text: str) -> float:
    match = re.search(re.escape(label) + r"\s*=\s*([0-9.]+)", text)
    assert match, f"{label!r} not in the output:\n{text}"
    return float(match.group(1))


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == [
        "kernel_learning.py",
        "matrix_completion.py",
        "ordinal_embedding.py",
        "product_quantization.py",
        "serving.py",
        "similarity_learning.py",
    ]


def test_matrix_completion(capsys):
    out = run_example("matrix_completion.py", capsys)
    assert number_after("recovered rank", out) == 5
    assert number_after("NMSE of the completed matrix", out) < 0.05


def test_ordinal_embedding(capsys):
    out = run_example("ordinal_embedding.py", capsys)
    assert number_after("held-out triplet accuracy", out) > 0.9


def test_kernel_learning(capsys):
    out = run_example("kernel_learning.py", capsys)
    assert number_after("Rand index of kernel k-means", out) > 0.9


def test_product_quantization(capsys):
    out = run_example("product_quantization.py", capsys)
    lines = dict(line.split(maxsplit=1) for line in out.splitlines())
    recall = {k: number_after("recall@10", v) for k, v in lines.items()}
    # The learned rotation finds more true neighbours than no rotation.
    assert recall["rotation=gcd-g"] > recall["rotation=none"] > 0.3


def test_similarity_learning(capsys):
    out = run_example("similarity_learning.py", capsys)
    ours = number_after("held-out precision@10", out)
    # Far above recommending the most popular items, which ignores taste.
    assert ours > 3 * number_after("most popular items precision@10", out)
    assert ours > 0.12


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_serving(capsys):
    out = run_example("serving.py", capsys)
    # a fresh process loads the file and answers as the fitted model does
    assert number_after("same recommendations after load", out) == 1
    # the folded-in user gets items of their own taste group
    assert number_after("new user's top-10 in their taste group", out) >= 0.8


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_examples_use_public_names_only(path):
    assert not re.search(r"(from|import) embedopt\S*\._", path.read_text())
