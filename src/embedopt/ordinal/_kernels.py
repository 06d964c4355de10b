"""Compiled inner steps of the stochastic ordinal solvers (numba, CPU).

One call runs a chunk of inner steps of SVRG-SBB (or SGD) on an
:class:`~embedopt.ordinal.OrdinalProblem`: for each drawn mini-batch, the
comparisons' gradient rows at the current iterate (its rows caught up with
the lazy dense term, see :mod:`embedopt.optim.svrg`) and at the snapshot,
weighted and scatter-added to the iterate. It is the arithmetic of
:meth:`~embedopt.ordinal.OrdinalProblem.row_gradients` and of the torch
loop of :func:`~embedopt.optim.svrg`, step for step and in the same order,
on the mini-batches that loop draws (the indices are drawn by the solver,
with its generator, and passed in), so the iterates agree with the torch
loop's to rounding: the kernel computes differences, distances, gradient
rows and updates in the embedding's dtype, as torch does, and the loss
partials in float64. A torch inner step pays Python and
small-tensor dispatch whatever b and p; here a step costs its arithmetic
(``benchmarks/ordinal/inner_loop.py`` measures both).

numba is imported on the first call only (``import embedopt`` stays light)
and the kernel is compiled once per dtype and cached on disk
(``cache=True``); without numba, on a non-CPU device, for a loss of another
class than the five of :data:`~embedopt.ordinal.LOSSES`, or with
``EMBEDOPT_COMPILED=0`` in the environment, :func:`step_kernel` returns None
and the solvers keep the torch loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import torch

from .losses import CKLLoss, GNMDSLoss, OrdinalLoss, SOELoss, STELoss, TSTELoss

__all__ = ["COMPILED_ENV", "compiled_available", "step_kernel"]

#: The environment variable that switches the compiled steps off ("0").
COMPILED_ENV = "EMBEDOPT_COMPILED"

#: Loss class -> (code in the kernel, the attribute that is its parameter).
_LOSS_CODES = {
    GNMDSLoss: (0, "margin"),
    CKLLoss: (1, "mu"),
    STELoss: (2, None),
    TSTELoss: (3, "alpha"),
    SOELoss: (4, "margin"),
}

_KERNEL = None  # the compiled function, once built (False: numba is missing)


def compiled_available() -> bool:
    """Whether the compiled steps can run here (numba importable, not switched off).

    Returns
    -------
    bool
    """
    if os.environ.get(COMPILED_ENV, "").strip() == "0":
        return False
    return _kernel() is not None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        try:
            _KERNEL = _build()
        except ImportError:
            _KERNEL = False
    return _KERNEL or None


def step_kernel(
    quadruplets: torch.Tensor,
    loss: OrdinalLoss,
    weights: torch.Tensor | None,
    x: torch.Tensor,
) -> Callable | None:
    """The compiled inner steps of a problem, or None where they cannot run.

    Parameters
    ----------
    quadruplets : torch.Tensor of int64, shape (m, 4)
        The problem's comparisons ``(i, j, l, k)``.
    loss : OrdinalLoss
    weights : torch.Tensor or None
        The mean-one comparison weights in x's dtype (None: all 1).
    x : torch.Tensor, shape (n_objects, p)
        The iterate the steps will update (its device and dtype decide).

    Returns
    -------
    callable or None
        ``steps(x, batches, weights, snapshot=None, drift=None, t0=0,
        keep=None)`` (see :func:`run_steps`), or None: not on a CPU, not
        float32 / float64, not contiguous, a loss the kernel does not know,
        numba missing, or ``EMBEDOPT_COMPILED=0``.
    """
    code = _LOSS_CODES.get(type(loss))
    if (
        code is None
        or x.device.type != "cpu"
        or not x.is_contiguous()
        or x.dtype not in (torch.float32, torch.float64)
        or not compiled_available()
    ):
        return None
    param = 0.0 if code[1] is None else getattr(loss, code[1])
    if param is None:  # t-STE without its alpha: the torch path says what to do
        return None
    param = float(param)
    quads = quadruplets.numpy()
    qw = (
        np.empty(0, dtype=x.numpy().dtype)
        if weights is None
        else weights.contiguous().numpy()
    )
    eps = float(torch.finfo(x.dtype).eps)
    kernel = _kernel()

    def steps(x, batches, step_weights, snapshot=None, drift=None, t0=0, keep=None):
        return run_steps(
            kernel, quads, qw, (code[0], param, eps), x, batches, step_weights,
            snapshot, drift, t0, keep,
        )  # fmt: skip

    return steps


def run_steps(
    kernel,
    quads: np.ndarray,
    qw: np.ndarray,
    loss: tuple,
    x: torch.Tensor,
    batches: torch.Tensor,
    step_weights: torch.Tensor,
    snapshot: torch.Tensor | None,
    drift: torch.Tensor | None,
    t0: int,
    keep: np.ndarray | None,
) -> torch.Tensor | None:
    """Run ``len(batches)`` inner steps on ``x`` in place.

    Step ``t = t0 + j`` reads the rows of mini-batch ``batches[j]`` at the
    iterate ``x - t drift`` (no drift: x itself) and, with a snapshot, at the
    snapshot, and adds ``sum_s step_weights[s] grad_rows sum_{q in batch}
    ell_q`` (point s = 0 the iterate, s = 1 the snapshot) to those rows of x.

    Parameters
    ----------
    kernel : the compiled function
    quads, qw : numpy.ndarray
        Comparisons (m, 4) and their weights (empty: all 1).
    loss : tuple
        (code, parameter, machine epsilon of the dtype).
    x : torch.Tensor, shape (n, p), contiguous, on the CPU
    batches : torch.Tensor of int64, shape (k, b)
    step_weights : torch.Tensor, shape (1,) or (2,)
    snapshot, drift : torch.Tensor, shape (n, p), or None
    t0 : int
    keep : numpy.ndarray of bool, shape (k,), or None
        Steps after which the caught-up iterate ``x - (t + 1) drift`` is
        copied out.

    Returns
    -------
    torch.Tensor or None
        The copy made after the last step marked in ``keep`` (None if none).
    """
    xa = x.numpy()
    empty = np.empty((0, xa.shape[1]), dtype=xa.dtype)
    snap = empty if snapshot is None else snapshot.contiguous().numpy()
    dr = empty if drift is None else drift.contiguous().numpy()
    w = step_weights.double().tolist()
    w0, w1 = w[0], (w[1] if len(w) > 1 else 0.0)
    wants = keep is not None and bool(keep.any())
    out = torch.empty_like(x) if wants else x[:0]
    flags = keep.astype(np.bool_) if wants else np.zeros(0, dtype=np.bool_)
    code, param, eps = loss
    last = kernel(
        xa, snap, dr, quads, qw, batches.numpy(), int(t0), w0, w1,
        code, param, eps, flags, out.numpy(),
    )  # fmt: skip
    return out if last >= 0 else None


def _build():
    """The compiled kernel (loaded from numba's on-disk cache after the first
    build); ImportError without numba."""
    from ._numba_steps import inner_steps

    return inner_steps
