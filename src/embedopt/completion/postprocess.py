"""Post-processing of the singular values (Sec. 3.6 of Yao & Kwok).

The nuclear norm shrinks every singular value by lambda, over-penalizing the
leading ones. Keeping the singular vectors of ``X = U diag(s) V^T`` and refitting
the k singular values,

    theta* = argmin_theta  sum_{(i,j) in Omega} l((U diag(theta) V^T)_ij, O_ij),   (22)

undoes that shrinkage. For the square loss (22) is a k x k least-squares
problem solved in closed form; for other smooth losses it is solved by L-BFGS,
whose gradient ``[grad]_i = u_i^T B v_i`` (B the sparse matrix of loss
derivatives on Omega) costs one sparse product, O(|Omega| k).
"""

from __future__ import annotations

import torch

from ..optim import lbfgs
from .losses import SquareLoss
from .problem import CompletionProblem

__all__ = ["postprocess"]


def _design_gram(problem: CompletionProblem, U, V, chunk_elems: int = 1 << 24):
    """``G = D^T D`` and ``b = D^T y`` with ``D_e = U[i_e] * V[j_e]`` (float64).

    Built in chunks of entries so memory stays O(chunk * k), never |Omega| * k.
    """
    k = U.shape[1]
    rows = problem.pattern.row_indices()
    cols = problem.pattern.col_indices()
    G = torch.zeros(k, k, dtype=torch.float64, device=U.device)
    b = torch.zeros(k, dtype=torch.float64, device=U.device)
    step = max(1, chunk_elems // max(k, 1))
    for s in range(0, rows.numel(), step):
        D = (U[rows[s : s + step]] * V[cols[s : s + step]]).double()
        G += D.T @ D
        b += D.T @ problem.y[s : s + step].double()
    return G, b


def postprocess(
    problem: CompletionProblem,
    U: torch.Tensor,
    s: torch.Tensor,
    V: torch.Tensor,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
):
    """Refit the singular values of ``U diag(s) V^T`` to the observed entries.

    Parameters
    ----------
    problem : CompletionProblem
        Training entries and loss.
    U : torch.Tensor, shape (m, k)
    s : torch.Tensor, shape (k,)
    V : torch.Tensor, shape (n, k)
        A solution of a completion solver.
    max_iter, tol : int, float
        L-BFGS settings (non-square losses).

    Returns
    -------
    U, s, V : torch.Tensor
        The refitted factorization, as an SVD again: negative refitted values
        flip the sign of their left singular vector, and values are sorted
        decreasingly. The training loss never increases: if the refit is not
        better (e.g. an ill-posed least-squares system), the input is returned.
    """
    k = s.numel()
    if k == 0:
        return U, s, V
    loss, y, pattern = problem.loss, problem.y, problem.pattern
    before = loss.total(problem.values_at(pattern, U, s, V), y)
    if isinstance(loss, SquareLoss):
        G, b = _design_gram(problem, U, V)
        try:
            theta = torch.linalg.solve(G, b)
        except RuntimeError:
            theta = torch.linalg.lstsq(G.cpu(), b.cpu()[:, None]).solution[:, 0]
        theta = theta.to(s.dtype).to(s.device)
    else:

        def fun(th):
            x = problem.values_at(pattern, U, th, V)
            g = loss.grad(x, y)
            grad = (U * pattern.matmul(g, V)).sum(0)
            return loss.total(x, y), grad

        theta = lbfgs(fun, s.clone(), max_iter=max_iter, tol=tol).x
    if not bool(torch.isfinite(theta).all()):
        return U, s, V
    after = loss.total(problem.values_at(pattern, U, theta, V), y)
    if not after <= before:
        return U, s, V
    sign = torch.where(theta < 0, -1.0, 1.0).to(U.dtype)
    theta = theta.abs()
    order = torch.argsort(theta, descending=True)
    return (U * sign)[:, order], theta[order], V[:, order]
