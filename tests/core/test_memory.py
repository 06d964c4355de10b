"""Sizes refused before any allocation, and intervals that exclude infinity."""

import math

import numpy as np
import pytest
import torch

from embedopt._core import (
    DataValidationError,
    Interval,
    InvalidParameterError,
    check_memory,
    check_param,
    device_memory,
    format_bytes,
    memory,
)
from tests.conftest import requires_cuda


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (8 * 2**40, "8.0 TiB")],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_device_memory_of_the_cpu_is_known_here():
    total = device_memory(torch.device("cpu"))
    assert total is None or total > 2**26  # None only where sysconf is missing


def test_check_memory_names_what_and_how_much(monkeypatch):
    monkeypatch.setattr(memory, "device_memory", lambda device: 16 * 2**30)
    cpu = torch.device("cpu")
    check_memory("Owner", 16 * 2**30, cpu, "the state")  # fits exactly: no error
    with pytest.raises(DataValidationError) as exc:
        check_memory("Owner", 2**41, cpu, "the 2 x 3 state", "Remap the ids.")
    assert str(exc.value) == (
        "Owner: the 2 x 3 state would take at least 2.0 TiB, more than the 16.0 "
        "GiB of memory of the cpu device. Remap the ids."
    )
    monkeypatch.setattr(memory, "device_memory", lambda device: None)
    check_memory("Owner", 2**80, cpu, "anything")  # unknown: the allocator decides


@pytest.mark.parametrize("value", [math.inf, np.inf, float("-inf"), np.float32("inf")])
def test_an_unbounded_interval_excludes_infinity(value):
    with pytest.raises(InvalidParameterError, match=r"a float in \(-inf, inf\)"):
        check_param("Owner", "lam", value, [Interval(float, None, None)])
    assert not Interval(float, 0, None).is_satisfied_by(value)


def test_an_explicit_infinite_bound_admits_infinity_when_closed():
    assert Interval(float, 0, math.inf, closed="both").is_satisfied_by(math.inf)
    assert not Interval(float, 0, math.inf, closed="left").is_satisfied_by(math.inf)
    assert Interval(float, 0, None).is_satisfied_by(1e308)


@pytest.mark.gpu
@requires_cuda
@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")  # the stray index
def test_cuda_sizes_are_checked_against_the_gpu_memory():
    from embedopt.completion import MatrixCompletion

    cuda = torch.device("cuda")
    total = device_memory(cuda)
    assert total == torch.cuda.get_device_properties(cuda).total_memory
    rows = np.array([0, 1, 2**34])  # 1 TiB of state: more than any GPU holds
    with pytest.raises(DataValidationError, match="of the cuda device"):
        MatrixCompletion(1.0, device="cuda").fit((rows, [0, 1, 2], [1.0, 2, 3]))
