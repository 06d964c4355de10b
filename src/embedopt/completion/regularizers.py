"""Low-rank regularizers on singular values: nuclear norm and nonconvex ones.

A regularizer is ``r(X) = sum_i rbar(sigma_i(X))`` with ``rbar`` concave and
nondecreasing on [0, inf) (Sec. 3.7 of Yao & Kwok). Each object gives its value
and the supergradient weights ``w_i = rbar'(sigma_i)`` used by the DC /
reweighting schemes: ``min f(X) + lambda sum_i w_i sigma_i(X)`` (eq. (28)-(29)),
whose proximal step is the weighted SVT of Lemma 3.6 (w nondecreasing in i
because sigma is decreasing and rbar' nonincreasing).

The nonconvex penalties are scaled so that ``rbar'(0) = 1``: for small singular
values they act like the nuclear norm with the same lambda, and lambda keeps
its meaning across regularizers. Their scale ``theta`` is in the units of the
singular values; ``gamma`` gives it in units of lambda instead (``theta =
gamma * lambda``, set per solve by :meth:`Regularizer.at`), which is what a
lambda path needs: MCP's own parametrization (Zhang 2010), where the penalty
stops growing at ``gamma * lambda`` whatever the scale of the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from .._core import InvalidParameterError, Registry, instance_or_named
from .._core.persistence import persistable
from .._core.registry import AttributeRepr

__all__ = [
    "REGULARIZERS",
    "CappedL1",
    "LogSumPenalty",
    "MinimaxConcavePenalty",
    "NuclearNorm",
    "Regularizer",
    "TruncatedNuclearNorm",
    "get_regularizer",
    "resolve_regularizer",
    "spectral_prox",
]


class Regularizer(AttributeRepr):
    """Base class: ``r(X) = sum_i rbar(sigma_i)``."""

    name = "regularizer"
    convex = False

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        """Elementwise penalty of singular values."""
        raise NotImplementedError

    def value(self, s: torch.Tensor) -> float:
        """``sum_i rbar(s_i)`` (float64 accumulation)."""
        return float(self.rbar(s.double()).sum())

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        """Supergradient weights ``rbar'(s_i)``, followed by ``rbar'(0)``.

        The trailing entry is the weight of every index beyond ``len(s)``
        (zero singular values); threshold vectors are extended with it.
        """
        raise NotImplementedError

    def at(self, lam: float) -> Regularizer:
        """The regularizer of a solve at ``lam``: itself unless its scale is
        relative (``gamma``), then a copy with ``theta = gamma * lam``.

        Parameters
        ----------
        lam : float
            lambda of the solve (of the mode, for tensors).

        Returns
        -------
        Regularizer
        """
        return self


@persistable
class NuclearNorm(Regularizer):
    """``rbar(a) = a``: the convex nuclear norm (problem (1))."""

    name = "nuclear"
    convex = True

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return s

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        return torch.ones(s.numel() + 1, dtype=s.dtype, device=s.device)


@persistable
class TruncatedNuclearNorm(Regularizer):
    """``sum_{i > rank} sigma_i``: the leading ``rank`` singular values are free.

    Eq. (23) of Yao & Kwok (Hu et al.'s TNNR). Solved by the DC scheme of
    eq. (24)-(27): the concave part ``-sum_{i <= rank} sigma_i`` is linearized
    at the current iterate as ``-tr(A^T X B)`` with A, B its top singular
    vectors, which adds a low-rank term to Z_t and keeps its structure.

    Parameters
    ----------
    rank : int
        Number of unpenalized leading singular values.
    """

    name = "tnn"

    def __init__(self, rank: int = 5):
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise InvalidParameterError(
                "The 'rank' parameter of TruncatedNuclearNorm (the free leading "
                f"singular values) must be an int >= 1. Got {rank!r}."
            )
        self.rank = rank

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        out = s.clone()
        out[: self.rank] = 0
        return out

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = torch.ones(s.numel() + 1, dtype=s.dtype, device=s.device)
        w[: min(self.rank, s.numel())] = 0
        return w


class _ScaledPenalty(Regularizer):
    """A penalty with a scale ``theta``, or ``gamma`` times lambda."""

    def __init__(self, theta: float | None = None, *, gamma: float | None = None):
        if theta is not None and gamma is not None:
            raise InvalidParameterError(
                f"{type(self).__name__} takes 'theta' (absolute) or 'gamma' (theta "
                "= gamma * lambda), not both."
            )
        if theta is None and gamma is None:
            theta = 1.0
        for name, value in (("theta", theta), ("gamma", gamma)):
            if value is None:
                continue
            if not (isinstance(value, int | float) and math.isfinite(value)) or (
                isinstance(value, bool) or value <= 0
            ):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must be a "
                    f"positive finite float. Got {value!r}."
                )
        # with gamma, theta is set per solve by at(lam)
        self.theta = None if theta is None else float(theta)
        self.gamma = None if gamma is None else float(gamma)

    def at(self, lam: float) -> Regularizer:
        if self.gamma is None:
            return self
        return type(self)(self.gamma * float(lam))


@persistable
class CappedL1(_ScaledPenalty):
    """``rbar(a) = min(a, theta)`` (capped-l1, Zhang 2010).

    Parameters
    ----------
    theta : float, optional
        Singular values above theta are not penalized further (default 1
        unless ``gamma`` is given).
    gamma : float, optional
        ``theta = gamma * lambda`` at each solve instead (see :meth:`at`).
    """

    name = "capped_l1"

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return torch.clamp(s, max=self.theta)

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = (s < self.theta).to(s.dtype)
        return torch.cat([w, torch.ones(1, dtype=s.dtype, device=s.device)])


@persistable
class LogSumPenalty(_ScaledPenalty):
    """``rbar(a) = theta log(1 + a / theta)`` (log-sum penalty, Candes et al.).

    Parameters
    ----------
    theta : float, optional
        Scale: about the nuclear norm below theta, logarithmic above
        (default 1 unless ``gamma`` is given).
    gamma : float, optional
        ``theta = gamma * lambda`` at each solve instead (see :meth:`at`).
    """

    name = "lsp"

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return self.theta * torch.log1p(s / self.theta)

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = self.theta / (self.theta + s)
        return torch.cat([w, torch.ones(1, dtype=s.dtype, device=s.device)])


@persistable
class MinimaxConcavePenalty(_ScaledPenalty):
    """The minimax concave penalty (MCP, Zhang 2010), on singular values.

    ``rbar(a) = a - a^2 / (2 theta)`` for ``a <= theta`` and ``theta / 2``
    above: the nuclear norm's slope 1 at 0, falling linearly to 0 at theta,
    so that singular values above theta are not shrunk at all. With
    ``theta = gamma * lambda`` this is Zhang's ``lambda^{-1} rho(a; lambda,
    gamma)``. The DC / reweighting schemes use the supergradient weights
    ``max(0, 1 - a / theta)`` (eq. (29) of Yao & Kwok); :meth:`prox` is the
    exact proximal step (firm thresholding).

    Parameters
    ----------
    theta : float, optional
        Where the penalty stops growing (default 1 unless ``gamma`` is
        given).
    gamma : float, optional
        ``theta = gamma * lambda`` at each solve instead (see :meth:`at`).
    """

    name = "mcp"

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        a = s.clamp(max=self.theta)
        return a - a * a / (2 * self.theta)

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = (1 - s / self.theta).clamp(min=0)
        return torch.cat([w, torch.ones(1, dtype=s.dtype, device=s.device)])

    def prox(self, z: torch.Tensor, lam: float) -> torch.Tensor:
        """``argmin_x (x - z)^2 / 2 + lam rbar(|x|)``, elementwise.

        For ``theta > lam`` the objective is convex and the minimizer is
        firm thresholding: 0 for ``|z| <= lam``, ``(|z| - lam) / (1 - lam /
        theta)`` up to theta, ``z`` above. Otherwise it is concave on
        ``[0, theta]`` and the minimizer is 0 or ``max(|z|, theta)``,
        whichever is lower (hard thresholding at about ``sqrt(lam theta)``).

        Parameters
        ----------
        z : torch.Tensor
        lam : float
            lambda > 0 (times the step size, in a proximal step).

        Returns
        -------
        torch.Tensor
            Same shape as ``z``, the sign of ``z``.
        """
        a, t = z.abs(), self.theta
        if t > lam:
            x = torch.where(a > t, a, ((a - lam) / (1 - lam / t)).clamp(min=0))
        else:
            far = torch.maximum(a, torch.full_like(a, t))
            cost_far = (far - a) ** 2 / 2 + lam * self.rbar(far)
            x = torch.where(cost_far < a * a / 2, far, torch.zeros_like(a))
        return torch.sign(z) * x


#: Regularizers by name.
REGULARIZERS = Registry(
    "regularizer",
    {
        "nuclear": NuclearNorm,
        "tnn": TruncatedNuclearNorm,
        "capped_l1": CappedL1,
        "lsp": LogSumPenalty,
        "mcp": MinimaxConcavePenalty,
    },
    owner="embedopt.completion",
)


def get_regularizer(reg: str | Regularizer, **params) -> Regularizer:
    """Resolve a regularizer given by name (with parameters) or as an instance.

    Parameters
    ----------
    reg : {"nuclear", "tnn", "capped_l1", "lsp", "mcp"} or Regularizer
    **params
        Constructor arguments (``rank`` for "tnn", ``theta`` or ``gamma``
        for the others).

    Returns
    -------
    Regularizer
    """
    return instance_or_named(
        reg,
        Regularizer,
        REGULARIZERS,
        "regularizer",
        "a Regularizer instance",
        **params,
    )


#: The parameters a named regularizer takes from ``regularizer_params``, and
#: the estimators' defaults for them.
REGULARIZER_DEFAULTS = {
    "nuclear": {},
    "tnn": {"rank": 5},
    "capped_l1": {"gamma": 4.0},
    "lsp": {"gamma": 8.0},
    "mcp": {"gamma": 16.0},
}
_KEYS = {"tnn": {"rank"}, "capped_l1": {"theta", "gamma"}}
_KEYS["lsp"] = _KEYS["mcp"] = _KEYS["capped_l1"]


def resolve_regularizer(
    regularizer: str | Regularizer,
    params: Mapping[str, float] | None,
    owner: str,
) -> Regularizer | None:
    """The regularizer an estimator's ``regularizer=`` and
    ``regularizer_params=`` stand for.

    Parameters
    ----------
    regularizer : {"nuclear", "tnn", "capped_l1", "lsp", "mcp"} or Regularizer
        Any spelling of a name (``"capped-l1"``).
    params : dict or None
        ``{"rank": int}`` for "tnn"; ``{"gamma": float}`` (``theta = gamma
        lambda``) or ``{"theta": float}`` for the others; missing keys take
        :data:`REGULARIZER_DEFAULTS`. Must be empty for "nuclear" and for an
        instance (which carries its own).
    owner : str
        Named in errors.

    Returns
    -------
    Regularizer or None
        None for the nuclear norm (the plain AIS-Impute step).

    Raises
    ------
    InvalidParameterError
        For an unknown name, a key the regularizer does not take, both theta
        and gamma, or a value out of range.
    """
    params = dict(params or {})
    head = f"The 'regularizer_params' parameter of {owner} must"
    if isinstance(regularizer, Regularizer):
        if params:
            raise InvalidParameterError(
                f"{head} be None with a Regularizer instance, which carries its "
                f"own parameters ({regularizer!r}). Got {params!r}."
            )
        return None if type(regularizer) is NuclearNorm else regularizer
    reg = get_regularizer(regularizer)  # an unknown name raises here
    keys = _KEYS.get(reg.name, set())
    unknown = sorted(set(params) - keys)
    if unknown:
        takes = ", ".join(map(repr, sorted(keys))) or "nothing (leave it None)"
        raise InvalidParameterError(
            f"{head} be a dict of what regularizer={regularizer!r} takes: "
            f"{takes}. Got {', '.join(map(repr, unknown))}."
        )
    if {"theta", "gamma"} <= set(params):
        raise InvalidParameterError(
            f"{head} be a dict with 'theta' (absolute) or 'gamma' (theta = "
            f"gamma * lambda), not both. Got {params!r}."
        )
    if reg.name == "nuclear":
        return None
    defaults = {} if "theta" in params else REGULARIZER_DEFAULTS[reg.name]
    try:
        return get_regularizer(reg.name, **{**defaults, **params})
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{head} be valid values: {exc}") from None


def spectral_prox(reg: Regularizer, Z: torch.Tensor, lam: float) -> torch.Tensor:
    """``argmin_X ||X - Z||_F^2 / 2 + lam r(X)`` through a dense SVD.

    The scalar proximal step of ``rbar`` applied to the singular values of Z
    (valid because it is nondecreasing on [0, inf); Lu et al. 2016). For
    checks and small matrices: the solvers never form Z (Sec. 3.2).

    Parameters
    ----------
    reg : Regularizer
        One with a ``prox(z, lam)`` method (:class:`MinimaxConcavePenalty`).
    Z : torch.Tensor
        A dense matrix.
    lam : float

    Returns
    -------
    torch.Tensor
        The minimizer, shaped as Z.
    """
    if not hasattr(reg, "prox"):
        raise InvalidParameterError(
            f"spectral_prox: {reg!r} has no scalar proximal step; use the "
            "weighted SVT of its linearization (dc_completion, irnn)."
        )
    U, s, Vh = torch.linalg.svd(Z, full_matrices=False)
    return (U * reg.prox(s, lam)) @ Vh
