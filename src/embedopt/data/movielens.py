"""Loaders for the MovieLens rating datasets, in their original file formats."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from .._core import DataValidationError, InvalidParameterError
from ._files import integer_ids, parsing
from ._paths import find_dataset_dir
from .entries import ObservedEntries

__all__ = ["MovieLensRatings", "load_movielens"]

_HINT = (
    "MovieLens files are distributed by GroupLens "
    "(https://grouplens.org/datasets/movielens/) and may not be redistributed; "
    "download them there."
)

_VARIANTS = {
    "100k": ("movielens-100k", ("u.data",)),
    "1m": ("movielens-1m", ("ratings.dat", "ratings_user_itemidx_rating.csv")),
    "latest-small": ("movielens-latest-small", ("ratings.csv",)),
}


@dataclass
class MovieLensRatings:
    """A MovieLens rating matrix (users x items).

    Attributes
    ----------
    entries : ObservedEntries
        Ratings at (user index, item index), 0-based and contiguous.
    user_ids : numpy.ndarray
        Original user id of each row.
    item_ids : numpy.ndarray
        Original item id of each column (for the 1M CSV re-indexed copy, the
        item index 1..3706 of that file).
    timestamps : numpy.ndarray or None
        Unix time of each rating, in the order of ``entries`` (None when the
        files have none).
    name : str
    """

    entries: ObservedEntries
    user_ids: np.ndarray
    item_ids: np.ndarray
    timestamps: np.ndarray | None
    name: str


def _read_table(path, delimiter: str, skip_header: bool, ncols: int) -> np.ndarray:
    with open(path, encoding="latin-1") as fh:
        text = fh.read()
    names = "user, item, rating" + (", timestamp" if ncols == 4 else "")
    layout = f"{'header, then ' if skip_header else ''}{delimiter!r}-separated {names}"
    if delimiter == "::":
        text, delimiter = text.replace("::", "\t"), "\t"
    lines = text.splitlines()[1 if skip_header else 0 :]
    with parsing(path, layout), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # empty: reported below
        data = np.loadtxt(
            lines, delimiter=delimiter, usecols=range(ncols), dtype=np.float64, ndmin=2
        )
    if data.shape[0] == 0:
        raise DataValidationError(f"{path} has no ratings ({layout}).")
    return data


def load_movielens(
    variant: str = "100k", path: str | os.PathLike | None = None
) -> MovieLensRatings:
    """Load MovieLens ratings from the original files.

    Parameters
    ----------
    variant : {"100k", "1m", "latest-small"}
        - ``"100k"``: ``u.data`` (tab-separated user, item, rating, timestamp);
        - ``"1m"``: the official ``ratings.dat`` (``::``-separated) or, when only
          that is available, ``ratings_user_itemidx_rating.csv`` (header
          ``user,item,rating``, no timestamps);
        - ``"latest-small"``: ``ratings.csv`` (header
          ``userId,movieId,rating,timestamp``).
    path : path, optional
        The dataset folder or a data root containing it; default
        ``$EMBEDOPT_DATA/movielens-<variant>``.

    Returns
    -------
    MovieLensRatings

    Raises
    ------
    FileNotFoundError
        If the files are not there (the message says where it looked).
    DataValidationError
        If the ratings file is not in its documented format (non-numeric
        fields, a missing column, ids that are not integers).
    """
    if variant not in _VARIANTS:
        raise InvalidParameterError(
            "The 'variant' parameter of load_movielens must be a str among "
            f"{{'100k', '1m', 'latest-small'}}. Got {variant!r}."
        )
    folder_name, markers = _VARIANTS[variant]
    folder = find_dataset_dir(folder_name, markers, path, _HINT)
    ts = None
    if variant == "100k":
        source = folder / "u.data"
        data = _read_table(source, "\t", False, 4)
    elif variant == "1m" and (folder / "ratings.dat").is_file():
        source = folder / "ratings.dat"
        data = _read_table(source, "::", False, 4)
    elif variant == "1m":
        source = folder / "ratings_user_itemidx_rating.csv"
        data = _read_table(source, ",", True, 3)
    else:
        source = folder / "ratings.csv"
        data = _read_table(source, ",", True, 4)
    if data.shape[1] == 4:
        ts = integer_ids(data[:, 3], source, "timestamps")
    users = integer_ids(data[:, 0], source, "user ids")
    items = integer_ids(data[:, 1], source, "item ids")
    user_ids, rows = np.unique(users, return_inverse=True)
    item_ids, cols = np.unique(items, return_inverse=True)
    entries = ObservedEntries((rows, cols), data[:, 2], (user_ids.size, item_ids.size))
    return MovieLensRatings(entries, user_ids, item_ids, ts, f"movielens-{variant}")
