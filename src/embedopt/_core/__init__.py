"""Core services: devices, dtypes, randomness, validation, errors, logging."""

from .arrays import as_array, check_plus_minus_one, check_sample_weight
from .base import BaseEstimator, check_is_fitted, clone
from .context import FitContext, resolve_fit_context
from .deprecation import renamed_parameters
from .device import DeviceLike, DtypeLike, resolve_device, resolve_dtype, to_numpy
from .docs import RUN_PARAMETERS_DOC, fill_doc
from .exceptions import (
    CollectiveError,
    ConvergenceWarning,
    DataValidationError,
    DataWarning,
    DeviceUnavailableError,
    EmbedoptError,
    InvalidParameterError,
    NotFittedError,
    NumericalInstabilityError,
)
from .log import get_logger
from .memory import check_memory, check_tensor_memory, device_memory, format_bytes
from .persistence import persistable
from .random import RandomState, RandomStateLike, resolve_random_state
from .registry import Registry, canonical_name, instance_or_named
from .threads import few_threads
from .validation import (
    PROGRESS_CONSTRAINTS,
    RUN_CONSTRAINTS,
    InstanceOf,
    Interval,
    Options,
    check_param,
    validate_params,
    validated_params,
)

__all__ = [
    "PROGRESS_CONSTRAINTS",
    "RUN_CONSTRAINTS",
    "RUN_PARAMETERS_DOC",
    "BaseEstimator",
    "CollectiveError",
    "ConvergenceWarning",
    "DataValidationError",
    "DataWarning",
    "DeviceLike",
    "DeviceUnavailableError",
    "DtypeLike",
    "EmbedoptError",
    "FitContext",
    "InstanceOf",
    "Interval",
    "InvalidParameterError",
    "NotFittedError",
    "NumericalInstabilityError",
    "Options",
    "RandomState",
    "RandomStateLike",
    "Registry",
    "as_array",
    "canonical_name",
    "check_is_fitted",
    "check_memory",
    "check_param",
    "check_plus_minus_one",
    "check_sample_weight",
    "check_tensor_memory",
    "clone",
    "device_memory",
    "few_threads",
    "fill_doc",
    "format_bytes",
    "get_logger",
    "instance_or_named",
    "persistable",
    "renamed_parameters",
    "resolve_device",
    "resolve_dtype",
    "resolve_fit_context",
    "resolve_random_state",
    "to_numpy",
    "validate_params",
    "validated_params",
]
