"""The same torch code path on CUDA (skipped without a GPU)."""

import numpy as np
import pytest
import torch

from embedopt.linalg import orthogonality_error
from embedopt.optim import GivensOptimizer, GreedyMatching
from embedopt.quantization import ProductQuantizer
from tests.conftest import requires_cuda

pytestmark = [
    pytest.mark.gpu,
    requires_cuda,
    pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning"),
]


def test_product_quantizer_on_cuda_matches_cpu_search():
    X = np.random.default_rng(0).standard_normal((500, 16)).astype(np.float32)
    kw = dict(rotation="gcd-g", max_iter=3, random_state=0)
    gpu = ProductQuantizer(4, 16, device="cuda", **kw).fit(X)
    assert gpu.rotation_tensor_.device.type == "cuda"
    codes = gpu.encode(X)
    _, ids = gpu.search(X[:5], codes, k=3)
    rec = gpu.decode(codes)
    brute = ((X[:5, None, :] - rec[None]) ** 2).sum(-1)
    # the ids of the 3 nearest reconstructions; where two are equally near to
    # float32 rounding (the ADC tables and the brute force round apart) either
    # order is right, so the distances are compared, and the ids elsewhere
    found = np.take_along_axis(brute, ids, 1)
    best = np.sort(brute, 1)[:, :3]
    np.testing.assert_allclose(found, best, rtol=1e-5)
    tied = np.isclose(best[:, :, None], brute[:, None, :], rtol=1e-5).sum(-1) > 1
    np.testing.assert_array_equal(ids[~tied], np.argsort(brute, 1)[:, :3][~tied])


def test_givens_optimizer_and_greedy_matching_on_cuda():
    A = torch.randn(64, 64, device="cuda")
    A = A - A.T
    i, j = GreedyMatching()(A)
    assert i.device.type == "cuda" and len(set(torch.cat([i, j]).tolist())) == 64
    R = torch.nn.Parameter(torch.eye(32, device="cuda"))
    opt = GivensOptimizer([R], lr=0.05)
    X = torch.randn(128, 32, device="cuda")
    for _ in range(20):
        opt.zero_grad()
        ((X @ R - X.flip(1)) ** 2).sum(1).mean().backward()
        opt.step()
    assert orthogonality_error(R) < 1e-5
