"""Property suite of the data-frame input path (issue 22): bad frames end in
the library's own error, never in pandas', NumPy's or a silent fit.

For every estimator that takes ids, hypothesis corrupts a valid frame of
string ids (a column missing or too many, NaN / None / fractional / boolean
ids, a column mixing integers and strings, duplicate rows, no rows, NaN
values) and checks each ``fit`` with :func:`tests.property._harness.call`;
then it asks a model fitted on the frame about ids it never saw, under each
``unknown`` policy.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ._harness import call, examples  # noqa: E402
from ._strategies import borderline, refuse  # noqa: E402
from .test_estimators import (  # noqa: E402
    _MC_COLS,
    _MC_ROWS,
    _MC_VALS,
    _OE_TRIPLETS,
    _TC,
    _TT,
    MATRIX_COMPLETION,
    ORDINAL,
    TENSOR_COMPLETION,
    TWO_TOWER_MODEL,
    TWO_TOWER_RETRIEVAL,
)


def _names(prefix, codes):
    return np.array([f"{prefix}{c}" for c in np.asarray(codes)], dtype=object)


#: subject -> (a valid frame of string ids, how many id columns, whether
#: duplicate rows are refused as by the positional path, query of fitted ids)
FRAMES = {
    "MatrixCompletion": (
        MATRIX_COMPLETION,
        pd.DataFrame(
            {"u": _names("u", _MC_ROWS), "i": _names("i", _MC_COLS), "r": _MC_VALS}
        ),
        2,
        True,
    ),
    "TensorCompletion": (
        TENSOR_COMPLETION,
        pd.DataFrame(
            {
                **{f"m{d}": _names(f"m{d}-", _TC.indices[:, d]) for d in range(3)},
                "v": _TC.values,
            }
        ),
        3,
        True,
    ),
    "OrdinalEmbedding": (
        ORDINAL,
        pd.DataFrame({c: _names("o", _OE_TRIPLETS[:, j]) for j, c in enumerate("hab")}),
        3,
        False,
    ),
    "TwoTowerModel": (
        TWO_TOWER_MODEL,
        pd.DataFrame({"u": _names("u", _TT[0]), "i": _names("i", _TT[1])}),
        2,
        False,
    ),
    "TwoTowerRetrieval": (
        TWO_TOWER_RETRIEVAL,
        pd.DataFrame({"u": _names("u", _TT[0]), "i": _names("i", _TT[1])}),
        2,
        False,
    ),
}


@st.composite
def bad_frames(draw, name):
    """A corrupted copy of the subject's valid frame, with its verdict."""
    _, frame, n_ids, refuses_duplicates = FRAMES[name]
    df = frame.copy()
    col = draw(st.integers(0, n_ids - 1))
    row = draw(st.integers(0, len(df) - 1))
    kind = draw(
        st.sampled_from(
            [
                "missing column",
                "extra column",
                "nan id",
                "none id",
                "mixed ids",
                "fractional ids",
                "bool ids",
                "duplicate row",
                "no rows",
                "nan value",
                "sparse int ids",
            ]
        )
    )
    if kind == "missing column":
        return refuse(df.iloc[:, :-1], kind)
    if kind == "extra column":
        # one more column of strings: ordinal reads 4 columns as quadruplets
        extra = df.assign(extra=_names("o", np.arange(len(df)) % 5))
        return (borderline if name == "OrdinalEmbedding" else refuse)(extra, kind)
    if kind == "no rows":
        return refuse(df.iloc[:0], kind)
    if kind == "duplicate row":
        dup = pd.concat([df, df.iloc[row : row + 1]], ignore_index=True)
        return (refuse if refuses_duplicates else borderline)(dup, kind)
    if kind == "nan value":
        if n_ids == df.shape[1]:  # no value column
            return borderline(df, "valid")
        values = df.iloc[:, -1].to_numpy().copy()
        values[row] = np.nan
        df.iloc[:, -1] = values
        return refuse(df, kind)
    if kind == "sparse int ids":  # integers far apart: mapped, not positions
        codes = df.iloc[:, col].str.extract(r"(\d+)$")[0].astype(np.int64)
        df[df.columns[col]] = codes.to_numpy() * 100_003 + 7
        return borderline(df, kind)
    column = df.iloc[:, col].to_numpy().astype(object)
    if kind == "nan id":
        column = np.arange(len(df), dtype=np.float64)
        column[row] = np.nan
    elif kind == "none id":
        column[row] = None
    elif kind == "mixed ids":
        column[row] = 12
    elif kind == "fractional ids":
        column = np.arange(len(df), dtype=np.float64) + 0.5
    else:  # bool ids
        column = np.arange(len(df)) % 2 == 0
    df[df.columns[col]] = column
    return refuse(df, kind)


NAMES = list(FRAMES)


@pytest.mark.parametrize("name", NAMES)
@examples(1)
@given(data=st.data())
def test_fit_on_bad_frames(name, data):
    subject = FRAMES[name][0]
    bad = data.draw(bad_frames(name), label="frame")
    est = subject.make()
    out = call(
        f"{name}.fit",
        "frame",
        lambda: est.fit(bad.value),
        must_refuse=bad.must_refuse,
        label=bad.label,
    )
    if not out.refused:
        assert out.value is est


@functools.cache
def _fitted_on_frame(name):
    """The subject fitted once on its valid frame."""
    subject, frame = FRAMES[name][:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return subject.make().fit(frame)


def _query(name, est, ids):
    """Ask the fitted model about ``ids`` in its first id column (the other
    columns: a known id)."""
    ids = np.asarray(ids, dtype=object)
    if name == "MatrixCompletion":
        return est.predict(ids, np.repeat(est.item_ids_[:1], ids.size))
    if name == "TensorCompletion":
        rest = [np.repeat(m[:1], ids.size) for m in est.mode_ids_[1:]]
        return est.predict((ids, *rest))
    if name == "OrdinalEmbedding":
        return est.transform(ids)
    return est.recommend(ids, 2)[1]


@pytest.mark.parametrize("name", NAMES)
@examples(0.5)
@given(
    data=st.data(),
    policy=st.sampled_from(["raise", "nan", "fallback"]),
    ids=st.lists(
        st.one_of(st.text(max_size=4), st.integers(-5, 5)), min_size=1, max_size=3
    ),
)
def test_unknown_ids_after_a_frame_fit(name, data, policy, ids):
    est = _fitted_on_frame(name).set_params(unknown=policy)  # not a fit setting
    ids = [f"?{x}" for x in ids]  # never an id of the frame
    out = call(
        f"{name}.predict",
        "unknown ids",
        lambda: _query(name, est, ids),
        must_refuse=policy == "raise",
        label=f"unknown ids, unknown={policy!r}",
    )
    if not out.refused:
        assert len(np.asarray(out.value)) == len(ids)
