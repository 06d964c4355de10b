"""The all-pairs two-tower objective: value, gradient and Gauss-Newton products
at O(m + n) cost (paper Sec. 3; ``notes/similarity-derivations.md``).

Two towers embed the m left entities (users) and the n right entities
(items): ``p_i = f(theta_u; u_i)``, ``q_j = g(theta_v; v_j)``, stacked in P
(m x k) and Q (n x k); the predicted similarity is ``Yhat = P Q^T``, never
formed. With observed pairs O, labels Y_O and confidences ``w_ij`` (the
``sample_weight``, default 1), weights ``a`` (m,), ``b`` (n,), and an imputed
matrix ``Ytilde = Ptilde Qtilde^T`` for the other pairs::

    L(theta) = sum_{(i,j) in O} w_ij l(Y_ij, Yhat_ij)
             + (omega / 2) sum_{(i,j) in S} a_i b_j (Ytilde_ij - Yhat_ij)^2
             + (lam / 2) ||theta||^2

with S the unobserved pairs (the paper's eq. 7, ``imputed="unobserved"``) or
all m n pairs (``imputed="all"``). The sum over S is computed from k x k
Gramians (eq. 13-14) and, for ``"unobserved"``, minus its terms on O (eq.
10-11), so that every oracle costs ``O(|O| k + (m + n) k^2 + m F(f) + n
F(g))``:

- value: one forward pass of each tower;
- gradient (Algorithm 1, eq. 27): plus one reverse pass (vector-Jacobian
  product) of each tower with cotangents ``X_P``, ``X_Q``;
- Gauss-Newton product (Sec. 3.4): one forward-mode pass (Jacobian-vector
  product) and one reverse pass of each tower.

The confidences ``w`` (iALS's ``1 + alpha r``, Hu et al., 2008) multiply the
observed-pair loss only: the Gramian terms and their correction on O do not
see them, and the observed parts of the three oracles (``l``, ``l'``,
``l''`` on O) are multiplied by ``w`` pair by pair, ``O(|O|)`` more work.

The regularizer Psi of eq. 5 is ``||theta||^2 / 2`` (twice differentiable,
strongly convex, as the paper asks); users wanting another can add it to
their towers' outputs or subclass.

Numerics: the Gramians, the all-pairs parts of the cotangents and every sum
of the value are accumulated in float64 whatever the towers' dtype (the
all-pairs term is a difference of nearly equal Gramian inner products when
Yhat is close to Ytilde). The towers and the products over the observed
pairs (sampled dot products, sparse-dense products, sums of |O_i| terms
that do not cancel) run in the towers' dtype: in float64 they cost 3 to 9
times more on a CPU (MovieLens-100K, k = 32).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn
from torch.func import functional_call, jvp, vjp

from .._core import DataValidationError, InvalidParameterError, Options, check_param
from ..data import InteractionsLike, as_interactions
from ..linalg import SparsePattern, hutchinson_diagonal
from ..linalg.points import as_tuple, pack
from ..nn import EmbeddingTower
from .losses import LossLike, get_loss

__all__ = ["AllPairsObjective", "dense_objective", "popularity_weights"]

#: The imputed labels: a constant, or the factors ``(Ptilde, Qtilde)``.
Imputation = float | tuple[ArrayLike | torch.Tensor, ArrayLike | torch.Tensor]

_F64 = torch.float64


def popularity_weights(counts: ArrayLike, alpha: float = 0.5) -> np.ndarray:
    """Weights that grow with popularity, normalized to mean 1.

    ``w_j = c_j^alpha / mean(c^alpha)`` for the number of observed pairs
    ``c_j`` of entity j (He et al., 2016): popular items absent from a user's
    history are stronger evidence of dislike than rare ones.

    Parameters
    ----------
    counts : array-like of int, shape (n,)
    alpha : float
        Exponent; 0 gives uniform weights.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    c = np.asarray(counts, dtype=np.float64) ** alpha
    mean = c.mean()
    return c / mean if mean > 0 else np.ones_like(c)


