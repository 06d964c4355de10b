"""What a command module gets from cli/_common.py and cli/_parser.py for free.

A stand-in command, written the way DEVELOPERS.md tells a new command to be
written, is plugged into the parser: its option values, outputs, errors,
warnings and closed pipes are handled without code of its own.
"""

import json
import subprocess
import sys
import types
import warnings

import pytest

from embedopt import NumericalInstabilityError
from embedopt.cli import _common, _parser, main


def _stand_in(behaviour):
    """A command module: add_arguments with the shared helpers, run(args)."""

    def add_arguments(p):
        _common.add_data_options(p, ("synthetic", "other"), "a CSV file")
        p.add_argument("--rank", type=_common.int_type(1), default=3, help="rank")
        _common.add_run_options(p, "iteration")

    def run(args):
        print("header line")
        behaviour(args)
        _common.save_plot(args.plot, lambda axes: axes[0].plot([0, 1], [2, 1]))
        _common.write_json(args.json, {"rank": args.rank})
        return 0

    return types.SimpleNamespace(
        COMMAND="standin",
        HELP="a stand-in",
        DESCRIPTION="A stand-in command.",
        add_arguments=add_arguments,
        run=run,
    )


@pytest.fixture
def plug(monkeypatch):
    def plug_in(behaviour=lambda args: None):
        monkeypatch.setattr(_parser, "COMMANDS", (_stand_in(behaviour),))

    return plug_in


def test_a_new_command_gets_checked_values_outputs_and_plots(plug, capsys, tmp_path):
    plug()
    png, out = tmp_path / "p.png", tmp_path / "r.json"
    assert main(["standin", "--plot", str(png), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"plot written to {png}" in text and f"results written to {out}" in text
    assert png.stat().st_size > 0 and json.loads(out.read_text()) == {"rank": 3}
    for argv in (
        ["standin", "--rank", "0"],
        ["standin", "--data", "othre"],
        ["standin", "--plot", str(tmp_path / "no" / "p.png")],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("embedopt: error: ")
    with pytest.raises(SystemExit):
        main(["standin", "--help"])
    assert "(default: 3)" in capsys.readouterr().out


def test_library_and_command_errors_are_one_line(plug, capsys):
    def fail(args):
        raise NumericalInstabilityError("the objective became nan;\n  lower the step")

    plug(fail)
    assert main(["standin"]) == 2
    err = capsys.readouterr().err
    assert err == "embedopt: error: the objective became nan; lower the step\n"

    def missing(args):
        open("/nonexistent-embedopt/file.csv")

    plug(missing)
    assert main(["standin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embedopt: error: No such file or directory: ")

    def command_error(args):
        raise _common.CommandError("--rank 9 exceeds --size 3")

    plug(command_error)
    assert main(["standin"]) == 2
    assert capsys.readouterr().err == "embedopt: error: --rank 9 exceeds --size 3\n"


def test_an_internal_error_is_one_line_with_status_1(plug, capsys):
    def bug(args):
        raise TypeError("unsupported operand")

    plug(bug)
    assert main(["standin"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: TypeError: unsupported" in err
    assert "--debug" in err
    with pytest.raises(TypeError):
        main(["standin", "--debug"])


def test_out_of_memory_is_one_line(plug, capsys):
    def oom(args):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: 8 TB")

    plug(oom)
    assert main(["standin"]) == 2
    assert capsys.readouterr().err.startswith("embedopt: error: out of memory: ")


def test_warnings_are_one_line_each(plug, capsys):
    def warn(args):
        warnings.warn("dropped 3\n comparisons", UserWarning, stacklevel=1)

    plug(warn)
    before = warnings.showwarning
    assert main(["standin"]) == 0
    assert capsys.readouterr().err == ("embedopt: warning: dropped 3 comparisons\n")
    assert warnings.showwarning is before  # the process's hook is given back


class _ClosedPipe:
    """stdout whose reader has gone (``| head``)."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly(plug, monkeypatch, capsys):
    plug()
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["standin"]) == _parser.EXIT_BROKEN_PIPE
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_piping_into_head_in_a_real_shell():
    # A subprocess pays torch's import (~3 s): slow. `head -n 0` closes the
    # pipe at once, long before the first line is printed (no race).
    cmd = (
        f"{sys.executable} -m embedopt ordinal --n-objects 20 --n-train 300 "
        "--n-test 100 --dims 2 --max-iter 3 | head -n 0"
    )
    r = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True
    )
    assert r.returncode == _parser.EXIT_BROKEN_PIPE
    assert r.stdout == ""
    assert "Error" not in r.stderr and "Traceback" not in r.stderr
