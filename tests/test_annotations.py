"""Public signatures carry type annotations, and the annotations resolve.

A public callable is a function named in a module's ``__all__`` (the
package ``__init__`` files included) and every public method, property,
``__init__`` and ``__call__`` of a class named there (the other special
methods, many of them written by ``dataclass``, are left out). Each
parameter but ``self``, ``cls``, ``*args`` and ``**kwargs`` is annotated, and
so is the return (but that of ``__init__``); :func:`typing.get_type_hints`
must resolve every one, which catches typos in string annotations (``from
__future__ import annotations`` makes every annotation a string).

A callable is checked where it is defined (its ``__module__``), whichever
module re-exports it, for the packages in ``ANNOTATED``.
"""

from __future__ import annotations

import inspect
import typing

from tests._package import public_names

#: The packages whose public signatures are annotated: every subpackage of
#: embedopt (the command line, SKIP_MODULES, is not checked).
ANNOTATED = [
    "embedopt._core",
    "embedopt.completion",
    "embedopt.data",
    "embedopt.linalg",
    "embedopt.metrics",
    "embedopt.nn",
    "embedopt.optim",
    "embedopt.ordinal",
    "embedopt.quantization",
    "embedopt.sdp",
    "embedopt.similarity",
]

SKIP_MODULES = ("embedopt.cli",)  # __main__ is never imported
UNCHECKED_PARAMS = {"self", "cls"}
SPECIAL_METHODS = {"__init__", "__call__"}


def _in_scope(module_name: str | None) -> bool:
    if not module_name:
        return False
    return any(module_name == p or module_name.startswith(p + ".") for p in ANNOTATED)


def _class_members(cls):
    """(function, is_init) of the public methods of ``cls``, inherited ones too."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("embedopt"):
            continue
        for name, raw in vars(klass).items():
            if name.startswith("_") and name not in SPECIAL_METHODS:
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                raw = raw.__func__
            elif isinstance(raw, property):
                raw = raw.fget
            if inspect.isfunction(raw):
                yield raw, name == "__init__"


def _public_callables():
    """(name, function, is_init) of every public callable, deduplicated."""
    seen = {}
    for _, _, obj in public_names(SKIP_MODULES):
        if inspect.isclass(obj):
            members = _class_members(obj)
        elif inspect.isfunction(obj):
            members = [(obj, False)]
        else:
            continue
        for func, is_init in members:
            if id(func) not in seen:
                name = f"{func.__module__}:{func.__qualname__}"
                seen[id(func)] = (name, func, is_init)
    return sorted(seen.values(), key=lambda item: item[0])


def _checked():
    return [c for c in _public_callables() if _in_scope(c[1].__module__)]


def _missing(func, is_init: bool) -> list[str]:
    """What ``func`` leaves unannotated: parameter names and ``return``."""
    sig = inspect.signature(func)
    missing = [
        p.name
        for p in sig.parameters.values()
        if p.name not in UNCHECKED_PARAMS
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.annotation is p.empty
    ]
    if not is_init and sig.return_annotation is sig.empty:
        missing.append("return")
    return missing


CHECKED = _checked()


def test_some_callables_are_checked():
    assert len(CHECKED) > 100, len(CHECKED)


def test_public_signatures_are_annotated():
    lacking = [
        f"{name}: {', '.join(missing)}"
        for name, func, is_init in CHECKED
        if (missing := _missing(func, is_init))
    ]
    assert not lacking, (
        f"{len(lacking)} of {len(CHECKED)} public callables lack annotations:\n"
        + "\n".join(lacking)
    )


def test_annotations_resolve():
    failing = []
    for name, func, _ in CHECKED:
        try:
            typing.get_type_hints(func)
        except Exception as exc:  # report every kind of failure
            failing.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failing, "annotations that do not resolve:\n" + "\n".join(failing)
