"""CUDA path of the sdp oracles and solvers: the same answers as on CPU."""

import pytest
import torch

from embedopt.sdp import SOLVERS
from tests.conftest import requires_cuda
from tests.sdp._common import tiny_npkl

pytestmark = [pytest.mark.gpu, requires_cuda]


@pytest.mark.parametrize("name", list(SOLVERS))
def test_solvers_agree_on_cpu_and_cuda(name):
    cpu, gpu = tiny_npkl(), tiny_npkl(device="cuda")
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(cpu.n, 3, dtype=torch.float64, generator=gen)
    assert gpu.value(X.cuda(), X.cuda()) == pytest.approx(cpu.value(X, X), rel=1e-12)
    a = SOLVERS.get(name)(cpu, X, max_iter=2000, tol=1e-12)
    b = SOLVERS.get(name)(gpu, X, max_iter=2000, tol=1e-12)
    assert b.x.is_cuda
    assert b.history["objective"][-1] == pytest.approx(
        a.history["objective"][-1], rel=1e-8
    )
