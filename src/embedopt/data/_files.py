"""Reading dataset files: format errors as the library's own, naming the file."""

from __future__ import annotations

import gzip
import os
import pickle
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .._core import DataValidationError, EmbedoptError

__all__ = ["integer_ids", "parsing"]

#: What Python, NumPy and the csv/gzip modules raise on malformed content.
_FORMAT_ERRORS = (
    ValueError,
    IndexError,
    KeyError,
    StopIteration,
    EOFError,
    UnicodeError,
    OverflowError,
    ZeroDivisionError,
    pickle.UnpicklingError,
    gzip.BadGzipFile,
    zlib.error,
)


@contextmanager
def parsing(path: str | os.PathLike, layout: str) -> Iterator[None]:
    """Turn a format error raised while reading ``path`` into a
    :class:`~embedopt.DataValidationError` naming the file and its expected
    ``layout`` (the library's own errors pass through).

    Parameters
    ----------
    path : path
    layout : str
        The expected format, for the message (e.g. ``"tab-separated user,
        item, rating, timestamp lines"``).
    """
    try:
        yield
    except EmbedoptError:
        raise
    except _FORMAT_ERRORS as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataValidationError(
            f"{path} is not in the expected format ({layout}): {reason[:300]}"
        ) from None


def integer_ids(values: np.ndarray, path: str | os.PathLike, what: str) -> np.ndarray:
    """Ids read as floats, checked to be integers (no silent truncation).

    Parameters
    ----------
    values : numpy.ndarray of float
    path : path
        The file they come from, for the message.
    what : str
        What they are (``"user ids"``).

    Returns
    -------
    numpy.ndarray of int64
    """
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (np.floor(values) != values)
        bad |= np.abs(values) >= 2.0**62
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{path}: {what} must be integers; data line {row + 1} has "
            f"{float(values[row])!r}."
        )
    return values.astype(np.int64)
