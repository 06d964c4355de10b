"""The one walk over embedopt's modules and public names the suite-wide tests
share (docstrings, annotations, vocabulary, docstring examples)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import embedopt


def modules(skip: tuple[str, ...] = ()) -> Iterator[ModuleType]:
    """embedopt and every submodule, imported, except ``__main__`` (importing it
    runs the command) and the modules under the prefixes in ``skip``."""
    yield embedopt
    for info in pkgutil.walk_packages(embedopt.__path__, "embedopt."):
        name = info.name
        if name.endswith("__main__"):
            continue
        if any(name == s or name.startswith(s + ".") for s in skip):
            continue
        yield importlib.import_module(name)


def public_names(skip: tuple[str, ...] = ()) -> Iterator[tuple[str, str, object]]:
    """``(module name, name, object)`` of every name in a module's ``__all__``."""
    for module in modules(skip):
        for name in getattr(module, "__all__", ()):
            yield module.__name__, name, getattr(module, name)
