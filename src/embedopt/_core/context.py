"""What every ``fit`` resolves first: randomness, device and dtype.

DESIGN.md fixes that ``random_state``, ``device`` and ``dtype`` are resolved
once, at the top of ``fit``, and passed down. :func:`resolve_fit_context`
does it the same way for every estimator, so that no estimator spells it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .device import DeviceLike, DtypeLike, resolve_device, resolve_dtype
from .random import RandomState, RandomStateLike, resolve_random_state

__all__ = ["FitContext", "resolve_fit_context"]


@dataclass(frozen=True)
class FitContext:
    """The resolved randomness, device and dtype of one ``fit``.

    Attributes
    ----------
    random_state : RandomState
        NumPy generator plus torch generators derived from it.
    device : torch.device
    dtype : torch.dtype
        ``torch.float32`` or ``torch.float64``.
    """

    random_state: RandomState
    device: torch.device
    dtype: torch.dtype

    def generator(self) -> torch.Generator:
        """The torch generator on :attr:`device`."""
        return self.random_state.torch(self.device)

    def run_options(self, estimator: Any, **overrides: Any) -> dict[str, Any]:
        """The run keywords an estimator passes to its solver.

        Every solver takes ``random_state``, ``device``, ``dtype``, ``verbose``
        and ``callback``: the first three resolved here, the last two the
        estimator's own parameters.

        Parameters
        ----------
        estimator : object
            Has ``verbose`` and ``callback`` attributes.
        **overrides
            Values that replace the resolved ones (e.g. a solver-dependent
            ``dtype``).

        Returns
        -------
        dict
        """
        options = {
            "random_state": self.random_state,
            "device": self.device,
            "dtype": self.dtype,
            "verbose": estimator.verbose,
            "callback": estimator.callback,
        }
        return {**options, **overrides}


def resolve_fit_context(
    estimator: Any = None,
    *,
    random_state: RandomStateLike = None,
    device: DeviceLike = "auto",
    dtype: DtypeLike = None,
    owner: str | None = None,
) -> FitContext:
    """Resolve ``random_state``, ``device`` and ``dtype`` in one call.

    Parameters
    ----------
    estimator : object, optional
        Reads its ``random_state``, ``device`` and ``dtype`` attributes (those
        it has; the keyword values otherwise) and names it in errors.
    random_state : None, int, numpy Generator or RandomState
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device
    dtype : {"float32", "float64"}, torch or numpy dtype, or None (float32)
    owner : str, optional
        Name used in error messages (default: the estimator's class name).

    Returns
    -------
    FitContext
    """
    if estimator is not None:
        random_state = getattr(estimator, "random_state", random_state)
        device = getattr(estimator, "device", device)
        dtype = getattr(estimator, "dtype", dtype)
        owner = owner or type(estimator).__name__
    return FitContext(
        random_state=resolve_random_state(random_state, owner),
        device=resolve_device(device),
        dtype=resolve_dtype(dtype),
    )
