"""Every command fails like a tool: one ``embedopt: error: ...`` line, exit 2.

Bad option values, unknown ``--data`` names and unwritable outputs are refused
while parsing (argparse's SystemExit(2), before any data is read or model
fitted); problems found later (bad file content, errors the library raises on
purpose) make ``main`` return 2 with one line. ``--debug`` / ``EMBEDOPT_DEBUG``
show the traceback instead.
"""

import numpy as np
import pytest

from embedopt import DataValidationError
from embedopt.cli import main


def _one_error_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("embedopt: error: "), text
    assert "Traceback" not in text
    return lines[0]


def _refused_at_parse(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran: no header line, no table
    return _one_error_line(captured.err)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["complete", "--lam", "abc"], "argument --lam: expected a number, got 'abc'"),
        (["complete", "--lam", "0"], "expected a number > 0 or 'auto'"),
        (["complete", "--lam", "inf"], "expected a finite number"),
        (["complete", "--size", "0"], "argument --size: expected an integer >= 2"),
        (["complete", "--size", "-3"], "argument --size"),
        (["complete", "--size", "2.5"], "expected an integer, got '2.5'"),
        (["complete", "--rank", "0"], "argument --rank"),
        (["complete", "--max-iter", "0"], "argument --max-iter"),
        (["complete", "--tol", "-1e-3"], "argument --tol"),
        (["complete", "--seed", "-1"], "argument --seed"),
        (["complete", "--every", "-2"], "argument --every"),
        (["complete", "--device", "gpu"], "argument --device"),
        (["complete", "--solver", "nope"], "argument --solver: invalid choice"),
        (["ordinal", "--n-components", "0"], "argument --n-components"),
        (["ordinal", "--batch-size", "0"], "argument --batch-size"),
        (["ordinal", "--learning-rate", "0"], "expected a number > 0 or 'auto'"),
        (["ordinal", "--n-objects", "2"], "argument --n-objects"),
        (["ordinal", "--epsilon", "nan"], "argument --epsilon"),
        (["quantize", "-M", "0"], "argument -M/--subquantizers"),
        (["quantize", "-K", "0"], "argument -K/--centroids"),
        (["quantize", "--n", "1"], "argument --n"),
        (["quantize", "--methods", "opq,svd"], "unknown method(s) svd"),
        (["quantize", "--methods", ","], "unknown method(s) (none given)"),
        (["sdp", "--rank", "0"], "argument --rank"),
        (["sdp", "--lam", "nan"], "argument --lam"),
        (["sdp", "--n-pairs", "-5"], "argument --n-pairs"),
        (["similarity", "--n-components", "0"], "argument --n-components"),
        (["similarity", "--omega", "-1"], "argument --omega"),
        (["similarity", "--k", "0"], "argument --k"),
    ],
)
def test_bad_values_are_refused_while_parsing(capsys, argv, expected):
    line = _refused_at_parse(capsys, argv)
    assert expected in line
    assert f"see 'embedopt {argv[0]} --help'" in line


@pytest.mark.parametrize(
    ("argv", "builtin", "suggestion"),
    [
        (
            ["complete", "--data", "movielens100k"],
            "movielens-latest-small",
            "movielens-100k",
        ),
        (["ordinal", "--data", "eurodsit"], "music", "eurodist"),
        (["quantize", "--data", "glvoe"], "synthetic", "glove"),
    ],
)
def test_a_typo_in_data_is_not_read_as_a_file(capsys, argv, builtin, suggestion):
    line = _refused_at_parse(capsys, argv)
    assert "neither a built-in dataset nor an existing file" in line
    assert builtin in line and f"did you mean {suggestion!r}" in line


def test_data_and_data_dir_must_exist(capsys, tmp_path):
    line = _refused_at_parse(capsys, ["complete", "--data", str(tmp_path)])
    assert "is a folder" in line
    line = _refused_at_parse(capsys, ["sdp", "--data-dir", str(tmp_path / "nope")])
    assert "does not exist" in line


