"""Dense vector sets for quantization: GloVe, SIFT1M (.fvecs), correlated Gaussians."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .._core import (
    DataValidationError,
    InvalidParameterError,
    RandomStateLike,
    check_memory,
    resolve_random_state,
)
from ._files import parsing
from ._paths import find_dataset_dir

__all__ = [
    "SIFT1M",
    "load_glove",
    "load_sift1m",
    "make_correlated_gaussian",
    "read_fvecs",
    "read_ivecs",
]


def load_glove(
    path: str | os.PathLike | None = None,
    *,
    n_vectors: int | None = None,
    mmap: bool = True,
) -> np.ndarray:
    """GloVe 6B 50-d word vectors (400,000 x 50 float32).

    Reads ``glove_6B_50d_emb.npy`` (row i is the i-th token of the vocabulary,
    most frequent first).

    Parameters
    ----------
    path : path, optional
        The ``glove-6b-50d`` folder or a data root containing it; default
        ``$EMBEDOPT_DATA/glove-6b-50d``.
    n_vectors : int, optional
        Keep only the first rows.
    mmap : bool
        Memory-map the file instead of reading it all (the returned rows are
        copied into memory either way when ``n_vectors`` is given).

    Returns
    -------
    numpy.ndarray of float32, shape (n, 50)
    """
    folder = find_dataset_dir(
        "glove-6b-50d",
        "glove_6B_50d_emb.npy",
        path,
        "GloVe vectors are at https://nlp.stanford.edu/projects/glove/ (PDDL).",
    )
    source = folder / "glove_6B_50d_emb.npy"
    with parsing(source, "a .npy file of one float vector per row"):
        X = np.load(source, mmap_mode="r" if mmap else None)
    if X.ndim != 2 or X.dtype.kind not in "fiu" or X.shape[0] < 1:
        raise DataValidationError(
            f"{source} holds a {X.dtype} array of shape {X.shape}; expected a 2-D "
            "array of float vectors, one per row."
        )
    if n_vectors is not None:
        if n_vectors < 1:
            raise InvalidParameterError(
                "The 'n_vectors' parameter of load_glove must be an int in [1, inf). "
                f"Got {n_vectors!r}."
            )
        return np.array(X[:n_vectors], dtype=np.float32)
    return X


def _read_vecs(path, dtype, count: int | None, offset: int) -> np.ndarray:
    path = Path(path)
    with open(path, "rb") as fh:
        head = np.fromfile(fh, dtype=np.int32, count=1)
    if head.size == 0:
        raise DataValidationError(f"{path} is empty.")
    d = int(head[0])
    if d <= 0 or d > 1 << 20:
        raise DataValidationError(
            f"{path} does not look like a .fvecs/.ivecs file: first dimension {d}."
        )
    row = 4 * (d + 1)
    size = path.stat().st_size
    if size % row:
        raise DataValidationError(
            f"{path}: size {size} is not a multiple of the record size {row} "
            f"(dimension {d}); the file is truncated or not in .fvecs format."
        )
    n = size // row
    stop = n if count is None else min(n, offset + count)
    raw = np.memmap(path, dtype=np.int32, mode="r", shape=(n, d + 1))[offset:stop]
    if raw.shape[0] and not np.all(raw[:, 0] == d):
        raise DataValidationError(
            f"{path}: records have different dimensions; not a .fvecs file."
        )
    return np.ascontiguousarray(raw[:, 1:]).view(dtype)


def read_fvecs(
    path: str | os.PathLike, *, count: int | None = None, offset: int = 0
) -> np.ndarray:
    """Read a ``.fvecs`` file (TEXMEX format of SIFT1M / GIST1M).

    Each record is an int32 dimension d followed by d float32 values.

    Parameters
    ----------
    path : path
    count : int, optional
        Read at most this many vectors.
    offset : int
        Skip this many vectors first.

    Returns
    -------
    numpy.ndarray of float32, shape (n, d)
    """
    return _read_vecs(path, np.float32, count, offset)


def read_ivecs(
    path: str | os.PathLike, *, count: int | None = None, offset: int = 0
) -> np.ndarray:
    """Read an ``.ivecs`` file (e.g. SIFT1M ground-truth neighbour ids).

    Parameters
    ----------
    path : path
    count : int, optional
    offset : int

    Returns
    -------
    numpy.ndarray of int32, shape (n, d)
    """
    return _read_vecs(path, np.int32, count, offset)


@dataclass
class SIFT1M:
    """The SIFT1M ANN benchmark (Jegou et al. 2011).

    Attributes
    ----------
    base : numpy.ndarray, shape (1000000, 128)
    learn : numpy.ndarray, shape (100000, 128)
    query : numpy.ndarray, shape (10000, 128)
    groundtruth : numpy.ndarray of int32, shape (10000, 100)
        Exact L2 nearest neighbours of each query in ``base``.
    """

    base: np.ndarray
    learn: np.ndarray
    query: np.ndarray
    groundtruth: np.ndarray


def load_sift1m(path: str | os.PathLike | None = None) -> SIFT1M:
    """Load SIFT1M from its original ``.fvecs`` / ``.ivecs`` files.

    Not shipped with embedopt (nor available in this project's data folder);
    download ``ANN_SIFT1M`` from the TEXMEX corpus and point ``path`` at the
    folder holding ``sift_base.fvecs``, ``sift_learn.fvecs``,
    ``sift_query.fvecs`` and ``sift_groundtruth.ivecs``.

    Parameters
    ----------
    path : path, optional
        That folder, or a data root containing ``sift1m/``.

    Returns
    -------
    SIFT1M
    """
    folder = find_dataset_dir(
        "sift1m",
        "sift_base.fvecs",
        path,
        "SIFT1M (ANN_SIFT1M) is distributed by the TEXMEX corpus (IRISA).",
    )
    return SIFT1M(
        base=read_fvecs(folder / "sift_base.fvecs"),
        learn=read_fvecs(folder / "sift_learn.fvecs"),
        query=read_fvecs(folder / "sift_query.fvecs"),
        groundtruth=read_ivecs(folder / "sift_groundtruth.ivecs"),
    )


def make_correlated_gaussian(
    n_samples: int = 20000,
    n_features: int = 128,
    *,
    decay: float = 8.0,
    random_state: RandomStateLike = None,
    return_covariance: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Zero-mean Gaussian vectors with a decaying spectrum in a random basis.

    The covariance is ``Q diag(lambda) Q^T`` with ``lambda_i ∝ exp(-decay i / n)``
    (normalized so that ``sum lambda = n``) and Q Haar-random, so coordinates
    are strongly correlated and PQ benefits from a rotation -- the kind of
    synthetic set Ge et al. (2013) use to study OPQ. Our spectrum is a choice;
    the paper of the GCD methods does not describe one.

    Parameters
    ----------
    n_samples : int
    n_features : int
    decay : float
        ``lambda_0 / lambda_{n-1} = exp(decay (n-1)/n)``; 0 gives isotropic data.
    random_state : None, int or numpy Generator
    return_covariance : bool
        Also return the covariance matrix.

    Returns
    -------
    X : numpy.ndarray of float32, shape (n_samples, n_features)
    cov : numpy.ndarray, shape (n_features, n_features)
        Only with ``return_covariance=True``.
    """
    if int(n_samples) < 1 or int(n_features) < 1:
        raise InvalidParameterError(
            "make_correlated_gaussian needs n_samples >= 1 and n_features >= 1; got "
            f"{n_samples} and {n_features}."
        )
    if not (decay >= 0):
        raise InvalidParameterError(
            "The 'decay' parameter of make_correlated_gaussian must be a float in "
            f"[0, inf). Got {decay!r}."
        )
    n = int(n_features)
    # the basis and two copies of the samples, refused before any draw
    check_memory(
        "make_correlated_gaussian",
        8 * (n * n + 2 * int(n_samples) * n),
        torch.device("cpu"),
        f"{n_samples} samples of {n} features",
        "Lower n_samples or n_features.",
    )
    rng = resolve_random_state(random_state, "make_correlated_gaussian").numpy
    lam = np.exp(-decay * np.arange(n) / n)
    lam *= n / lam.sum()
    Q, Rq = np.linalg.qr(rng.standard_normal((n, n)))
    Q *= np.sign(np.diag(Rq))[None, :]
    Z = rng.standard_normal((int(n_samples), n))
    X = ((Z * np.sqrt(lam)) @ Q.T).astype(np.float32)
    if return_covariance:
        return X, (Q * lam) @ Q.T
    return X
