"""Reading array-like user input without NumPy's own errors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike, DTypeLike

from .exceptions import DataValidationError

__all__ = ["as_array", "check_plus_minus_one"]


def as_array(
    value: ArrayLike | torch.Tensor, what: str, dtype: DTypeLike = None
) -> np.ndarray:
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


def check_plus_minus_one(y: np.ndarray, message: Callable[[int, int], str]) -> None:
    """Raise :class:`DataValidationError` unless every value of ``y`` is +1 or -1.

    Parameters
    ----------
    y : numpy.ndarray
        Labels or responses.
    message : callable
        ``message(n_bad, first) -> str``: the error's text, given how many
        values are not +/-1 and the position of the first of them.

    Raises
    ------
    DataValidationError
        When a value of ``y`` is not +1 or -1.
    """
    bad = (y != 1) & (y != -1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataValidationError(message(int(bad.sum()), first))
