"""Losses of ordinal embedding and their closed-form gradients.

Every comparison ``q = (i, j, l, k)`` (a triplet ``(i, j, k)`` is
``(i, j, i, k)``) states that the pair (i, j) is closer than the pair
(l, k). Its loss depends on the embedding only through the squared
distances ``d_near = ||x_i - x_j||^2`` and ``d_far = ||x_l - x_k||^2``
(Ma et al., eq. (6), (51)), so a loss is the scalar function
``ell(d_near, d_far)`` and its two partial derivatives
``a = d ell / d d_near`` and ``c = d ell / d d_far``; the gradient of the
comparison then is, by the chain rule through ``d = ||e||^2``,

    grad_i = 2 a (x_i - x_j),  grad_j = -grad_i,
    grad_l = 2 c (x_l - x_k),  grad_k = -grad_l

(for a triplet, grad_i is the sum of the first and third rows). Every loss
is written in a form that stays finite for any distances: softplus /
log-sum-exp instead of ``log(1 + exp(.))`` and sigmoids instead of ratios of
exponentials, so an ``exp(-d)`` that underflows never reaches a division.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import InvalidParameterError, Registry, persistable
from .._core.registry import AttributeRepr

__all__ = [
    "LOSSES",
    "CKLLoss",
    "GNMDSLoss",
    "OrdinalLoss",
    "SOELoss",
    "STELoss",
    "TSTELoss",
    "comparison_gradients",
    "get_loss",
]


def _floor(t: torch.Tensor) -> float:
    # Smallest denominator: keeps 1 / x finite, also in float32.
    return float(torch.finfo(t.dtype).eps)


class OrdinalLoss(AttributeRepr):
    """Base class: a loss ``ell(d_near, d_far)`` of the two squared distances.

    Attributes
    ----------
    name : str
    smooth : bool
        False for hinge losses, whose gradient is a subgradient.
    """

    name = "loss"
    smooth = True

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        """Elementwise loss."""
        raise NotImplementedError

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Elementwise ``(d ell / d d_near, d ell / d d_far)``."""
        raise NotImplementedError

    def with_dimension(self, n_components: int) -> OrdinalLoss:
        """The loss to use for an embedding of ``n_components`` dimensions."""
        return self


@persistable
class GNMDSLoss(OrdinalLoss):
    """Hinge loss of GNMDS (Agarwal et al.; Ma et al., eq. (45), (56)).

    ``ell = max(0, d_near + margin - d_far)``; its subgradient is
    ``(1, -1)`` where the margin is violated and 0 elsewhere.

    Parameters
    ----------
    margin : float
        The unit margin of eq. (45).
    """

    name = "gnmds"
    smooth = False

    def __init__(self, margin: float = 1.0):
        self.margin = float(margin)

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        return torch.relu(d_near + self.margin - d_far)

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        active = (d_near + self.margin - d_far > 0).to(d_near.dtype)
        return active, -active


@persistable
class CKLLoss(OrdinalLoss):
    """Crowd Kernel Learning (Tamuz et al., 2011).

    ``p = (mu + d_far) / (2 mu + d_near + d_far)`` is the probability that
    the answer is right; ``ell = -log p = log(2 mu + d_near + d_far) -
    log(mu + d_far)``. (Eq. (47) of Ma et al. prints a different expression
    that is not a probability of the stated order; we follow Tamuz et al., as
    the paper's experiments and every CKL implementation do.) The arguments
    of the logarithms are floored at machine epsilon so that ``mu = 0`` with
    coincident points stays finite.

    The minimizer of this loss need not order the triplets well: on the
    synthetic problem of Ma et al.'s Table I, L-BFGS started from the
    planted points moves to a held-out triplet error of 0.18 and a training
    error of 0.15, for mu from 0 to 1 (the scale of an unconstrained
    embedding outgrows any mu); cblearn's CKL ends at the same 0.18.

    Parameters
    ----------
    mu : float
        >= 0; regularizes the ratio near zero distances.
    """

    name = "ckl"

    def __init__(self, mu: float = 0.1):
        self.mu = float(mu)

    def _terms(self, d_near, d_far):
        tiny = _floor(d_near)
        total = torch.clamp(2 * self.mu + d_near + d_far, min=tiny)
        far = torch.clamp(self.mu + d_far, min=tiny)
        return total, far

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        total, far = self._terms(d_near, d_far)
        return torch.log(total) - torch.log(far)

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        total, far = self._terms(d_near, d_far)
        a = 1.0 / total
        return a, a - 1.0 / far


