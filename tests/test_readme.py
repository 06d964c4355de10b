"""The README's tour must run as written (its ```python blocks, in order)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .conftest import requires_dataset

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks between ``heading`` and the next heading."""
    blocks, inside, current, code = [], False, None, False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            code = not code
            if code and line == "```python" and inside:
                current = []
            elif not code and current is not None:
                blocks.append("\n".join(current))
                current = None
        elif code:
            if current is not None:
                current.append(line)
        elif line.startswith("#"):  # a heading (comments only occur in code)
            inside = line == heading
    return blocks


def run_blocks(blocks: list[str]) -> dict:
    ns: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), ns)
    return ns


@requires_dataset("movielens-100k")
def test_completion_tour():
    blocks = python_blocks("### Matrix and tensor completion")
    assert len(blocks) == 2
    ns = run_blocks(blocks)
    assert ns["model"].rank_ >= 1 and ns["res"].n_iter >= 1


def test_ordinal_tour():
    (block,) = python_blocks("### Ordinal embedding")
    ns = run_blocks([block])
    assert ns["model"].score(ns["data"].test) > 0.85


def test_quantization_tour():
    (block,) = python_blocks("### Product quantization with learned rotations")
    if importlib.util.find_spec("faiss") is None:
        # the export line needs the optional faiss; the rest must still run
        block = "\n".join(x for x in block.splitlines() if "to_faiss(pq)" not in x)
    ns = run_blocks([block])
    assert ns["ids"].shape == (5, 10) and ns["codes"].shape == (10000, 4)


def test_sdp_tour():
    import itertools
    import warnings

    import numpy as np

    (block,) = python_blocks("### Kernel learning (low-rank SDP)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # e.g. a disconnected graph
        ns = run_blocks([block])
    labels, y = ns["labels"], ns["y"]
    pairs = itertools.combinations(range(len(y)), 2)
    rand = np.mean([(labels[i] == labels[j]) == (y[i] == y[j]) for i, j in pairs])
    assert rand > 0.9
