"""The numba kernel behind :mod:`embedopt.ordinal._kernels` (imports numba).

Module-level functions, so that numba's on-disk cache (``cache=True``) finds
them again in the next process: a first build costs seconds, a cached load
a fraction of one. Everything is computed in float64 and rounded on each
write to the embedding.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["inner_steps", "partials"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")
_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")


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


@_inline
def _differences(z, i0, i1, i2, i3, t, drift, E, pt):  # pragma: no cover - compiled
    """``E[pt, 0] = z_i - z_j``, ``E[pt, 1] = z_l - z_k`` at ``z - t drift``
    (no drift: z); the two squared distances."""
    dn = 0.0
    df = 0.0
    lazy = drift.shape[0] > 0
    for d in range(z.shape[1]):
        v0 = float(z[i0, d])
        v1 = float(z[i1, d])
        v2 = float(z[i2, d])
        v3 = float(z[i3, d])
        if lazy:
            v0 -= t * drift[i0, d]
            v1 -= t * drift[i1, d]
            v2 -= t * drift[i2, d]
            v3 -= t * drift[i3, d]
        en = v0 - v1
        ef = v2 - v3
        E[pt, 0, d] = en
        E[pt, 1, d] = ef
        dn += en * en
        df += ef * ef
    return dn, df


@_inline
def _comparison_rows(
    x, snap, drift, quads, q, t, w0, w1, scale, loss, E, G, c
):  # pragma: no cover - compiled
    """``G[c] = (g_near, g_far)``: ``w0`` times the gradient rows of comparison
    q at ``x - t drift`` plus ``w1`` times at the snapshot (if any), times
    ``scale``."""
    code, param, eps = loss
    i0, i1, i2, i3 = quads[q, 0], quads[q, 1], quads[q, 2], quads[q, 3]
    dn, df = _differences(x, i0, i1, i2, i3, t, drift, E, 0)
    a, cc = partials(code, dn, df, param, eps)
    a *= w0 * scale
    cc *= w0 * scale
    if snap.shape[0] > 0:
        dn, df = _differences(snap, i0, i1, i2, i3, 0.0, snap[:0], E, 1)
        a1, c1 = partials(code, dn, df, param, eps)
        a1 *= w1 * scale
        c1 *= w1 * scale
        for d in range(x.shape[1]):
            G[c, 0, d] = a * E[0, 0, d] + a1 * E[1, 0, d]
            G[c, 1, d] = cc * E[0, 1, d] + c1 * E[1, 1, d]
    else:
        for d in range(x.shape[1]):
            G[c, 0, d] = a * E[0, 0, d]
            G[c, 1, d] = cc * E[0, 1, d]


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
    b = batches.shape[1]
    E = np.empty((2, 2, p))  # point, pair, coordinate
    G = np.empty((b, 2, p))  # comparison, pair, coordinate
    loss = (code, param, eps)
    weighted = qw.shape[0] > 0
    last = -1
    for j in range(batches.shape[0]):
        t = float(t0 + j)
        for c in range(b):
            q = batches[j, c]
            scale = 2.0 * qw[q] if weighted else 2.0
            _comparison_rows(x, snap, drift, quads, q, t, w0, w1, scale, loss, E, G, c)
        for c in range(b):  # scatter, in the order of torch's index_add_
            q = batches[j, c]
            i0, i1, i2, i3 = quads[q, 0], quads[q, 1], quads[q, 2], quads[q, 3]
            for d in range(p):
                x[i0, d] += G[c, 0, d]
                x[i1, d] -= G[c, 0, d]
                x[i2, d] += G[c, 1, d]
                x[i3, d] -= G[c, 1, d]
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
