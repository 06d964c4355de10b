"""The top-level parser: one sub-command per domain module."""

from __future__ import annotations

import argparse

from . import completion, ordinal, quantization, sdp, similarity


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``embedopt`` command.

    Returns
    -------
    argparse.ArgumentParser
        The parser with one sub-command per domain.
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="embedopt",
        description="Fast, scalable optimization for embeddings and low-rank "
        "structure.",
    )
    parser.add_argument(
        "--version", action="version", version=f"embedopt {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (completion, ordinal, quantization, sdp, similarity):
        p = sub.add_parser(
            command.COMMAND, help=command.HELP, description=command.DESCRIPTION
        )
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``embedopt`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.func(args)
