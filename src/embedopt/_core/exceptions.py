"""Exception and warning classes shared by every embedopt package."""

from __future__ import annotations

__all__ = [
    "CollectiveError",
    "ConvergenceWarning",
    "DataValidationError",
    "DataWarning",
    "DeviceUnavailableError",
    "EmbedoptError",
    "InvalidParameterError",
    "NotFittedError",
    "NumericalInstabilityError",
]


class EmbedoptError(Exception):
    """Base class of every error raised on purpose by embedopt."""


class InvalidParameterError(EmbedoptError, ValueError, TypeError):
    """A parameter has the wrong type or value.

    Raised before any work is done, with the message shape
    ``"The 'rank' parameter of MatrixCompletion must be an int in [1, inf). Got 0."``.
    Subclasses both :class:`ValueError` and :class:`TypeError` so that callers
    catching either keep working.
    """


class DataValidationError(EmbedoptError, ValueError):
    """Input data is malformed: NaN values, out-of-range indices, duplicates...

    The message names what is wrong, where, and how to fix it.
    """


class NotFittedError(EmbedoptError, ValueError, AttributeError):
    """An estimator was used before ``fit`` was called."""


class DeviceUnavailableError(EmbedoptError, RuntimeError):
    """A device was requested explicitly (e.g. ``"cuda"``) but is not available.

    embedopt never falls back silently to another device.
    """


class NumericalInstabilityError(EmbedoptError, FloatingPointError):
    """A solver produced a NaN or infinite objective and stopped.

    The message names the likely cause (step size, scaling of the data).
    """


class CollectiveError(EmbedoptError, RuntimeError):
    """A collective of a ``torch.distributed`` process group failed.

    Another process died, or did not reach the same collective within the
    group's timeout; the message names the collective and what to check.
    """


class ConvergenceWarning(UserWarning):
    """A solver hit its iteration budget before meeting its tolerance."""


class DataWarning(UserWarning):
    """Input data are usable but look wrong.

    For example, one stray index far above all others inflates a shape
    inferred as ``max index + 1``, and with it the memory and time of a fit;
    or a k-NN graph of the data falls into several components; or there are
    fewer samples per epoch than the batch size asks (it is clipped).
    """
