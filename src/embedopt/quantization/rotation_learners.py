"""Rotation steps of the alternating PQ solver, and initial rotations.

With the codes fixed, the reconstruction targets ``Y = phi(X R)`` are fixed and
the quantization distortion of eq. (1) is a function of R alone:

    f(R) = (1/m) ||X R - Y||^2 = const - 2 <R, C>,   C = X^T Y / m,

for orthogonal R (``||X R|| = ||X||``; its value and derivatives are in
:mod:`.problem`). Every learner below takes one such
rotation step; they are chosen by name from :data:`ROTATION_LEARNERS`
(look-up: :func:`get_rotation_learner`):

- ``"procrustes"``: the exact minimizer ``R = U V^T`` (``C = U S V^T``) -- the
  SVD step of OPQ (Ge et al. 2013);
- ``"givens"``: a few Givens coordinate descent steps (Algorithm 2) with one of
  the pair rules of :data:`embedopt.optim.PAIR_SELECTIONS` (GCD-R/G/S and the
  overlapping variants) -- the paper's replacement of the SVD step (Sec. 3.1);
- ``"cayley"``: a few gradient steps on the skew-symmetric parameter of the
  Cayley transform ``R = R_0 (I - S)(I + S)^{-1}``;
- ``"unconstrained"``: a few gradient steps on a free matrix W, reconstructing
  with ``W^T`` and penalizing ``||W^T W - I||^2`` (the relaxation of Sec. 1.2).

The rotation methods of :class:`~embedopt.quantization.ProductQuantizer`
(``"opq"``, ``"gcd_g"``...) are learners with some settings fixed; they are
listed in :data:`ROTATIONS` and built by :func:`make_rotation_learner`.
Starting rotations are chosen by name from :data:`ROTATION_INITS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._core import DataValidationError, Registry, as_array
from ..linalg.rotations import apply_givens, apply_givens_sequence, cayley, procrustes
from ..optim.givens import PairSelection, get_pair_selection
from .problem import (
    fixed_code_value,
    givens_derivatives,
    givens_step_bound,
    moments,
    unconstrained_gradient,
)

__all__ = [
    "ROTATIONS",
    "ROTATION_INITS",
    "ROTATION_LEARNERS",
    "CayleyLearner",
    "GivensLearner",
    "ProcrustesLearner",
    "RotationLearner",
    "RotationMethod",
    "UnconstrainedLearner",
    "eigenvalue_allocation",
    "get_rotation_learner",
    "initial_rotation",
    "make_rotation_learner",
]


class RotationLearner:
    """Base of the rotation steps (see the module docstring).

    Attributes
    ----------
    name : str
    orthogonal : bool
        Whether the learned matrix stays orthogonal (then the distortion can be
        computed in the rotated space).
    settings : tuple of str
        Which settings of :func:`make_rotation_learner` the constructor takes.
    """

    name = "base"
    orthogonal = True
    #: Constructor keywords taken from the shared settings of
    #: :func:`make_rotation_learner` (the others do not apply to this learner).
    settings: tuple[str, ...] = ()

    def start(self, R: torch.Tensor) -> None:
        """Called once before the first step.

        Parameters
        ----------
        R : torch.Tensor, shape (n, n)
            The initial rotation.
        """

    def step(self, X: torch.Tensor, Y: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        """One rotation step with the codes fixed.

        Parameters
        ----------
        X : torch.Tensor, shape (m, n)
            Training vectors.
        Y : torch.Tensor, shape (m, n)
            Fixed targets ``phi(X R)`` (decoded codes, rotated space).
        R : torch.Tensor, shape (n, n)
            Current rotation.

        Returns
        -------
        torch.Tensor, shape (n, n)
            The new rotation (a new tensor).
        """
        raise NotImplementedError

    def info(self) -> dict:
        """Per-step values for the history.

        Returns
        -------
        dict
            E.g. ``{"learning_rate": ...}``.
        """
        return {}


class ProcrustesLearner(RotationLearner):
    """The OPQ rotation step: exact orthogonal Procrustes by SVD."""

    name = "procrustes"

    def step(self, X: torch.Tensor, Y: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        return procrustes(X, Y)


class GivensLearner(RotationLearner):
    """Givens coordinate descent steps on f(R) (Algorithm 2, codes fixed).

    Because f is linear in R on SO(n), its Euclidean gradient ``-2 C`` does not
    change while the codes are fixed, so ``n_steps`` steps cost one O(m n^2)
    product ``X^T Y`` plus O(n^3) each.

    Parameters
    ----------
    selection : str or PairSelection
        ``"random"`` (GCD-R), ``"greedy"`` (GCD-G), ``"steepest"`` (GCD-S),
        ``"random_overlap"`` or ``"greedy_overlap"``.
    n_steps : int
        GCD iterations per rotation step (paper: 5).
    learning_rate : float or "auto"
        lambda of Algorithm 2; ``"auto"`` uses ``1 / (2 (z_1 + z_2))`` with
        ``z_1 >= z_2`` the two largest diagonal entries of ``R^T C`` (a bound on
        the curvature along every Givens plane), recomputed each step.
    step_rule : {"gradient", "exact"}
        ``"gradient"`` turns plane (i, j) by ``-lr * A_ij`` (the paper).
        ``"exact"`` turns it by the angle minimizing f in that plane,
        ``atan2(Z_ji - Z_ij, Z_ii + Z_jj)`` -- available because f restricted to
        one plane is a sinusoid; disjoint planes do not interact, so this is
        exact block coordinate minimization.
    generator : torch.Generator, optional
    """

    name = "givens"
    settings = ("n_steps", "learning_rate", "step_rule", "generator")

    def __init__(
        self,
        selection: str | PairSelection = "greedy",
        n_steps: int = 5,
        learning_rate: float | str = "auto",
        step_rule: str = "gradient",
        generator: torch.Generator | None = None,
    ):
        self.selection = get_pair_selection(selection)
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.step_rule = step_rule
        self.generator = generator
        self._lr = math.nan

    def step(self, X: torch.Tensor, Y: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        C = moments(X, Y)
        R = R.double().clone()
        Z = R.T @ C  # kept up to date by rotating its rows (O(n^2) per step)
        for _ in range(self.n_steps):
            A = givens_derivatives(Z)
            i, j = self.selection(A, self.generator)
            if self.step_rule == "exact":
                theta = torch.atan2(Z[j, i] - Z[i, j], Z[i, i] + Z[j, j])
                self._lr = math.nan
            else:
                lr = (
                    givens_step_bound(Z)
                    if self.learning_rate == "auto"
                    else float(self.learning_rate)
                )
                self._lr = lr
                theta = -lr * A[i, j]
            apply = apply_givens if self.selection.disjoint else apply_givens_sequence
            apply(R, i, j, theta, dim=1)
            apply(Z, i, j, theta, dim=0)  # (R P)^T C = P^T Z
        return R.to(X.dtype)

    def info(self) -> dict:
        return {"learning_rate": self._lr}


class CayleyLearner(RotationLearner):
    """Gradient steps on the Cayley parameterization ``R = R_0 cayley(S)``.

    S is skew-symmetric (its strict upper triangle is the parameter). The base
    ``R_0`` is reset to the current rotation at every rotation step and S to
    zero, which keeps S small and away from the transform's singularity at
    eigenvalue -1.

    Parameters
    ----------
    n_steps : int
        Gradient steps per rotation step.
    learning_rate : float or "auto"
        ``"auto"``: a quarter of the Givens ``"auto"`` rate, because near S = 0
        a unit change of ``S_ij`` turns plane (i, j) by about 2 and the
        gradient w.r.t. ``S_ij`` is twice ``A_ij``; this matches the per-plane
        step of GCD, but moves all n(n-1)/2 planes at once.
    """

    name = "cayley"
    settings = ("n_steps", "learning_rate")

    def __init__(self, n_steps: int = 5, learning_rate: float | str = "auto"):
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self._lr = math.nan

    def step(self, X: torch.Tensor, Y: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        C = moments(X, Y)
        R0 = R.double()
        n = R0.shape[0]
        iu = torch.triu_indices(n, n, 1, device=R.device)
        w = torch.zeros(iu.shape[1], dtype=torch.float64, device=R.device)
        w.requires_grad_(True)
        lr = (
            givens_step_bound(R0.T @ C) / 4.0
            if self.learning_rate == "auto"
            else float(self.learning_rate)
        )
        self._lr = lr
        for _ in range(self.n_steps):
            S = torch.zeros((n, n), dtype=torch.float64, device=R.device)
            S = S.index_put((iu[0], iu[1]), w)
            S = S - S.T
            f = fixed_code_value(R0 @ cayley(S), C)
            (g,) = torch.autograd.grad(f, w)
            with torch.no_grad():
                w -= lr * g
        with torch.no_grad():
            S = torch.zeros((n, n), dtype=torch.float64, device=R.device)
            S[iu[0], iu[1]] = w
            S = S - S.T
            return (R0 @ cayley(S)).to(X.dtype)

    def info(self) -> dict:
        return {"learning_rate": self._lr}


class UnconstrainedLearner(RotationLearner):
    """Gradient steps on a free matrix W (no orthogonality constraint).

    The quantizer encodes ``X W`` and reconstructs with ``phi(X W) W^T``; with
    the codes fixed each step decreases

        (1/m) ||X - Y W^T||^2 + mu ||W^T W - I||^2,   mu = penalty * tr(C_xx) / n,

    the L2 relaxation mentioned in Sec. 1.2 of the paper (``penalty=0`` gives
    the plain unconstrained baseline).

    Parameters
    ----------
    n_steps : int
    learning_rate : float or "auto"
        ``"auto"``: ``1 / (2 * lambda_max(Y^T Y / m) + 8 mu)``.
    penalty : float
    """

    name = "unconstrained"
    orthogonal = False
    settings = ("n_steps", "learning_rate", "penalty")

    def __init__(
        self,
        n_steps: int = 5,
        learning_rate: float | str = "auto",
        penalty: float = 1.0,
    ):
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.penalty = penalty
        self._lr = math.nan

    def step(self, X: torch.Tensor, Y: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        n = X.shape[1]
        Cxy = moments(X, Y)
        Syy = moments(Y, Y)
        mu = self.penalty * float(torch.trace(moments(X, X))) / n
        W = R.double().clone()
        if self.learning_rate == "auto":
            lam = float(torch.linalg.eigvalsh(Syy)[-1])
            lr = 1.0 / max(2.0 * lam + 8.0 * mu, 1e-30)
        else:
            lr = float(self.learning_rate)
        self._lr = lr
        for _ in range(self.n_steps):
            W = W - lr * unconstrained_gradient(W, Cxy, Syy, mu)
        return W.to(X.dtype)

    def info(self) -> dict:
        return {"learning_rate": self._lr}


#: Rotation steps by name (look-up: :func:`get_rotation_learner`).
ROTATION_LEARNERS = Registry(
    "rotation learner",
    {
        "procrustes": ProcrustesLearner,
        "givens": GivensLearner,
        "cayley": CayleyLearner,
        "unconstrained": UnconstrainedLearner,
    },
    owner="embedopt.quantization",
)


def get_rotation_learner(name: str) -> type[RotationLearner]:
    """The rotation learner class registered under ``name``.

    Parameters
    ----------
    name : str
        A name of :data:`ROTATION_LEARNERS` (``"givens"``, ``"procrustes"``...;
        hyphenated or upper-case spellings are accepted).

    Returns
    -------
    type
        A :class:`RotationLearner` subclass.

    Raises
    ------
    InvalidParameterError
        If ``name`` is unknown; the message lists the valid names.
    """
    return ROTATION_LEARNERS.get(name)


@dataclass(frozen=True)
class RotationMethod:
    """A rotation method: a learner of :data:`ROTATION_LEARNERS`, settings fixed.

    Attributes
    ----------
    learner : str or None
        Name in :data:`ROTATION_LEARNERS`; None means no rotation step (the
        starting rotation is kept).
    description : str
        What learns R, in one line.
    options : dict
        Constructor keywords the method fixes (the Givens pair rule).
    """

    learner: str | None
    description: str
    options: dict[str, object] = field(default_factory=dict)


def _gcd(selection: str, description: str) -> RotationMethod:
    return RotationMethod("givens", description, {"selection": selection})


#: Rotation methods of :class:`~embedopt.quantization.ProductQuantizer` by name
#: (built by :func:`make_rotation_learner`).
ROTATIONS = Registry(
    "rotation",
    {
        "none": RotationMethod(
            None, "no rotation step (plain PQ on X @ rotation_init)"
        ),
        "opq": RotationMethod("procrustes", "SVD Procrustes (OPQ, Ge et al. 2013)"),
        "gcd_r": _gcd("random", "Givens coordinate descent, random matching"),
        "gcd_g": _gcd(
            "greedy", "Givens coordinate descent, greedy matching (Algorithm 1)"
        ),
        "gcd_s": _gcd("steepest", "Givens coordinate descent, maximum-weight matching"),
        "gcd_r_overlap": _gcd(
            "random_overlap", "Givens coordinate descent, overlapping random pairs"
        ),
        "gcd_g_overlap": _gcd(
            "greedy_overlap", "Givens coordinate descent, overlapping greedy pairs"
        ),
        "cayley": RotationMethod(
            "cayley", "gradient steps on the Cayley parameterization"
        ),
        "unconstrained": RotationMethod(
            "unconstrained",
            "gradient steps on a free matrix with the soft orthogonality penalty "
            "||R^T R - I||^2 (weight 1, see UnconstrainedLearner): without it the "
            "fixed-code least-squares step rescales R freely",
        ),
    },
    owner="embedopt.quantization",
)


def make_rotation_learner(
    rotation: str,
    *,
    n_steps: int = 5,
    learning_rate: float | str = "auto",
    step_rule: str = "gradient",
    penalty: float = 1.0,
    generator: torch.Generator | None = None,
) -> RotationLearner | None:
    """Build the rotation step of a method of :data:`ROTATIONS`.

    Parameters
    ----------
    rotation : str
        A name of :data:`ROTATIONS` (``"gcd-g"`` and ``"gcd_g"`` both work).
    n_steps, learning_rate, step_rule, penalty, generator
        Shared settings; the learner takes those named in its ``settings``
        (see :class:`GivensLearner`, :class:`CayleyLearner`,
        :class:`UnconstrainedLearner`) and ignores the others.

    Returns
    -------
    RotationLearner or None
        None for ``"none"`` (no rotation step).

    Raises
    ------
    InvalidParameterError
        If ``rotation`` is unknown.
    """
    method = ROTATIONS.get(rotation)
    if method.learner is None:
        return None
    cls = get_rotation_learner(method.learner)
    shared = {
        "n_steps": n_steps,
        "learning_rate": learning_rate,
        "step_rule": step_rule,
        "penalty": penalty,
        "generator": generator,
    }
    return cls(**{k: shared[k] for k in cls.settings}, **method.options)


def _identity(X: torch.Tensor, M: int, generator=None) -> torch.Tensor:
    return torch.eye(X.shape[1], dtype=X.dtype, device=X.device)


def _haar_random(X: torch.Tensor, M: int, generator=None) -> torch.Tensor:
    # Drawn on the CPU in float64 from the CPU generator, so the rotation does
    # not depend on the device; the sign correction makes QR's Q Haar-uniform.
    n = X.shape[1]
    g = torch.randn(n, n, generator=generator, dtype=torch.float64)
    Q, Rq = torch.linalg.qr(g)
    Q = Q * torch.sign(torch.diagonal(Rq))[None, :]
    return Q.to(device=X.device, dtype=X.dtype)


def eigenvalue_allocation(
    X: torch.Tensor, M: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """OPQ's parametric initial rotation: eigenvalue allocation (Ge et al. 2013).

    The principal directions of the (centered) covariance are dealt to the M
    subspaces, largest eigenvalue first, each to the not-yet-full subspace
    whose product of eigenvalues is currently smallest, so that the subspaces
    carry balanced variance (optimal for Gaussian data in Ge et al.'s
    analysis). Eigenvalues are divided by their geometric mean first, so the
    allocation does not depend on the scale of X.

    Parameters
    ----------
    X : torch.Tensor, shape (m, n)
        Training vectors.
    M : int
        How many subspaces (buckets of n / M directions each); divides n.
    generator : torch.Generator, optional
        Unused: the allocation is deterministic (every entry of
        :data:`ROTATION_INITS` takes one).

    Returns
    -------
    torch.Tensor, shape (n, n)
        Orthogonal; subspace m of ``X @ R`` spans the eigenvectors allocated to
        bucket m.
    """
    n = X.shape[1]
    ds = n // M
    Xc = X.double() - X.double().mean(0)
    cov = Xc.T @ Xc / max(X.shape[0] - 1, 1)
    evals, evecs = torch.linalg.eigh(cov)
    order = torch.argsort(evals, descending=True).cpu().numpy()
    logs = np.log(np.maximum(evals.cpu().numpy(), 1e-30 * float(evals.max())))
    # Products compared relative to the geometric mean, so the greedy rule does
    # not depend on the data's scale (with raw eigenvalues below 1 an empty
    # bucket would look "larger" than one holding the top eigenvalue).
    logs = logs - logs.mean()
    buckets: list[list[int]] = [[] for _ in range(M)]
    logprod = np.zeros(M)
    for e in order:
        open_ = [b for b in range(M) if len(buckets[b]) < ds]
        b = min(open_, key=lambda q: (logprod[q], q))
        buckets[b].append(int(e))
        logprod[b] += logs[e]
    cols = [e for b in buckets for e in b]
    return evecs[:, cols].to(X.dtype)


#: Starting rotations by name, functions ``(X, M, generator) -> R`` (see
#: :func:`initial_rotation`): ``"identity"`` (plain PQ), ``"random"`` (a
#: Haar-uniform rotation) and ``"eigenvalue"`` (:func:`eigenvalue_allocation`).
ROTATION_INITS = Registry(
    "rotation init",
    {
        "identity": _identity,
        "random": _haar_random,
        "eigenvalue": eigenvalue_allocation,
    },
    owner="embedopt.quantization",
)


def initial_rotation(
    init: str | ArrayLike | torch.Tensor,
    X: torch.Tensor,
    M: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The starting rotation of the alternating solver.

    Parameters
    ----------
    init : {"identity", "random", "eigenvalue"} or array-like of shape (n, n)
        A name of :data:`ROTATION_INITS` or a matrix, used as given (copied).
        ``"random"`` draws a Haar-uniform rotation (QR of a Gaussian matrix
        with sign correction); ``"eigenvalue"`` is
        :func:`eigenvalue_allocation`.
    X : torch.Tensor, shape (m, n)
    M : int
    generator : torch.Generator, optional
        A CPU generator (for ``"random"``).

    Returns
    -------
    torch.Tensor, shape (n, n)

    Raises
    ------
    InvalidParameterError
        If ``init`` is a string that names no entry of :data:`ROTATION_INITS`.
    DataValidationError
        If ``init`` is not a finite real matrix.
    """
    if isinstance(init, str):
        return ROTATION_INITS.get(init)(X, M, generator)
    a = as_array(init, "rotation_init")
    if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
        raise DataValidationError(
            f"rotation_init must be a finite real (n, n) matrix or one of "
            f"{sorted(ROTATION_INITS)}; got an array of dtype {a.dtype}"
            + (" with NaN or inf." if a.dtype.kind in "iuf" else ".")
        )
    R = torch.as_tensor(a, dtype=X.dtype, device=X.device)
    return R.clone()
