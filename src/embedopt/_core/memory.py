"""Refuse, before any allocation, problems whose dense state cannot fit.

An estimator whose state grows with the number of rows, objects or users (a
factor row, a centering offset, an embedding row per index) checks the bytes
that state needs against the memory of the device it runs on. A stray index
of 2**40, or a shape of (2**31, 20), then ends in one clear
:class:`DataValidationError` naming the size, instead of a NumPy
``MemoryError``, a torch allocator error, or the operating system's
out-of-memory killer minutes later.
"""

from __future__ import annotations

import os

import torch

from .device import DeviceLike, DtypeLike, resolve_device, resolve_dtype
from .exceptions import DataValidationError

__all__ = [
    "check_memory",
    "check_tensor_memory",
    "device_memory",
    "format_bytes",
]


def device_memory(device: torch.device) -> int | None:
    """Total memory of a device in bytes (RAM for the CPU), or None if unknown.

    Parameters
    ----------
    device : torch.device

    Returns
    -------
    int or None
    """
    if device.type == "cuda":
        try:
            return int(torch.cuda.get_device_properties(device).total_memory)
        except (RuntimeError, AssertionError):
            return None
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None  # no sysconf (Windows): the allocator reports instead


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``"8.0 TiB"``.

    Parameters
    ----------
    n : float
        A number of bytes.

    Returns
    -------
    str
        Whole bytes below 1 KiB (``"512 B"``), else one decimal of the
        largest binary unit that keeps the number at or above 1.
    """
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    k = 0
    while n >= 1024 and k < len(units) - 1:
        n /= 1024
        k += 1
    return f"{n:.0f} B" if k == 0 else f"{n:.1f} {units[k]}"


def check_memory(
    owner: str, n_bytes: float, device: torch.device, what: str, hint: str = ""
) -> None:
    """Raise when ``n_bytes`` exceed the memory of ``device``.

    Parameters
    ----------
    owner : str
        The estimator or function, for the message.
    n_bytes : float
        A lower bound of what the run will allocate.
    device : torch.device
    what : str
        What needs the memory, e.g. ``"the 1099511627777 x 50 matrix's
        per-row and per-column state"``.
    hint : str
        How to fix it, appended to the message.

    Raises
    ------
    DataValidationError
        When the device's memory is known and smaller than ``n_bytes``.
    """
    total = device_memory(device)
    if total is None or n_bytes <= total:
        return
    raise DataValidationError(
        f"{owner}: {what} would take at least {format_bytes(n_bytes)}, more than "
        f"the {format_bytes(total)} of memory of the {device.type} device."
        + (f" {hint}" if hint else "")
    )


def check_tensor_memory(
    owner: str,
    n_elements: int,
    device: DeviceLike,
    dtype: DtypeLike,
    what: str,
    hint: str = "",
) -> None:
    """:func:`check_memory` for ``n_elements`` numbers of ``dtype``.

    Solvers check their state before they resolve device and dtype, so both
    are taken as given by the user and resolved here.

    Parameters
    ----------
    owner : str
    n_elements : int
        How many numbers the state holds at least.
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device
    dtype : {"float32", "float64"}, torch or numpy dtype, or None (float32)
    what, hint : str
        As in :func:`check_memory`.

    Raises
    ------
    DataValidationError
        When the device's memory is known and smaller than the state.
    """
    itemsize = torch.empty((), dtype=resolve_dtype(dtype)).element_size()
    check_memory(owner, n_elements * itemsize, resolve_device(device), what, hint)