class _Side:
    """One tower with its inputs, weights and imputation factor."""

    def __init__(self, name, tower, inputs, n, weights, tilde, chunk_size):
        self.name = name
        self.tower = tower
        self.names = [k for k, p in tower.named_parameters() if p.requires_grad]
        self.inputs = inputs
        self.n = n
        self.weights = weights  # float64 (n,)
        self.tilde = tilde  # float64 (n, kt)
        step = n if chunk_size is None else max(1, int(chunk_size))
        self.chunks = [slice(a, min(a + step, n)) for a in range(0, n, step)]
        self.ids = self._table_ids()

    def _table_ids(self) -> torch.Tensor | None:
        """The row ids when the tower is a plain embedding table and its only
        trainable parameter: then ``f(W) = W[ids]``, its pullback a scatter-add
        and its push-forward a gather, with no torch.func transform (whose
        first use imports torch._dynamo, 1.5 s once per process, and whose
        per-call overhead is most of an ALS iteration's bookkeeping)."""
        name = table_parameter(self.tower)
        ids = self.inputs
        if (
            name is None
            or self.names != [name]
            or not torch.is_tensor(ids)
            or ids.ndim != 1
            or ids.dtype.is_floating_point
            or ids.dtype == torch.bool
        ):
            return None
        return ids.long()

    def parameters(self) -> tuple[torch.Tensor, ...]:
        named = dict(self.tower.named_parameters())
        return tuple(named[k] for k in self.names)

    def function(self, rows: slice):
        """``params -> tower(inputs[rows])`` as a pure function of the parameters."""
        inputs = self.inputs[rows]

        def call(*params):
            return functional_call(
                self.tower, dict(zip(self.names, params, strict=True)), (inputs,)
            )

        return call


def table_parameter(tower: nn.Module) -> str | None:
    """The parameter holding the rows of a plain embedding table, else None."""
    if isinstance(tower, EmbeddingTower) and not tower.normalize:
        return "table.weight"
    if isinstance(tower, nn.Embedding) and tower.max_norm is None:
        return "weight"
    return None


def _scatter_rows(W: torch.Tensor, ids: torch.Tensor, X: torch.Tensor):
    """``J^T X`` of ``W -> W[ids]``: the rows of X added into a zero table."""
    return (torch.zeros_like(W).index_add_(0, ids, X.to(W.dtype)),)


@dataclass
class _State:
    """What one point's oracles share: embeddings, Gramians, observed scores."""

    x: tuple
    P: torch.Tensor
    Q: torch.Tensor
    yhat: torch.Tensor  # float64, observed pairs in CSR order
    G: tuple  # (G_P, G_Q) float64 k x k, weighted Gramians
    C: tuple  # (C_P, C_Q) float64 k x kt
    pullbacks: tuple | None = None  # per side, the single-chunk vjp function or None
    value: float | None = None
    extras: dict = field(default_factory=dict)
    Q_all: torch.Tensor | None = None  # Q of every item (the pairs' q_j)


