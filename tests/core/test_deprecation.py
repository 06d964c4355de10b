"""Renamed parameters keep working for one release, with a FutureWarning."""

import pytest

from embedopt._core import InvalidParameterError, renamed_parameters


def test_decorator_renames_and_warns():
    @renamed_parameters(old="new")
    def f(*, new=1):
        return new

    with pytest.warns(FutureWarning, match="'old' parameter of .*f was renamed 'new'"):
        assert f(old=5) == 5
    assert f(new=3) == 3
    with pytest.raises(InvalidParameterError, match="both 'old' and its new name"):
        f(old=1, new=2)
