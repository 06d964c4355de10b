"""What a fit keeps per observed entry (issue 25): no stored identity
permutation, no cached zeros, float64 loss sums in slices, same results."""

import numpy as np
import pytest
import torch

from embedopt.completion import CompletionProblem, ais_impute
from embedopt.completion import losses as losses_module
from embedopt.completion.losses import LogisticLoss, SquareLoss
from embedopt.data import ObservedEntries, make_low_rank_matrix
from embedopt.linalg import SparsePattern


def _entries(shuffle: bool):
    obs = make_low_rank_matrix(60, rank=3, random_state=0).observed
    perm = np.random.default_rng(1).permutation(obs.nnz)
    if not shuffle:  # CSR order: sorted by row, then column
        perm = np.lexsort((obs.cols, obs.rows))
    return ObservedEntries(obs.indices[perm], obs.values[perm], obs.shape)


@pytest.mark.parametrize("shuffle", [False, True])
def test_pattern_order_is_stored_only_when_needed(shuffle):
    e = _entries(shuffle)
    pat = SparsePattern(e.rows, e.cols, e.shape)
    assert pat.is_input_order is (not shuffle)
    order = pat.order
    assert order.dtype == torch.int64
    expect = np.lexsort((e.cols, e.rows))
    np.testing.assert_array_equal(order.numpy(), expect)
    np.testing.assert_array_equal(pat.col.numpy(), e.cols[expect])
    if shuffle:
        assert pat._order.dtype == torch.int32  # half of int64
    # int32 input positions are not widened before use
    p32 = SparsePattern(e.rows.astype(np.int32), e.cols.astype(np.int32), e.shape)
    assert torch.equal(p32.crow, pat.crow) and torch.equal(p32.col, pat.col)


def test_sampled_dot_matches_the_naive_product_and_caches_nothing():
    e = _entries(True)
    pat = SparsePattern(e.rows, e.cols, e.shape)
    A, B = torch.randn(60, 4), torch.randn(60, 4)
    got = pat.sampled_dot(A, B)
    order = pat.order.numpy()
    naive = (A[e.rows[order]] * B[e.cols[order]]).sum(1)
    torch.testing.assert_close(got, naive)
    assert not hasattr(pat, "_zeros")
    assert pat.sampled_dot(A, B).data_ptr() != got.data_ptr()  # a new tensor
    A.requires_grad_(True)
    pat.sampled_dot(A, B).sum().backward()  # autograd keeps working
    assert A.grad is not None


@pytest.mark.parametrize("loss", [SquareLoss(), LogisticLoss()])
def test_loss_total_in_slices_equals_one_sum(loss, monkeypatch):
    x = torch.randn(10_001, dtype=torch.float32)
    y = torch.sign(torch.randn(10_001)).float()
    whole = loss.total(x, y)
    monkeypatch.setattr(losses_module, "TOTAL_CHUNK", 1000)
    sliced = loss.total(x, y)
    # the same float32 losses (up to the rounding of vectorized tails), summed
    # in float64 either way
    assert sliced == pytest.approx(whole, rel=1e-7)
    exact = float(loss.value(x.double(), y.double()).sum())
    assert sliced == pytest.approx(exact, rel=1e-6)


def test_sorted_and_shuffled_input_give_the_same_fit():
    sorted_, shuffled = _entries(False), _entries(True)
    fits = [
        ais_impute(e, lam=3.0, random_state=0, max_iter=30) for e in (sorted_, shuffled)
    ]
    for a, b in zip(fits[0].x, fits[1].x, strict=True):
        torch.testing.assert_close(a, b)


def test_problem_values_are_a_copy_in_the_problem_dtype():
    e = _entries(False)
    values = e.values.astype(np.float32)
    f32 = ObservedEntries(e.indices, values, e.shape)
    problem = CompletionProblem(f32, dtype="float32")
    assert problem.y.dtype == torch.float32
    problem.y[0] += 1  # the caller's array is not the problem's
    assert values[0] == f32.values[0] and problem.y[0] != values[0]
    p64 = CompletionProblem(e, dtype="float32")
    np.testing.assert_array_equal(p64.y.numpy(), e.values.astype(np.float32))
