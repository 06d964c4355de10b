"""What counts as an acceptable end of a call on bad input, and its checks.

A call on generated input is acceptable when it ends in one of two ways:

1. **refused**: it raises an :class:`~embedopt.EmbedoptError` (one of
   ``InvalidParameterError``, ``DataValidationError``, ``NotFittedError``,
   ``DeviceUnavailableError``, ``NumericalInstabilityError``) whose message
   is not empty;
2. **accepted**: it returns, every warning it emitted is one of the
   documented ones (:data:`DOCUMENTED_WARNINGS`), and its result passes the
   method's own check (finite numbers, the promised shape, indices in range:
   the ``check`` functions of the test modules).

Anything else fails the example: another exception type (``TypeError``,
``IndexError``, a torch ``RuntimeError``, ``MemoryError``...), an
undocumented warning (NumPy's ``RuntimeWarning``, a torch ``UserWarning``...),
a result that fails its check, or a call still running after
:data:`TIME_LIMIT` seconds (a hang: the watchdog interrupts it). Inputs that
are wrong beyond doubt (NaN, negative or non-integer indices, strings, wrong
shapes, empty data, out-of-range parameters) must be refused: for them an
accepted result is a silent one and fails the example too.
"""

from __future__ import annotations

import collections
import contextlib
import signal
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, settings

from embedopt import ConvergenceWarning, DataWarning, EmbedoptError
from embedopt.data import ComparisonWarning

#: Warnings a call may emit and still count as accepted: the library's own,
#: each documented where it is raised.
DOCUMENTED_WARNINGS = (ConvergenceWarning, DataWarning, ComparisonWarning)

#: Warnings of torch that are not the library's doing (the first is ignored
#: project-wide, see ``filterwarnings`` in pyproject.toml).
IGNORED_WARNINGS = (
    "Sparse CSR tensor support is in beta state",
    # torch.func.jvp loads its decompositions through torch.jit.script, once
    # per process (torch 2.13)
    "`torch.jit.script` is deprecated",
)

#: Seconds after which a call counts as a hang and is interrupted. Each
#: call runs on tiny data and takes well under a second; the margin is for a
#: loaded 2-core machine.
TIME_LIMIT = 30.0

#: Cases run, per (subject, kind, outcome), printed by the conftest at the end
#: of the session.
CASES_RUN: collections.Counter = collections.Counter()


class Hang(Exception):
    """Raised by the watchdog inside a call that ran past :data:`TIME_LIMIT`."""


@contextlib.contextmanager
def watchdog(seconds: float):
    """Interrupt the body with :class:`Hang` after ``seconds`` (main thread,
    POSIX); elsewhere the body runs unwatched and hypothesis' deadline alone
    reports slow examples."""
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def interrupt(signum, frame):
        raise Hang(f"the call did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """How a call ended: ``error`` is set when it was refused."""

    value: object = None
    error: EmbedoptError | None = None
    warnings: list = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.error is not None


def call(
    subject: str, kind: str, fn, *, must_refuse: bool = False, label: str = ""
) -> Outcome:
    """Run ``fn()`` and check that it ends acceptably (see the module doc).

    Parameters
    ----------
    subject : str
        What is tested, e.g. ``"MatrixCompletion.fit"`` (for the counts).
    kind : str
        The kind of generated input, e.g. ``"data"`` or ``"params"``.
    fn : callable
        The call.
    must_refuse : bool
        The input is wrong beyond doubt: returning is a silent result.
    label : str
        What is wrong with the input, for the failure message.

    Returns
    -------
    Outcome
        The caller checks ``value`` when the call was accepted.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with watchdog(TIME_LIMIT):
                value = fn()
        except EmbedoptError as exc:
            CASES_RUN[subject, kind, "refused"] += 1
            message = " ".join(str(exc).split())
            assert message, f"{type(exc).__name__} without a message"
            return Outcome(error=exc, warnings=list(caught))
        except Hang as exc:
            CASES_RUN[subject, kind, "failed"] += 1
            raise AssertionError(f"{subject}: {exc} (a hang)") from None
        except BaseException:
            CASES_RUN[subject, kind, "failed"] += 1
            raise
    CASES_RUN[subject, kind, "accepted"] += 1
    unexpected = [
        w
        for w in caught
        if not issubclass(w.category, DOCUMENTED_WARNINGS)
        and not any(text in str(w.message) for text in IGNORED_WARNINGS)
    ]
    assert not unexpected, (
        f"{subject}: undocumented warning(s) "
        f"{[f'{w.category.__name__}: {w.message}' for w in unexpected]}"
    )
    assert not must_refuse, (
        f"{subject}: wrong input ({label}) accepted, returned {value!r:.200}"
    )
    return Outcome(value=value, warnings=list(caught))


def check_finite(value, what: str = "result", shape=None) -> np.ndarray:
    """A numeric array without NaN or inf (and of ``shape`` when given)."""
    a = np.asarray(value)
    assert a.dtype.kind in "iufb", f"{what}: dtype {a.dtype}"
    assert np.all(np.isfinite(a)), f"{what} has NaN or inf: {a!r:.300}"
    if shape is not None:
        assert a.shape == tuple(shape), f"{what}: shape {a.shape}, expected {shape}"
    return a


#: Profiles: ``embedopt`` (the default; seeded, so every run tries the same
#: cases) and ``embedopt-thorough`` (random, 50x the examples: run with
#: ``pytest tests/property --hypothesis-profile=embedopt-thorough``).
BASE_EXAMPLES = 20
THOROUGH_FACTOR = 50


def register_profiles() -> None:
    """Register the two profiles and load the default one (tests/conftest.py
    calls this before hypothesis reads ``--hypothesis-profile``)."""
    common = dict(
        # a call that is slow but finishes is reported by the deadline; one
        # that never finishes by the watchdog above
        deadline=10_000,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
    settings.register_profile(
        "embedopt",
        max_examples=BASE_EXAMPLES,
        derandomize=True,
        database=None,
        **common,
    )
    settings.register_profile(
        "embedopt-thorough", max_examples=BASE_EXAMPLES * THOROUGH_FACTOR, **common
    )
    settings.load_profile("embedopt")


def examples(factor: float = 1.0) -> settings:
    """Settings of one test: ``factor`` times the profile's ``max_examples``
    (cheap tests take more examples, full fits fewer)."""
    return settings(max_examples=max(1, round(settings.default.max_examples * factor)))
