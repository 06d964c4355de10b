"""Built-in defaults that work, and the picture every command draws."""

import json

import numpy as np
import pytest

from embedopt.cli import main
from embedopt.cli.ordinal import principal_plane
from embedopt.cli.quantization import default_subquantizers
from tests.conftest import requires_dataset

_TINY = {
    "complete": ["--size", "40", "--rank", "2", "--lam", "1", "--max-iter", "20"],
    "ordinal": [
        *("--n-objects", "15", "--n-train", "300", "--n-test", "100"),
        *("--dims", "2", "--max-iter", "3"),
    ],
    "quantize": [
        *("--n", "120", "--dim", "4", "-K", "4", "--iters", "2"),
        *("--methods", "none,gcd-g"),
    ],
    "sdp": ["--data", "synthetic", "--n", "40", "--rank", "2", "--max-iter", "30"],
}


@pytest.mark.parametrize("command", sorted(_TINY))
def test_every_command_draws_its_plot_and_says_where(command, capsys, tmp_path):
    png = tmp_path / f"{command}.png"
    assert main([command, *_TINY[command], "--plot", str(png)]) == 0
    assert f"plot written to {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ordinal_plot_has_the_embedding_panel(tmp_path, capsys):
    import matplotlib.image

    png = tmp_path / "o.png"
    assert main(["ordinal", *_TINY["ordinal"], "--plot", str(png)]) == 0
    height, width = matplotlib.image.imread(png).shape[:2]
    assert width >= 1.8 * height  # two panels side by side


def test_principal_plane():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((30, 2)) @ np.diag([5.0, 1.0]) @ rng.standard_normal((2, 6))
    xy = principal_plane(E)
    centered = E - E.mean(0)
    # the plane keeps the distances of a rank-2 embedding
    d = lambda A: ((A[:, None] - A[None]) ** 2).sum(-1)  # noqa: E731
    np.testing.assert_allclose(d(xy), d(centered), atol=1e-9)
    assert principal_plane(np.arange(4.0)[:, None]).tolist() == [
        [-1.5, 0.0],
        [-0.5, 0.0],
        [0.5, 0.0],
        [1.5, 0.0],
    ]


def test_ordinal_n_components_is_used_as_given(capsys, tmp_path):
    out = tmp_path / "o.json"
    assert (
        main(["ordinal", *_TINY["ordinal"], "--n-components", "1", "--json", str(out)])
        == 0
    )
    assert "p=1" in capsys.readouterr().out
    assert json.loads(out.read_text())["n_components"] == 1


@pytest.mark.parametrize(
    ("dim", "m"), [(32, 4), (50, 5), (6, 3), (10, 5), (7, 1), (3, 3), (1, 1)]
)
def test_default_m_divides_the_dimension(dim, m):
    assert default_subquantizers(dim) == m
    assert dim % m == 0


def test_quantize_picks_a_valid_m_for_a_50_d_file(capsys, tmp_path):
    X = np.random.default_rng(0).standard_normal((100, 50)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    argv = ["quantize", "--data", str(tmp_path / "x.npy"), "-K", "4", "--iters", "1"]
    assert main([*argv, "--methods", "none"]) == 0
    assert "M=5" in capsys.readouterr().out


@requires_dataset("glove-6b-50d")
def test_quantize_glove_runs_with_the_defaults(capsys):
    argv = ["quantize", "--data", "glove", "--n", "300", "-K", "8", "--iters", "1"]
    assert main([*argv, "--methods", "none"]) == 0
    assert "M=5" in capsys.readouterr().out


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_complete_with_a_binary_loss_has_built_in_data(loss, capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["complete", "--loss", loss, "--size", "60", "--rank", "2", "--lam", "2"]
    assert main([*argv, "--max-iter", "30", "--json", str(out)]) == 0
    assert "test accuracy" in capsys.readouterr().out
    res = json.loads(out.read_text())
    assert res["loss"] == loss and res["test_accuracy"] > 0.7  # chance is 0.5


def test_complete_small_sizes_keep_unobserved_entries_for_the_test(capsys, tmp_path):
    # 30 m log m entries cover the whole 150 x 150 matrix: NMSE had no entries
    out = tmp_path / "r.json"
    argv = ["complete", "--size", "150", "--rank", "2", "--lam", "3"]
    assert main([*argv, "--max-iter", "20", "--json", str(out)]) == 0
    assert "train=7500" in capsys.readouterr().out
    assert np.isfinite(json.loads(out.read_text())["test_nmse"])