@persistable
class STELoss(OrdinalLoss):
    """Stochastic Triplet Embedding (van der Maaten & Weinberger; eq. (48), (54)).

    ``p = exp(-d_near) / (exp(-d_near) + exp(-d_far))`` and
    ``ell = -log p = softplus(d_near - d_far)``; the partials are
    ``+-sigmoid(d_near - d_far)``, finite for any distances.
    """

    name = "ste"

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        return F.softplus(d_near - d_far)

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        s = torch.sigmoid(d_near - d_far)
        return s, -s


@persistable
class TSTELoss(OrdinalLoss):
    """t-distributed STE (van der Maaten & Weinberger; eq. (49), (58)).

    With the Student-t kernel ``k(d) = (1 + d / alpha)^(-(alpha + 1) / 2)``,
    ``ell = -log(k_near / (k_near + k_far)) = softplus(u)``,
    ``u = (alpha + 1) / 2 (log1p(d_near / alpha) - log1p(d_far / alpha))``;
    ``a = sigmoid(u) (alpha + 1) / (2 (alpha + d_near))`` and
    ``c = -sigmoid(u) (alpha + 1) / (2 (alpha + d_far))``.

    Parameters
    ----------
    alpha : float, optional
        Degrees of freedom; default ``max(n_components - 1, 1)`` (the choice
        of the t-STE paper and of Ma et al.'s code), resolved by
        :meth:`with_dimension`.
    """

    name = "tste"

    def __init__(self, alpha: float | None = None):
        self.alpha = None if alpha is None else float(alpha)

    def with_dimension(self, n_components: int) -> TSTELoss:
        if self.alpha is not None:
            return self
        return TSTELoss(float(max(n_components - 1, 1)))

    def _alpha(self) -> float:
        if self.alpha is None:
            raise InvalidParameterError(
                "TSTELoss(alpha=None) needs the embedding dimension: call "
                ".with_dimension(n_components) first, or give alpha."
            )
        return self.alpha

    def _u(self, d_near, d_far, alpha):
        return (
            0.5
            * (alpha + 1)
            * (torch.log1p(d_near / alpha) - torch.log1p(d_far / alpha))
        )

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        alpha = self._alpha()
        return F.softplus(self._u(d_near, d_far, alpha))

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        alpha = self._alpha()
        s = torch.sigmoid(self._u(d_near, d_far, alpha)) * (0.5 * (alpha + 1))
        return s / (alpha + d_near), -s / (alpha + d_far)


