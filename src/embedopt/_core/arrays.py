"""Reading array-like user input without NumPy's own errors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike, DTypeLike

from .exceptions import DataValidationError

__all__ = ["as_array", "check_plus_minus_one", "check_sample_weight"]


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


def check_sample_weight(
    sample_weight: ArrayLike | torch.Tensor,
    n: int,
    *,
    owner: str,
    unit: str = "observation",
) -> np.ndarray:
    """One finite non-negative weight per observation, not all zero.

    The one check behind every ``sample_weight`` of the library (completion
    entries, similarity pairs, ordinal comparisons), so that a bad weight
    reads the same everywhere. Booleans are refused: a mask given as weights
    is more likely a mistake than a choice of 0/1 weights.

    Parameters
    ----------
    sample_weight : array-like or torch.Tensor, shape (n,)
    n : int
        Number of observations.
    owner : str
        Who asks (``"MatrixCompletion.fit"``), named in the messages.
    unit : str
        What one observation is (``"entry"``, ``"pair"``, ``"comparison"``).

    Returns
    -------
    numpy.ndarray of float64, shape (n,)

    Raises
    ------
    DataValidationError
        For non-numbers, a wrong shape, negative, NaN or infinite weights, or
        weights that are all 0.
    """
    if isinstance(sample_weight, torch.Tensor):
        sample_weight = sample_weight.detach().cpu().numpy()
    w = as_array(sample_weight, f"{owner}: sample_weight")
    if w.dtype.kind not in "iuf":
        raise DataValidationError(
            f"{owner}: sample_weight must be real numbers, one weight per {unit}; "
            f"got dtype {w.dtype}."
        )
    if w.shape != (n,):
        raise DataValidationError(
            f"{owner}: sample_weight must hold one weight per {unit}, {n} real "
            f"numbers, shape ({n},); got shape {w.shape}. Give the weights in the "
            f"order of the {unit}s."
        )
    w = w.astype(np.float64)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{owner}: {int(bad.sum())} sample_weight value(s) are negative, NaN "
            f"or infinite (first: {unit} {i} has {float(w[i])}). Give every {unit} "
            f"a finite weight >= 0 (0 leaves it out)."
        )
    if not (w > 0).any():
        raise DataValidationError(
            f"{owner}: sample_weight is 0 for every {unit}, which leaves nothing "
            f"to fit; give the {unit}s to fit a positive weight (None: all 1)."
        )
    return w
