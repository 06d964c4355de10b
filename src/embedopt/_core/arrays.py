"""Reading array-like user input without NumPy's own errors."""

from __future__ import annotations

import numpy as np
import torch

from .exceptions import DataValidationError

__all__ = ["as_array"]


def as_array(value, what: str, dtype=None) -> np.ndarray:
    """``value`` as a NumPy array (tensors detached and moved to the CPU).

    Input that NumPy cannot read as one array (ragged nested lists, a list
    mixing numbers and sequences, text where ``dtype`` asks for numbers)
    raises the library's error, naming ``what`` it was, instead of NumPy's
    ``ValueError`` or ``TypeError``. What is read (an object array, a 0-d
    array of a dict...) is left to the caller to check.

    Parameters
    ----------
    value : array-like or torch.Tensor
    what : str
        What the value is, for the message (``"X"``, ``"row indices"``...).
    dtype : numpy dtype, optional
        Passed to :func:`numpy.asarray`.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    DataValidationError
        When NumPy cannot read ``value`` as an array (of ``dtype``).
    """
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        reason = " ".join(str(exc).split())
        raise DataValidationError(
            f"{what} could not be read as an array ({reason}). Nested lists must "
            "be rectangular (rows of equal length) and hold numbers only."
        ) from None
