"""Low-rank regularizers on singular values: nuclear norm and nonconvex ones.

A regularizer is ``r(X) = sum_i rbar(sigma_i(X))`` with ``rbar`` concave and
nondecreasing on [0, inf) (Sec. 3.7 of Yao & Kwok). Each object gives its value
and the supergradient weights ``w_i = rbar'(sigma_i)`` used by the DC /
reweighting schemes: ``min f(X) + lambda sum_i w_i sigma_i(X)`` (eq. (28)-(29)),
whose proximal step is the weighted SVT of Lemma 3.6 (w nondecreasing in i
because sigma is decreasing and rbar' nonincreasing).

The nonconvex penalties are scaled so that ``rbar'(0) = 1``: for small singular
values they act like the nuclear norm with the same lambda, and lambda keeps
its meaning across regularizers.
"""

from __future__ import annotations

import torch

from .._core import Registry, instance_or_named

__all__ = [
    "REGULARIZERS",
    "CappedL1",
    "LogSumPenalty",
    "NuclearNorm",
    "Regularizer",
    "TruncatedNuclearNorm",
    "get_regularizer",
]


class Regularizer:
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

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class NuclearNorm(Regularizer):
    """``rbar(a) = a``: the convex nuclear norm (problem (1))."""

    name = "nuclear"
    convex = True

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return s

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        return torch.ones(s.numel() + 1, dtype=s.dtype, device=s.device)


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
        self.rank = rank

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        out = s.clone()
        out[: self.rank] = 0
        return out

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = torch.ones(s.numel() + 1, dtype=s.dtype, device=s.device)
        w[: min(self.rank, s.numel())] = 0
        return w


class CappedL1(Regularizer):
    """``rbar(a) = min(a, theta)`` (capped-l1, Zhang 2010).

    Parameters
    ----------
    theta : float
        Singular values above theta are not penalized further.
    """

    name = "capped_l1"

    def __init__(self, theta: float = 1.0):
        self.theta = theta

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return torch.clamp(s, max=self.theta)

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = (s < self.theta).to(s.dtype)
        return torch.cat([w, torch.ones(1, dtype=s.dtype, device=s.device)])


class LogSumPenalty(Regularizer):
    """``rbar(a) = theta log(1 + a / theta)`` (log-sum penalty, Candes et al.).

    Parameters
    ----------
    theta : float
        Scale: about the nuclear norm below theta, logarithmic above.
    """

    name = "lsp"

    def __init__(self, theta: float = 1.0):
        self.theta = theta

    def rbar(self, s: torch.Tensor) -> torch.Tensor:
        return self.theta * torch.log1p(s / self.theta)

    def weights(self, s: torch.Tensor) -> torch.Tensor:
        w = self.theta / (self.theta + s)
        return torch.cat([w, torch.ones(1, dtype=s.dtype, device=s.device)])


#: Regularizers by name.
REGULARIZERS = Registry(
    "regularizer",
    {
        "nuclear": NuclearNorm,
        "tnn": TruncatedNuclearNorm,
        "capped_l1": CappedL1,
        "lsp": LogSumPenalty,
    },
    owner="embedopt.completion",
)


def get_regularizer(reg: str | Regularizer, **params) -> Regularizer:
    """Resolve a regularizer given by name (with parameters) or as an instance.

    Parameters
    ----------
    reg : {"nuclear", "tnn", "capped_l1", "lsp"} or Regularizer
    **params
        Constructor arguments (``rank`` for "tnn", ``theta`` for the others).

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
