import json

import numpy as np
import pytest

from embedopt.cli import main


def test_quantize_default_prints_a_distortion_table(capsys, tmp_path):
    out = tmp_path / "q.json"
    argv = ["quantize", "--n", "400", "--dim", "8", "-K", "16", "--iters", "4"]
    assert main([*argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "training distortion per outer iteration" in text
    assert "opq" in text and "gcd-g" in text
    res = json.loads(out.read_text())["methods"]
    assert res["opq"]["train_distortion"] < res["none"]["train_distortion"]
    assert res["gcd-g"]["train_distortion"] < res["none"]["train_distortion"]


def test_quantize_reads_npy_and_rejects_unknown_methods(capsys, tmp_path):
    X = np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    argv = ["quantize", "--data", str(tmp_path / "x.npy"), "-K", "8", "--iters", "2"]
    assert main([*argv, "--methods", "gcd-s,cayley"]) == 0
    assert "gcd-s" in capsys.readouterr().out
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:  # refused while parsing, before any fit
        main([*argv, "--methods", "svd"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown method(s) svd" in err


def test_quantize_help(capsys):
    # In-process (a subprocess would pay torch's import again).
    with pytest.raises(SystemExit) as exc:
        main(["quantize", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "--methods" in text and "Givens" in text
