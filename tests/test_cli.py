import json
import subprocess
import sys

import pytest

from embedopt.cli import main
from tests.conftest import requires_dataset


def test_complete_synthetic_smoke(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["complete", "--size", "120", "--seed", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "lambda path" in text and "test NMSE" in text and "objective" in text
    res = json.loads(out.read_text())
    assert res["test_nmse"] < 0.2 and res["rank"] >= 1


def test_complete_fixed_lambda_and_csv(capsys, tmp_path):
    csv = tmp_path / "d.csv"
    lines = ["row,col,value"] + [
        f"{i},{j},{(i % 3) * (j % 4) * 0.5}"
        for i in range(20)
        for j in range(15)
        if (i + j) % 3
    ]
    csv.write_text("\n".join(lines))
    assert main(["complete", "--data", str(csv), "--lam", "0.5"]) == 0
    assert "test rmse" in capsys.readouterr().out


def test_help_of_every_command():
    r = subprocess.run(
        [sys.executable, "-m", "embedopt", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "complete" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "embedopt", "complete", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--solver" in r.stdout


@pytest.mark.parametrize("command", ["complete", "ordinal", "quantize"])
def test_help_text_is_rendered(command, capsys):
    # argparse only %-formats help strings, not descriptions: a literal "%%"
    # in a description would be shown as is.
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: ") and "%%" not in text and "%(" not in text


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    with pytest.raises(SystemExit):
        main(["complete", "--solver", "nope"])


@requires_dataset("movielens-100k")
def test_complete_movielens_100k(capsys):
    assert main(["complete", "--data", "movielens-100k"]) == 0
    assert "test rmse" in capsys.readouterr().out


def test_ordinal_synthetic_smoke(capsys, tmp_path):
    out = tmp_path / "o.json"
    argv = ["ordinal", "--n-objects", "30", "--dims", "2", "--n-train", "1500"]
    argv += ["--n-test", "500", "--max-iter", "8", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "held-out triplet error" in text and "objective" in text
    res = json.loads(out.read_text())
    assert res["test_error"] < 0.15 and len(res["history"]["val_error"]) == 8


def test_ordinal_csv_and_help(capsys, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    P = rng.normal(size=(12, 2))
    T = rng.integers(0, 12, size=(600, 3))
    T = T[(T[:, 0] != T[:, 1]) & (T[:, 0] != T[:, 2]) & (T[:, 1] != T[:, 2])]
    d = lambda a, b: ((P[a] - P[b]) ** 2).sum(1)  # noqa: E731
    swap = d(T[:, 0], T[:, 1]) > d(T[:, 0], T[:, 2])
    T[swap] = T[swap][:, [0, 2, 1]]
    csv = tmp_path / "t.csv"
    csv.write_text("i,j,k\n" + "\n".join(",".join(map(str, t)) for t in T))
    argv = ["ordinal", "--data", str(csv), "--solver", "gd", "--max-iter", "5"]
    assert main(argv) == 0
    assert "held-out triplet error" in capsys.readouterr().out
    r = subprocess.run(
        [sys.executable, "-m", "embedopt", "ordinal", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--solver" in r.stdout and "SVRG-SBB" in r.stdout


@requires_dataset("music-aset400-triplets")
def test_ordinal_music(capsys):
    assert main(["ordinal", "--data", "music", "--max-iter", "3"]) == 0
    assert "held-out triplet error" in capsys.readouterr().out
