"""The paper's comparison methods (Ma et al., Sec. 5.1, Table I, Fig. 2).

=================  ======================================================
``svrg``           SVRG with a fixed step (Johnson & Zhang; "ncvx SVRG")
``sgd``            mini-batch SGD with a decaying step, ``|Q| + 2m``
                   comparisons per epoch ("ncvx SGD")
``batch_gd``       gradient descent with a fixed step, ``(|Q| + 2m) / |Q|``
                   steps per epoch ("ncvx Batch")
``projected_gd``   the convex Gram-matrix formulation by projected gradient
                   descent ("cvx"), O(n^3) per step
=================  ======================================================

Same call shape as :mod:`embedopt.ordinal.solvers`, and the same budget
unit: an epoch costs the ``|Q| + 2m`` gradient evaluations of an SVRG
epoch. SVRG-SBB_0, also in the paper's tables, is
:func:`~embedopt.ordinal.svrg_sbb` with ``epsilon=0``. Each registers itself
in :data:`~embedopt.ordinal.SOLVERS` ("svrg", "sgd", "gd", "cvx").

The convex problem (the rank bound of eq. (8) dropped: it is what makes the
problem non-convex; ``rank`` puts it back as a truncated projection)::

    min_G (1/|Q|) sum_q ell(d_near(G), d_far(G)) + lam tr(G)
    (with sample_weight: (1 / sum w) sum_q w_q ell(...) + lam tr(G))
    s.t.  G PSD,  sum_ij g_ij = 0

Projected gradient descent with a fixed step needs an eigendecomposition of
the n x n iterate per step, O(n^3): the scalability problem that motivates
SVRG-SBB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from numpy.typing import ArrayLike

from .._core import (
    DeviceLike,
    DtypeLike,
    Interval,
    InvalidParameterError,
    RandomStateLike,
    check_memory,
    validate_params,
)
from .._core.docs import RUN_PARAMETERS_DOC, fill_doc
from ..data import Comparisons
from ..linalg import embedding_from_gram, project_centered_psd
from ..optim import (
    GD_CONSTRAINTS,
    SGD_CONSTRAINTS,
    IterationState,
    SolverResult,
    gradient_descent,
)
from ..optim import sgd as _sgd
from .losses import OrdinalLoss
from .problem import (
    GramProblem,
    batch_steps_per_epoch,
    epoch_samples,
    setup,
    setup_options,
)
from .solvers import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_INIT_SCALE,
    SOLVERS,
    _default_batch,
    _prepare,
    svrg_sbb,
)

__all__ = ["batch_gd", "projected_gd", "sgd", "svrg"]

#: Constraints of the ordinal-level options of sgd / batch_gd.
_SGD_OWN = {
    "learning_rate_decay": [Interval(float, 0, None)],
    "update_frequency": [Interval(int, 1, None), None],
}


def svrg(
    comparisons: Comparisons | ArrayLike, n_components: int = 2, **options
) -> SolverResult:
    """Ordinal embedding by SVRG with a fixed step (the paper's "SVRG" baseline).

    :func:`~embedopt.ordinal.svrg_sbb` with ``step_size="constant"``: inner
    steps move ``b / m`` of the fixed ``learning_rate`` (full-gradient units;
    ``"auto"`` measures the curvature at the start once).

    Parameters
    ----------
    comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
    n_components : int
    **options
        The keyword options of :func:`~embedopt.ordinal.svrg_sbb` except the
        step rule's (``step_size``, ``epsilon``, ``relative_epsilon``,
        ``module_epochs``).

    Returns
    -------
    SolverResult
    """
    for key in ("step_size", "epsilon", "relative_epsilon", "module_epochs"):
        if key in options:
            raise InvalidParameterError(
                f"svrg has no '{key}' parameter: its step is fixed (use svrg_sbb "
                "for Barzilai-Borwein steps)."
            )
    return svrg_sbb(
        comparisons,
        n_components,
        step_size="constant",
        epsilon=0.0,
        relative_epsilon=False,
        **options,
    )


#: The Parameters of the two SVRG-budget baselines (:func:`sgd` and
#: :func:`batch_gd`) before their step parameters ...
_BUDGET_HEAD_DOC = """\
comparisons : Comparisons or array-like of int, shape (m, 3) or (m, 4)
n_components : int
init, max_iter, tol, random_state, device, dtype, verbose, callback
    As in :func:`~embedopt.ordinal.svrg_sbb`.
loss : {"ste", "tste", "gnmds", "ckl", "soe"} or OrdinalLoss"""

#: ... and after them, with their Returns.
_BUDGET_TAIL_DOC = """\
update_frequency : int, optional
    m of the SVRG epoch whose budget an epoch matches (default |Q|).
init_scale, n_objects, validation, sample_weight
    As in :func:`~embedopt.ordinal.svrg_sbb`.

