"""Momentum schedules for accelerated proximal methods (chosen by name)."""

from __future__ import annotations

from .._core import Registry

__all__ = ["MOMENTUM", "NesterovRestart", "NoMomentum"]


class NesterovRestart:
    """Nesterov momentum ``theta_t = (c - 1) / (c + 2)`` with adaptive restart.

    This is the schedule of AIS-Impute (Algorithm 3, steps 1, 4, 9-10 of Yao &
    Kwok): the counter ``c`` starts at 1, grows by one after every iteration
    whose objective did not increase, and is reset to 1 when it did
    (O'Donoghue & Candes' function-value restart).
    """

    name = "nesterov_restart"

    def __init__(self) -> None:
        self.c = 1
        self.n_restarts = 0

    @property
    def theta(self) -> float:
        """Extrapolation weight of the next iteration."""
        return (self.c - 1.0) / (self.c + 2.0)

    def update(self, objective_increased: bool) -> None:
        """Advance the schedule after an iteration."""
        if objective_increased:
            self.c = 1
            self.n_restarts += 1
        else:
            self.c += 1


class NoMomentum:
    """No extrapolation (``theta_t = 0``): the plain proximal gradient method."""

    name = "none"
    n_restarts = 0
    theta = 0.0

    def update(self, objective_increased: bool) -> None:
        """Nothing to update."""


#: Momentum schedules by name: ``MOMENTUM.get(name)()``.
MOMENTUM = Registry(
    "momentum schedule",
    {"nesterov_restart": NesterovRestart, "none": NoMomentum},
    owner="embedopt.optim",
)
