"""Real 3- and 4-way tensors built from the shared datasets.

Two families, both returned as :class:`~embedopt.data.ObservedEntries`:

- MovieLens ratings with their time of day as extra modes: user x item x
  weekday (3-way) and user x item x weekday x hour bucket (4-way). Very
  sparse, each (user, item) pair in exactly one context cell.
- Colour test images: height x width x colour (3-way, Yao & Kwok Sec. 5.6)
  and a 4-way stack of them, height x width x colour x frame, every cell
  observed (a benchmark samples the training cells).
"""

from __future__ import annotations

import os

import numpy as np

from .._core import DataValidationError, InvalidParameterError
from .entries import ObservedEntries
from .images import load_test_image
from .movielens import load_movielens

__all__ = ["STACKS", "load_image_tensor", "load_movielens_tensor"]

#: The 4-way image stacks of :func:`load_image_tensor` (its ``stack``).
STACKS = ("blur", "pan")
_CONTEXTS = ("weekday", "hour")
_SECONDS_PER_DAY = 86400


def _context_codes(ts: np.ndarray, context: str, hour_buckets: int) -> np.ndarray:
    """Weekday (0 = Monday) or hour bucket (UTC) of each Unix time."""
    if context == "weekday":
        return ((ts // _SECONDS_PER_DAY + 3) % 7).astype(np.int64)  # 1970-01-01: Thu
    hour = (ts % _SECONDS_PER_DAY) // 3600
    return (hour * hour_buckets // 24).astype(np.int64)


def load_movielens_tensor(
    variant: str = "100k",
    contexts: tuple[str, ...] = ("weekday",),
    *,
    hour_buckets: int = 4,
    path: str | os.PathLike | None = None,
) -> ObservedEntries:
    """MovieLens ratings as a user x item x context tensor, from the timestamps.

    Parameters
    ----------
    variant : {"100k", "latest-small", "1m"}
        As in :func:`~embedopt.data.load_movielens`; the files must carry
        timestamps (the re-indexed ML-1M CSV does not).
    contexts : tuple of {"weekday", "hour"}
        The modes added after user and item, in this order: ``"weekday"`` (7,
        Monday first) and ``"hour"`` (``hour_buckets`` equal parts of the day),
        both in UTC. ``("weekday",)`` gives the 3-way tensor,
        ``("weekday", "hour")`` the 4-way one.
    hour_buckets : int
        Size of the ``"hour"`` mode, a divisor of 24.
    path : path, optional
        The dataset folder or a data root containing it.

    Returns
    -------
    ObservedEntries
        Shape ``(users, items, *context sizes)``; users and items as in
        :func:`~embedopt.data.load_movielens` (0-based, contiguous).

    Raises
    ------
    InvalidParameterError
        For an unknown context or an ``hour_buckets`` that does not divide 24.
    DataValidationError
        When the files have no timestamps.
    """
    if not contexts or any(c not in _CONTEXTS for c in contexts):
        raise InvalidParameterError(
            "The 'contexts' parameter of load_movielens_tensor must be a non-empty "
            f"tuple of 'weekday' and/or 'hour'. Got {contexts!r}."
        )
    if (
        not isinstance(hour_buckets, int | np.integer)
        or hour_buckets < 1
        or (24 % hour_buckets)
    ):
        raise InvalidParameterError(
            "The 'hour_buckets' parameter of load_movielens_tensor must be a "
            f"divisor of 24 (1, 2, 3, 4, 6, 8, 12, 24). Got {hour_buckets!r}."
        )
    data = load_movielens(variant, path)
    if data.timestamps is None:
        raise DataValidationError(
            f"{data.name} has no timestamps here, so it has no time modes; use "
            "variant='100k' or 'latest-small' (or the official ML-1M ratings.dat)."
        )
    rows, cols = data.entries.indices.T
    extra = [_context_codes(data.timestamps, c, hour_buckets) for c in contexts]
    sizes = [7 if c == "weekday" else hour_buckets for c in contexts]
    shape = (*data.entries.shape, *sizes)
    return ObservedEntries((rows, cols, *extra), data.entries.values, shape)


def _downsample(img: np.ndarray, factor: int) -> np.ndarray:
    """Mean of ``factor x factor`` pixel blocks (the edge remainder dropped)."""
    if factor == 1:
        return img
    h, w = (img.shape[0] // factor) * factor, (img.shape[1] // factor) * factor
    img = img[:h, :w]
    shape = (h // factor, factor, w // factor, factor, *img.shape[2:])
    return img.reshape(shape).mean(axis=(1, 3))


def _stack(img: np.ndarray, stack: str, n_frames: int, factor: int) -> np.ndarray:
    """The 4-way stack (h, w, colour, frame) of a full-resolution image."""
    from scipy.ndimage import gaussian_filter

    if stack == "blur":
        # A focal / scale-space stack: sigma 0, 1, 2, ... full-resolution pixels.
        frames = [
            gaussian_filter(img, sigma=(k, k, 0)) if k else img for k in range(n_frames)
        ]
        return np.stack([_downsample(f, factor) for f in frames], axis=-1)
    # "pan": a camera panning right, one downsampled pixel per frame.
    small = _downsample(img, factor)
    width = small.shape[1] - (n_frames - 1)
    return np.stack([small[:, k : k + width] for k in range(n_frames)], axis=-1)


def load_image_tensor(
    name: str = "astronaut",
    *,
    downsample: int = 1,
    stack: str | None = None,
    n_frames: int = 8,
    path: str | os.PathLike | None = None,
) -> ObservedEntries:
    """A colour test image as a fully observed 3- or 4-way tensor.

    Parameters
    ----------
    name : str
        A colour image of the ``test-images`` folder (``"astronaut"``,
        ``"chelsea"``, ``"coffee"``, ``"china"``, ``"flower"``,
        ``"FaLRTC_testImg"``).
    downsample : int
        Average ``downsample x downsample`` pixel blocks (1: full size).
    stack : {None, "blur", "pan"}
        None: the ``h x w x 3`` image (Yao & Kwok Sec. 5.6). Otherwise an
        ``h x w x 3 x n_frames`` stack standing in for a hyperspectral or
        video tensor (no such data is available here), correlated along
        the new mode as those are: ``"blur"`` is a focal stack (frame k
        blurred by a Gaussian of k full-resolution pixels, before
        downsampling), ``"pan"`` a video of a camera panning right (frame k
        the image shifted by k downsampled pixels; the width shrinks by
        ``n_frames - 1``).
    n_frames : int
        Size of the fourth mode (at least 2).
    path : path, optional
        The ``test-images`` folder or a data root containing it.

    Returns
    -------
    ObservedEntries
        Every cell, values in [0, 1], indices in C order.

    Raises
    ------
    InvalidParameterError
        For an unknown stack, fewer than 2 frames or a downsampling factor
        below 1.
    DataValidationError
        For a grayscale image.
    """
    if stack is not None and stack not in STACKS:
        raise InvalidParameterError(
            "The 'stack' parameter of load_image_tensor must be None, 'blur' or "
            f"'pan'. Got {stack!r}."
        )
    for value, what, low in ((downsample, "downsample", 1), (n_frames, "n_frames", 2)):
        if not isinstance(value, int | np.integer) or value < low:
            raise InvalidParameterError(
                f"The '{what}' parameter of load_image_tensor must be an int >= "
                f"{low}. Got {value!r}."
            )
    img = load_test_image(name, path, gray=False)
    if img.ndim != 3:
        raise DataValidationError(
            f"Test image {name!r} is grayscale; pick a colour one (astronaut, "
            "chelsea, coffee, china, flower, FaLRTC_testImg)."
        )
    img = img[..., :3]
    dense = (
        _downsample(img, downsample)
        if stack is None
        else _stack(img, stack, n_frames, downsample)
    )
    idx = np.indices(dense.shape).reshape(dense.ndim, -1)
    return ObservedEntries(tuple(idx), dense.ravel(), dense.shape)