@persistable
class SOELoss(OrdinalLoss):
    """Soft Ordinal Embedding (Terada & von Luxburg, 2014), as users know it.

    ``ell = max(0, sqrt(d_near) + margin - sqrt(d_far))^2`` on *Euclidean*
    (not squared) distances, with SOE's default margin 0.1. With
    ``h = max(0, .)``: ``a = h / sqrt(d_near)``, ``c = -h / sqrt(d_far)``; the
    distances are floored at machine epsilon, so the gradient
    ``2 h (x_i - x_j) / ||x_i - x_j||`` stays bounded and finite when two
    points coincide.

    Parameters
    ----------
    margin : float
    """

    name = "soe"

    def __init__(self, margin: float = 0.1):
        self.margin = float(margin)

    def _hinge(self, d_near, d_far):
        # sqrt(max(d, eps^2)) as d * rsqrt(d): torch's sqrt/pow/exp/log kernels
        # can take ~10 ms on tiny tensors with several intra-op threads on a
        # busy CPU, rsqrt does not; the floor changes a distance by <= eps.
        floor = _floor(d_near) ** 2
        inv_near = torch.rsqrt(torch.clamp(d_near, min=floor))
        inv_far = torch.rsqrt(torch.clamp(d_far, min=floor))
        r_near = torch.clamp(d_near, min=floor) * inv_near
        r_far = torch.clamp(d_far, min=floor) * inv_far
        return torch.relu(r_near + self.margin - r_far), inv_near, inv_far

    def value(self, d_near: torch.Tensor, d_far: torch.Tensor) -> torch.Tensor:
        h, _, _ = self._hinge(d_near, d_far)
        return h * h

    def partials(
        self, d_near: torch.Tensor, d_far: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h, inv_near, inv_far = self._hinge(d_near, d_far)
        return h * inv_near, -h * inv_far


#: Losses by name.
LOSSES = Registry(
    "loss",
    {
        "gnmds": GNMDSLoss,
        "ckl": CKLLoss,
        "ste": STELoss,
        "tste": TSTELoss,
        "soe": SOELoss,
    },
    owner="embedopt.ordinal",
)


def get_loss(
    loss: str | OrdinalLoss,
    n_components: int | None = None,
    *,
    mu: float | None = None,
    alpha: float | None = None,
    margin: float | None = None,
) -> OrdinalLoss:
    """Resolve a loss given by name (with its parameters) or as an instance.

    Parameters
    ----------
    loss : {"gnmds", "ckl", "ste", "tste", "soe"} or OrdinalLoss
    n_components : int, optional
        Resolves t-STE's default alpha.
    mu : float, optional
        CKL's mu (default 0.1).
    alpha : float, optional
        t-STE's degrees of freedom.
    margin : float, optional
        GNMDS (default 1) or SOE (default 0.1) margin.

    Returns
    -------
    OrdinalLoss
    """
    if isinstance(loss, OrdinalLoss):
        out = loss
    elif isinstance(loss, str) and loss in LOSSES:
        loss = LOSSES.resolve_name(loss)
        kwargs = {
            "ckl": {"mu": mu},
            "tste": {"alpha": alpha},
            "gnmds": {"margin": margin},
            "soe": {"margin": margin},
        }.get(loss, {})
        out = LOSSES.get(loss)(**{k: v for k, v in kwargs.items() if v is not None})
    else:
        raise InvalidParameterError(
            "The 'loss' parameter must be a str among {'gnmds', 'ckl', 'ste', 'tste', "
            f"'soe'}} or an OrdinalLoss instance. Got {loss!r}."
        )
    return out.with_dimension(n_components) if n_components is not None else out


def comparison_gradients(
    loss: OrdinalLoss, Xq: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss and closed-form gradient of each comparison in a batch.

    Parameters
    ----------
    loss : OrdinalLoss
    Xq : torch.Tensor, shape (..., 4, p)
        The rows ``x_i, x_j, x_l, x_k`` of each comparison.

    Returns
    -------
    value : torch.Tensor, shape (...)
    grad : torch.Tensor, shape (..., 4, p)
        Gradient with respect to the four rows (module docstring).
    """
    e = Xq[..., 0::2, :] - Xq[..., 1::2, :]  # (..., 2, p): x_i - x_j, x_l - x_k
    d = (e * e).sum(-1)
    d_near, d_far = d[..., 0], d[..., 1]
    a, c = loss.partials(d_near, d_far)
    g = 2.0 * torch.stack((a, c), -1).unsqueeze(-1) * e  # (..., 2, p)
    grad = torch.stack((g, -g), -2).flatten(-3, -2)  # rows i, j, l, k
    return loss.value(d_near, d_far), grad
