"""few_threads: a scoped limit that always restores the caller's settings."""

import pytest
import torch

from embedopt._core import few_threads


@pytest.fixture
def two_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


def test_limits_torch_inside_and_restores_after(two_threads):
    with few_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_restores_after_an_error_and_is_a_no_op_when_disabled(two_threads):
    with pytest.raises(RuntimeError), few_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 2
    with few_threads(1, enabled=False):
        assert torch.get_num_threads() == 2


def test_limits_the_blas_pools_when_threadpoolctl_is_there(two_threads):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with few_threads(1):
        blas = threadpoolctl.threadpool_info()
        assert all(p["num_threads"] == 1 for p in blas if p["user_api"] == "blas")


def test_a_small_lbfgs_fit_leaves_the_thread_setting_alone(two_threads):
    from embedopt.ordinal import OrdinalEmbedding

    OrdinalEmbedding(2, random_state=0).fit([[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    assert torch.get_num_threads() == 2
