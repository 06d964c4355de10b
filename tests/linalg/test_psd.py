"""PSD projections and embeddings from Gram matrices (moved from ordinal)."""

import torch

from embedopt.linalg import embedding_from_gram, project_centered_psd, project_psd

D = torch.float64


def test_projection_onto_centered_psd_cone():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(6, 6, dtype=torch.float64, generator=g)
    P = project_centered_psd(A)
    assert torch.allclose(P, P.T) and torch.linalg.eigvalsh(P).min() > -1e-12
    assert torch.allclose(
        P @ torch.ones(6, dtype=torch.float64),
        torch.zeros(6, dtype=torch.float64),
        atol=1e-12,
    )
    torch.testing.assert_close(project_centered_psd(P), P)  # idempotent
    assert torch.linalg.matrix_rank(project_centered_psd(A, rank=1)) <= 1


def test_project_psd_is_the_nearest_psd_matrix():
    g = torch.Generator().manual_seed(1)
    A = torch.randn(7, 7, dtype=D, generator=g)
    P = project_psd(A)
    assert torch.allclose(P, P.T) and torch.linalg.eigvalsh(P).min() > -1e-12
    torch.testing.assert_close(project_psd(P), P)  # idempotent
    # Optimality: <A_sym - P, Z - P> <= 0 for every PSD Z (here random X X^T).
    S = 0.5 * (A + A.T)
    for seed in range(5):
        X = torch.randn(7, 3, dtype=D, generator=torch.Generator().manual_seed(seed))
        assert float(((S - P) * (X @ X.T - P)).sum()) <= 1e-10
    Pr = project_psd(A, rank=2)
    assert torch.linalg.matrix_rank(Pr) <= 2
    torch.testing.assert_close(
        torch.linalg.eigvalsh(Pr)[-2:], torch.linalg.eigvalsh(S)[-2:].clamp(min=0)
    )


def test_embedding_from_gram_recovers_points_up_to_rotation():
    g = torch.Generator().manual_seed(2)
    X = torch.randn(10, 3, dtype=D, generator=g)
    E = embedding_from_gram(X @ X.T, 3)
    assert E.shape == (10, 3)
    torch.testing.assert_close(E @ E.T, X @ X.T)
    # fewer components: the best rank-p approximation
    E2 = embedding_from_gram(X @ X.T, 2)
    w = torch.linalg.eigvalsh(X @ X.T)
    err = torch.linalg.matrix_norm(X @ X.T - E2 @ E2.T, ord=2)
    assert float(err) == float(w[-3]) or abs(float(err) - float(w[-3])) < 1e-10


def test_ordinal_still_exports_the_gram_helpers():
    from embedopt import ordinal

    assert ordinal.embedding_from_gram is embedding_from_gram
    assert ordinal.project_centered_psd is project_centered_psd
