"""Renamed parameters: the old name keeps working, with a warning, for one release.

The shared vocabulary of embedopt (see the "Parameter vocabulary" table of
``DEVELOPERS.md``) gives each parameter name one meaning across estimators
and solvers. Where a name had to change, :func:`renamed_parameters` wraps the
function (or an estimator's ``__init__``) so that callers passing the old
keyword get a :class:`FutureWarning` and the value reaches the new one.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from .exceptions import InvalidParameterError

__all__ = ["REMOVAL_RELEASE", "renamed_parameters"]

#: The release in which the old names stop being accepted.
REMOVAL_RELEASE = "0.2"


def renamed_parameters(**renames: str) -> Callable:
    """Decorator accepting old keyword names (``old="new"``) with a FutureWarning.

    Parameters
    ----------
    **renames : str
        ``old_name="new_name"`` pairs.

    Returns
    -------
    callable
        A decorator; the wrapped function keeps its signature (``inspect``
        and ``help`` show the new names only, so ``get_params`` of an
        estimator whose ``__init__`` is wrapped lists the new names).

    Raises
    ------
    InvalidParameterError
        (from the wrapped function) when both the old and the new name are
        given.
    """

    def decorate(func: Callable) -> Callable:
        owner = func.__qualname__.replace(".__init__", "")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise InvalidParameterError(
                        f"{owner} got both '{old}' and its new name '{new}'; "
                        f"pass '{new}' only."
                    )
                warnings.warn(
                    f"The '{old}' parameter of {owner} was renamed '{new}' and "
                    f"will be removed in {REMOVAL_RELEASE}; pass {new}=... instead.",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper

    return decorate
