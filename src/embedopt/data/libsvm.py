"""LIBSVM / svmlight files: sparse features and labels."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._core import DataValidationError
from ._files import parsing

__all__ = ["load_libsvm"]

_LAYOUT = "LIBSVM lines 'label k:v k:v ...' with 1-based feature indices k"


def load_libsvm(
    path: str | os.PathLike,
    n_features: int | None = None,
    *,
    n_rows: int | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Read a LIBSVM (svmlight) file: one pattern per line, ``label k:v ...``.

    Feature indices are 1-based (column ``k - 1``); features not listed are
    0. A ``#`` starts a comment; blank lines are skipped. Written with NumPy
    and SciPy only (no scikit-learn).

    Parameters
    ----------
    path : str or path-like
    n_features : int, optional
        Number of columns (a1a: 123); default the largest index in the file.
        An index above it is an error, not a silently dropped feature.
    n_rows : int, optional
        Read only the first ``n_rows`` patterns.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n, n_features)
    y : numpy.ndarray, shape (n,)
        The labels: int64 when they are all integers (``+1`` / ``-1``),
        else float64.

    Raises
    ------
    DataValidationError
        A line that is not ``label k:v ...`` (named by its number), an index
        outside ``[1, n_features]``, or a file without a pattern.
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "toy")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("+1 1:0.5 3:1\\n-1 2:2\\n")
    ...     X, y = load_libsvm(path)
    >>> X.toarray(), y
    (array([[0.5, 0. , 1. ],
           [0. , 2. , 0. ]]), array([ 1, -1]))
    """
    path = Path(path)
    rows, cols, vals, labels = [], [], [], []
    with parsing(path, _LAYOUT), open(path, encoding="latin-1") as fh:
        for number, line in enumerate(fh, 1):
            if n_rows is not None and len(labels) >= n_rows:
                break
            line = line.split("#", 1)[0]
            if not line.strip():
                continue
            label, k, v = _parse_line(line, number, n_features)
            rows.extend([len(labels)] * len(k))
            cols.extend(k)
            vals.extend(v)
            labels.append(label)
    if not labels:
        raise DataValidationError(f"{path} has no patterns ({_LAYOUT}).")
    width = n_features if n_features is not None else max(cols, default=-1) + 1
    X = sp.csr_matrix(
        (np.asarray(vals, dtype=np.float64), (rows, cols)),
        shape=(len(labels), width),
    )
    y = np.asarray(labels, dtype=np.float64)
    if np.all(np.isfinite(y)) and np.all(y == np.round(y)) and np.all(abs(y) < 2**53):
        y = y.astype(np.int64)
    return X, y


def _parse_line(line: str, number: int, n_features: int | None):
    """(label, 0-based columns, values) of one line; ValueError names it."""
    try:
        label, *items = line.split()
        cols, vals = [], []
        for item in items:
            k, v = item.split(":")
            k = int(k)
            if k < 1 or (n_features is not None and k > n_features):
                raise IndexError(k)
            cols.append(k - 1)
            vals.append(float(v))
        return float(label), cols, vals
    except (ValueError, IndexError, OverflowError):
        bound = f" with 1 <= k <= {n_features}" if n_features is not None else ""
        raise ValueError(
            f"line {number}: not a LIBSVM line 'label k:v ...'{bound}"
        ) from None
