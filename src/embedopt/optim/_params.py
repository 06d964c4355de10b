"""Validation of solver arguments, declared once next to each solver."""

from __future__ import annotations

import functools
import inspect

from .._core import validate_params


def validated(constraints, owner: str | None = None):
    """Decorate a solver so that its arguments are checked before it runs.

    Every argument named in ``constraints`` is checked with
    :func:`~embedopt._core.validate_params` (defaults included), so a solver
    lists its constraints once instead of repeating its parameters in a dict.

    Parameters
    ----------
    constraints : mapping
        Admissible constraints by parameter name.
    owner : str, optional
        Name used in messages; default the value of the solver's ``name``
        argument.

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(solver):
        signature = inspect.signature(solver)

        @functools.wraps(solver)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            params = bound.arguments
            validate_params(owner or params["name"], params, constraints)
            return solver(*args, **kwargs)

        return checked

    return decorate
