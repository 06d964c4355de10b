"""Parameter validation with one message shape.

Every public function and estimator declares the constraints of its
parameters, and :func:`validate_params` checks them before any work::

    The 'rank' parameter of MatrixCompletion must be an int in [1, inf). Got 0.

Constraints are small objects (:class:`Interval`, :class:`Options`,
:class:`InstanceOf`) or the shorthands ``None``, ``"boolean"``, ``"callable"``,
``"random_state"``, ``"device"`` and ``"dtype"``.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np
import torch

from .exceptions import InvalidParameterError

__all__ = [
    "PROGRESS_CONSTRAINTS",
    "RUN_CONSTRAINTS",
    "InstanceOf",
    "Interval",
    "Options",
    "check_param",
    "validate_params",
    "validated_params",
]

_F = TypeVar("_F", bound=Callable[..., Any])


class Interval:
    """A numeric interval of ints or reals.

    Parameters
    ----------
    kind : {int, float}
        ``int`` admits integers only (bools excluded); ``float`` admits any real
        except integers beyond int64 (torch cannot take them as scalars; pass
        ``1e19``, not ``10**19``).
    left, right : float or None
        Bounds; None means unbounded, and then infinite values are outside
        (the message reads ``[0, inf)``): no weight, step or tolerance is
        meaningful at infinity. Pass ``math.inf`` with a closed side to admit
        it.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.
    """

    def __init__(
        self,
        kind: type,
        left: float | None,
        right: float | None,
        closed: str = "both",
    ):
        if kind not in (int, float):
            raise TypeError("kind must be int or float")
        self.kind = kind
        self.left = left
        self.right = right
        self.closed = closed

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind is int:
            if not isinstance(value, numbers.Integral):
                return False
        elif not isinstance(value, numbers.Real):
            return False
        elif isinstance(value, numbers.Integral) and not -(2**63) <= value < 2**63:
            return False
        value = float(value)
        if math.isnan(value):
            return False
        if math.isinf(value) and (self.left if value < 0 else self.right) is None:
            return False
        if self.left is not None:
            if self.closed in ("both", "left"):
                if value < self.left:
                    return False
            elif value <= self.left:
                return False
        if self.right is not None:
            if self.closed in ("both", "right"):
                if value > self.right:
                    return False
            elif value >= self.right:
                return False
        return True

    def __str__(self) -> str:
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        left = "-inf" if self.left is None else _fmt(self.left)
        right = "inf" if self.right is None else _fmt(self.right)
        noun = "an int" if self.kind is int else "a float"
        return f"{noun} in {lb}{left}, {right}{rb}"


class Options:
    """A finite set of admissible values (usually strings).

    Parameters
    ----------
    options : iterable
        The admissible values.
    """

    def __init__(self, options: Iterable):
        self.options = tuple(options)
        # A mapping (a Registry) decides membership itself: it also accepts
        # the other spellings of its names.
        self._container = options if isinstance(options, Mapping) else self.options

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return bool(value in self._container)
        except (TypeError, ValueError):  # unhashable, or an array's == test
            return False

    def __str__(self) -> str:
        kinds = {type(o) for o in self.options}
        noun = "a str" if kinds == {str} else "a value"
        return f"{noun} among {{{', '.join(repr(o) for o in self.options)}}}"


class InstanceOf:
    """Instances of one or several types.

    Parameters
    ----------
    types : type or tuple of types
    description : str
        How the message names them, e.g. ``"a numpy array"``.
    """

    def __init__(self, types: type | tuple[type, ...], description: str):
        self.types = types
        self.description = description

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def __str__(self) -> str:
        return self.description


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


class _Shorthand:
    def __init__(self, test, description):
        self.test = test
        self.description = description

    def is_satisfied_by(self, value):
        return self.test(value)

    def __str__(self):
        return self.description


def _is_device(v) -> bool:
    if isinstance(v, torch.device):
        return True
    if not isinstance(v, str):
        return False
    return v in ("auto", "cpu", "cuda") or (v.startswith("cuda:") and v[5:].isdigit())


def _is_dtype(v) -> bool:
    # compare by identity or type first: an array's == is elementwise
    return (
        (isinstance(v, str) and v in ("float32", "float64"))
        or (isinstance(v, torch.dtype) and v in (torch.float32, torch.float64))
        or (
            isinstance(v, (type, np.dtype))
            and np.dtype(v).name in ("float32", "float64")
        )
    )


_SHORTHANDS = {
    None: _Shorthand(lambda v: v is None, "None"),
    "boolean": _Shorthand(lambda v: isinstance(v, (bool, np.bool_)), "a bool"),
    "callable": _Shorthand(callable, "a callable"),
    "random_state": _Shorthand(
        lambda v: (
            v is None
            or isinstance(v, np.random.Generator)
            or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0)
            or type(v).__name__ == "RandomState"
        ),
        "an int in [0, inf), a numpy Generator or None",
    ),
    "device": _Shorthand(
        _is_device, "a str among {'auto', 'cpu', 'cuda', 'cuda:N'} or a torch.device"
    ),
    "dtype": _Shorthand(
        _is_dtype,
        "a str among {'float32', 'float64'} or the matching torch/numpy dtype",
    ),
}


def _as_constraint(c):
    if isinstance(c, (Interval, Options, InstanceOf, _Shorthand)):
        return c
    if c is None or (isinstance(c, str) and c in _SHORTHANDS):
        return _SHORTHANDS[c]
    raise TypeError(f"unknown constraint {c!r}")


def _join(descriptions: list[str]) -> str:
    if len(descriptions) == 1:
        return descriptions[0]
    return ", ".join(descriptions[:-1]) + " or " + descriptions[-1]


def check_param(owner: str, name: str, value: Any, constraints: list) -> None:
    """Check one parameter against a list of admissible constraints.

    Parameters
    ----------
    owner : str
        The estimator or function the parameter belongs to.
    name : str
        The parameter name.
    value : object
        Its value.
    constraints : list
        The value must satisfy at least one of them.

    Raises
    ------
    InvalidParameterError
        With the message shape
        ``"The 'name' parameter of Owner must be <constraints>. Got <value>."``.
    """
    cons = [_as_constraint(c) for c in constraints]
    if any(c.is_satisfied_by(value) for c in cons):
        return
    raise InvalidParameterError(
        f"The {name!r} parameter of {owner} must be {_join([str(c) for c in cons])}."
        f" Got {value!r}."
    )


#: Constraints of ``verbose`` and ``callback``, the progress reporting that
#: every solver loop and estimator offers (DESIGN.md's one callback protocol).
PROGRESS_CONSTRAINTS = {
    "verbose": [Interval(int, 0, None), "boolean"],
    "callback": ["callable", None],
}
#: Constraints of the run parameters every estimator and most solvers share:
#: ``random_state``, ``device``, ``dtype``, then :data:`PROGRESS_CONSTRAINTS`.
#: Spread it last into a constraints dict; a key written after the spread
#: (``"dtype": ["dtype", None]``) overrides it in place.
RUN_CONSTRAINTS = {
    "random_state": ["random_state"],
    "device": ["device"],
    "dtype": ["dtype"],
    **PROGRESS_CONSTRAINTS,
}


def validate_params(
    owner: str, params: Mapping[str, Any], constraints: Mapping
) -> None:
    """Check every parameter named in ``constraints``.

    Parameters
    ----------
    owner : str
        The estimator or function the parameters belong to.
    params : mapping
        Parameter values by name.
    constraints : mapping
        For each name, a list of admissible constraints.

    Raises
    ------
    InvalidParameterError
        For the first parameter that satisfies none of its constraints.
    """
    for name, cons in constraints.items():
        if name in params:
            check_param(owner, name, params[name], cons)


def validated_params(
    constraints: Mapping, owner: str | None = None
) -> Callable[[_F], _F]:
    """Decorate a function so that its arguments are checked before it runs.

    Every argument named in ``constraints`` is checked with
    :func:`validate_params` (defaults included), so a solver declares its
    constraints once, next to its signature, instead of repeating its
    parameters in a dict.

    Parameters
    ----------
    constraints : mapping
        Admissible constraints by parameter name.
    owner : str, optional
        Name used in messages; default the value of the function's ``name``
        argument, or its ``__name__``.

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(func):
        signature = inspect.signature(func)

        @functools.wraps(func)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            params = bound.arguments
            who = owner or params.get("name") or func.__name__
            validate_params(who, params, constraints)
            return func(*args, **kwargs)

        return checked

    return decorate
