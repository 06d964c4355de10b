"""A differentiable product-quantization layer for end-to-end training (Sec. 2.1).

The indexing layer maps a batch X to ``T(X) = phi(X R) R^T`` (Figure 1). The
code assignment (argmin) is not differentiable, so the forward value uses the
quantized vectors while the backward pass treats ``phi`` as the identity
(straight-through estimator, Bengio et al. 2013); the codebooks are learned
from the distortion term ``(1/m) ||X R - phi(X R)||^2`` of eq. (1), which also
pulls X R towards its centroids. The rotation R is one of

- ``"givens"``: a plain parameter to be stepped by
  :class:`~embedopt.optim.GivensOptimizer` (GCD-R/G/S), the paper's method;
- ``"cayley"``: ``R = R_0 (I - S)(I + S)^{-1}`` with S skew-symmetric, trained
  by any torch optimizer (baseline);
- ``"fixed"``: a buffer that never changes (the baseline of Table 1);
- ``"unconstrained"``: a free matrix trained by any optimizer (no
  orthogonality; the layer then reconstructs with ``R^T`` all the same).
"""

from __future__ import annotations

import torch
from torch import nn

from .._core import Interval, Options, persistable, validate_params
from ..linalg.rotations import cayley
from .codebooks import adc_search, assign, check_n_subquantizers, split

__all__ = ["CayleyRotation", "ProductQuantizationLayer"]

_CONSTRAINTS = {
    "dim": [Interval(int, 1, None)],
    "n_subquantizers": [Interval(int, 1, None)],
    "n_centroids": [Interval(int, 1, None)],
    "rotation": [Options(("givens", "cayley", "fixed", "unconstrained"))],
}


@persistable
class CayleyRotation(nn.Module):
    """A rotation ``R = R_0 cayley(S)`` parameterized by the strict upper triangle of S.

    Parameters
    ----------
    n : int
        Dimension.
    base : torch.Tensor, optional
        ``R_0`` (default identity).

    Notes
    -----
    :meth:`rebase` folds the current rotation into ``R_0`` and resets S to 0,
    which keeps S small and away from the singularity at eigenvalue -1.
    """

    def __init__(self, n: int, base: torch.Tensor | None = None):
        super().__init__()
        self.n = n
        self.register_buffer("base", torch.eye(n) if base is None else base.clone())
        self.register_buffer("_iu", torch.triu_indices(n, n, 1))
        self.weight = nn.Parameter(torch.zeros(self._iu.shape[1]))

    def forward(self) -> torch.Tensor:
        """The current rotation matrix.

        Returns
        -------
        torch.Tensor, shape (n, n)
            ``R_0 cayley(S)``, differentiable in the parameter.
        """
        S = torch.zeros(
            (self.n, self.n), dtype=self.weight.dtype, device=self.weight.device
        )
        S = S.index_put((self._iu[0], self._iu[1]), self.weight)
        return self.base @ cayley(S - S.T)

    @torch.no_grad()
    def rebase(self) -> None:
        """Set ``R_0 <- R`` and ``S <- 0``."""
        self.base.copy_(self.forward())
        self.weight.zero_()

    @torch.no_grad()
    def set_(self, R: torch.Tensor) -> None:
        """Set the rotation to ``R`` (and S to 0)."""
        self.base.copy_(R)
        self.weight.zero_()


