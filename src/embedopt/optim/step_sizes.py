"""Step-size rules for first-order and variance-reduced solvers (chosen by name).

All rules speak the same unit: the step ``alpha`` of one full-gradient step
``x <- x - alpha grad f(x)`` on the *mean* objective ``f = (1/n) sum_i f_i``.
Stochastic solvers spread it over an epoch: an inner step on a mini-batch of
``b`` of the ``m`` samples of the epoch moves by ``alpha b / m`` (the
``b eta_s`` of Algorithm 1 of Ma et al. with ``eta_s = alpha_s / m``).

Rules are small objects with ``step(epoch, dx=None, dy=None) -> float``,
called once per epoch (outer iteration) with the change of the iterate and
of the full gradient since the previous epoch; :data:`STEP_SIZES` maps names
to classes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

__all__ = [
    "FIXED_STEP_SAFETY",
    "STEP_SIZES",
    "BarzilaiBorwein",
    "ConstantStep",
    "InverseDecay",
    "StabilizedBB",
    "probe_step",
    "stabilized_bb_step",
]


def _dot(a: torch.Tensor, b: torch.Tensor) -> float:
    # Differences of nearby iterates cancel: accumulate in float64.
    return float((a.double() * b.double()).sum())


def stabilized_bb_step(
    dx: torch.Tensor, dy: torch.Tensor, epsilon: float, *, absolute: bool = True
) -> float:
    """The stabilized Barzilai-Borwein step (Ma et al., eq. (14), (17) times m).

    ``alpha = ||dx||^2 / (|<dx, dy>| + epsilon ||dx||^2)``

    with ``dx`` the change of the iterate and ``dy`` the change of the full
    gradient. If every ``f_i`` is L-smooth, ``1 / (L + epsilon) <= alpha <=
    1 / epsilon`` (eq. (15)); ``epsilon = 0`` gives SBB_0, whose only guard is
    the absolute value. ``absolute=False`` gives the original BB step of
    eq. (10) (``epsilon = 0``), which is negative where ``<dx, dy> < 0``.

    Parameters
    ----------
    dx, dy : torch.Tensor
        Same shape.
    epsilon : float
        Stabilization, >= 0.
    absolute : bool

    Returns
    -------
    float
        ``nan`` when the denominator is zero (no curvature information: the
        caller keeps its previous step).
    """
    sx = _dot(dx, dx)
    sxy = _dot(dx, dy)
    den = (abs(sxy) if absolute else sxy) + epsilon * sx
    if den == 0 or sx == 0 or not math.isfinite(den):
        return math.nan
    return sx / den


class InverseDecay:
    """Decaying step ``alpha_k = alpha_0 / (1 + decay k)`` (SGD baseline).

    With ``decay = 1`` this is the ``eta_k = eta_0 / k`` schedule (k 1-based)
    that Ma et al.'s SGD baseline uses.

    Parameters
    ----------
    learning_rate : float
        alpha_0.
    decay : float
        >= 0.
    """

    name = "inverse_decay"

    def __init__(self, learning_rate: float, decay: float = 1.0, **_):
        self.learning_rate = float(learning_rate)
        self.decay = float(decay)

    def step(
        self,
        epoch: int,
        dx: torch.Tensor | None = None,
        dy: torch.Tensor | None = None,
    ) -> float:
        """The step of ``epoch`` (0-based)."""
        return self.learning_rate / (1.0 + self.decay * epoch)


class ConstantStep(InverseDecay):
    """A fixed step ``alpha`` (SVRG of Johnson & Zhang, batch gradient descent).

    :class:`InverseDecay` with ``decay = 0``.

    Parameters
    ----------
    learning_rate : float
    """

    name = "constant"

    def __init__(self, learning_rate: float, **_):
        super().__init__(learning_rate, 0.0)


class StabilizedBB:
    """SBB steps (eq. (17)): ``learning_rate`` in the first epoch, then eq. (14).

    Parameters
    ----------
    learning_rate : float
        alpha_0, used only in the first epoch (Algorithm 1's ``eta_0``, times m).
    epsilon : float
        >= 0; 0 gives SBB_0.

    Attributes
    ----------
    last : float
        The latest step; kept when the new pair carries no curvature (zero
        denominator), so the rule never returns NaN.
    """

    name = "sbb"
    absolute = True

    def __init__(self, learning_rate: float, epsilon: float = 0.0, **_):
        self.learning_rate = float(learning_rate)
        self.epsilon = float(epsilon)
        self.last = self.learning_rate

    def step(
        self,
        epoch: int,
        dx: torch.Tensor | None = None,
        dy: torch.Tensor | None = None,
    ) -> float:
        """The step of ``epoch`` (0-based) from the last iterate/gradient change."""
        if epoch == 0 or dx is None:
            self.last = self.learning_rate if epoch == 0 else self.last
            return self.last
        alpha = stabilized_bb_step(dx, dy, self.epsilon, absolute=self.absolute)
        if math.isfinite(alpha):
            self.last = alpha
        return self.last


class BarzilaiBorwein(StabilizedBB):
    """The original BB step of eq. (10) (SVRG-BB of Tan et al.), no stabilization.

    Can be negative or explode on non-convex problems: the failure that SBB
    fixes (Figure 1 of Ma et al.); here for comparison only.

    Parameters
    ----------
    learning_rate : float
    """

    name = "bb"
    absolute = False

    def __init__(self, learning_rate: float, **_):
        super().__init__(learning_rate, 0.0)


#: Step-size rules by name: ``STEP_SIZES[name](learning_rate=..., epsilon=...)``.
STEP_SIZES = {
    "constant": ConstantStep,
    "inverse_decay": InverseDecay,
    "sbb": StabilizedBB,
    "bb": BarzilaiBorwein,
}

#: A step-size rule object, as the solvers take it besides a name of
#: :data:`STEP_SIZES`.
StepSizeRule = ConstantStep | InverseDecay | StabilizedBB


#: ``learning_rate="auto"`` of fixed-step solvers: the secant curvature over a
#: trial step as long as x itself (``relative=1``), divided by this factor. A
#: fixed step must stay stable on the whole path, where the curvature of the
#: ordinal losses grows with the scale of the embedding; the factor was chosen
#: on the synthetic problems of the tests and benchmarks, not derived.
FIXED_STEP_SAFETY = 4.0


def probe_step(
    grad: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    g: torch.Tensor,
    epsilon: float = 0.0,
    *,
    relative: float = 1e-3,
) -> float:
    """A first step size from curvature measured along ``-g`` (one gradient call).

    Takes a tiny trial step ``x1 = x - tau g`` (``tau`` moves x by ``relative``
    of its norm, or by ``relative`` when x is 0) and returns the SBB step of
    the pair, i.e. the inverse curvature of f along the gradient; the default
    ``learning_rate="auto"`` of the solvers, so that no step has to be tuned.

    Parameters
    ----------
    grad : callable
        ``grad(x) -> gradient``.
    x, g : torch.Tensor
        Point and gradient there.
    epsilon : float
        SBB stabilization (bounds the answer by ``1 / epsilon``).
    relative : float

    Returns
    -------
    float
        1.0 when ``g`` is zero or the curvature vanishes along it.
    """
    gn = math.sqrt(_dot(g, g))
    if gn == 0 or not math.isfinite(gn):
        return 1.0
    xn = math.sqrt(_dot(x, x))
    tau = relative * (xn if xn > 0 else 1.0) / gn
    x1 = x - tau * g
    alpha = stabilized_bb_step(x1 - x, grad(x1) - g, epsilon)
    return alpha if math.isfinite(alpha) and alpha > 0 else 1.0
