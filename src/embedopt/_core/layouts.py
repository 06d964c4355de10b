"""How saved arrays and tensors sit in memory, and how loading puts them back.

A fitted model computes with the arrays it holds: a BLAS product takes
another kernel for a transposed operand, and MKL documents results that
depend on the alignment of its inputs. So a loaded model answers bit for bit
as the one that saved it, on the same machine, only if its arrays have the
same strides and its tensors the same offset from torch's 64-byte
allocation boundary (a ``ProductQuantizer`` with a transposed rotation
answered one float32 ulp off on AVX-512 when loading made it contiguous).
:mod:`embedopt._core.persistence` stores :func:`layout` beside each array
that C order at an aligned start would not reproduce, and loads through
:func:`placed_array` / :func:`placed_tensor`; :func:`read_npy` reads each
``.npy`` member into a 64-byte aligned buffer, so that a tensor in C order
needs no copy. A view with gaps or negative strides (a column slice, a
broadcast) is stored dense, its dimensions in the same memory order.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["ALIGN", "layout", "placed_array", "placed_tensor", "read_npy"]

#: Alignment, in bytes, of torch's CPU allocator (c10's gAlignment).
ALIGN = 64

_NPY_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _c_strides(shape) -> list[int]:
    """The strides, in elements, of C order."""
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= max(int(size), 1)
    return out[::-1]


def _dense(shape, strides) -> bool:
    """Whether the elements fill ``prod(shape)`` slots without gaps or overlaps.

    A dimension of size 1 may have any stride; the others, ordered by stride,
    step by the product of the sizes inside them (C, Fortran or any
    permutation of them).
    """
    step = 1
    for size, stride in sorted(
        ((int(n), int(s)) for n, s in zip(shape, strides, strict=True) if n > 1),
        key=lambda p: p[1],
    ):
        if stride != step:
            return False
        step *= size
    return True


def _dense_like(shape, strides) -> list[int]:
    """Dense strides with the dimensions in the memory order of ``strides``."""
    order = sorted(range(len(shape)), key=lambda d: (-abs(strides[d]), d))
    out, step = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return out


def layout(
    shape: Sequence[int], strides: Sequence[int], itemsize: int, address: int | None
) -> dict | None:
    """The layout to store for an array, or None for C order at an aligned start.

    Parameters
    ----------
    shape : sequence of int
    strides : sequence of int
        In elements.
    itemsize : int
        Bytes per element.
    address : int or None
        A tensor's ``data_ptr()``: its offset from :data:`ALIGN` is kept.
        None for a NumPy array, whose allocations have no fixed alignment.

    Returns
    -------
    dict or None
        ``{"strides": [...], "offset": k}`` (strides in elements, dense; the
        offset in elements from an aligned start).
    """
    if math.prod(shape) < 2:
        return None
    strides = [int(s) for s in strides]
    if not _dense(shape, strides):
        strides = _dense_like(shape, strides)
    misalign = 0 if address is None else address % ALIGN
    offset = misalign // itemsize if misalign % itemsize == 0 else 0
    if strides == _c_strides(shape) and offset == 0:
        return None
    return {"strides": strides, "offset": offset}


def _checked(kept: dict | None, shape, itemsize: int) -> tuple[list[int], int]:
    """The (strides, offset) of a stored layout (None: C order, aligned)."""
    if kept is None:
        return _c_strides(shape), 0
    strides, offset = kept["strides"], kept["offset"]
    ok = (
        isinstance(strides, list)
        and len(strides) == len(shape)
        and all(type(s) is int and s >= 0 for s in strides)
        and _dense(shape, strides)
        and type(offset) is int
        and 0 <= offset * itemsize < ALIGN
    )
    if not ok:  # a file edited with its checksums redone
        raise ValueError(f"layout {kept!r} of an array of shape {list(shape)}")
    return strides, offset


def placed_array(arr: np.ndarray, kept: dict | None) -> np.ndarray:
    """``arr`` (read in C order) with the strides it was saved with.

    Parameters
    ----------
    arr : numpy.ndarray
    kept : dict or None
        What :func:`layout` returned at save time. None keeps ``arr`` as
        ``.npy`` gave it (C, or Fortran order in files of older versions).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        If ``kept`` is not a dense layout of ``arr``'s shape.
    """
    if kept is None:
        return arr
    strides, _ = _checked(kept, arr.shape, arr.itemsize)
    if [s // arr.itemsize for s in arr.strides] == strides:
        return arr
    order = sorted(range(arr.ndim), key=lambda d: -strides[d])
    # allocate in memory order, then view it back in the saved dimension order
    out = np.empty([arr.shape[d] for d in order], arr.dtype).transpose(
        np.argsort(order)
    )
    out[...] = arr
    return np.lib.stride_tricks.as_strided(
        out, strides=[s * arr.itemsize for s in strides], writeable=True
    )


def placed_tensor(
    t: torch.Tensor, kept: dict | None, device: torch.device
) -> torch.Tensor:
    """``t`` on ``device``, with the strides and alignment it was saved with.

    Parameters
    ----------
    t : torch.Tensor
        As read, in C order (on the CPU, over NumPy memory).
    kept : dict or None
        What :func:`layout` returned at save time (None: C order, aligned).
    device : torch.device

    Returns
    -------
    torch.Tensor
        ``t`` itself where it already sits as saved, else a copy.

    Raises
    ------
    ValueError
        If ``kept`` is not a dense layout of ``t``'s shape.
    """
    size = t.element_size()
    strides, offset = _checked(kept, t.shape, size)
    if (
        t.device == device
        and list(t.stride()) == strides
        and t.data_ptr() % ALIGN == offset * size
    ):
        return t
    extent = 1 + sum((n - 1) * s for n, s in zip(t.shape, strides, strict=True))
    if t.numel() == 0:
        extent = 0
    base = torch.empty(
        extent + (ALIGN // size if offset else 0), dtype=t.dtype, device=device
    )
    start = ((offset * size - base.data_ptr()) % ALIGN) // size if offset else 0
    return base.as_strided(tuple(t.shape), strides, start).copy_(t)


def read_npy(data: bytes) -> np.ndarray:
    """The array of an ``.npy`` file's bytes, in a buffer aligned to :data:`ALIGN`.

    The header is parsed once and must declare exactly the bytes that follow
    it: NumPy's reader allocates the declared array before reading, so a
    1 KiB file could otherwise ask for terabytes. Object arrays are refused
    (nothing is unpickled).

    Parameters
    ----------
    data : bytes

    Returns
    -------
    numpy.ndarray
        C order, or Fortran order where the header says so.

    Raises
    ------
    ValueError
        For another format version, an object dtype, or sizes that disagree.
    """
    buf = io.BytesIO(data)
    version = np.lib.format.read_magic(buf)
    if version not in _NPY_HEADERS:
        raise ValueError(f"npy format version {version}")
    shape, fortran, dtype = _NPY_HEADERS[version](buf)
    if dtype.hasobject:
        raise ValueError("an array of Python objects")
    start, nbytes = buf.tell(), math.prod(shape) * dtype.itemsize
    held = len(data) - start
    if nbytes != held:
        raise ValueError(f"declares {nbytes} bytes of data and holds {held}")
    raw = np.empty(nbytes + ALIGN, np.uint8)
    skip = -raw.ctypes.data % ALIGN
    out = raw[skip : skip + nbytes]
    out[:] = np.frombuffer(data, np.uint8, count=nbytes, offset=start)
    arr = out.view(dtype)
    return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
