"""The convex Gram-matrix formulation, solved by projected gradient descent ("cvx").

With ``G = X X^T`` (centered, ``G 1 = 0``) the squared distances are linear
in G, ``d_ij = g_ii - 2 g_ij + g_jj`` (eq. (41)), so every loss of
:mod:`embedopt.ordinal.losses` that is convex in the distances (GNMDS, STE,
CKL... but not t-STE) gives a convex problem over the PSD cone (eq. (8),
(45), (50)):

    min_G (1/|Q|) sum_q ell(d_near(G), d_far(G)) + lam tr(G)
    s.t.  G PSD,  sum_ij g_ij = 0

(the rank bound of eq. (8) is dropped: it is what makes the problem
non-convex; ``rank`` puts it back as a truncated projection). Projected
gradient descent with a fixed step needs an eigendecomposition of the n x n
iterate per step, O(n^3): the scalability problem that motivates SVRG-SBB.
"""

from __future__ import annotations

import torch

from .._core import Interval, check_memory, validate_params
from .._core.docs import RUN_PARAMETERS_DOC, fill_doc
from ..linalg import embedding_from_gram, project_centered_psd
from ..optim import SolverResult, gradient_descent
from .losses import OrdinalLoss
from .problem import OrdinalProblem, batch_steps_per_epoch, setup, setup_options

# project_centered_psd and embedding_from_gram live in embedopt.linalg; they
# stay importable from here (and from embedopt.ordinal) for existing code.
__all__ = ["GramProblem", "embedding_from_gram", "project_centered_psd", "projected_gd"]

_CHUNK = 1 << 19


class GramProblem:
    """The loss of eq. (7) as a function of the Gram matrix G (n x n).

    Parameters
    ----------
    problem : OrdinalProblem
        Comparisons and loss.
    lam : float
        Weight of the trace regularizer ``lam tr(G)`` (GNMDS, eq. (45) in its
        usual regularized form; 0 for none).

    Attributes
    ----------
    n_samples : int
    """

    def __init__(self, problem: OrdinalProblem, lam: float = 0.0):
        self.problem = problem
        self.loss: OrdinalLoss = problem.loss
        self.lam = float(lam)
        self.n_samples = problem.n_samples

    def value_and_grad(self, G: torch.Tensor) -> tuple[float, torch.Tensor]:
        """Objective and gradient in G, O(|Q|) plus O(n) for the trace term.

        The gradient of ``d_ij`` is ``E_ii + E_jj - E_ij - E_ji`` (the
        ``W_q`` of eq. (44)), so a comparison adds its partials ``a`` and
        ``c`` at eight entries.

        Parameters
        ----------
        G : torch.Tensor, shape (n, n)
            The Gram matrix ``X X^T`` of an embedding X.

        Returns
        -------
        value : float
        grad : torch.Tensor, shape (n, n)
        """
        n = G.shape[0]
        flat = G.reshape(-1)
        diag = torch.diagonal(G)
        grad = torch.zeros_like(flat)
        total = torch.zeros((), dtype=torch.float64, device=G.device)
        Q = self.problem.quadruplets
        for s in range(0, Q.shape[0], _CHUNK):
            i, j, l, k = Q[s : s + _CHUNK].unbind(1)
            d_near = diag[i] + diag[j] - 2 * flat[i * n + j]
            d_far = diag[l] + diag[k] - 2 * flat[l * n + k]
            total += self.loss.value(d_near, d_far).sum(dtype=torch.float64)
            a, c = self.loss.partials(d_near, d_far)
            pos = torch.cat(
                (i * n + i, j * n + j, i * n + j, j * n + i,
                 l * n + l, k * n + k, l * n + k, k * n + l)
            )  # fmt: skip
            val = torch.cat((a, a, -a, -a, c, c, -c, -c))
            grad.index_add_(0, pos, val)
        m = Q.shape[0]
        grad = grad.div_(m).view(n, n)
        value = float(total) / m
        if self.lam:
            grad.diagonal().add_(self.lam)
            value += self.lam * float(diag.double().sum())
        return value, grad


@fill_doc(run_parameters=RUN_PARAMETERS_DOC)
def projected_gd(
    comparisons,
    n_components: int = 2,
    *,
    loss="ste",
    lam: float = 0.0,
    rank: int | None = None,
    learning_rate="auto",
    update_frequency: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    init=None,
    init_scale: float = 0.1,
    n_objects: int | None = None,
    validation=None,
    random_state=None,
    device="auto",
    dtype="float32",
    verbose: int = 0,
    callback=None,
) -> SolverResult:
    """The convex baseline: projected gradient descent on the Gram matrix.

    Iterates ``G <- P(G - alpha (grad L(G) + lam I))`` with a fixed step
    (the paper does no line search for it), P the projection onto centered
    PSD matrices (:func:`~embedopt.linalg.project_centered_psd`), and returns
    the embedding of the p largest eigenpairs. One epoch makes
    ``round((|Q| + 2m) / |Q|)`` steps (3 by default), the gradient budget of
    an SVRG epoch.

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
        p: dimension of the returned embedding.
    loss : {"ste", "gnmds", "ckl", "soe", "tste"} or OrdinalLoss
        Convex in G for GNMDS, STE and CKL; t-STE and SOE are accepted but
        the problem is then not convex.
    lam : float
        Trace regularization weight (>= 0).
    rank : int, optional
        Keep only this many eigenvalues in the projection (non-convex).
    learning_rate : float or "auto"
        Fixed step; ``"auto"`` measures the curvature at the start once.
    update_frequency : int, optional
        m of the SVRG epoch whose budget an epoch matches (default |Q|).
    max_iter, tol : int, float
    init : array-like, shape (n_objects, n_components), optional
        Initial embedding X0 (``G0 = P(X0 X0^T)``); default random.
    init_scale : float
    n_objects : int, optional
    validation : Comparisons or array-like, optional
        Held-out comparisons; ``history["val_error"]`` of the embedding.
    {run_parameters}

    Returns
    -------
    SolverResult
        ``x``: the embedding (n_objects x p tensor); ``info["gram"]``: G.
    """
    validate_params(
        "projected_gd",
        dict(lam=lam, rank=rank),
        {"lam": [Interval(float, 0, None)], "rank": [Interval(int, 1, None), None]},
    )
    options = setup_options(
        loss, n_objects, init, init_scale, validation, random_state, device, dtype
    )
    s = setup(
        comparisons, n_components, **options, owner="projected_gd", factored=False
    )
    n_objects = s.problem.n_objects
    # G, its gradient, the step and the eigendecomposition's workspace: n x n each
    check_memory(
        "projected_gd",
        4 * n_objects**2 * s.x0.element_size(),
        s.problem.device,
        f"the {n_objects} x {n_objects} Gram matrix and its working copies",
        "The convex baseline is O(n^2) in memory; use solver='svrg_sbb' for "
        "this many objects.",
    )
    gram = GramProblem(s.problem, lam)

    def project(G):
        return project_centered_psd(G, rank)

    evaluate = None
    if s.evaluate is not None:

        def evaluate(G):
            return s.evaluate(embedding_from_gram(G, n_components))

    res = gradient_descent(
        gram,
        project(s.x0 @ s.x0.T),
        learning_rate=learning_rate,
        steps_per_iteration=batch_steps_per_epoch(
            s.problem.n_samples, update_frequency
        ),
        project=project,
        max_iter=max_iter,
        tol=tol,
        evaluate=evaluate,
        verbose=verbose,
        callback=callback,
        name="cvx projected GD",
    )
    G = res.x
    res.info["gram"] = G
    res.x = embedding_from_gram(G, n_components)
    return res
