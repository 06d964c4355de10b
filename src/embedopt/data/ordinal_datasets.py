"""Loaders for the real ordinal-embedding datasets, in their original formats."""

from __future__ import annotations

import csv
import gzip
import html
import os
import warnings
from dataclasses import dataclass

import numpy as np

from .._core import DataValidationError, fill_doc
from ._files import integer_ids, parsing
from ._paths import find_dataset_dir
from .comparisons import Comparisons, ComparisonWarning

__all__ = [
    "DistanceData",
    "LabelledData",
    "MusicTriplets",
    "load_digits",
    "load_eurodist",
    "load_music_triplets",
]

#: The Parameters section of every loader here (a docstring's
#: ``{path_parameter}``); the default folder is ``$EMBEDOPT_DATA/<dataset>``.
_PATH_PARAMETER = """\
Parameters
----------
path : path, optional
    The dataset folder or a data root containing it."""


@dataclass
class MusicTriplets:
    """The aset400 music-artist similarity triplets (Ma et al., Sec. 5.3).

    Attributes
    ----------
    comparisons : Comparisons
        Triplets ``(i, j, k)``: artist i is more similar to j than to k, over
        objects ``0..n_objects-1``.
    artist_ids : numpy.ndarray of int
        Original 1-based artist index of each object.
    tags : numpy.ndarray of int8, shape (n_objects, n_tags)
        Genre tags of each object (1 = tagged).
    tag_names : list of str
    n_dropped : int
        Triplets of the file that repeat an artist (removed).
    """

    comparisons: Comparisons
    artist_ids: np.ndarray
    tags: np.ndarray
    tag_names: list
    n_dropped: int


@fill_doc(path_parameter=_PATH_PARAMETER)
def load_music_triplets(path: str | os.PathLike | None = None) -> MusicTriplets:
    """Load the music-artist triplets of van der Maaten & Weinberger (2012).

    Reads ``music_triplets.csv`` (header ``i,j,k``, 1-based artist indices,
    9,107 triplets) and ``music_label_matrix.csv`` (412 artists x 58 genre
    tags) from ``$EMBEDOPT_DATA/music-aset400-triplets``. The 17 triplets that
    repeat an artist are dropped (counted in ``n_dropped``), and the 400
    artists that occur are renumbered ``0..399`` in increasing original order.

    {path_parameter}

    Returns
    -------
    MusicTriplets

    Raises
    ------
    FileNotFoundError
        If the files are not there (the message says where it looked).
    """
    folder = find_dataset_dir(
        "music-aset400-triplets",
        "music_triplets.csv",
        path,
        "The files come with van der Maaten's STE package "
        "(https://lvdmaaten.github.io/ste/).",
    )
    source = folder / "music_triplets.csv"
    layout = "a header line, then 1-based i,j,k triplets"
    with parsing(source, layout), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no data: reported below
        # floats, checked to be integers below: NumPy 2.4's integer parser
        # crashes the process (a segfault) on some non-numeric text
        raw = np.loadtxt(source, delimiter=",", skiprows=1, ndmin=2)
    if raw.shape[0] == 0 or raw.shape[1] != 3:
        raise DataValidationError(
            f"{source} has {raw.shape[0]} lines of {raw.shape[1]} values; expected "
            f"{layout}."
        )
    raw = integer_ids(raw.ravel(), source, "artist indices").reshape(raw.shape)
    if raw.min() < 1:
        raise DataValidationError(
            f"{source}: artist indices are 1-based; found {int(raw.min())}."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ComparisonWarning)
        parsed = Comparisons(raw, n_objects=int(raw.max()) + 1)
    ids, inverse = np.unique(parsed.indices, return_inverse=True)
    triplets = inverse.reshape(parsed.indices.shape).astype(np.int64)
    comps = Comparisons(triplets, n_objects=ids.size, validate=False)
    tags = np.zeros((ids.size, 0), dtype=np.int8)
    names: list = []
    label_file = folder / "music_label_matrix.csv"
    if label_file.is_file():
        layout = "a header of tag names, then one line of 0/1 flags per artist"
        with parsing(label_file, layout):
            with open(label_file, newline="", encoding="utf-8") as fh:
                reader = csv.reader(fh)
                names = [html.unescape(s) for s in next(reader)]
                matrix = np.array(
                    [[int(v) for v in row] for row in reader if row], dtype=np.int8
                )
        if matrix.ndim != 2 or matrix.shape[0] < int(ids.max()):
            raise DataValidationError(
                f"{label_file} has {matrix.shape[0]} rows of tags, but the triplets "
                f"use artist {int(ids.max())}; expected {layout}."
            )
        tags = matrix[ids - 1]
    return MusicTriplets(comps, ids, tags, names, parsed.n_dropped)


