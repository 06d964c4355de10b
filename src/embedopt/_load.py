"""``embedopt.load``: read the file of any embedopt estimator.

The estimator classes it may build are listed here, by name, with the
package that defines them: the file names its class, which is looked up in
this table (and the package imported) only; a module named in a file is never
imported.
"""

from __future__ import annotations

import importlib
import os

from ._core.base import BaseEstimator
from ._core.device import DeviceLike
from ._core.docs import fill_doc
from ._core.persistence import LOAD_DEVICE_DOC, load_estimator

__all__ = ["ESTIMATORS", "load"]

#: Every estimator of embedopt: class name -> the package that exports it.
ESTIMATORS = {
    "MatrixCompletion": "embedopt.completion",
    "TensorCompletion": "embedopt.completion",
    "OrdinalEmbedding": "embedopt.ordinal",
    "KernelLearning": "embedopt.sdp",
    "ColoredMVU": "embedopt.sdp",
    "ProductQuantizer": "embedopt.quantization",
    "TwoTowerRetrieval": "embedopt.quantization",
    "TwoTowerModel": "embedopt.similarity",
}


def _find(name: str) -> type | None:
    if name not in ESTIMATORS:
        return None
    return getattr(importlib.import_module(ESTIMATORS[name]), name)


@fill_doc(device=LOAD_DEVICE_DOC)
def load(path: str | os.PathLike, *, device: DeviceLike = None) -> BaseEstimator:
    """Read a fitted estimator written by ``estimator.save(path)``.

    Returns whichever of embedopt's estimators the file holds, with bitwise
    the predictions it had when saved (on the same device). Nothing in the
    file is executed: it holds ``.npy`` arrays (read without pickle) and JSON.

    Parameters
    ----------
    path : str or os.PathLike
    {device}

    Returns
    -------
    BaseEstimator

    Raises
    ------
    DataValidationError
        If the file is missing, truncated or altered, of a newer format
        version (upgrade embedopt), not an embedopt model file, or holds an
        estimator that is not embedopt's (load it with its own class's
        ``load``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import embedopt
    >>> from embedopt.quantization import ProductQuantizer
    >>> X = np.random.default_rng(0).standard_normal((64, 8))
    >>> pq = ProductQuantizer(4, n_centroids=4, max_iter=2, random_state=0).fit(X)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pq.embedopt"
    >>> pq.save(path)
    >>> again = embedopt.load(path)
    >>> bool((again.transform(X) == pq.transform(X)).all())
    True
    """
    return load_estimator(path, find=_find, device=device)
