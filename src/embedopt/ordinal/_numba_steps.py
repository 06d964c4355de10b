"""The numba kernel behind :mod:`embedopt.ordinal._kernels` (imports numba).

Module-level functions, so that numba's on-disk cache (``cache=True``) finds
them again in the next process: a first build costs seconds, a cached load
a fraction of one. Differences, distances, gradient rows and the updates
are computed in the embedding's dtype as torch computes them; the loss
partials in float64.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["inner_steps", "partials"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def partials(code, dn, df, param, eps):  # pragma: no cover - compiled
    """``(d ell / d d_near, d ell / d d_far)`` of loss ``code`` (see _LOSS_CODES).

    Parameters
    ----------
    code : int
        0 GNMDS, 1 CKL, 2 STE, 3 t-STE, 4 SOE.
    dn, df : float
        The squared distances of the near and the far pair.
    param : float
        The loss's parameter (margin, mu or alpha).
    eps : float
        Machine epsilon of the embedding's dtype (the floors of CKL, SOE).

    Returns
    -------
    tuple of float
    """
    if code == 2:  # STE: a = sigmoid(dn - df) = -c
        s = 1.0 / (1.0 + math.exp(df - dn))
        return s, -s
    if code == 0:  # GNMDS: the hinge's subgradient
        act = 1.0 if dn + param - df > 0.0 else 0.0
        return act, -act
    if code == 1:  # CKL
        total = max(2.0 * param + dn + df, eps)
        far = max(param + df, eps)
        a = 1.0 / total
        return a, a - 1.0 / far
    if code == 3:  # t-STE, param = alpha
        half = 0.5 * (param + 1.0)
        u = half * (math.log1p(dn / param) - math.log1p(df / param))
        s = half / (1.0 + math.exp(-u))
        return s / (param + dn), -s / (param + df)
    # SOE: the hinge on Euclidean distances, floored at eps^2
    floor = eps * eps
    dn = max(dn, floor)
    df = max(df, floor)
    inv_n = 1.0 / math.sqrt(dn)
    inv_f = 1.0 / math.sqrt(df)
    h = max(dn * inv_n + param - df * inv_f, 0.0)
    return h * inv_n, -h * inv_f


@_jit
def _batch_rows(
    x, snap, drift, quads, qw, batches, j, tv, w, loss, E, G
):  # pragma: no cover - compiled
    """``G[c] = (g_near, g_far)`` for each comparison c of mini-batch j: ``w[0]``
    times its gradient rows at ``x - t drift`` (``t = tv[0]``; no drift: x)
    plus ``w[1]`` times at the snapshot (if any), times the comparison's
    weight. Differences and distances in x's dtype (as torch computes them),
    the partials in float64.

    One function body for the whole batch: a call per comparison that passes
    arrays costs more than the comparison's arithmetic (reference counts).
    """
    code, param, eps = loss
    lazy = drift.shape[0] > 0
    two = snap.shape[0] > 0
    tt = tv[0]
    zero = tv[0] - tv[0]  # a 0 of x's dtype
    for c in range(batches.shape[1]):
        q = batches[j, c]
        scale = 2.0 * qw[q] if qw.shape[0] > 0 else 2.0
        i0, i1, i2, i3 = quads[q, 0], quads[q, 1], quads[q, 2], quads[q, 3]
        dn = df = sn = sf = zero
        for d in range(x.shape[1]):
            v0, v1 = x[i0, d], x[i1, d]
            v2, v3 = x[i2, d], x[i3, d]
            if lazy:  # catch the rows up: x_t = y_t - t h g
                v0 = v0 - tt * drift[i0, d]
                v1 = v1 - tt * drift[i1, d]
                v2 = v2 - tt * drift[i2, d]
                v3 = v3 - tt * drift[i3, d]
            E[0, 0, d] = en = v0 - v1
            E[0, 1, d] = ef = v2 - v3
            dn += en * en
            df += ef * ef
            if two:
                E[1, 0, d] = en = snap[i0, d] - snap[i1, d]
                E[1, 1, d] = ef = snap[i2, d] - snap[i3, d]
                sn += en * en
                sf += ef * ef
        a, cc = partials(code, float(dn), float(df), param, eps)
        a *= w[0] * scale
        cc *= w[0] * scale
        a1 = c1 = 0.0
        if two:
            a1, c1 = partials(code, float(sn), float(sf), param, eps)
            a1 *= w[1] * scale
            c1 *= w[1] * scale
        # Without a snapshot E[1] holds nothing: not even 0 * E[1] is read
        # (uninitialized memory may hold NaN, and 0 * NaN is NaN)
        for d in range(x.shape[1]):
            if two:
                G[c, 0, d] = a * E[0, 0, d] + a1 * E[1, 0, d]
                G[c, 1, d] = cc * E[0, 1, d] + c1 * E[1, 1, d]
            else:
                G[c, 0, d] = a * E[0, 0, d]
                G[c, 1, d] = cc * E[0, 1, d]


@_jit
def _scatter(x, quads, batches, j, G):  # pragma: no cover - compiled
    """Add the rows G of mini-batch j to x, in the order of torch's index_add_."""
    for c in range(batches.shape[1]):
        q = batches[j, c]
        i0, i1, i2, i3 = quads[q, 0], quads[q, 1], quads[q, 2], quads[q, 3]
        for d in range(x.shape[1]):
            x[i0, d] += G[c, 0, d]
            x[i1, d] -= G[c, 0, d]
            x[i2, d] += G[c, 1, d]
            x[i3, d] -= G[c, 1, d]


@_jit
def inner_steps(
    x, snap, drift, quads, qw, batches, t0, w0, w1, code, param, eps, keep, out
):  # pragma: no cover - compiled
    """Run ``len(batches)`` inner steps on x in place (see ``_kernels.run_steps``).

    Returns
    -------
    int
        The last step j flagged in ``keep`` (its iterate is in ``out``), -1
        if none.
    """
    p = x.shape[1]
    E = np.zeros((2, 2, p), x.dtype)  # point, pair, coordinate
    tv = np.empty(1, x.dtype)  # the step t in x's dtype
    G = np.zeros((batches.shape[1], 2, p), x.dtype)  # as torch: rows in x.dtype
    w = np.array([w0, w1])
    loss = (code, param, eps)
    last = -1
    for j in range(batches.shape[0]):
        t = float(t0 + j)
        tv[0] = t
        _batch_rows(x, snap, drift, quads, qw, batches, j, tv, w, loss, E, G)
        _scatter(x, quads, batches, j, G)
        if keep.shape[0] > 0 and keep[j]:
            last = j
            _catch_up(x, drift, t + 1.0, out)
    return last


@_jit
def _catch_up(x, drift, t, out):  # pragma: no cover - compiled
    """``out = x - t drift`` (x without a drift)."""
    lazy = drift.shape[0] > 0
    for r in range(x.shape[0]):
        for d in range(x.shape[1]):
            out[r, d] = x[r, d] - t * drift[r, d] if lazy else x[r, d]
