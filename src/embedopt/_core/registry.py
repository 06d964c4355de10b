"""Named strategies and solvers: one registry shape for every package.

A :class:`Registry` maps a name to a public function or class. Names follow
one spelling convention, lower-case words joined by underscores
(``"ais_impute"``, ``"gcd_g"``); a lookup also accepts the hyphenated and
upper-case spellings users type (``"GCD-G"`` finds ``"gcd_g"``), so older
names keep working. An unknown name is an :class:`InvalidParameterError`
that lists the valid ones.

Examples
--------
>>> SOLVERS = Registry("solver", owner="completion")
>>> @SOLVERS.register("ais_impute")
... def ais_impute(X, lam): ...
>>> SOLVERS.get("AIS-Impute") is ais_impute
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .exceptions import InvalidParameterError

__all__ = ["AttributeRepr", "Registry", "canonical_name", "instance_or_named"]


class AttributeRepr:
    """Mixin: ``repr`` as the call ``ClassName(key=value, ...)`` of the attributes.

    For the named components of a registry (ordinal losses, completion
    regularizers) whose instance attributes are their constructor keywords,
    so that the repr reads as the call that rebuilds the object.
    """

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def canonical_name(name: str) -> str:
    """The registry spelling of ``name``: lower case, ``-`` and spaces as ``_``."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


class Registry(Mapping):
    """A name -> object mapping with one spelling convention and clear errors.

    It is a read-only :class:`~collections.abc.Mapping` over the canonical
    names (so ``Options(registry)`` in a parameter constraint lists them),
    whose ``in`` and :meth:`get` also accept the other spellings of a name.

    Parameters
    ----------
    kind : str
        What the entries are ("solver", "loss", "rotation learner"), used in
        error messages.
    entries : mapping, optional
        Initial ``name -> object`` entries.
    owner : str, optional
        The package or estimator the registry belongs to (error messages).
    """

    def __init__(
        self,
        kind: str,
        entries: Mapping[str, Any] | None = None,
        *,
        owner: str | None = None,
    ):
        self.kind = kind
        self.owner = owner
        self._entries: dict[str, Any] = {}
        for name, obj in (entries or {}).items():
            self.add(name, obj)

    # -- building ---------------------------------------------------------------
    def add(self, name: str, obj: Any) -> Any:
        """Register ``obj`` under ``name`` (given in canonical spelling).

        Parameters
        ----------
        name : str
        obj : object

        Returns
        -------
        object
            ``obj``, so that this works as a decorator body.
        """
        if name != canonical_name(name):
            raise ValueError(
                f"registry names are lower_snake_case; got {name!r} "
                f"(use {canonical_name(name)!r})"
            )
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = obj
        return obj

    def register(self, name: str) -> Callable[[Any], Any]:
        """Decorator form of :meth:`add`: ``@registry.register("name")``."""
        return lambda obj: self.add(name, obj)

    # -- lookup -----------------------------------------------------------------
    def resolve_name(self, name: Any) -> str:
        """Canonical name of ``name``, or an error listing the valid names.

        Parameters
        ----------
        name : str
            Any spelling :func:`canonical_name` maps to an entry's name
            (case, ``-`` and spaces do not matter).

        Returns
        -------
        str

        Raises
        ------
        InvalidParameterError
            If ``name`` is not a string or names no entry.
        """
        key = canonical_name(name) if isinstance(name, str) else None
        if key not in self._entries:
            where = f" of {self.owner}" if self.owner else ""
            valid = ", ".join(repr(k) for k in self._entries)
            raise InvalidParameterError(
                f"Unknown {self.kind}{where}: {name!r}. Valid names: {valid}."
            )
        return key

    def get(self, name: Any, default: Any = None) -> Any:
        """The entry named ``name`` (any accepted spelling).

        Parameters
        ----------
        name : str
        default : object
            Ignored: an unknown name is always an error (a silent default
            would hide typos).

        Returns
        -------
        object

        Raises
        ------
        InvalidParameterError
            If ``name`` names no entry.
        """
        return self._entries[self.resolve_name(name)]

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and canonical_name(name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"


def instance_or_named(
    value: Any,
    base: type,
    entries: Mapping[str, Callable[..., Any]],
    parameter: str,
    described: str,
    **params: Any,
) -> Any:
    """A strategy object given as an instance of ``base`` or by name.

    Losses, regularizers and pair-selection rules are accepted either way;
    a name builds a fresh object with ``params``.

    Parameters
    ----------
    value : object
        An instance of ``base`` (returned as is) or a key of ``entries``.
    base : type
    entries : mapping or Registry
        Classes (or factories) by name.
    parameter : str
        Name of the user's parameter, for the error message.
    described : str
        How the message names the instance alternative (``"a Loss instance"``).
    **params
        Constructor arguments of a named entry.

    Returns
    -------
    object
        ``value`` itself, or a new object of the named entry.

    Raises
    ------
    InvalidParameterError
        If ``value`` is neither an instance nor a known name.
    """
    if isinstance(value, base):
        return value
    if isinstance(value, str) and value in entries:
        return entries[value](**params)
    names = ", ".join(repr(k) for k in entries)
    raise InvalidParameterError(
        f"The '{parameter}' parameter must be a str among {{{names}}} or "
        f"{described}. Got {value!r}."
    )