@persistable
class ProductQuantizationLayer(nn.Module):
    """Trainable PQ indexing layer ``T(X) = phi(X R) R^T`` (straight-through).

    Usable as the last layer of a tower: ``out, distortion = layer(x)``; add
    ``distortion_weight * distortion`` to the loss (eq. 1).

    Parameters
    ----------
    dim : int
        n, the embedding dimension.
    n_subquantizers : int
        M (divides ``dim``).
    n_centroids : int
        K.
    rotation : {"givens", "cayley", "fixed", "unconstrained"}
        How R is represented and trained (see the module docstring).

    Attributes
    ----------
    codebooks : torch.nn.Parameter, shape (M, K, dim / M)
    rotation_weight : torch.nn.Parameter or buffer, shape (dim, dim)
        R for ``"givens"`` (hand it to :class:`~embedopt.optim.GivensOptimizer`),
        ``"fixed"`` and ``"unconstrained"``; absent for ``"cayley"`` (see
        ``cayley``).

    Examples
    --------
    >>> import torch
    >>> from embedopt.optim import GivensOptimizer
    >>> layer = ProductQuantizationLayer(8, 2, 4, rotation="givens")
    >>> x = torch.randn(16, 8, requires_grad=True)
    >>> out, distortion = layer(x)
    >>> (out.sum() + distortion).backward()
    >>> GivensOptimizer(layer.rotation_parameters(), lr=1e-3).step()
    """

    def __init__(
        self,
        dim: int,
        n_subquantizers: int,
        n_centroids: int,
        *,
        rotation: str = "givens",
    ):
        super().__init__()
        params = {
            "dim": dim,
            "n_subquantizers": n_subquantizers,
            "n_centroids": n_centroids,
            "rotation": rotation,
        }
        validate_params(type(self).__name__, params, _CONSTRAINTS)
        check_n_subquantizers(type(self).__name__, n_subquantizers, dim, f"dim={dim}")
        self.dim = dim
        self.n_subquantizers = n_subquantizers
        self.n_centroids = n_centroids
        self.rotation = rotation
        ds = dim // n_subquantizers
        self.codebooks = nn.Parameter(
            0.1 * torch.randn(n_subquantizers, n_centroids, ds)
        )
        if rotation == "cayley":
            self.cayley = CayleyRotation(dim)
        elif rotation == "fixed":
            self.register_buffer("rotation_weight", torch.eye(dim))
        else:
            self.rotation_weight = nn.Parameter(torch.eye(dim))

    def rotation_matrix(self) -> torch.Tensor:
        """The current R (differentiable for ``"cayley"``/``"unconstrained"``).

        Returns
        -------
        torch.Tensor, shape (dim, dim)
        """
        if self.rotation == "cayley":
            return self.cayley()
        return self.rotation_weight

    def rotation_parameters(self) -> list[nn.Parameter]:
        """Parameters that belong to a :class:`~embedopt.optim.GivensOptimizer`.

        Returns
        -------
        list of torch.nn.Parameter
            ``[rotation_weight]`` for ``rotation="givens"``, else empty.
        """
        return [self.rotation_weight] if self.rotation == "givens" else []

    def other_parameters(self) -> list[nn.Parameter]:
        """Every trainable parameter except the Givens rotation.

        Returns
        -------
        list of torch.nn.Parameter
            For a standard torch optimizer.
        """
        rot = {id(p) for p in self.rotation_parameters()}
        return [p for p in self.parameters() if id(p) not in rot]

    @torch.no_grad()
    def set_state(self, rotation: torch.Tensor, codebooks: torch.Tensor) -> None:
        """Warm start from a fitted quantizer (e.g. OPQ, Sec. 3.2).

        Parameters
        ----------
        rotation : torch.Tensor, shape (dim, dim)
        codebooks : torch.Tensor, shape (M, K, dim / M)
        """
        dev = self.codebooks.device
        self.codebooks.copy_(codebooks.to(dev))
        if self.rotation == "cayley":
            self.cayley.set_(rotation.to(dev))
        else:
            self.rotation_weight.copy_(rotation.to(dev))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantize a batch.

        Parameters
        ----------
        x : torch.Tensor, shape (m, dim)
            Embeddings, a row each (the tower's output).

        Returns
        -------
        out : torch.Tensor, shape (m, dim)
            ``phi(x R) R^T`` in the forward pass; gradients flow to x and R as
            if ``phi`` were the identity (straight-through, ``z + sg(q - z)``).
            The codebooks get no gradient from ``out``: they learn from the
            distortion term only, as in Zhang et al.'s joint PQ training and
            VQ-VAE's codebook loss, so a retrieval loss cannot pull centroids
            away from the vectors they quantize.
        distortion : torch.Tensor
            ``(1/m) ||x R - phi(x R)||^2`` (eq. 1), differentiable in x, R and
            the codebooks.
        """
        R = self.rotation_matrix()
        z = x @ R
        M = self.n_subquantizers
        with torch.no_grad():
            codes, _ = assign(split(z.detach(), M), self.codebooks.detach())
        q = self.codebooks[torch.arange(M, device=z.device)[None, :], codes]
        q = q.reshape(z.shape)
        distortion = ((z - q) ** 2).sum(1).mean()
        z_st = z + (q - z).detach()
        return z_st @ R.T, distortion

    @torch.no_grad()
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """PQ codes of a batch.

        Parameters
        ----------
        x : torch.Tensor, shape (m, dim)

        Returns
        -------
        torch.Tensor of int64, shape (m, M)
        """
        z = x @ self.rotation_matrix()
        return assign(split(z, self.n_subquantizers), self.codebooks)[0]

    @torch.no_grad()
    def search(
        self, queries: torch.Tensor, codes: torch.Tensor, k: int, **kw
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inner-product ADC search of queries among encoded items.

        Parameters
        ----------
        queries : torch.Tensor, shape (nq, dim)
        codes : torch.Tensor, shape (N, M)
        k : int
        **kw
            ``metric``, ``query_batch``, ``db_batch`` of
            :func:`~embedopt.quantization.adc_search` (metric defaults to
            ``"ip"``).

        Returns
        -------
        scores, ids : torch.Tensor, shape (nq, k)
        """
        kw.setdefault("metric", "ip")
        return adc_search(
            queries @ self.rotation_matrix(), codes, self.codebooks, k, **kw
        )
