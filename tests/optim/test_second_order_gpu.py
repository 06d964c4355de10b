"""CUDA paths of CG, Newton-CG, L-BFGS and the line search: same answers as on CPU."""

import pytest
import torch

from embedopt.linalg import cg
from embedopt.optim import AutogradObjective, armijo_backtracking, lbfgs, newton_cg
from tests.conftest import requires_cuda

pytestmark = [pytest.mark.gpu, requires_cuda]

D = torch.float64


def _problem(device):
    g = torch.Generator().manual_seed(0)
    B = torch.randn(20, 20, dtype=D, generator=g)
    A = (B @ B.T + torch.eye(20, dtype=D)).to(device)
    b = torch.randn(20, dtype=D, generator=g).to(device)
    return A, b


def test_cg_on_cuda_matches_cpu_on_factor_tuples():
    A, b = _problem("cpu")
    Ag, bg = A.cuda(), b.cuda()
    cpu = cg(lambda v: (A @ v[0], 2 * v[1]), (b, b[:5]), rtol=1e-12)
    gpu = cg(lambda v: (Ag @ v[0], 2 * v[1]), (bg, bg[:5]), rtol=1e-12)
    assert gpu.x[0].is_cuda and gpu.converged
    torch.testing.assert_close(gpu.x[0].cpu(), cpu.x[0])
    torch.testing.assert_close(gpu.x[1].cpu(), cpu.x[1])


def test_newton_lbfgs_and_line_search_on_cuda():
    A, b = _problem("cuda")

    def f(x):
        return 0.5 * x @ A @ x - b @ x + 0.1 * (x**4).sum()

    obj = AutogradObjective(f)
    x0 = torch.zeros(20, dtype=D, device="cuda")
    res = newton_cg(obj, x0, tol=1e-10, cg_rtol=1e-8)
    assert res.converged and res.x.is_cuda
    ref = lbfgs(obj.value_and_grad, x0, tol=1e-12, max_iter=500)
    assert ref.x.is_cuda
    torch.testing.assert_close(res.x, ref.x, atol=1e-5, rtol=0)  # L-BFGS: ftol
    f0, g0 = obj.value_and_grad(x0)
    ls = armijo_backtracking(obj.value_and_grad, x0, f0, g0, -g0)
    assert ls.success and ls.x.is_cuda and ls.value < f0
