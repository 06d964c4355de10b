"""Device and dtype resolution.

``device="auto" | "cpu" | "cuda" | "cuda:1" | torch.device`` is resolved once, at
the top of ``fit`` or of a solver. Asking for CUDA where there is none is an
error (:class:`DeviceUnavailableError`), never a silent fallback.

``"auto"`` means the first CUDA device when there is one, unless the
environment variable ``EMBEDOPT_DEVICE`` names a device: a service that must
stay on the CPU of a GPU machine, or a test run that must mean the same on
every machine, sets it once instead of passing ``device=`` to every estimator.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from numpy.typing import ArrayLike

from .exceptions import DeviceUnavailableError, InvalidParameterError

__all__ = ["DeviceLike", "DtypeLike", "resolve_device", "resolve_dtype", "to_numpy"]

#: The environment variable that decides what ``device="auto"`` means.
DEVICE_ENV = "EMBEDOPT_DEVICE"

#: What a ``device`` parameter accepts (see :func:`resolve_device`).
DeviceLike = str | torch.device | None
#: What a ``dtype`` parameter accepts (see :func:`resolve_dtype`).
DtypeLike = str | torch.dtype | np.dtype | type | None

_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float": torch.float32,
    "double": torch.float64,
}


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Turn a device specification into a :class:`torch.device`.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device or None
        ``"auto"`` (and None) pick the device named by the environment
        variable ``EMBEDOPT_DEVICE`` when it is set, else the first CUDA device
        when one is available and the CPU otherwise.

    Returns
    -------
    torch.device

    Raises
    ------
    DeviceUnavailableError
        If a CUDA device is requested but none (or not that index) exists.
    InvalidParameterError
        If the specification cannot be parsed.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        forced = os.environ.get(DEVICE_ENV, "").strip()
        if forced and forced != "auto":
            return _forced_device(forced)
        return (
            torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InvalidParameterError(
            "The 'device' parameter must be 'auto', 'cpu', 'cuda', 'cuda:N' or a "
            f"torch.device. Got {device!r}."
        ) from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"device={device!r} was requested but CUDA is not available on this "
                "machine (torch.cuda.is_available() is False). Use device='cpu' or "
                "device='auto'."
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(
                f"device={device!r} was requested but only "
                f"{torch.cuda.device_count()} CUDA device(s) exist."
            )
    elif dev.type != "cpu":
        raise InvalidParameterError(
            "The 'device' parameter must be 'auto', 'cpu', 'cuda', 'cuda:N' or a "
            f"torch.device. Got {device!r}."
        )
    return dev


def _forced_device(spec: str) -> torch.device:
    """The device ``EMBEDOPT_DEVICE`` names, with errors that name the variable."""
    try:
        return resolve_device(spec)
    except (DeviceUnavailableError, InvalidParameterError) as exc:
        raise type(exc)(
            f"The environment variable {DEVICE_ENV}={spec!r} decides what "
            f"device='auto' means, and it failed: {exc} Unset it, or set it to "
            "'cpu', 'cuda' or 'cuda:N'."
        ) from None


def resolve_dtype(dtype: DtypeLike) -> torch.dtype:
    """Turn a floating dtype specification into a :class:`torch.dtype`.

    Parameters
    ----------
    dtype : {"float32", "float64"}, torch.dtype, numpy dtype or None
        None means float32, the library default for data.

    Returns
    -------
    torch.dtype
        ``torch.float32`` or ``torch.float64``.
    """
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        if dtype in (torch.float32, torch.float64):
            return dtype
    elif isinstance(dtype, str) and dtype in _DTYPES:
        return _DTYPES[dtype]
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name in ("float32", "float64"):
            return _DTYPES[name]
    raise InvalidParameterError(
        "The 'dtype' parameter must be 'float32' or 'float64' (or the matching "
        f"torch/numpy dtype). Got {dtype!r}."
    )


def to_numpy(x: torch.Tensor | ArrayLike) -> np.ndarray:
    """Return a NumPy copy-or-view of a tensor (detached, on the CPU)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)
