"""Numpydoc text that several public functions share, written once.

A docstring names a shared block by a line holding only ``{name}``;
:func:`fill_doc` puts the block there, indented as that line is, when the
module is imported. ``help()``, Sphinx and IDEs then show the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")

#: A line of a docstring that holds only a ``{name}`` field.
_FIELD = re.compile(r"^([ \t]*)\{(\w+)\}[ \t]*$", re.MULTILINE)

#: The run options of a solver function or an estimator, where their types
#: say enough (the ``{run_parameters}`` of a docstring).
RUN_PARAMETERS_DOC = """\
random_state : None, int or numpy Generator
device : {"auto", "cpu", "cuda"} or torch.device
dtype : {"float32", "float64"}
verbose : int
callback : callable, optional"""


def fill_doc(**blocks: str) -> Callable[[_T], _T]:
    """Decorator: put shared numpydoc blocks into the decorated docstring.

    Only lines holding nothing but a ``{name}`` field are replaced, so the
    braces of set notation (``{"ste", "tste"}``) stay as they are.

    Parameters
    ----------
    **blocks : str
        The text of each field, written without indentation.

    Returns
    -------
    callable
        The decorator; it returns the object it decorates.

    Raises
    ------
    KeyError
        When the docstring names a field not given, or a given block is not
        named by the docstring (both are mistakes of the source).
    """

    def decorate(obj):
        if obj.__doc__ is None:  # python -OO drops docstrings
            return obj
        used = set()

        def fill(field: re.Match) -> str:
            indent, name = field.groups()
            used.add(name)
            rows = blocks[name].split("\n")
            return "\n".join(indent + row if row else row for row in rows)

        obj.__doc__ = _FIELD.sub(fill, obj.__doc__)
        if used != set(blocks):
            raise KeyError(f"{obj.__qualname__} has no field {set(blocks) - used}")
        return obj

    return decorate
