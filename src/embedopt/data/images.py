"""Loader for the grayscale test images used in image completion."""

from __future__ import annotations

import os

import numpy as np

from ._paths import find_dataset_dir

__all__ = ["load_test_image"]


def load_test_image(
    name: str = "camera", path: str | os.PathLike | None = None, *, gray: bool = True
) -> np.ndarray:
    """Read a test image (PNG or JPEG) as a float array in [0, 1].

    Parameters
    ----------
    name : str
        File stem in the ``test-images`` folder, e.g. ``"camera"``, ``"brick"``,
        ``"grass"``, ``"moon"`` (PNG) or ``"china"`` (JPEG).
    path : path, optional
        The ``test-images`` folder or a data root containing it; default
        ``$EMBEDOPT_DATA/test-images``.
    gray : bool
        Convert colour images to luminance (ITU-R 601 weights).

    Returns
    -------
    numpy.ndarray of float64
        ``(h, w)`` when gray, else ``(h, w, channels)``.
    """
    candidates = (f"{name}.png", f"{name}.jpg")
    folder = find_dataset_dir("test-images", candidates, path)
    file = next(folder / c for c in candidates if (folder / c).is_file())
    import matplotlib.image as mpimg

    img = np.asarray(mpimg.imread(file), dtype=np.float64)
    if img.max() > 1.0:  # JPEG through Pillow gives 0..255
        img = img / 255.0
    if gray and img.ndim == 3:
        img = img[..., :3] @ np.array([0.299, 0.587, 0.114])
    return img
