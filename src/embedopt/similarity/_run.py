"""What the solvers and baselines of the all-pairs objective share: the
checks of a starting point, the monitor that stops on the exact gradient
norm or objective, and the exact evaluation recorded off the clock."""

from __future__ import annotations

import torch

from .._core import InstanceOf, Interval, InvalidParameterError
from ..linalg.points import norm
from ..optim import RelativeChange
from ..optim.monitor import solver_monitor
from .problem import AllPairsObjective

_OBJECTIVE = InstanceOf(AllPairsObjective, "an AllPairsObjective")
_MONITORING = {
    "verbose": [Interval(int, 0, None), "boolean"],
    "callback": ["callable", None],
    "evaluate": ["callable", None],
    "random_state": ["random_state"],
}


def _check_point(objective: AllPairsObjective, x0, owner: str) -> tuple:
    if isinstance(x0, torch.Tensor) or not hasattr(x0, "__iter__"):
        raise InvalidParameterError(
            f"The 'x0' parameter of {owner} must be a tuple of tensors (see "
            f"AllPairsObjective.initial_point). Got {type(x0).__name__}."
        )
    x0 = tuple(x0)
    objective.split(x0)
    if not all(isinstance(p, torch.Tensor) for p in x0):
        raise InvalidParameterError(
            f"The 'x0' parameter of {owner} must be a tuple of tensors."
        )
    return x0


def _monitor(
    name, max_iter, tol, verbose, callback, owner, hint, start, stop_on="grad_norm"
):
    """The monitor of a baseline, stopping like the paper's solvers on
    ``||grad L(x)|| <= tol ||grad L(x0)||`` (``start``: f and the gradient
    norm at x0, filled in once the clock runs), or on the relative objective
    decrease per iteration; tol = 0 is a fixed budget."""
    if stop_on == "objective":
        stopping = RelativeChange(tol)
    else:
        stopping = lambda h: h.last("grad_norm") <= tol * start["grad_norm"]  # noqa: E731
    return solver_monitor(
        name, max_iter, tol, verbose, callback, owner or name, hint, stopping, tol == 0
    )


def _exact(objective: AllPairsObjective, x, evaluate) -> dict:
    """The exact objective and gradient norm at x, plus ``evaluate(x)``."""
    f, g = objective.value_and_grad(x)
    out = {"objective": float(f), "grad_norm": norm(g)}
    if evaluate is not None:
        out.update(evaluate(x))
    return out
