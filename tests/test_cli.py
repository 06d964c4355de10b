import json
import subprocess
import sys

import numpy as np
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


@pytest.mark.smoke
def test_help_of_every_command(capsys):
    # One process for the `python -m embedopt` entry point (a subcommand's
    # help goes through the top-level parser too); the top level in-process.
    r = subprocess.run(
        [sys.executable, "-m", "embedopt", "complete", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--solver" in r.stdout
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "complete" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command", ["complete", "ordinal", "quantize", "sdp", "similarity"]
)
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
def test_complete_movielens_100k(capsys, tmp_path):
    # the default (MCP) and the nuclear norm, each reported with its own fit
    ranks = {}
    for reg in ("auto", "nuclear"):
        out = tmp_path / f"{reg}.json"
        argv = ["complete", "--data", "movielens-100k", "--regularizer", reg]
        assert main([*argv, "--json", str(out)]) == 0
        assert "test rmse" in capsys.readouterr().out
        ranks[reg] = json.loads(out.read_text())["rank"]
    assert ranks["auto"] < ranks["nuclear"]  # MCP selects a lower rank


@requires_dataset("signed-bitcoin-alpha")
def test_complete_bitcoin_alpha_logistic(capsys, tmp_path):
    out = tmp_path / "b.json"
    argv = ["complete", "--data", "bitcoin-alpha", "--loss", "logistic"]
    assert main([*argv, "--json", str(out)]) == 0
    assert "test accuracy" in capsys.readouterr().out
    assert json.loads(out.read_text())["test_accuracy"] > 0.93  # majority: 0.933


def test_complete_bitcoin_alpha_from_a_data_dir(capsys, tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "signed-bitcoin-alpha"
    folder.mkdir()
    lines = ["source,target,weight,timestamp"] + [
        f"{s},{t},{rng.choice([-2, 3])},{1000 + s}"
        for s in range(1, 13)
        for t in rng.choice(np.arange(20, 32), 5, replace=False)
    ]
    (folder / "soc-sign-bitcoinalpha.csv").write_text("\n".join(lines) + "\n")
    argv = ["complete", "--data", "bitcoin-alpha", "--data-dir", str(tmp_path)]
    assert main([*argv, "--loss", "squared_hinge", "--max-iter", "20"]) == 0
    assert "test accuracy" in capsys.readouterr().out


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


def test_sdp_help_lists_the_solvers(capsys):
    with pytest.raises(SystemExit):
        main(["sdp", "--help"])
    text = capsys.readouterr().out
    assert "bm_lbfgs" in text and "--plot" in text and "a1a" in text


def test_sdp_synthetic_npkl_and_plot(capsys, tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "p.png"
    argv = ["sdp", "--data", "synthetic", "--n", "80", "--rank", "4"]
    assert main([*argv, "--json", str(out), "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    # the default solver "auto" is BM-L-BFGS on the CPU
    assert "bm_lbfgs convergence" in text and "Rand index" in text
    res = json.loads(out.read_text())
    assert res["rand_index"] > 0.8 and res["problem"] == "npkl"
    assert res["solver"] == "bm_lbfgs"
    assert png.stat().st_size > 0


def test_sdp_solver_aagd_runs_the_papers_method(capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["sdp", "--data", "synthetic", "--n", "80", "--rank", "4"]
    assert main([*argv, "--solver", "aagd", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "aagd convergence" in text and "gamma" in text
    assert json.loads(out.read_text())["solver"] == "aagd"


def test_sdp_cmvu_with_a_baseline_solver(capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["sdp", "--data", "synthetic", "--n", "60", "--problem", "cmvu"]
    assert main([*argv, "--solver", "bm_lbfgs", "--json", str(out)]) == 0
    assert "1-NN accuracy" in capsys.readouterr().out
    assert json.loads(out.read_text())["loo_1nn_accuracy"] > 0.8


def test_sdp_a1a_falls_back_to_synthetic_without_data(capsys, tmp_path):
    assert main(["sdp", "--data-dir", str(tmp_path), "--n", "60", "--rank", "3"]) == 0
    captured = capsys.readouterr()
    assert "synthetic fallback" in captured.err
    assert "data: synthetic" in captured.out


@requires_dataset("libsvm-adult")
def test_sdp_a1a_subset(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["sdp", "--n", "300", "--n-pairs", "200", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["data"] == "a1a" and res["n"] == 300 and res["rand_index"] > 0.6


@requires_dataset("movielens-100k")
def test_similarity_embedding_towers_one_iteration(capsys, tmp_path):
    plot = tmp_path / "sim.png"
    argv = ["similarity", "--towers", "embedding", "--max-iter", "1", "--k", "5"]
    assert main([*argv, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "precision@5" in out and "ndcg@5" in out and plot.is_file()


def test_sdp_lam_auto_reports_the_chosen_lambda(capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["sdp", "--data", "synthetic", "--n", "80", "--rank", "4", "--lam", "auto"]
    assert main([*argv, "--json", str(out)]) == 0
    assert "chosen on held-out pairs" in capsys.readouterr().out
    assert json.loads(out.read_text())["lam"] in (1.0, 0.1, 0.01, 0.001)
