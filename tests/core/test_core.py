import numpy as np
import pytest
import torch

from embedopt._core import (
    BaseEstimator,
    DataValidationError,
    DeviceUnavailableError,
    InstanceOf,
    Interval,
    InvalidParameterError,
    NotFittedError,
    Options,
    check_is_fitted,
    check_param,
    check_plus_minus_one,
    clone,
    resolve_device,
    resolve_dtype,
    resolve_random_state,
)


def test_message_shape():
    with pytest.raises(InvalidParameterError) as exc:
        check_param("MatrixCompletion", "rank", 0, [Interval(int, 1, None)])
    assert str(exc.value) == (
        "The 'rank' parameter of MatrixCompletion must be an int in [1, inf). Got 0."
    )


def test_multiple_constraints_message():
    with pytest.raises(InvalidParameterError, match=r"or None\. Got 'x'"):
        check_param("f", "k", "x", [Interval(int, 1, None), None])


@pytest.mark.parametrize(
    ("value", "ok"), [(1, True), (0, False), (1.5, False), (True, False), (None, False)]
)
def test_interval_int(value, ok):
    assert Interval(int, 1, None).is_satisfied_by(value) is ok


def test_interval_float_bounds():
    c = Interval(float, 0, 1, closed="neither")
    assert c.is_satisfied_by(0.5)
    assert not c.is_satisfied_by(0.0)
    assert not c.is_satisfied_by(1)
    assert not c.is_satisfied_by(float("nan"))
    assert str(c) == "a float in (0, 1)"


def test_options_and_instanceof():
    assert Options(["a", "b"]).is_satisfied_by("a")
    assert not Options(["a", "b"]).is_satisfied_by("c")
    assert "among {'a', 'b'}" in str(Options(["a", "b"]))
    assert InstanceOf(int, "an int").is_satisfied_by(3)


def test_invalid_parameter_error_is_value_and_type_error():
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(InvalidParameterError):
        resolve_device("tpu")


def test_the_environment_decides_what_auto_means(monkeypatch):
    monkeypatch.setenv("EMBEDOPT_DEVICE", "cpu")
    assert resolve_device("auto") == resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv("EMBEDOPT_DEVICE", "auto")
    assert resolve_device("auto").type == (
        "cuda" if torch.cuda.is_available() else "cpu"
    )
    assert resolve_device("cpu") == torch.device("cpu")  # explicit devices win
    monkeypatch.setenv("EMBEDOPT_DEVICE", "tpu")
    with pytest.raises(InvalidParameterError, match="EMBEDOPT_DEVICE='tpu'"):
        resolve_device("auto")
    if not torch.cuda.is_available():
        monkeypatch.setenv("EMBEDOPT_DEVICE", "cuda")
        with pytest.raises(DeviceUnavailableError, match="Unset it"):
            resolve_device("auto")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_cuda_unavailable_is_an_error():
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        resolve_device("cuda")


def test_resolve_dtype():
    assert resolve_dtype(None) is torch.float32
    assert resolve_dtype("float64") is torch.float64
    assert resolve_dtype(np.float32) is torch.float32
    assert resolve_dtype(torch.float64) is torch.float64
    with pytest.raises(InvalidParameterError):
        resolve_dtype("int8")


def test_random_state_reproducible():
    a, b = resolve_random_state(3), resolve_random_state(3)
    assert a.numpy.integers(0, 10**9) == b.numpy.integers(0, 10**9)
    ta = torch.randn(3, generator=a.torch("cpu"))
    tb = torch.randn(3, generator=b.torch("cpu"))
    assert torch.equal(ta, tb)
    gen = np.random.default_rng(0)
    assert resolve_random_state(gen).numpy is gen
    with pytest.raises(InvalidParameterError):
        resolve_random_state(-1)
    with pytest.raises(InvalidParameterError):
        resolve_random_state("seed")


class _Est(BaseEstimator):
    _parameter_constraints = {"alpha": [Interval(float, 0, None)]}  # noqa: RUF012

    def __init__(self, alpha=1.0, *, beta="x"):
        self.alpha = alpha
        self.beta = beta

    def fit(self):
        self._validate_params()
        self.done_ = True
        return self


def test_base_estimator_params_clone_repr():
    e = _Est(2.0, beta="y")
    assert e.get_params() == {"alpha": 2.0, "beta": "y"}
    c = clone(e)
    assert c.get_params() == e.get_params() and c is not e
    assert repr(e) == "_Est(alpha=2.0, beta='y')"
    e.set_params(alpha=3.0)
    assert e.alpha == 3.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        e.set_params(gamma=1)


def test_not_fitted_and_validation():
    e = _Est(-1.0)
    with pytest.raises(NotFittedError):
        check_is_fitted(e, "done_")
    with pytest.raises(InvalidParameterError, match="'alpha' parameter of _Est"):
        e.fit()


def test_check_plus_minus_one_counts_and_points_at_the_first():
    check_plus_minus_one(np.array([1.0, -1.0, 1.0]), lambda n, i: "unused")
    check_plus_minus_one(np.array([]), lambda n, i: "unused")
    with pytest.raises(DataValidationError, match=r"^2 bad, first at 1$"):
        check_plus_minus_one(
            np.array([1, 0, -1, 2]), lambda n, i: f"{n} bad, first at {i}"
        )


def test_store_result_sets_the_common_fitted_attributes():
    from types import SimpleNamespace

    from embedopt._core import BaseEstimator

    est = BaseEstimator()
    run = SimpleNamespace(history={"objective": [3.0, 2.0, float("nan")]}, n_iter=3)
    run.stop_reason = "tol"
    est._store_result(run, solver="ais_impute")
    assert (est.solver_, est.n_iter_, est.stop_reason_) == ("ais_impute", 3, "tol")
    assert est.objective_ == 2.0  # the last finite value
    est._store_result(run, objective=1.5)
    assert est.objective_ == 1.5
    # a refit whose method has no objective keeps no stale one
    est._store_result(SimpleNamespace(history={}, n_iter=1, stop_reason="max_iter"))
    assert not hasattr(est, "objective_")


def test_check_sample_weight_says_the_same_thing_for_every_kind_of_observation():
    from embedopt._core import check_sample_weight

    w = check_sample_weight(torch.tensor([1, 0, 2]), 3, owner="X.fit", unit="pair")
    assert w.dtype == np.float64 and w.tolist() == [1.0, 0.0, 2.0]
    cases = [
        (np.ones(3, bool), "must be real numbers, one weight per pair"),
        (np.ones(2), r"3 real numbers, shape \(3,\); got shape \(2,\)"),
        (np.r_[1.0, -2.0, 1.0], r"first: pair 1 has -2.0\)"),
        (np.zeros(3), "0 for every pair"),
    ]
    for bad, match in cases:
        with pytest.raises(DataValidationError, match=match):
            check_sample_weight(bad, 3, owner="X.fit", unit="pair")


def test_attribute_repr_is_the_constructor_call():
    from embedopt._core.registry import AttributeRepr
    from embedopt.completion.regularizers import get_regularizer
    from embedopt.ordinal.losses import get_loss

    class _Rule(AttributeRepr):
        def __init__(self, theta, name="x"):
            self.theta = theta
            self.name = name

    assert repr(_Rule(0.5)) == "_Rule(theta=0.5, name='x')"
    assert repr(get_loss("tste")) == "TSTELoss(alpha=None)"
    assert repr(get_regularizer("lsp", theta=2.0)) == (
        "LogSumPenalty(theta=2.0, gamma=None)"
    )