@dataclass
class DistanceData:
    """A dissimilarity matrix between named objects.

    Attributes
    ----------
    distances : numpy.ndarray, shape (n, n)
    names : list of str
    """

    distances: np.ndarray
    names: list


@fill_doc(path_parameter=_PATH_PARAMETER)
def load_eurodist(path: str | os.PathLike | None = None) -> DistanceData:
    """Road distances (km) between 21 European cities (R's ``eurodist``).

    Reads ``eurodist.csv`` (header row of city names, one row per city led by
    its name) from ``$EMBEDOPT_DATA/eurodist``. Ma et al. (Sec. 5.2) embed the
    cities in 2-d from triplets of these distances; see
    :func:`~embedopt.data.make_random_triplets` with ``distances=``.

    {path_parameter}

    Returns
    -------
    DistanceData
    """
    folder = find_dataset_dir(
        "eurodist", "eurodist.csv", path, "Export it from R: datasets::eurodist."
    )
    source = folder / "eurodist.csv"
    layout = "a header of city names, then one line per city: its name, distances"
    with parsing(source, layout):
        with open(source, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if r]  # blank lines carry nothing
        names = rows[0][1:]
        D = np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float64)
    n = len(names)
    if n < 2 or D.shape != (n, n):
        raise DataValidationError(
            f"{source}: {n} city names but a {' x '.join(map(str, D.shape))} table "
            f"of distances; expected {layout} (a square table, 2 cities or more)."
        )
    if not np.all(np.isfinite(D)) or D.min() < 0:
        raise DataValidationError(
            f"{source}: distances must be finite and non-negative."
        )
    return DistanceData(D, names)


@dataclass
class LabelledData:
    """Feature vectors with class labels.

    Attributes
    ----------
    X : numpy.ndarray, shape (n, d)
    y : numpy.ndarray of int, shape (n,)
    """

    X: np.ndarray
    y: np.ndarray


@fill_doc(path_parameter=_PATH_PARAMETER)
def load_digits(path: str | os.PathLike | None = None) -> LabelledData:
    """The 8x8 handwritten digits (1,797 images, 10 classes) bundled with scikit-learn.

    Reads ``digits.csv.gz`` (64 pixel values 0..16 then the label, per line)
    from ``$EMBEDOPT_DATA/sklearn-digits``; used for the retrieval experiment
    with class triplets (Sec. 5.4 protocol).

    {path_parameter}

    Returns
    -------
    LabelledData
    """
    folder = find_dataset_dir(
        "sklearn-digits",
        "digits.csv.gz",
        path,
        "The file is sklearn/datasets/data/digits.csv.gz of scikit-learn.",
    )
    source = folder / "digits.csv.gz"
    layout = "gzip of comma-separated lines: pixel values, then the label"
    with parsing(source, layout), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no data: reported below
        with gzip.open(source, "rt") as fh:
            data = np.loadtxt(fh, delimiter=",", ndmin=2)
    if data.shape[0] < 1 or data.shape[1] < 2 or not np.all(np.isfinite(data)):
        raise DataValidationError(
            f"{source} has {data.shape[0]} lines of {data.shape[1]} values (or NaN/"
            f"inf); expected {layout}."
        )
    return LabelledData(data[:, :-1], integer_ids(data[:, -1], source, "labels"))
