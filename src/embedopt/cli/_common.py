"""Pieces every ``embedopt`` command shares: checked option types, the data,
run and output options, CSV reading, fit timing, row selection of the printed
tables, warnings, plots and the JSON report.

A command module builds its options from these helpers and gets, without
code of its own: values checked at parse time (a one-line error naming the
option), ``--data`` names checked against the built-in datasets and existing
files, and output files (``--json``, ``--plot``) whose folder is checked
before any work. Errors found later are raised as :class:`CommandError` (or
the library's own exceptions); :func:`embedopt.cli.main` turns them into one
``embedopt: error: ...`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np


class CommandError(Exception):
    """A problem with what the user asked for, found after parsing.

    :func:`embedopt.cli.main` prints its message as one
    ``embedopt: error: ...`` line and exits with status 2.
    """


# -- option types: checked at parse time ------------------------------------------
def _number(kind, text: str):
    try:
        value = kind(text)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def int_type(minimum: int = 1, maximum: int | None = None):
    """An argparse ``type`` for an int in ``[minimum, maximum]``.

    Parameters
    ----------
    minimum : int
    maximum : int, optional

    Returns
    -------
    callable
        ``str -> int``; raises ``argparse.ArgumentTypeError`` naming the
        admissible range.
    """

    def parse(text: str) -> int:
        value = _number(int, text)
        if value < minimum or (maximum is not None and value > maximum):
            upper = "" if maximum is None else f" and <= {maximum}"
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}{upper}, got {text!r}"
            )
        return value

    parse.__name__ = "int"  # argparse names the type in some messages
    return parse


def float_type(minimum: float = 0.0, *, strict: bool = False, auto: bool = False):
    """An argparse ``type`` for a finite float ``>= minimum`` (``>`` if strict).

    Parameters
    ----------
    minimum : float
    strict : bool
        Exclude ``minimum`` itself.
    auto : bool
        Also accept the word ``auto`` (returned as the string ``"auto"``).

    Returns
    -------
    callable
        ``str -> float | "auto"``.
    """

    def parse(text: str):
        if auto and text.strip().lower() == "auto":
            return "auto"
        value = _number(float, text)
        if value < minimum or (strict and value == minimum):
            sign = ">" if strict else ">="
            alt = " or 'auto'" if auto else ""
            raise argparse.ArgumentTypeError(
                f"expected a number {sign} {minimum:g}{alt}, got {text!r}"
            )
        return value

    parse.__name__ = "float"
    return parse


def _kind(text: str) -> tuple[Path, str]:
    """The path of an option value and what is there: "file", "dir" or "".

    The operating system's refusals (a name too long for the file system, a
    folder that cannot be searched) become the option's own one-line error.
    """
    path = Path(text).expanduser()
    try:
        kind = "file" if path.is_file() else "dir" if path.is_dir() else ""
        folder_ok = path.parent.is_dir()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise argparse.ArgumentTypeError(f"cannot use {text!r}: {reason}") from None
    return path, kind if kind or folder_ok else "no folder"


def existing_dir(text: str) -> str:
    """An argparse ``type`` for a folder that must exist (``--data-dir``)."""
    path, kind = _kind(text)
    if kind != "dir":
        raise argparse.ArgumentTypeError(f"folder {text!r} does not exist")
    return str(path)


def device_type(text: str) -> str:
    """An argparse ``type`` for ``--device``: a valid and available device.

    Asking for CUDA where there is none fails here, before any data is read.
    """
    from .._core import EmbedoptError, resolve_device

    try:
        resolve_device(text)
    except EmbedoptError as exc:
        raise argparse.ArgumentTypeError(" ".join(str(exc).split())) from None
    return text


def output_file(kind: str = "file"):
    """An argparse ``type`` for a file the command will write.

    The folder must exist and be writable and the path must not be a folder,
    so a typo is reported before the fit rather than after it. ``kind="plot"``
    also checks that matplotlib can write the file's format.

    Parameters
    ----------
    kind : {"file", "plot"}

    Returns
    -------
    callable
        ``str -> str`` (the path as given).
    """

    def parse(text: str) -> str:
        path, what = _kind(text)
        folder = path.parent
        if what == "dir":
            raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file name")
        if what == "no folder":
            raise argparse.ArgumentTypeError(
                f"cannot write {text!r}: folder '{folder}' does not exist"
            )
        if not os.access(folder, os.W_OK):
            raise argparse.ArgumentTypeError(
                f"cannot write {text!r}: folder '{folder}' is not writable"
            )
        if kind == "plot":
            formats = plot_formats()
            suffix = path.suffix.lower().lstrip(".")
            if suffix not in formats:
                raise argparse.ArgumentTypeError(
                    f"cannot draw {text!r}: unknown image format "
                    f"{path.suffix or '(no extension)'}; use one of "
                    f"{', '.join('.' + f for f in sorted(formats))}"
                )
        return str(path)

    parse.__name__ = "path"
    return parse


def plot_formats() -> set[str]:
    """File extensions matplotlib can write (png, pdf, svg...)."""
    from matplotlib.figure import Figure

    return set(Figure().canvas.get_supported_filetypes())


def data_source(datasets, files: str):
    """An argparse ``type`` for ``--data``: a built-in dataset name or a file.

    A value that is neither a built-in name nor an existing file is an error
    that lists the built-in names (and the closest one, for a typo), instead
    of being read as a missing file after the imports.

    Parameters
    ----------
    datasets : sequence of str
        Built-in names.
    files : str
        What a file may be, for the message (e.g. ``"a CSV file"``).

    Returns
    -------
    callable
        ``str -> str``.
    """

    def parse(text: str) -> str:
        if text in datasets:
            return text
        path, what = _kind(text)
        if what == "file":
            return str(path)
        if what == "dir":
            raise argparse.ArgumentTypeError(
                f"{text!r} is a folder; give {files} or one of the built-in "
                f"datasets: {', '.join(datasets)}"
            )
        close = difflib.get_close_matches(text.lower(), datasets, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a built-in dataset nor an existing file{hint}; "
            f"built-in datasets: {', '.join(datasets)}; or give {files}"
        )

    parse.__name__ = "dataset"
    return parse


# -- single options ------------------------------------------------------------------
def add_int_option(p, *flags: str, default, help: str, minimum=1, metavar=None) -> None:
    """Add an option taking an integer ``>= minimum``, checked while parsing.

    Parameters
    ----------
    p : argparse.ArgumentParser
    *flags : str
        The option's names, e.g. ``"--max-iter"`` or ``"-K", "--centroids"``.
    default : int or None
        None leaves the choice to the estimator (say so in ``help``).
    help : str
        The formatter appends ``(default: ...)`` unless the default is None
        or the help already names it.
    minimum : int
    metavar : str, optional
        The value's name in the usage line (default: the option's name).
    """
    p.add_argument(
        *flags, type=int_type(minimum), default=default, metavar=metavar, help=help
    )


def add_float_option(p, *flags: str, default, help: str, **limits) -> None:
    """Add an option taking a finite number, checked while parsing.

    Parameters
    ----------
    p : argparse.ArgumentParser
    *flags : str
    default : float, "auto" or None
    help : str
    **limits
        ``minimum``, ``strict`` and ``auto``, as in :func:`float_type`
        (default: a number ``>= 0``).
    """
    p.add_argument(*flags, type=float_type(**limits), default=default, help=help)


def add_choice_option(p, *flags: str, choices, default: str, help: str) -> None:
    """Add an option taking one of ``choices`` (argparse lists them on an error).

    Parameters
    ----------
    p : argparse.ArgumentParser
    *flags : str
    choices : sequence of str
    default : str
    help : str
    """
    p.add_argument(*flags, default=default, choices=choices, help=help)


# -- option groups -------------------------------------------------------------------
def add_data_options(p, datasets, files: str = "a CSV file") -> None:
    """``--data`` (a built-in dataset or a file) and ``--data-dir``."""
    p.add_argument(
        "--data",
        default=datasets[0],
        type=data_source(datasets, files),
        metavar="NAME|FILE",
        help=f"one of {', '.join(datasets)}, or {files}",
    )
    add_data_dir_option(p)


def add_data_dir_option(p) -> None:
    """``--data-dir``: the dataset root (default ``$EMBEDOPT_DATA``)."""
    p.add_argument(
        "--data-dir",
        default=None,
        type=existing_dir,
        metavar="DIR",
        help="root folder of the built-in datasets (default: $EMBEDOPT_DATA)",
    )


def add_run_options(p, unit: str, plot: str = "the convergence plot") -> None:
    """Options every fitting command shares: tolerance, seed, device, dtype,
    table rows, and the output files (``--json``, ``--plot`` drawing ``plot``)."""
    add_float_option(
        p, "--tol", default=1e-4, help="relative change that stops the solver"
    )
    add_seed_option(p)
    add_device_option(p)
    add_choice_option(
        p,
        "--dtype",
        choices=["float32", "float64"],
        default="float32",
        help="floating-point precision of the fit",
    )
    add_int_option(
        p,
        "--every",
        default=0,
        help=f"print every N-th {unit}; 0 prints about 15 rows",
        minimum=0,
        metavar="N",
    )
    add_output_options(p, plot)


def add_seed_option(p) -> None:
    """``--seed``: the random seed of data generation, splits and the fit."""
    add_int_option(
        p, "--seed", default=0, help="random seed (data, splits, fit)", minimum=0
    )


def add_device_option(p) -> None:
    """``--device``: the CLI runs on the CPU unless told otherwise."""
    p.add_argument(
        "--device",
        default="cpu",
        type=device_type,
        help="cpu, cuda, cuda:N or auto (CUDA when available)",
    )


def add_output_options(p, plot: str = "the convergence plot") -> None:
    """``--json FILE`` and ``--plot FILE``, both checked before the fit."""
    p.add_argument(
        "--json",
        default=None,
        type=output_file(),
        metavar="FILE",
        help="also write the results to this JSON file",
    )
    p.add_argument(
        "--plot",
        default=None,
        type=output_file("plot"),
        metavar="FILE",
        help=f"draw {plot} into this image file (.png, .pdf, .svg...)",
    )


def fit_options(args) -> dict:
    """The estimator keywords of :func:`add_run_options`' options.

    ``--tol``, ``--seed``, ``--device`` and ``--dtype`` reach every command's
    estimator as ``tol``, ``random_state``, ``device`` and ``dtype``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    dict
    """
    return {
        "tol": args.tol,
        "random_state": args.seed,
        "device": args.device,
        "dtype": args.dtype,
    }


# -- reading data --------------------------------------------------------------------
def header_lines(path) -> int:
    """1 when the first line of a CSV file is a header (not all numbers), else 0."""
    with open(path) as fh:
        first = fh.readline()
    try:
        [float(x) for x in first.strip().split(",")]
        return 0
    except ValueError:
        return 1


def load_csv(path, columns=None, layout: str = "") -> np.ndarray:
    """The numeric rows of a CSV file (header allowed, ``#`` comments skipped).

    Parameters
    ----------
    path : str
    columns : sequence of int, optional
        Admissible numbers of columns.
    layout : str
        The expected line layout, for messages (e.g. ``"row,col,value"``).

    Returns
    -------
    numpy.ndarray of float64, shape (n_rows, n_columns)

    Raises
    ------
    CommandError
        When the file is not a CSV of numbers, is empty, or has another
        number of columns.
    """
    want = f" (expected lines '{layout}')" if layout else ""
    try:
        with warnings.catch_warnings():
            # an empty file is reported below, not as numpy's UserWarning
            warnings.simplefilter("ignore", UserWarning)
            raw = np.loadtxt(
                path,
                delimiter=",",
                ndmin=2,
                comments="#",
                skiprows=header_lines(path),
            )
    except UnicodeDecodeError:
        raise CommandError(f"{path} is not a text (CSV) file{want}") from None
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CommandError(
            f"cannot read {path} as CSV numbers{want}: {reason}"
        ) from None
    if raw.size == 0:
        raise CommandError(f"{path} has no data lines{want}")
    if columns is not None and raw.shape[1] not in columns:
        raise CommandError(
            f"{path} has {raw.shape[1]} column(s) per line{want or ''}; expected "
            f"{' or '.join(map(str, columns))}"
        )
    return raw


# -- fitting, warnings, tables --------------------------------------------------------
@contextmanager
def recording_warnings():
    """Record every ConvergenceWarning raised inside the block into a list.

    The warnings are printed after the tables (:func:`report_warnings`) rather
    than in the middle of them.
    """
    from .._core import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        yield caught


def fit_recording(fit, *args, **kwargs):
    """Run ``fit(*args, **kwargs)``; return (seconds, warnings caught)."""
    t0 = time.perf_counter()
    with recording_warnings() as caught:
        fit(*args, **kwargs)
    return time.perf_counter() - t0, caught


def warning_line(message) -> str:
    """A warning as the one line the command prints on stderr."""
    return f"embedopt: warning: {' '.join(str(message).split())}"


def report_warnings(caught) -> None:
    """Print the recorded warnings on stderr, one line each, without repeats."""
    seen = set()
    for w in caught:
        line = warning_line(w.message)
        if line not in seen:
            seen.add(line)
            print(line, file=sys.stderr)


def table_rows(n: int, every: int, default_rows: int = 15) -> list[int]:
    """Indices of the rows to print: every ``every``-th one and always the last."""
    if n <= 0:
        return []
    step = every or max(1, n // default_rows)
    return sorted(set(range(0, n, step)) | {n - 1})


#: The first columns of most convergence tables (see :func:`print_history`).
ITERATION_COLUMNS = (("iteration", "iter", 5, "d"), ("time", "time(s)", 9, ".3f"))


def print_history(history, every: int, columns) -> None:
    """Print a solver's history as a table: a header, then the rows
    :func:`table_rows` picks.

    Parameters
    ----------
    history : dict of str to array
        A fitted model's ``history_``.
    every : int
        ``--every``.
    columns : sequence of (key, title, width, format)
        A column per history ``key`` that the history has (the others are
        left out): ``title`` and the values, right-aligned in ``width``
        characters and written with ``format`` (``"d"``: as an int).
    """
    columns = [c for c in columns if c[0] in history]
    print(" ".join(f"{title:>{width}}" for _, title, width, _ in columns))
    for i in table_rows(len(history[columns[0][0]]), every):
        cells = []
        for key, _, width, spec in columns:
            value = int(history[key][i]) if spec == "d" else history[key][i]
            cells.append(f"{value:>{width}{spec}}")
        print(" ".join(cells))


# -- outputs ---------------------------------------------------------------------------
def write_json(path, out: dict) -> None:
    """Write ``out`` to ``path`` when ``--json`` was given, and say where."""
    if path:
        with open(path, "w") as fh:
            json.dump(out, fh, indent=2, default=_jsonable)
        print(f"results written to {path}")


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot write a {type(x).__name__} to JSON")


def save_plot(path, draw, panels: int = 1) -> None:
    """Draw a figure of ``panels`` side-by-side axes into ``path``, and say where.

    Parameters
    ----------
    path : str or None
        The ``--plot`` file; nothing happens when it is None.
    draw : callable
        ``draw(axes)`` fills the list of matplotlib axes.
    panels : int
    """
    if not path:
        return
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4), squeeze=False)
    try:
        draw(list(axes[0]))
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    print(f"plot written to {path}")


def plot_convergence(ax, x, y, *, xlabel="time (s)", ylabel="objective", title=""):
    """One convergence curve (log scale when the values are positive)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ax.plot(x, y, marker="." if len(x) < 40 else None)
    if y.size and np.all(y > 0) and y.max() > 10 * y.min():
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
