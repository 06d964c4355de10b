"""Registry spelling/lookup rules and the shared fit-context resolution."""

import numpy as np
import pytest
import torch

from embedopt._core import (
    BaseEstimator,
    InvalidParameterError,
    Options,
    Registry,
    canonical_name,
    resolve_fit_context,
    validate_params,
)


def test_canonical_name():
    assert canonical_name(" GCD-G ") == "gcd_g"
    assert canonical_name("ais_impute") == "ais_impute"


def test_registry_lookup_accepts_other_spellings():
    reg = Registry("solver", {"gcd_g": 1, "ais_impute": 2}, owner="demo")
    assert reg.get("GCD-G") == 1 and reg["gcd_g"] == 1
    assert "AIS-Impute" in reg and "nope" not in reg and 3 not in reg
    assert list(reg) == ["gcd_g", "ais_impute"] and len(reg) == 2


def test_registry_unknown_name_lists_valid_ones():
    reg = Registry("rotation learner", {"gcd_g": 1}, owner="ProductQuantizer")
    with pytest.raises(
        InvalidParameterError,
        match=r"Unknown rotation learner of "
        r"ProductQuantizer: 'gdc'\. Valid names: 'gcd_g'",
    ):
        reg.get("gdc")
    with pytest.raises(InvalidParameterError):
        reg.get(None)


def test_registry_rejects_non_canonical_and_duplicate_names():
    reg = Registry("loss")
    reg.register("square")(len)
    with pytest.raises(ValueError, match="lower_snake_case"):
        reg.add("Square-Loss", len)
    with pytest.raises(ValueError, match="already registered"):
        reg.add("square", len)


def test_options_over_a_registry_accepts_aliases():
    reg = Registry("solver", {"gcd_g": 1})
    validate_params("f", {"solver": "GCD-G"}, {"solver": [Options(reg)]})
    with pytest.raises(InvalidParameterError, match=r"among \{'gcd_g'\}"):
        validate_params("f", {"solver": "x"}, {"solver": [Options(reg)]})


class _Est(BaseEstimator):
    def __init__(self, random_state=None, device="cpu", dtype="float64"):
        self.random_state = random_state
        self.device = device
        self.dtype = dtype


def test_fit_context_reads_the_estimator():
    ctx = resolve_fit_context(_Est(random_state=3))
    assert ctx.device == torch.device("cpu") and ctx.dtype == torch.float64
    again = resolve_fit_context(_Est(random_state=3))
    assert ctx.random_state.numpy.integers(
        1 << 30
    ) == again.random_state.numpy.integers(1 << 30)
    assert isinstance(ctx.generator(), torch.Generator)


def test_fit_context_errors_name_the_estimator():
    with pytest.raises(InvalidParameterError, match="of _Est"):
        resolve_fit_context(_Est(random_state=-1))
    with pytest.raises(InvalidParameterError, match="dtype"):
        resolve_fit_context(_Est(dtype="int8"))


def test_fit_context_keywords_without_estimator():
    ctx = resolve_fit_context(random_state=np.random.default_rng(0))
    assert ctx.dtype == torch.float32


def test_validated_params_checks_arguments_and_defaults():
    from embedopt._core import Interval, validated_params

    @validated_params({"k": [Interval(int, 1, None)], "tol": [Interval(float, 0, 1)]})
    def solve(x, *, k=3, tol=2.0, name="my-solver"):
        return x * k

    with pytest.raises(InvalidParameterError, match="'tol' parameter of my-solver"):
        solve(1)  # a bad default is caught too
    assert solve(2, tol=0.5) == 6
    with pytest.raises(InvalidParameterError, match="'k' parameter of other"):
        solve(2, k=0, tol=0.5, name="other")

    @validated_params({"k": [Interval(int, 1, None)]})
    def plain(k):
        return k

    with pytest.raises(InvalidParameterError, match="of plain"):
        plain(0)
