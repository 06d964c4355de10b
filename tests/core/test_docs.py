"""fill_doc: shared numpydoc blocks put into docstrings at import."""

import inspect
import re

import pytest

from embedopt._core import fill_doc
from tests._package import public_names


def test_a_field_line_becomes_the_block_at_its_indentation():
    @fill_doc(args="Parameters\n----------\nx : int\n\n    the value")
    def f(x):
        """Summary, with {"set", "notation"} left alone.

        {args}
        """

    assert f.__doc__ == (
        'Summary, with {"set", "notation"} left alone.\n\n'
        "        Parameters\n        ----------\n        x : int\n\n"
        "            the value\n        "
    )


def test_a_missing_or_unused_field_is_an_error():
    with pytest.raises(KeyError):

        @fill_doc(args="x : int")
        def f(x):
            """No field here."""

    with pytest.raises(KeyError):

        @fill_doc()
        def g(x):
            """{args}"""


def _public_objects():
    for module_name, name, obj in public_names():
        yield f"{module_name}.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    yield f"{module_name}.{name}.{attr}", member


def test_no_public_docstring_keeps_an_unfilled_field():
    field = re.compile(r"^\s*\{\w+\}\s*$", re.MULTILINE)
    left = [name for name, obj in _public_objects() if field.search(obj.__doc__ or "")]
    assert not left
