"""Loaders for signed networks (link-sign prediction), in their original formats."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from .._core import DataValidationError, Interval, validate_params
from ._files import integer_ids, parsing
from ._paths import find_dataset_dir
from .entries import ObservedEntries

__all__ = ["SignedNetwork", "load_bitcoin_alpha"]

_FOLDER = "signed-bitcoin-alpha"
_FILE = "soc-sign-bitcoinalpha.csv"
_LAYOUT = "header line, then comma-separated source, target, weight, timestamp"
_HINT = (
    "The file is SNAP's Bitcoin Alpha trust network "
    "(https://snap.stanford.edu/data/soc-sign-bitcoin-alpha.html, "
    "soc-sign-bitcoinalpha.csv.gz, gunzipped, with the header line "
    "'source,target,weight,timestamp' added)."
)


@dataclass
class SignedNetwork:
    """The signs of a directed, signed network as a (sources x targets) matrix.

    Attributes
    ----------
    entries : ObservedEntries
        ``O_ij = sign(weight)`` in {-1, +1} at (source index i, target index
        j), 0-based and contiguous: the matrix of Yao & Kwok's link prediction
        (Sec. 5.5), rows the raters, columns the rated users.
    source_ids : numpy.ndarray of int
        Original user id of each row.
    target_ids : numpy.ndarray of int
        Original user id of each column (a user who both rates and is rated
        has a row and a column).
    weights : numpy.ndarray of int
        The raw rating of each entry (Bitcoin Alpha: -10..10, no 0), in the
        order of ``entries``.
    timestamps : numpy.ndarray of int
        Unix time of each entry, in the order of ``entries``.
    n_removed : int
        Edges of the file dropped by the ``min_observations`` rule.
    name : str
    """

    entries: ObservedEntries
    source_ids: np.ndarray
    target_ids: np.ndarray
    weights: np.ndarray
    timestamps: np.ndarray
    n_removed: int
    name: str


def _read_edges(path) -> np.ndarray:
    """The (n, 4) float table of a ``source,target,weight,timestamp`` file."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    with parsing(path, _LAYOUT):
        if not lines or lines[0].replace(" ", "").lower() != (
            "source,target,weight,timestamp"
        ):
            raise ValueError(f"first line is {lines[0][:80]!r}" if lines else "empty")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # empty: reported below
            data = np.loadtxt(
                lines[1:], delimiter=",", usecols=range(4), dtype=np.float64, ndmin=2
            )
    if data.shape[0] == 0:
        raise DataValidationError(f"{path} has no edges ({_LAYOUT}).")
    return data


def load_bitcoin_alpha(
    path: str | os.PathLike | None = None, *, min_observations: int = 2
) -> SignedNetwork:
    """Load the SNAP Bitcoin Alpha trust network as a matrix of link signs.

    Reads ``soc-sign-bitcoinalpha.csv`` (a header line, then one
    ``source,target,weight,timestamp`` line per rating: 24,186 ratings in
    -10..10 among 3,783 users, 93.6 % positive) from
    ``$EMBEDOPT_DATA/signed-bitcoin-alpha``. Following Yao & Kwok's link
    prediction protocol (Sec. 5.5, "users with fewer than two observations
    are removed"), rows are users as raters and columns users as rated, and
    the rule is applied to each side separately, once, on the counts of the
    whole file: a row is kept when its user gave at least
    ``min_observations`` ratings, a column when its user received at least
    ``min_observations``, and an edge when both its row and its column are
    kept. (Their Table IX has different numbers of rows and columns: the
    matrix is sources x targets, not a square adjacency matrix.) A kept
    row or column can thus end with fewer entries than ``min_observations``
    when some of its edges went with a dropped user; with the default 2,
    21,551 edges remain in a 2,105 x 2,288 matrix, 93.3 % positive.

    Parameters
    ----------
    path : path, optional
        The dataset folder or a data root containing it.
    min_observations : int
        Fewest ratings given (rows) / received (columns) that keep a user;
        1 keeps every edge.

    Returns
    -------
    SignedNetwork

    Raises
    ------
    FileNotFoundError
        If the file is not there (the message says where it looked).
    DataValidationError
        If the file is not in its documented format (header, four numeric
        columns, integer ids, a weight of 0 that has no sign) or no edge
        is left.
    """
    validate_params(
        "load_bitcoin_alpha",
        {"min_observations": min_observations},
        {"min_observations": [Interval(int, 1, None)]},
    )
    folder = find_dataset_dir(_FOLDER, _FILE, path, _HINT)
    source = folder / _FILE
    data = _read_edges(source)
    src = integer_ids(data[:, 0], source, "source ids")
    dst = integer_ids(data[:, 1], source, "target ids")
    weights = integer_ids(data[:, 2], source, "weights")
    stamps = integer_ids(data[:, 3], source, "timestamps")
    if (weights == 0).any():
        row = int(np.flatnonzero(weights == 0)[0])
        raise DataValidationError(
            f"{source}: data line {row + 1} has weight 0, which has no sign; "
            "remove it or give it a sign."
        )
    keep = _kept_edges(src, dst, min_observations)
    if not keep.any():
        raise DataValidationError(
            f"{source}: no edge is left once users with fewer than "
            f"{min_observations} ratings (given, for rows; received, for columns) "
            "are removed; lower min_observations."
        )
    src, dst, weights, stamps = src[keep], dst[keep], weights[keep], stamps[keep]
    source_ids, rows = np.unique(src, return_inverse=True)
    target_ids, cols = np.unique(dst, return_inverse=True)
    entries = ObservedEntries(
        (rows, cols),
        np.sign(weights).astype(np.float64),
        (source_ids.size, target_ids.size),
    )
    return SignedNetwork(
        entries,
        source_ids,
        target_ids,
        weights,
        stamps,
        int((~keep).sum()),
        "bitcoin-alpha",
    )


def _kept_edges(src: np.ndarray, dst: np.ndarray, k: int) -> np.ndarray:
    """Edges whose source gave and whose target received at least ``k`` ratings."""
    _, s_inv, s_count = np.unique(src, return_inverse=True, return_counts=True)
    _, d_inv, d_count = np.unique(dst, return_inverse=True, return_counts=True)
    return (s_count[s_inv] >= k) & (d_count[d_inv] >= k)
