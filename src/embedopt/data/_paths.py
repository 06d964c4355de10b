"""Where loaders look for dataset files."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_dataset_dir", "get_data_home"]


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Root folder of the datasets.

    Parameters
    ----------
    data_home : path, optional
        Explicit root; else ``$EMBEDOPT_DATA``; else ``~/.cache/embedopt``.

    Returns
    -------
    pathlib.Path
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("EMBEDOPT_DATA")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "embedopt"


def find_dataset_dir(
    name: str,
    marker: str | tuple[str, ...],
    path: str | os.PathLike | None = None,
    hint: str = "",
) -> Path:
    """Locate a dataset folder holding ``marker`` (a file name or alternatives).

    ``path`` may point at the dataset folder itself or at a data root that
    contains ``name/``; without ``path`` the data home is searched.

    Raises
    ------
    FileNotFoundError
        Naming the places searched and how to provide the files.
    """
    markers = (marker,) if isinstance(marker, str) else tuple(marker)
    candidates = []
    if path is not None:
        p = Path(path).expanduser()
        candidates += [p, p / name]
    else:
        candidates.append(get_data_home() / name)
    for c in candidates:
        if any((c / mk).is_file() for mk in markers):
            return c
    raise FileNotFoundError(
        f"Dataset {name!r} not found: looked for {' or '.join(markers)} in "
        f"{', '.join(str(c) for c in candidates)}. Pass path=... or set the "
        f"EMBEDOPT_DATA environment variable to a folder containing {name}/. {hint}"
    )
