"""Checks shared by the save / load tests: two estimators hold the same state."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn


def _strides(shape, strides) -> list:
    """The strides of the dimensions that have more than one element."""
    return [s for n, s in zip(shape, strides, strict=True) if n > 1]


def assert_same_value(a, b, where: str = "value") -> None:
    """``a`` and ``b`` are equal bit for bit, of the same types (recursively).

    Arrays and tensors must have the same dtype, shape, strides and bytes (NaN
    equal to NaN), tensors the same device, ``requires_grad`` and offset from a
    64-byte boundary: a loaded model computes with the same kernels as the one
    that saved it, so it answers bit for bit; modules the same
    class, attributes, parameters, buffers (non-persistent ones included) and
    sub-modules; other objects the same class and ``vars``.
    """
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.size > 1:
            assert _strides(a.shape, a.strides) == _strides(b.shape, b.strides), where
        if a.dtype.kind == "O":
            assert a.tolist() == b.tolist(), where
        else:
            assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.device) == (b.dtype, b.shape, b.device), where
        assert a.requires_grad == b.requires_grad, where
        if a.numel() > 1:
            assert _strides(a.shape, a.stride()) == _strides(b.shape, b.stride()), where
            assert a.data_ptr() % 64 == b.data_ptr() % 64, f"{where}: alignment"
        bits_a = a.detach().cpu().contiguous().view(-1).view(torch.uint8)
        bits_b = b.detach().cpu().contiguous().view(-1).view(torch.uint8)
        assert torch.equal(bits_a, bits_b), where
    elif isinstance(a, nn.Module):
        keys = sorted(k for k in vars(a) if not k.endswith("hooks"))
        assert keys == sorted(k for k in vars(b) if not k.endswith("hooks")), where
        for k in keys:
            assert_same_value(vars(a)[k], vars(b)[k], f"{where}.{k}")
    elif sp.issparse(a):
        assert a.format == b.format and a.shape == b.shape, where
        for part in ("data", "indices", "indptr", "row", "col"):
            if hasattr(a, part):
                assert_same_value(getattr(a, part), getattr(b, part), f"{where}.{part}")
    elif isinstance(a, np.random.Generator):
        assert a.bit_generator.state == b.bit_generator.state, where
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            assert_same_value(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_value(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    elif isinstance(a, (set, frozenset)):
        assert a == b, where
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        assert_same_value(vars(a), vars(b), where)
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def assert_same_estimator(a, b) -> None:
    """Same class, parameters (``callback`` aside) and fitted state."""
    assert type(a) is type(b)
    pa, pb = a.get_params(), b.get_params()
    pa.pop("callback", None), pb.pop("callback", None)
    assert_same_value(pa, pb, "params")
    state = {k: v for k, v in vars(a).items() if k not in a.get_params()}
    again = {k: v for k, v in vars(b).items() if k not in b.get_params()}
    assert_same_value(state, again, "state")
