"""Random state resolution.

``random_state`` (None, int, or generator) is resolved once, at the top of
``fit``, into a :class:`RandomState` holding a NumPy generator and lazily created
torch generators (one per device), all derived from the same seed. Library code
never calls global seeding functions, so same seed + same device gives the same
result.
"""

from __future__ import annotations

import numpy as np
import torch

from .exceptions import InvalidParameterError

__all__ = ["RandomState", "RandomStateLike", "resolve_random_state"]


class RandomState:
    """A NumPy generator plus torch generators derived from it.

    Parameters
    ----------
    numpy_generator : numpy.random.Generator
        Source of all randomness; torch generators are seeded from it.

    Attributes
    ----------
    numpy : numpy.random.Generator
    """

    def __init__(self, numpy_generator: np.random.Generator):
        self.numpy = numpy_generator
        self._torch: dict[str, torch.Generator] = {}

    def torch(self, device: torch.device | str = "cpu") -> torch.Generator:
        """Return the torch generator for ``device`` (created on first use).

        Parameters
        ----------
        device : torch.device or str

        Returns
        -------
        torch.Generator
        """
        dev = torch.device(device)
        key = str(dev) if dev.type == "cuda" else "cpu"
        gen = self._torch.get(key)
        if gen is None:
            gen = torch.Generator(device=dev)
            gen.manual_seed(int(self.numpy.integers(0, 2**63 - 1)))
            self._torch[key] = gen
        return gen

    def spawn(self) -> RandomState:
        """Return an independent child state (for nested solvers)."""
        return RandomState(np.random.default_rng(self.numpy.integers(0, 2**63 - 1)))


#: What a ``random_state`` parameter accepts (see :func:`resolve_random_state`).
RandomStateLike = int | np.integer | np.random.Generator | RandomState | None


def resolve_random_state(
    random_state: RandomStateLike, owner: str | None = None
) -> RandomState:
    """Resolve ``random_state`` into a :class:`RandomState`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or RandomState
        None draws fresh OS entropy; an int seeds a new generator; a Generator is
        used as is (and advanced).
    owner : str, optional
        Name used in the error message.

    Returns
    -------
    RandomState
    """
    if isinstance(random_state, RandomState):
        return random_state
    if random_state is None:
        return RandomState(np.random.default_rng())
    if isinstance(random_state, np.random.Generator):
        return RandomState(random_state)
    if isinstance(random_state, (int, np.integer)) and not isinstance(
        random_state, bool
    ):
        if random_state < 0:
            raise InvalidParameterError(
                f"The 'random_state' parameter{_of(owner)} must be a non-negative "
                f"int, a numpy Generator or None. Got {random_state!r}."
            )
        return RandomState(np.random.default_rng(int(random_state)))
    raise InvalidParameterError(
        f"The 'random_state' parameter{_of(owner)} must be an int, a numpy "
        f"Generator or None. Got {random_state!r}."
    )


def _of(owner: str | None) -> str:
    return f" of {owner}" if owner else ""
