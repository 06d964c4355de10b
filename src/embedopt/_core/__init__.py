"""Core services: devices, dtypes, randomness, validation, errors, logging."""

from .base import BaseEstimator, check_is_fitted, clone
from .device import resolve_device, resolve_dtype, to_numpy
from .exceptions import (
    ConvergenceWarning,
    DataValidationError,
    DeviceUnavailableError,
    EmbedoptError,
    InvalidParameterError,
    NotFittedError,
    NumericalInstabilityError,
)
from .log import get_logger
from .random import RandomState, resolve_random_state
from .validation import InstanceOf, Interval, Options, check_param, validate_params

__all__ = [
    "BaseEstimator",
    "ConvergenceWarning",
    "DataValidationError",
    "DeviceUnavailableError",
    "EmbedoptError",
    "InstanceOf",
    "Interval",
    "InvalidParameterError",
    "NotFittedError",
    "NumericalInstabilityError",
    "Options",
    "RandomState",
    "check_is_fitted",
    "check_param",
    "clone",
    "get_logger",
    "resolve_device",
    "resolve_dtype",
    "resolve_random_state",
    "to_numpy",
    "validate_params",
]
