"""The ``"embedopt"`` logger.

Library code never prints: progress goes to tqdm bars (``verbose=1``) and
per-iteration records go through :mod:`logging` (``verbose=2``).
"""

from __future__ import annotations

import logging

__all__ = ["get_logger"]

_LOGGER_NAME = "embedopt"
logging.getLogger(_LOGGER_NAME).addHandler(logging.NullHandler())


def get_logger(name: str | None = None) -> logging.Logger:
    """Return the embedopt logger, or one of its children.

    Parameters
    ----------
    name : str, optional
        Child name, e.g. ``"completion"`` gives ``"embedopt.completion"``.

    Returns
    -------
    logging.Logger
    """
    return logging.getLogger(_LOGGER_NAME if not name else f"{_LOGGER_NAME}.{name}")


def ensure_verbose_handler(logger: logging.Logger) -> None:
    """Make per-iteration records visible when a user asks for ``verbose=2``.

    If neither the logger nor the root logger has a handler that would show
    INFO records, attach a stderr handler to the embedopt logger once. Users who
    configure logging themselves keep full control.
    """
    root = logging.getLogger(_LOGGER_NAME)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    has_real = any(not isinstance(h, logging.NullHandler) for h in root.handlers)
    if not has_real and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        root.addHandler(handler)
