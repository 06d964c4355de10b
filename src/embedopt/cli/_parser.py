"""The top-level parser, one sub-command per module, and the error handling
every command shares (one ``embedopt: error: ...`` line, exit status 2)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from . import completion, ordinal, quantization, sdp, similarity
from ._common import CommandError, warning_line

#: The command modules, in the order ``embedopt --help`` lists them. A new
#: command is a module with COMMAND, HELP, DESCRIPTION, add_arguments(parser)
#: and run(args), added here.
COMMANDS = (completion, ordinal, quantization, sdp, similarity)

#: Environment variable that, when set to a non-empty value other than 0,
#: lets errors end with their traceback (as ``--debug`` does).
DEBUG_ENV = "EMBEDOPT_DEBUG"

#: Exit status of a command whose output pipe was closed (``| head``): what
#: the shell reports for a process ended by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141

_EPILOG = (
    f"Errors print one line and exit with status 2; add --debug (or set "
    f"{DEBUG_ENV}=1) to see the traceback."
)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless it is None/False or the help
    already explains it."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr."""

    def error(self, message):
        """Print ``embedopt: error: ...`` with a pointer to ``--help``; exit 2."""
        message = " ".join(message.split())
        self.exit(
            2,
            f"embedopt: error: {message} (see '{self.prog} --help')\n",
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``embedopt`` command.

    Returns
    -------
    argparse.ArgumentParser
        The parser with one sub-command per domain.
    """
    from .. import __version__

    parser = _Parser(
        prog="embedopt",
        description="Fast, scalable optimization for embeddings and low-rank "
        "structure.",
        epilog=_EPILOG,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"embedopt {__version__}"
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"show the traceback of an error (also: {DEBUG_ENV}=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(
            command.COMMAND,
            help=command.HELP,
            description=command.DESCRIPTION,
            epilog=_EPILOG,
            formatter_class=_HelpFormatter,
        )
        command.add_arguments(p)
        # SUPPRESS: an absent --debug after the command keeps the top-level value
        p.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help=f"show the traceback of an error (also: {DEBUG_ENV}=1)",
        )
        p.set_defaults(func=command.run)
    return parser


def _check_single_values(parser, args) -> None:
    """Refuse an option given ``--`` as its value (``--data=--``): argparse
    drops the ``--`` and stores an empty list where one value belongs."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices[args.command]
    for action in command._actions:
        if action.option_strings and action.nargs is None:
            if getattr(args, action.dest, None) == []:  # never a parsed value
                name = "/".join(action.option_strings)
                command.error(f"argument {name}: expected one argument")


def _debugging(args) -> bool:
    return bool(getattr(args, "debug", False)) or os.environ.get(DEBUG_ENV, "") not in (
        "",
        "0",
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}"
    return text or type(exc).__name__


def _out_of_memory(exc: BaseException) -> bool:
    """torch reports a failed allocation as a RuntimeError (a subclass of it)."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text or "can't allocate memory" in text
    )


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Warnings of a command as one ``embedopt: warning: ...`` line each."""
    print(warning_line(message), file=sys.stderr)


def _line_buffered(stream) -> None:
    """Print each table row as it comes (also into a pipe), so that
    ``embedopt ... | head`` stops the command at the first line not read."""
    try:
        stream.reconfigure(line_buffering=True)
    except (AttributeError, ValueError, OSError):
        pass  # not a text stream that can be reconfigured: keep it as it is


def _silence_stdout() -> None:
    """After a broken pipe, send what is left of stdout nowhere, so that the
    interpreter's final flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (captured in tests): nothing to flush


def main(argv=None) -> int:
    """Entry point of the ``embedopt`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success; 2 for a usage error, bad data or an error
        the library raised on purpose (one ``embedopt: error: ...`` line on
        stderr); 1 for an unexpected internal error (one line as well); 141
        when the output pipe was closed (``embedopt ... | head``); 130 on
        Ctrl-C. With ``--debug`` or ``EMBEDOPT_DEBUG=1`` errors end with their
        traceback instead.
    """
    from .._core import EmbedoptError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    _check_single_values(parser, args)
    debug = _debugging(args)
    _line_buffered(sys.stdout)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if debug:
            raise
        print("embedopt: interrupted", file=sys.stderr)
        return 130
    except (CommandError, EmbedoptError, OSError, MemoryError) as exc:
        if debug:
            raise
        if isinstance(exc, MemoryError):
            print(f"embedopt: error: out of memory: {_one_line(exc)}", file=sys.stderr)
        else:
            print(f"embedopt: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        if _out_of_memory(exc):
            print(f"embedopt: error: out of memory: {_one_line(exc)}", file=sys.stderr)
            return 2
        print(
            f"embedopt: internal error: {type(exc).__name__}: {_one_line(exc)} "
            f"(please report it; rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1