Returns
-------
SolverResult"""


@fill_doc(head=_BUDGET_HEAD_DOC, tail=_BUDGET_TAIL_DOC)
def sgd(
    comparisons: Comparisons | ArrayLike,
    n_components: int = 2,
    *,
    init: ArrayLike | torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float32",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    loss: str | OrdinalLoss = "ste",
    learning_rate: float | Literal["auto"] = "auto",
    learning_rate_decay: float = 1.0,
    batch_size: int = DEFAULT_BATCH_SIZE,
    update_frequency: int | None = None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation: Comparisons | ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Ordinal embedding by mini-batch SGD with a decaying step.

    Epoch k draws ``|Q| + 2m`` comparisons (an SVRG epoch's budget) and
    steps with ``alpha_k = learning_rate / (1 + learning_rate_decay k)``.

    Parameters
    ----------
    {head}
    learning_rate : float or "auto"
        alpha_0 (full-gradient units).
    learning_rate_decay : float
    batch_size : int
        At most ``|Q| + 2m``, the comparisons of an epoch (see
        :func:`~embedopt.ordinal.svrg_sbb`).
    {tail}
    """
    run = {
        "learning_rate": learning_rate,
        # optim.sgd's step rule calls the learning-rate decay "decay".
        "decay": learning_rate_decay,
        "batch_size": batch_size,
        "max_iter": max_iter,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params(
        "SGD",
        {
            "learning_rate_decay": learning_rate_decay,
            "update_frequency": update_frequency,
        },
        _SGD_OWN,
    )
    data = setup_options(locals())
    s = _prepare(comparisons, n_components, data, run, "SGD", SGD_CONSTRAINTS)
    per_epoch = epoch_samples(s.problem.n_samples, update_frequency)
    run["batch_size"] = _default_batch(run["batch_size"], per_epoch)
    return _sgd(
        s.problem,
        s.x0,
        samples_per_epoch=per_epoch,
        evaluate=s.evaluate,
        random_state=s.rs,
        name="SGD",
        **run,
    )


@fill_doc(head=_BUDGET_HEAD_DOC, tail=_BUDGET_TAIL_DOC)
def batch_gd(
    comparisons: Comparisons | ArrayLike,
    n_components: int = 2,
    *,
    init: ArrayLike | torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float32",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    loss: str | OrdinalLoss = "ste",
    learning_rate: float | Literal["auto"] = "auto",
    update_frequency: int | None = None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation: Comparisons | ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> SolverResult:
    """Ordinal embedding by batch gradient descent with a fixed step ("ncvx Batch").

    One epoch makes ``round((|Q| + 2m) / |Q|)`` gradient steps (3 for the
    paper's m = |Q|), the budget of an SVRG epoch.

    Parameters
    ----------
    {head}
    learning_rate : float or "auto"
        The fixed step; ``"auto"`` measures the curvature at the start once.
    {tail}
    """
    run = {
        "learning_rate": learning_rate,
        "max_iter": max_iter,
        "tol": tol,
        "verbose": verbose,
        "callback": callback,
    }
    validate_params("Batch GD", {"update_frequency": update_frequency}, _SGD_OWN)
    data = setup_options(locals())
    s = _prepare(comparisons, n_components, data, run, "Batch GD", GD_CONSTRAINTS)
    return gradient_descent(
        s.problem,
        s.x0,
        steps_per_iteration=batch_steps_per_epoch(
            s.problem.n_samples, update_frequency
        ),
        evaluate=s.evaluate,
        name="Batch GD",
        **run,
    )


@fill_doc(run_parameters=RUN_PARAMETERS_DOC)
def projected_gd(
    comparisons: Comparisons | ArrayLike,
    n_components: int = 2,
    *,
    init: ArrayLike | torch.Tensor | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = "float32",
    verbose: int = 0,
    callback: Callable[[IterationState], bool | None] | None = None,
    loss: str | OrdinalLoss = "ste",
    lam: float = 0.0,
    rank: int | None = None,
    learning_rate: float | Literal["auto"] = "auto",
    update_frequency: int | None = None,
    init_scale: float = DEFAULT_INIT_SCALE,
    n_objects: int | None = None,
    validation: Comparisons | ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
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
    init : array-like, shape (n_objects, n_components), optional
        Initial embedding X0 (``G0 = P(X0 X0^T)``); default random.
    max_iter, tol : int, float
    {run_parameters}
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
    init_scale : float
    n_objects : int, optional
    validation : Comparisons or array-like, optional
        Held-out comparisons; ``history["val_error"]`` of the embedding.
    sample_weight : array-like of float, shape (m,), optional
        As in :func:`~embedopt.ordinal.svrg_sbb`: the mean loss becomes the
        weighted mean ``(1 / sum w) sum_q w_q ell_q``; ``lam tr(G)`` is
        added to it unchanged.

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
    options = setup_options(locals())
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


SOLVERS.add("svrg", svrg)
SOLVERS.add("sgd", sgd)
SOLVERS.add("gd", batch_gd)
SOLVERS.add("cvx", projected_gd)