class AllPairsObjective:
    """Value, gradient and Gauss-Newton products of the all-pairs objective.

    A point is the tuple of the towers' trainable parameters, user tower
    first (see :meth:`initial_point`); it follows the
    :class:`~embedopt.optim.objective.GaussNewtonObjective` protocol, so
    :func:`~embedopt.optim.newton_cg`, :func:`~embedopt.optim.lbfgs` and the
    line searches of :mod:`embedopt.optim` run on it directly.

    Parameters
    ----------
    user_tower, item_tower : torch.nn.Module
        Map a batch of inputs (rows of ``user_inputs`` / ``item_inputs``) to
        a batch of k-dimensional embeddings; any module works (the built-in
        ones are in :mod:`embedopt.nn`). Their buffers stay fixed; their
        trainable parameters are the variables.
    interactions : Interactions, ObservedEntries or tuple
        Observed pairs O (see :func:`~embedopt.data.as_interactions`), with
        their labels as values; pairs without values are labelled 1
        (implicit feedback). m and n are the rows of ``user_inputs`` /
        ``item_inputs``, else the towers' ``n_ids``, else the largest
        observed index plus one.
    loss : str, loss object or callable
        The observed-pair loss l (see :func:`~embedopt.similarity.get_loss`).
    omega : float
        Weight of the imputed pairs.
    user_weights, item_weights : array-like of shape (m,) / (n,), optional
        ``a`` and ``b``; default all ones.
    sample_weight : array-like of shape (|O|,), optional
        ``w``: one finite non-negative confidence per observed pair, in the
        order of the pairs of ``interactions`` (of
        :func:`~embedopt.data.as_interactions`), not all zero; it multiplies
        that pair's loss ``l(Y_ij, Yhat_ij)``. None: all 1 (the unweighted
        objective, computed without the products). A pair of weight 0 with
        ``imputed="unobserved"`` is in neither term.
    imputation : float or tuple (Ptilde, Qtilde)
        The imputed labels: a constant c (``Ptilde = c 1``, ``Qtilde = 1``),
        or the factors of a prior model, shapes (m, kt) and (n, kt).
    imputed : {"unobserved", "all"}
        Which pairs the imputation term covers: the unobserved ones (paper
        eq. 7) or all m n pairs.
    lam : float
        Weight of the regularizer ``||theta||^2 / 2``.
    user_inputs, item_inputs : torch.Tensor, optional
        Row i is what the tower receives for entity i; default the ids
        ``arange(m)`` / ``arange(n)`` (what the towers of :mod:`embedopt.nn`
        take).
    chunk_size : int, optional
        Entities per tower pass. None runs each tower on all its entities at
        once and keeps the reverse-mode graph between the gradient and the
        Gauss-Newton products of one point; an int bounds activation memory
        to that many entities and recomputes the forward pass per chunk.

    Attributes
    ----------
    shape : tuple of int
        ``(m, n)``.
    n_observed : int
        ``|O|``.
    sample_weight : torch.Tensor or None
        The confidences w (float64) of the observed pairs sorted by user,
        then item; None when none were given.

    Notes
    -----
    The Gauss-Newton matrix is ``J^T D J + lam I`` with ``D_ij = w_ij
    l''(Y_ij, Yhat_ij)`` on O and ``omega a_i b_j`` on the imputed pairs (for
    ``imputed="all"``, the observed pairs carry both); it is positive
    semidefinite for convex l and non-negative weights.
    """

    def __init__(
        self,
        user_tower: nn.Module,
        item_tower: nn.Module,
        interactions: InteractionsLike,
        *,
        loss: LossLike = "square",
        omega: float = 1.0,
        user_weights: ArrayLike | torch.Tensor | None = None,
        item_weights: ArrayLike | torch.Tensor | None = None,
        sample_weight: ArrayLike | torch.Tensor | None = None,
        imputation: Imputation = 0.0,
        imputed: str = "unobserved",
        lam: float = 0.0,
        user_inputs: torch.Tensor | None = None,
        item_inputs: torch.Tensor | None = None,
        chunk_size: int | None = None,
    ):
        owner = type(self).__name__
        check_param(owner, "imputed", imputed, [Options(["unobserved", "all"])])
        for name, v in (("omega", omega), ("lam", lam)):
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise InvalidParameterError(
                    f"The '{name}' parameter of {owner} must be a finite float "
                    f">= 0. Got {v!r}."
                )
        counts = _entity_counts(user_tower, item_tower, user_inputs, item_inputs)
        data = as_interactions(interactions, counts)
        m, n = data.shape
        self.shape = (m, n)
        self.n_observed = len(data)
        self.loss = get_loss(loss)
        self.omega, self.lam, self.imputed = float(omega), float(lam), imputed
        ref = next(iter(user_tower.parameters()), None)
        self.device = ref.device if ref is not None else torch.device("cpu")
        dev = self.device
        self.pattern = SparsePattern(data.users, data.items, (m, n), device=dev)
        order = self.pattern.order.cpu().numpy()
        labels = np.ones(len(data)) if data.values is None else data.values
        self.labels = torch.as_tensor(labels[order], dtype=_F64, device=dev)
        #: w in CSR order (float64), or None: all 1, no products
        self.sample_weight = _sample_weight(sample_weight, order, owner, dev)
        rows, cols = data.users[order], data.items[order]
        tilde_u, tilde_v = _imputation_factors(imputation, m, n, dev)
        weights_u = _weights(user_weights, m, "user_weights", dev)
        weights_v = _weights(item_weights, n, "item_weights", dev)
        self.sides = (
            _Side(
                "user",
                user_tower,
                _inputs(user_inputs, m, "user_inputs", dev),
                m,
                weights_u,
                tilde_u,
                chunk_size,
            ),
            _Side(
                "item",
                item_tower,
                _inputs(item_inputs, n, "item_inputs", dev),
                n,
                weights_v,
                tilde_v,
                chunk_size,
            ),
        )
        r, c = torch.as_tensor(rows, device=dev), torch.as_tensor(cols, device=dev)
        # Imputed labels and pair weights at the observed positions (eq. 10-11).
        self.ytilde = (tilde_u[r] * tilde_v[c]).sum(1)
        self.pair_weights = weights_u[r] * weights_v[c]
        # <Gt_P, Gt_Q>: the constant part of the all-pairs sum (eq. 13).
        self._tilde_const = float(
            ((tilde_u.T * weights_u) @ tilde_u * ((tilde_v.T * weights_v) @ tilde_v))
            .sum()
            .item()
        )
        self._n_user_params = len(self.sides[0].names)
        self._state: _State | None = None

    # -- points ----------------------------------------------------------------
    def initial_point(self) -> tuple[torch.Tensor, ...]:
        """The towers' current trainable parameters (detached copies), user first."""
        return tuple(
            p.detach().clone() for side in self.sides for p in side.parameters()
        )

    def split(self, x: Sequence[torch.Tensor]) -> tuple[tuple, tuple]:
        """``x`` as (user tower parameters, item tower parameters)."""
        x = tuple(x)
        expected = self._n_user_params + len(self.sides[1].names)
        if len(x) != expected:
            raise InvalidParameterError(
                f"A point of this objective has {expected} parameter tensors "
                f"(user tower, then item tower); got {len(x)}."
            )
        return x[: self._n_user_params], x[self._n_user_params :]

    @torch.no_grad()
    def load(self, x: Sequence[torch.Tensor]) -> None:
        """Copy the point ``x`` into the towers' parameters."""
        for side, params in zip(self.sides, self.split(x), strict=True):
            for p, v in zip(side.parameters(), params, strict=True):
                p.copy_(v)

    @torch.no_grad()
    def embeddings(
        self, x: Sequence[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """P (m x k) and Q (n x k) at ``x``."""
        state = self._evaluate(x)
        return state.P, state.Q

    # -- oracles ---------------------------------------------------------------
    def value(self, x: Sequence[torch.Tensor]) -> float:
        """``L(x)`` (eq. 10 with 13): forward passes only."""
        state = self._evaluate(x)
        if state.value is None:
            state.value = self._value(state)
        return state.value

    def value_and_grad(
        self, x: Sequence[torch.Tensor]
    ) -> tuple[float, tuple[torch.Tensor, ...]]:
        """``L(x)`` and its gradient (Algorithm 1, eq. 27)."""
        state = self._evaluate(x, keep_graph=True)
        if state.value is None:
            state.value = self._value(state)
        loss, pat = self.loss, self.pattern
        residual = self._confident(loss.first(self.labels, state.yhat))
        if self.imputed == "unobserved":
            residual = residual - self.omega * self.pair_weights * (
                state.yhat - self.ytilde
            )
        (G_P, G_Q), (C_P, C_Q) = state.G, state.C
        P, Q = state.P, state.Q
        P64, Q64 = P.to(_F64), Q.to(_F64)
        su, sv = self.sides
        # Observed parts in the towers' dtype (sums of |O_i| terms, no
        # cancellation), all-pairs parts in float64 (eq. 27).
        r = residual.to(P.dtype)
        RQ = pat.matmul(r, state.Q_all).to(_F64)
        RtP = self._own_items(pat.rmatmul(r, P)).to(_F64)
        X_P = _add_scaled(
            RQ, self.omega * su.weights[:, None], P64 @ G_Q, su.tilde @ C_Q.T, -1
        )
        X_Q = _add_scaled(
            RtP, self.omega * sv.weights[:, None], Q64 @ G_P, sv.tilde @ C_P.T, -1
        )
        grad = self._pullback(state, (X_P, X_Q))
        return state.value, self._regularized(grad, state.x, self.lam)

    def gnvp(
        self, x: Sequence[torch.Tensor], v: Sequence[torch.Tensor]
    ) -> tuple[torch.Tensor, ...]:
        """The Gauss-Newton product ``(J^T D J + lam I) v`` (Sec. 3.4).

        Reuses the embeddings, Gramians and second derivatives of the last
        point evaluated when ``x`` is that point (a CG solve calls this many
        times at one x).
        """
        state = self._evaluate(x, keep_graph=True)
        d2 = state.extras.get("d2")
        if d2 is None:
            d2 = self._confident(self.loss.second(self.labels, state.yhat))
            if self.imputed == "unobserved":
                d2 = d2 - self.omega * self.pair_weights
            state.extras["d2"] = d2
        dP, dQ = (
            self._push_forward(side, params, tangents)
            for side, params, tangents in zip(
                self.sides, self.split(state.x), self.split(v), strict=True
            )
        )
        P, Q = state.P, state.Q
        P64, Q64, dP64, dQ64 = (t.to(_F64) for t in (P, Q, dP, dQ))
        G_P, G_Q = state.G
        su, sv = self.sides
        pat = self.pattern
        Q_all = state.Q_all
        jv = pat.sampled_dot(dP, Q_all) + pat.sampled_dot(P, self._all_items(dQ))
        z = (d2 * jv.to(_F64)).to(P.dtype)
        H_Q, H_P = self._all_reduce(
            (dQ64.T * sv.weights) @ Q64, (dP64.T * su.weights) @ P64
        )
        ZQ = pat.matmul(z, Q_all).to(_F64)
        ZtP = self._own_items(pat.rmatmul(z, P)).to(_F64)
        X_P = _add_scaled(ZQ, self.omega * su.weights[:, None], dP64 @ G_Q, P64 @ H_Q)
        X_Q = _add_scaled(ZtP, self.omega * sv.weights[:, None], Q64 @ H_P, dQ64 @ G_P)
        out = self._pullback(state, (X_P, X_Q))
        return self._regularized(out, tuple(v), self.lam)

    # -- pieces ----------------------------------------------------------------
    def _value(self, state: _State) -> float:
        y, yhat = self.labels, state.yhat
        observed = self._confident(self.loss.value(y, yhat)).sum()
        on_observed = observed.new_zeros(())
        if self.imputed == "unobserved":
            on_observed = (self.pair_weights * (self.ytilde - yhat) ** 2).sum()
        observed, on_observed = self._all_reduce(observed, on_observed)
        (G_P, G_Q), (C_P, C_Q) = state.G, state.C
        all_pairs = (G_P * G_Q).sum() - 2.0 * (C_P * C_Q).sum() + self._tilde_const
        if self.imputed == "unobserved":
            all_pairs = all_pairs - on_observed
        reg = sum(float((p.to(_F64) ** 2).sum()) for p in state.x)
        return float(observed + 0.5 * self.omega * all_pairs) + 0.5 * self.lam * reg

    def _confident(self, per_pair: torch.Tensor) -> torch.Tensor:
        """``w * per_pair`` (observed pairs in CSR order); as is without w."""
        w = self.sample_weight
        return per_pair if w is None else w * per_pair

    def _evaluate(self, x, keep_graph: bool = False) -> _State:
        """Embeddings and Gramians at ``x``, cached for the last point."""
        x = tuple(x)
        state = self._state
        single = self._one_pass()
        if state is not None and _same_point(state.x, x):
            if keep_graph and single and not self._has_pullbacks(state):
                state = None  # recompute once with the graph kept
            else:
                return state
        pullbacks = []
        embeds = []
        for side, params in zip(self.sides, self.split(x), strict=True):
            if side.ids is not None:
                # no graph to keep: _pullback scatters (pullbacks[s] stays None)
                embeds.append(params[0].detach()[side.ids])
                pullbacks.append(None)
            elif keep_graph and single:
                out, fn = vjp(side.function(side.chunks[0]), *params)
                pullbacks.append(fn)
                embeds.append(out.detach())
            else:
                pullbacks.append(None)
                with torch.no_grad():
                    embeds.append(
                        torch.cat([side.function(c)(*params) for c in side.chunks])
                    )
        P, Q = embeds
        self._check_embeddings(P, Q)
        su, sv = self.sides
        P64, Q64 = P.to(_F64), Q.to(_F64)
        PA, QB = P64.T * su.weights, Q64.T * sv.weights  # P^T A, Q^T B
        G_P, G_Q, C_P, C_Q = self._all_reduce(
            PA @ P64, QB @ Q64, PA @ su.tilde, QB @ sv.tilde
        )
        del PA, QB
        G, C = (G_P, G_Q), (C_P, C_Q)
        Q_all = self._all_items(Q)
        yhat = self.pattern.sampled_dot(P, Q_all).to(_F64)
        self._state = _State(x, P, Q, yhat, G, C, tuple(pullbacks), Q_all=Q_all)
        return self._state

    def _has_pullbacks(self, state: _State) -> bool:
        """Whether every tower that needs a kept graph (not a table) has one."""
        return all(
            side.ids is not None
            or (state.pullbacks is not None and state.pullbacks[s] is not None)
            for s, side in enumerate(self.sides)
        )

    def _check_embeddings(self, P: torch.Tensor, Q: torch.Tensor) -> None:
        for side, E in zip(self.sides, (P, Q), strict=True):
            if E.ndim != 2 or E.shape[0] != side.n:
                raise DataValidationError(
                    f"The {side.name} tower must map {side.n} inputs to an "
                    f"({side.n}, k) tensor; got shape {tuple(E.shape)}."
                )
        if P.shape[1] != Q.shape[1]:
            raise DataValidationError(
                "The two towers must have the same output dimension k; got "
                f"{P.shape[1]} (user) and {Q.shape[1]} (item)."
            )

    def _pullback(self, state: _State, cotangents) -> tuple[torch.Tensor, ...]:
        """``(J_u^T vec(X_P), J_v^T vec(X_Q))`` (eq. 22), chunk by chunk."""
        out = []
        for s, (side, params, X) in enumerate(
            zip(self.sides, self.split(state.x), cotangents, strict=True)
        ):
            X = X.to(state.P.dtype)
            if side.ids is not None:
                out.extend(_scatter_rows(params[0].detach(), side.ids, X))
                continue
            if state.pullbacks is not None and state.pullbacks[s] is not None:
                out.extend(state.pullbacks[s](X))
                continue
            total = None
            for rows in side.chunks:
                _, fn = vjp(side.function(rows), *params)
                part = fn(X[rows])
                total = part if total is None else _add(total, part)
            out.extend(total)
        return self._all_reduce(*(g.detach() for g in out))

    # -- data-parallel hooks (identities here; see .distributed) ----------------
    # DistributedAllPairsObjective shards the users (with their observed pairs)
    # and the items over processes and overrides these; everything above is
    # written for the local shard and calls them where a sum over entities or
    # pairs of other processes enters.
    def _all_reduce(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The sums over processes of per-process partial sums."""
        return tensors

    def _all_items(self, X: torch.Tensor) -> torch.Tensor:
        """All n rows of an item-indexed matrix given this process's rows."""
        return X

    def _own_items(self, X: torch.Tensor) -> torch.Tensor:
        """This process's rows of the sum over processes of an (n, .) matrix."""
        return X

    def _one_pass(self) -> bool:
        """Whether each tower runs in one pass (and keeps its graph); processes
        must agree, since it decides which collectives a point runs."""
        return all(len(s.chunks) == 1 for s in self.sides)

    def _push_forward(self, side: _Side, params, tangents) -> torch.Tensor:
        """``J d`` of one tower (forward mode), chunk by chunk."""
        tangents = tuple(tangents)
        if side.ids is not None:
            return tangents[0][side.ids]
        return torch.cat(
            [jvp(side.function(rows), params, tangents)[1] for rows in side.chunks]
        )

    @staticmethod
    def _regularized(grad, x, lam: float) -> tuple[torch.Tensor, ...]:
        if not lam:
            return tuple(grad)
        return tuple(g + lam * p for g, p in zip(grad, x, strict=True))


def _add_scaled(R, c, A, B, sign=1) -> torch.Tensor:
    """``R + c * (A + sign B)``, in the memory of the fresh product ``A``.

    Same bits as the expression, without its three (entities, k) float64
    temporaries: at 10^6 entities each one is 128 MB of new pages that the
    kernel zero-fills, about as long as the arithmetic itself.
    """
    if sign < 0:
        A.sub_(B)
    else:
        A.add_(B)
    A.mul_(c)
    return A.add_(R)


def _add(a, b) -> list:
    return [s + t for s, t in zip(a, b, strict=True)]


def _entity_counts(user_tower, item_tower, user_inputs, item_inputs):
    """(m, n) from the inputs' rows or the towers' ``n_ids``; None if unknown."""
    counts = []
    for tower, inputs in ((user_tower, user_inputs), (item_tower, item_inputs)):
        if inputs is not None:
            counts.append(len(inputs))
        else:
            counts.append(getattr(tower, "n_ids", None))
    return None if None in counts else tuple(int(c) for c in counts)


def _same_point(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        s is t and s._version == t._version for s, t in zip(a, b, strict=True)
    )


def _weights(w, n: int, name: str, device) -> torch.Tensor:
    if w is None:
        return torch.ones(n, dtype=_F64, device=device)
    arr = np.asarray(w.cpu() if isinstance(w, torch.Tensor) else w, dtype=np.float64)
    if arr.shape != (n,) or not np.isfinite(arr).all() or (arr < 0).any():
        raise DataValidationError(
            f"{name} must be {n} finite non-negative numbers, one per entity; got "
            f"shape {arr.shape}"
            + ("" if arr.shape != (n,) else " with negative or non-finite values")
            + "."
        )
    return torch.as_tensor(arr, device=device)


def _sample_weight(w, order: np.ndarray, owner: str, device) -> torch.Tensor | None:
    """The confidences of the observed pairs, checked, in CSR order (``order``
    takes the input order there); None stays None."""
    if w is None:
        return None
    n = order.size
    arr = np.asarray(w.cpu() if isinstance(w, torch.Tensor) else w)
    if arr.shape != (n,) or arr.dtype.kind not in "iuf":
        raise DataValidationError(
            f"sample_weight of {owner} must be {n} real numbers, one per observed "
            f"pair in the order of the pairs; got dtype {arr.dtype}, shape "
            f"{arr.shape}."
        )
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        at = int(np.argmax(bad))
        raise DataValidationError(
            f"sample_weight of {owner} must be finite and >= 0; pair {at} has "
            f"{float(arr[at])}. Drop the pair, or give it weight 0."
        )
    if not arr.any():
        raise DataValidationError(
            f"sample_weight of {owner} is 0 on every pair, which leaves no "
            "observed pair to fit; give positive weights (None: all 1)."
        )
    return torch.as_tensor(arr[order], dtype=_F64, device=device)


def _imputation_factors(imputation, m: int, n: int, device):
    if isinstance(imputation, (int, float)) and not isinstance(imputation, bool):
        if not np.isfinite(imputation):
            raise InvalidParameterError(
                f"A constant imputation must be finite; got {imputation!r}."
            )
        return (
            torch.full((m, 1), float(imputation), dtype=_F64, device=device),
            torch.ones((n, 1), dtype=_F64, device=device),
        )
    if isinstance(imputation, tuple) and len(imputation) == 2:
        Pt, Qt = (
            torch.as_tensor(
                np.asarray(t.cpu() if isinstance(t, torch.Tensor) else t),
                dtype=_F64,
                device=device,
            )
            for t in imputation
        )
        if (
            Pt.ndim != 2
            or Qt.ndim != 2
            or Pt.shape[0] != m
            or Qt.shape[0] != n
            or Pt.shape[1] != Qt.shape[1]
        ):
            raise DataValidationError(
                f"imputation factors must have shapes ({m}, kt) and ({n}, kt); "
                f"got {tuple(Pt.shape)} and {tuple(Qt.shape)}."
            )
        if not (torch.isfinite(Pt).all() and torch.isfinite(Qt).all()):
            raise DataValidationError("imputation factors contain NaN or inf.")
        return Pt, Qt
    raise InvalidParameterError(
        "imputation must be a float (a constant label) or a tuple (Ptilde, Qtilde) "
        f"of factors; got {type(imputation).__name__}."
    )


def _inputs(inputs, n: int, name: str, device) -> torch.Tensor:
    if inputs is None:
        return torch.arange(n, device=device)
    t = torch.as_tensor(inputs, device=device)
    if t.ndim == 0 or t.shape[0] != n:
        raise DataValidationError(
            f"{name} must have one row per entity ({n}); got shape {tuple(t.shape)}."
        )
    return t


def _gn_diagonal(objective, x, n_probes: int, generator, floor: float = 1e-8):
    """Hutchinson estimate of ``diag(G(x))``, clipped to a positive floor."""
    est = hutchinson_diagonal(
        lambda v: objective.gnvp(x, v), x, n_probes=n_probes, generator=generator
    )
    parts = as_tuple(est)
    scale = _mean(tuple(a.abs() for a in parts))
    # Estimates of small diagonal entries can come out <= 0; a floor relative
    # to the mean keeps the scaling positive definite.
    low = max(floor * scale, 1e-300)
    return pack(est, [a.clamp_min(low) for a in parts])


def _mean(point) -> float:
    parts = as_tuple(point)
    return sum(float(a.sum()) for a in parts) / max(sum(a.numel() for a in parts), 1)


def dense_objective(
    objective: AllPairsObjective,
    x: Sequence[torch.Tensor],
    *,
    yhat: torch.Tensor | None = None,
) -> torch.Tensor:
    """The objective at ``x`` from dense m x n matrices: the naive O(mn) reference.

    Sums the term of every one of the m n pairs -- the loss times its
    ``sample_weight`` on an observed pair, ``(omega / 2) a_i b_j (Ytilde_ij
    - Yhat_ij)^2`` on an unobserved one (on every pair with
    ``imputed="all"``) -- plus ``lam / 2 ||theta||^2``, with the m x n
    matrices of the predictions and of the imputation terms formed. It is
    what the O(m + n) formulas of :class:`AllPairsObjective` avoid: use it
    only to check them on small problems (the tests) and to time them
    against it (``benchmarks/similarity/cost.py``).

    Parameters
    ----------
    objective : AllPairsObjective
        Its towers, data, loss, weights, imputation and ``lam``.
    x : tuple of torch.Tensor
        The point (see :meth:`AllPairsObjective.initial_point`).
    yhat : torch.Tensor, shape (m, n), optional
        Predictions to score instead of ``P Q^T`` at ``x`` (the regularizer
        is still that of ``x``): differentiating in ``yhat`` gives the
        curvature of the data term that a Gauss-Newton product needs.

    Returns
    -------
    torch.Tensor
        A 0-dim tensor in the embeddings' dtype, differentiable in ``x`` and
        ``yhat``.
    """
    if yhat is None:
        xu, xv = objective.split(tuple(x))
        P, Q = (
            s.function(slice(None))(*xs)
            for s, xs in zip(objective.sides, (xu, xv), strict=True)
        )
        yhat = P @ Q.T
    dt = yhat.dtype
    su, sv = objective.sides
    # the imputation term of every pair, (omega / 2) a_i b_j (Ytilde - Yhat)^2,
    # with two m x n temporaries (in place where autograd allows it)
    imputed = (su.tilde.to(dt) @ sv.tilde.to(dt).T).sub_(yhat).square()
    imputed.mul_(su.weights.to(dt)[:, None]).mul_(sv.weights.to(dt)[None, :])
    imputed.mul_(0.5 * objective.omega)
    total = imputed.sum()
    rows = objective.pattern.row_indices()
    cols = objective.pattern.col_indices()
    observed = objective.loss.value(objective.labels.to(dt), yhat[rows, cols])
    if objective.sample_weight is not None:
        observed = objective.sample_weight.to(dt) * observed
    total = total + observed.sum()
    if objective.imputed == "unobserved":  # their imputation term is not in L
        total = total - imputed[rows, cols].sum()
    return total + 0.5 * objective.lam * sum((p**2).sum() for p in x)
