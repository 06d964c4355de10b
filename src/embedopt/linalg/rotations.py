"""Rotations: Givens rotations, directional derivatives on SO(n), Procrustes, Cayley.

Conventions follow Jiang et al., "Givens Coordinate Descent Methods for Rotation
Matrix Learning in Trainable Embedding Indexes" (Definition 2): the Givens
rotation ``G_ij(theta)`` is the identity except

    G_ii = cos(theta),  G_ij = -sin(theta),  G_ji = sin(theta),  G_jj = cos(theta).

A set of *disjoint* pairs ``(i_l, j_l)`` (no axis used twice) gives up to n/2
commuting rotations (a maximal torus of SO(n), Lemma 2); their product is applied
to an n x n matrix by touching only the 2 columns (or rows) of each pair, i.e.
``O(n^2)`` work for n/2 pairs, without forming the dense product.
"""

from __future__ import annotations

import torch

from .._core import DataValidationError, InvalidParameterError

__all__ = [
    "apply_givens",
    "apply_givens_sequence",
    "cayley",
    "givens_directional_derivatives",
    "givens_matrix",
    "orthogonality_error",
    "procrustes",
    "reorthogonalize",
]


def givens_matrix(
    n: int,
    i: int,
    j: int,
    theta: float,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The dense n x n Givens rotation ``G_ij(theta)`` (paper, Definition 2).

    Meant for tests and small references; solvers use :func:`apply_givens`.

    Parameters
    ----------
    n : int
        Dimension.
    i, j : int
        The rotation plane (``i != j``).
    theta : float
        Angle in radians.
    dtype : torch.dtype
    device : torch.device or str, optional

    Returns
    -------
    torch.Tensor, shape (n, n)
    """
    if i == j or not (0 <= i < n and 0 <= j < n):
        raise InvalidParameterError(
            f"givens_matrix needs two distinct axes in [0, {n}); got i={i}, j={j}."
        )
    G = torch.eye(n, dtype=dtype, device=device)
    c, s = (
        torch.cos(torch.tensor(theta, dtype=dtype)),
        torch.sin(torch.tensor(theta, dtype=dtype)),
    )
    G[i, i], G[j, j], G[i, j], G[j, i] = c, c, -s, s
    return G


def _check_pairs(i: torch.Tensor, j: torch.Tensor, theta: torch.Tensor, n: int):
    if i.shape != j.shape or i.shape != theta.shape or i.ndim != 1:
        raise DataValidationError(
            "Givens pairs need 1-D i, j and theta of equal length; got shapes "
            f"{tuple(i.shape)}, {tuple(j.shape)}, {tuple(theta.shape)}."
        )
    if i.numel() and (
        int(torch.minimum(i, j).min()) < 0 or int(torch.maximum(i, j).max()) >= n
    ):
        raise DataValidationError(f"Givens pair indices must lie in [0, {n}).")


def apply_givens(
    R: torch.Tensor,
    i: torch.Tensor,
    j: torch.Tensor,
    theta: torch.Tensor,
    *,
    dim: int = 1,
    check: bool = False,
) -> torch.Tensor:
    """Multiply by a product of commuting Givens rotations, in place.

    With ``P = prod_l G_{i_l j_l}(theta_l)`` over *disjoint* pairs,
    ``dim=1`` computes ``R <- R P`` (mixes columns ``i_l`` and ``j_l``: the update
    of Algorithm 2, line 8) and ``dim=0`` computes ``R <- P^T R`` (mixes rows).
    Cost ``O(n * len(i))``, i.e. ``O(n^2)`` for n/2 pairs; no dense rotation is
    formed.

    Parameters
    ----------
    R : torch.Tensor, shape (n, n) or (m, n) for ``dim=1`` / (n, k) for ``dim=0``
        Updated in place (and returned).
    i, j : torch.Tensor of int64, shape (p,)
        Pairs; no index may appear twice among ``i`` and ``j`` together (use
        :func:`apply_givens_sequence` otherwise).
    theta : torch.Tensor, shape (p,)
        Angles.
    dim : {0, 1}
        1: act on columns (right multiplication); 0: act on rows.
    check : bool
        Verify that the pairs are disjoint (one extra O(p) pass).

    Returns
    -------
    torch.Tensor
        ``R``.
    """
    if dim not in (0, 1):
        raise InvalidParameterError(f"apply_givens: dim must be 0 or 1; got {dim}.")
    n = R.shape[dim]
    if check:
        _check_pairs(i, j, theta, n)
        both = torch.cat([i, j])
        if torch.unique(both).numel() != both.numel():
            raise DataValidationError(
                "apply_givens needs disjoint pairs (no axis used twice); use "
                "apply_givens_sequence for overlapping pairs."
            )
    if i.numel() == 0:
        return R
    c = torch.cos(theta).to(R.dtype)
    s = torch.sin(theta).to(R.dtype)
    if dim == 1:
        # index_select/index_copy_ are ~2x faster than advanced indexing for
        # column gathers of a row-major matrix (measured at n = 1024).
        Ri, Rj = R.index_select(1, i), R.index_select(1, j)
        # (R G)[:, i] = c R_i + s R_j ;  (R G)[:, j] = -s R_i + c R_j  (Def. 2).
        R.index_copy_(1, i, Ri * c + Rj * s)
        R.index_copy_(1, j, Rj * c - Ri * s)
    else:
        Ri, Rj = R[i, :], R[j, :]
        c, s = c[:, None], s[:, None]
        # (G^T Z)[i] = c Z_i + s Z_j ; (G^T Z)[j] = -s Z_i + c Z_j.
        R[i, :] = Ri * c + Rj * s
        R[j, :] = Rj * c - Ri * s
    return R


def _disjoint_runs(i: torch.Tensor, j: torch.Tensor) -> list[tuple[int, int]]:
    """Split a pair sequence into maximal consecutive runs of disjoint pairs."""
    runs, start, used = [], 0, set()
    for k, (a, b) in enumerate(zip(i.tolist(), j.tolist(), strict=True)):
        if a in used or b in used:
            runs.append((start, k))
            start, used = k, set()
        used.update((a, b))
    runs.append((start, len(i)))
    return [r for r in runs if r[1] > r[0]]


def apply_givens_sequence(
    R: torch.Tensor,
    i: torch.Tensor,
    j: torch.Tensor,
    theta: torch.Tensor,
    *,
    dim: int = 1,
) -> torch.Tensor:
    """Apply a sequence of possibly overlapping Givens rotations, in order.

    ``R <- R G_{i_1 j_1}(theta_1) G_{i_2 j_2}(theta_2) ...`` (``dim=1``). Pairs
    sharing an axis do not commute, so the sequence is split into maximal runs
    of disjoint pairs, each applied at once by :func:`apply_givens`. Used by the
    overlapping (non-disjoint) ablation variants of Sec. 3.1.

    Parameters
    ----------
    R : torch.Tensor
        Updated in place (and returned).
    i, j, theta : torch.Tensor, shape (p,)
    dim : {0, 1}
        See :func:`apply_givens` (for ``dim=0`` the product acts as
        ``... G_2^T G_1^T R``).

    Returns
    -------
    torch.Tensor
    """
    _check_pairs(i, j, theta, R.shape[dim])
    for a, b in _disjoint_runs(i, j):
        apply_givens(R, i[a:b], j[a:b], theta[a:b], dim=dim)
    return R


def givens_directional_derivatives(R: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Directional derivatives of f along every Givens coordinate at R.

    ``A = G^T R - R^T G`` (Algorithm 2, line 3) where ``G`` is the Euclidean
    gradient of f at R. Then ``A_ij = d/dtheta f(R G_ij(theta)) |_{theta=0}``
    (Proposition 1, un-normalized; divide by sqrt(2) for the unit-speed
    derivative). ``A`` is skew-symmetric.

    Parameters
    ----------
    R : torch.Tensor, shape (n, n)
        Current rotation.
    G : torch.Tensor, shape (n, n)
        Euclidean gradient ``df/dR``.

    Returns
    -------
    torch.Tensor, shape (n, n)
    """
    if R.shape != G.shape or R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise DataValidationError(
            f"R and its gradient must be square of the same shape; got "
            f"{tuple(R.shape)} and {tuple(G.shape)}."
        )
    Y = R.T @ G
    return Y.T - Y


def procrustes(
    A: torch.Tensor, B: torch.Tensor, *, proper: bool = False
) -> torch.Tensor:
    """Orthogonal Procrustes: ``argmin_{R^T R = I} ||A R - B||_F``.

    With ``A^T B = U S V^T`` the solution is ``R = U V^T`` (Schoenemann 1966);
    this is the rotation step of OPQ (Ge et al. 2013). Accumulates ``A^T B`` in
    float64 because it is a sum over all rows that can cancel.

    Parameters
    ----------
    A, B : torch.Tensor, shape (m, n)
    proper : bool
        Restrict to rotations (det = +1) by flipping the last singular pair
        when needed (Kabsch).

    Returns
    -------
    torch.Tensor, shape (n, n)
        In ``A``'s dtype and device.
    """
    if A.shape != B.shape or A.ndim != 2:
        raise DataValidationError(
            f"procrustes needs A and B of the same 2-D shape; got {tuple(A.shape)} "
            f"and {tuple(B.shape)}."
        )
    M = A.double().T @ B.double()
    U, _, Vh = torch.linalg.svd(M)
    if proper and torch.linalg.det(U @ Vh) < 0:
        U = U.clone()
        U[:, -1] = -U[:, -1]
    return (U @ Vh).to(A.dtype)


def cayley(S: torch.Tensor) -> torch.Tensor:
    """Cayley transform ``(I - S)(I + S)^{-1}`` of a skew-symmetric S.

    Differentiable in S; the result is orthogonal with det +1 whenever
    ``I + S`` is invertible (always for real skew S). Computed as
    ``solve(I + S, I - S)`` (the two factors commute).

    Parameters
    ----------
    S : torch.Tensor, shape (n, n)
        Skew-symmetric (``S = -S^T``); not checked.

    Returns
    -------
    torch.Tensor, shape (n, n)
    """
    eye = torch.eye(S.shape[0], dtype=S.dtype, device=S.device)
    return torch.linalg.solve(eye + S, eye - S)


def orthogonality_error(R: torch.Tensor) -> float:
    """``max_ij |(R^T R - I)_ij|``, computed in float64.

    Parameters
    ----------
    R : torch.Tensor, shape (n, n)

    Returns
    -------
    float
    """
    Rd = R.detach().double()
    eye = torch.eye(Rd.shape[1], dtype=torch.float64, device=Rd.device)
    return float((Rd.T @ Rd - eye).abs().max())


def reorthogonalize(R: torch.Tensor, *, method: str = "newton_schulz") -> torch.Tensor:
    """Project a nearly orthogonal matrix back onto the orthogonal group, in place.

    Rounding in long runs of Givens updates lets ``R^T R`` drift from I by about
    ``sqrt(steps) * eps``. One Newton-Schulz step
    ``R <- R (3 I - R^T R) / 2`` (computed in float64) squares the error, keeps
    the determinant's sign and costs two matrix products; ``"svd"`` returns the
    exact polar factor ``U V^T``.

    Parameters
    ----------
    R : torch.Tensor, shape (n, n)
        Updated in place (and returned).
    method : {"newton_schulz", "svd"}

    Returns
    -------
    torch.Tensor
    """
    Rd = R.detach().double()
    if method == "newton_schulz":
        eye = torch.eye(Rd.shape[1], dtype=torch.float64, device=Rd.device)
        new = Rd @ (3.0 * eye - Rd.T @ Rd) / 2.0
    elif method == "svd":
        U, _, Vh = torch.linalg.svd(Rd)
        new = U @ Vh
    else:
        raise InvalidParameterError(
            "The 'method' parameter of reorthogonalize must be a str among "
            f"{{'newton_schulz', 'svd'}}. Got {method!r}."
        )
    with torch.no_grad():
        R.copy_(new.to(R.dtype))
    return R
