"""The PQ kernels after their move from quantization to linalg."""

import torch

import embedopt.quantization as q
from embedopt.linalg import codebooks as cb
from embedopt.quantization import codebooks as old


def test_old_path_reexports_the_same_functions():
    for name in old.__all__:
        assert getattr(old, name) is getattr(cb, name)
    assert q.adc_search is cb.adc_search


def test_adc_search_equals_the_naive_scan_on_reconstructions():
    g = torch.Generator().manual_seed(0)
    M, K, ds, N = 4, 8, 3, 300
    C = torch.randn(M, K, ds, generator=g, dtype=torch.float64)
    codes = torch.randint(0, K, (N, M), generator=g).to(torch.uint8)
    Q = torch.randn(7, M * ds, generator=g, dtype=torch.float64)
    recon = cb.decode(codes, C)
    for metric, naive, largest in (
        ("ip", Q @ recon.T, True),
        ("l2", torch.cdist(Q, recon) ** 2, False),
    ):
        s, i = cb.adc_search(Q, codes, C, 5, metric=metric, db_batch=64)
        ref_s = torch.topk(naive, 5, dim=1, largest=largest).values
        torch.testing.assert_close(s, ref_s)  # items may share a code: ties
        torch.testing.assert_close(torch.gather(naive, 1, i), s)