@pytest.mark.parametrize("option", ["--json", "--plot"])
@pytest.mark.parametrize(
    "command", ["complete", "ordinal", "quantize", "sdp", "similarity"]
)
def test_an_output_folder_that_does_not_exist_is_refused_before_the_fit(
    capsys, tmp_path, command, option
):
    target = tmp_path / "missing" / "out.png"
    line = _refused_at_parse(capsys, [command, option, str(target)])
    assert f"argument {option}" in line and "does not exist" in line


def test_outputs_that_cannot_be_written(capsys, tmp_path):
    line = _refused_at_parse(capsys, ["complete", "--json", str(tmp_path)])
    assert "is a folder" in line
    line = _refused_at_parse(capsys, ["ordinal", "--plot", str(tmp_path / "a.xyz")])
    assert "unknown image format .xyz" in line and ".png" in line


def _runtime_error(capsys, argv) -> str:
    assert main(argv) == 2
    return _one_error_line(capsys.readouterr().err)


def test_bad_csv_files_end_in_one_line(capsys, tmp_path):
    two = tmp_path / "two.csv"
    two.write_text("0,1\n1,2\n")
    line = _runtime_error(capsys, ["complete", "--data", str(two)])
    assert "2 column(s)" in line and "row,col,value" in line
    text = tmp_path / "text.csv"
    text.write_text("row,col,value\n0,1,x\n")
    assert "cannot read" in _runtime_error(capsys, ["complete", "--data", str(text)])
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing\n")
    assert "no data lines" in _runtime_error(capsys, ["ordinal", "--data", str(empty)])
    binary = tmp_path / "bin.csv"
    binary.write_bytes(bytes(range(256)))
    line = _runtime_error(capsys, ["ordinal", "--data", str(binary)])
    assert "bin.csv" in line


def test_library_errors_on_bad_data_end_in_one_line(capsys, tmp_path):
    # every triplet repeats an index: the library's DataValidationError
    csv = tmp_path / "t.csv"
    csv.write_text("0,0,1\n1,1,2\n2,2,0\n")
    line = _runtime_error(capsys, ["ordinal", "--data", str(csv)])
    assert "repeat an index" in line
    # an explicit M that does not divide the dimension: InvalidParameterError
    X = np.random.default_rng(0).standard_normal((60, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    argv = ["quantize", "--data", str(tmp_path / "x.npy"), "-M", "4", "-K", "4"]
    line = _runtime_error(capsys, [*argv, "--iters", "1"])
    assert "divides the dimension 6" in line


def test_a_file_that_is_not_npy(capsys, tmp_path):
    bad = tmp_path / "x.npy"
    bad.write_text("not numpy")
    line = _runtime_error(capsys, ["quantize", "--data", str(bad)])
    assert "is not a .npy file" in line
    np.save(bad, np.arange(5.0))
    line = _runtime_error(capsys, ["quantize", "--data", str(bad)])
    assert "expected a 2-D numeric array" in line


def test_cross_option_check(capsys):
    line = _runtime_error(capsys, ["complete", "--size", "3", "--rank", "5"])
    assert line == "embedopt: error: --rank 5 exceeds --size 3"


def _bad_csv(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("0,0,1\n1,1,2\n")
    return str(csv)


def test_debug_flag_and_variable_show_the_traceback(capsys, tmp_path, monkeypatch):
    csv = _bad_csv(tmp_path)
    for argv in (
        ["--debug", "ordinal", "--data", csv],
        ["ordinal", "--data", csv, "--debug"],
    ):
        with pytest.raises(DataValidationError):
            main(argv)
    monkeypatch.setenv("EMBEDOPT_DEBUG", "1")
    with pytest.raises(DataValidationError):
        main(["ordinal", "--data", csv])
    monkeypatch.setenv("EMBEDOPT_DEBUG", "0")
    assert main(["ordinal", "--data", csv]) == 2


def test_help_names_the_debug_switch_and_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["complete", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--debug" in text and "EMBEDOPT_DEBUG=1" in text
    assert (
        "--size M m for the synthetic problem (an m x m matrix) (default: 1000)" in text
    )
    assert "(default: ais_impute)" in text and "(default: auto)" in text
    with pytest.raises(SystemExit):
        main(["quantize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "K, centroids each (default: 64)" in text
    assert "(default: none,opq,gcd-g)" in text
    assert "(default: None)" not in text  # None defaults are explained in words
