"""MovieLens user and movie side features: ML-1M (``users.dat``, ``movies.dat``)
and ML-100K (``u.user``, ``u.item``, ``u.occupation``), in one layout."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .._core import DataValidationError, InvalidParameterError
from ._files import parsing
from ._paths import find_dataset_dir
from .movielens import MovieLensRatings, load_movielens

__all__ = ["GENRES_1M", "MovieLensSideFeatures", "load_movielens_side_features"]

#: The 18 genres of ``movies.dat`` (ML-1M README), in multi-hot column order.
GENRES_1M = (
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
_AGES = (1, 18, 25, 35, 45, 50, 56)
_USER_FEATURES = ("gender", "age", "occupation", "zip")


@dataclass
class MovieLensSideFeatures:
    """MovieLens-1M ratings with categorical user and movie features.

    Rows/columns of ``ratings.entries`` index ``user_features`` /
    ``item_features`` (same order).

    Attributes
    ----------
    ratings : MovieLensRatings
    user_features : dict of str to numpy.ndarray
        ``gender`` (0 F, 1 M), ``age`` (0..6, the 7 age groups), ``occupation``
        (0..20), ``zip`` (first digit of the zip code + 1; 0 unknown); int64,
        shape (n_users,).
    item_features : dict of str to numpy.ndarray
        ``genres`` float32 multi-hot (n_items, 18) in :data:`GENRES_1M` order,
        ``decade`` int64 (0 unknown, else 1 + (year - 1910) // 10 clipped to
        [1, 10]), ``known`` bool (movie found in ``movies.dat``).
    cardinalities : dict of str to int
        Number of categories of each categorical feature.
    """

    ratings: MovieLensRatings
    user_features: dict
    item_features: dict
    cardinalities: dict


def _lines(path, sep: str = "::"):
    with open(path, encoding="latin-1") as fh:
        return [ln.rstrip("\n").split(sep) for ln in fh if ln.strip()]


def _age_group(age: int) -> int:
    """The ML-1M age group (0..6) of an age in years (ML-100K gives years)."""
    return int(np.searchsorted(_AGES, age, side="right") - 1) if age >= 1 else 0


def _decade(year: int) -> int:
    return int(np.clip(1 + (year - 1910) // 10, 1, 10))


def _load_100k(path) -> MovieLensSideFeatures:
    ratings = load_movielens("100k", path)
    folder = find_dataset_dir("movielens-100k", ("u.user", "u.item"), path)
    with parsing(folder / "u.occupation", "one occupation name per line"):
        occupations = [ln[0] for ln in _lines(folder / "u.occupation", "|")]
    n_users = ratings.user_ids.size
    feats = {name: np.zeros(n_users, np.int64) for name in _USER_FEATURES}
    with parsing(folder / "u.user", "'|'-separated id|age|gender|occupation|zip"):
        users = {int(r[0]): r for r in _lines(folder / "u.user", "|")}
        for k, uid in enumerate(ratings.user_ids.tolist()):
            r = users.get(uid)
            if r is None:
                continue
            feats["gender"][k] = 1 if r[2] == "M" else 0
            feats["age"][k] = _age_group(int(r[1]))
            feats["occupation"][k] = (
                occupations.index(r[3]) if r[3] in occupations else 0
            )
            feats["zip"][k] = int(r[4][0]) + 1 if r[4][:1].isdigit() else 0
    n_items = ratings.item_ids.size
    genres = np.zeros((n_items, len(GENRES_1M)), np.float32)
    decade = np.zeros(n_items, np.int64)
    known = np.zeros(n_items, bool)
    layout = "'|'-separated id|title|date|video date|url and 19 genre flags"
    with parsing(folder / "u.item", layout):
        movies = {int(r[0]): r for r in _lines(folder / "u.item", "|")}
        for k, mid in enumerate(ratings.item_ids.astype(np.int64).tolist()):
            r = movies.get(mid)
            if r is None:
                continue
            known[k] = True
            # 19 flags: "unknown", then the 18 genres of ML-1M in the same order.
            genres[k] = np.asarray(r[6:24], dtype=np.float32)
            if r[2][-4:].isdigit():
                decade[k] = _decade(int(r[2][-4:]))
    if not np.isfinite(genres).all():
        raise DataValidationError(
            f"{folder / 'u.item'}: the genre flags must be 0 or 1; got NaN or inf."
        )
    return MovieLensSideFeatures(
        ratings=ratings,
        user_features=feats,
        item_features=dict(genres=genres, decade=decade, known=known),
        cardinalities=dict(
            gender=2, age=7, occupation=max(len(occupations), 1), zip=11, decade=11
        ),
    )


def load_movielens_side_features(
    path: str | os.PathLike | None = None,
    *,
    dataset: str = "1m",
) -> MovieLensSideFeatures:
    """Load MovieLens ratings together with their user and movie features.

    ML-1M: ``users.dat`` and ``movies.dat``. ML-100K (``dataset="100k"``):
    ``u.user``, ``u.item`` and ``u.occupation``, mapped to the same layout
    (ages in years become ML-1M's 7 age groups; occupations are indexed in
    ``u.occupation`` order, 21 of them; the "unknown" genre flag is dropped,
    leaving ML-1M's 18 genres; the decade comes from the release date).

    With the official ``ratings.dat`` the item ids are MovieIDs. With the
    re-indexed ``ratings_user_itemidx_rating.csv`` copy, item index -> MovieID
    comes from ``item_index_to_movieid_partial.csv`` when present; movies it
    cannot map get an all-zero genre vector, ``decade`` 0 and ``known`` False.

    Parameters
    ----------
    path : path, optional
        The dataset folder or a data root containing it.
    dataset : {"1m", "100k"}

    Returns
    -------
    MovieLensSideFeatures

    Raises
    ------
    FileNotFoundError
        If ratings or the feature files are missing.
    DataValidationError
        If a file is not in its documented format (the message names it).
    InvalidParameterError
        For another ``dataset``.
    """
    if dataset == "100k":
        return _load_100k(path)
    if dataset != "1m":
        raise InvalidParameterError(
            "The 'dataset' parameter of load_movielens_side_features must be a str "
            f"among {{'1m', '100k'}}. Got {dataset!r}."
        )
    ratings = load_movielens("1m", path)
    folder = find_dataset_dir("movielens-1m", ("users.dat",), path)
    return MovieLensSideFeatures(
        ratings=ratings,
        user_features=_user_features_1m(folder, ratings.user_ids),
        item_features=_item_features_1m(folder, _movie_ids_1m(folder, ratings)),
        cardinalities=dict(gender=2, age=7, occupation=21, zip=11, decade=11),
    )


def _user_features_1m(folder, user_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Gender, age group, occupation and zip region of ML-1M's users.dat."""
    n_users = user_ids.size
    gender = np.zeros(n_users, np.int64)
    age = np.zeros(n_users, np.int64)
    occ = np.zeros(n_users, np.int64)
    zipc = np.zeros(n_users, np.int64)
    with parsing(
        folder / "users.dat", "'::'-separated id::gender::age::occupation::zip"
    ):
        users = {int(r[0]): r for r in _lines(folder / "users.dat")}
        for k, uid in enumerate(user_ids.tolist()):
            r = users.get(uid)
            if r is None:
                continue
            gender[k] = 1 if r[1] == "M" else 0
            age[k] = _AGES.index(int(r[2])) if int(r[2]) in _AGES else 0
            occ[k] = int(r[3])
            zipc[k] = int(r[4][0]) + 1 if r[4][:1].isdigit() else 0
    if occ.size and (occ.min() < 0 or occ.max() > 20):
        raise DataValidationError(
            f"{folder / 'users.dat'}: occupations must be codes 0..20; got "
            f"{int(occ.min())}..{int(occ.max())}."
        )
    return dict(gender=gender, age=age, occupation=occ, zip=zipc)


def _movie_ids_1m(folder, ratings) -> np.ndarray:
    """The MovieID of every item index (-1 where the partial map has none)."""
    if (folder / "ratings.dat").is_file():
        return ratings.item_ids.astype(np.int64)
    movie_ids = np.full(ratings.item_ids.size, -1, np.int64)
    mapping = folder / "item_index_to_movieid_partial.csv"
    if mapping.is_file():
        table = {}
        with parsing(mapping, "header, then item index,MovieID lines"):
            with open(mapping) as fh:
                next(fh)
                for ln in fh:
                    a, _, b = ln.strip().partition(",")
                    if b:
                        table[int(a)] = int(b)
        movie_ids = np.array(
            [table.get(int(i), -1) for i in ratings.item_ids], np.int64
        )
    return movie_ids


def _item_features_1m(folder, movie_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Genres, release decade and a known flag of ML-1M's movies.dat."""
    with parsing(folder / "movies.dat", "'::'-separated id::title::genres"):
        movies = {int(r[0]): r for r in _lines(folder / "movies.dat")}
    n_items = movie_ids.size
    genres = np.zeros((n_items, len(GENRES_1M)), np.float32)
    decade = np.zeros(n_items, np.int64)
    known = np.zeros(n_items, bool)
    gidx = {g: i for i, g in enumerate(GENRES_1M)}
    with parsing(folder / "movies.dat", "'::'-separated id::title::genres"):
        for k, mid in enumerate(movie_ids.tolist()):
            r = movies.get(mid)
            if r is None:
                continue
            known[k] = True
            for g in r[2].split("|"):
                if g in gidx:
                    genres[k, gidx[g]] = 1.0
            title = r[1].strip()
            if title.endswith(")") and title[-5:-1].isdigit():
                year = int(title[-5:-1])
                decade[k] = int(np.clip(1 + (year - 1910) // 10, 1, 10))
    return dict(genres=genres, decade=decade, known=known)
