"""Completion on the user's own ids: frames, string ids and ``unknown=``."""

from __future__ import annotations

import numpy as np
import pytest

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.data import make_low_rank_tensor
from tests.conftest import data_dir, random_entries, requires_dataset

_E = random_entries(m=15, n=12, rank=2, frac=0.7, seed=0)[0]
_USERS = np.array([f"user{k}" for k in range(15)])  # sorted differently
_ITEMS = np.array([f"movie-{k * 7919}" for k in range(12)])


def _fit(**params):
    model = MatrixCompletion(lam=0.5, random_state=0, **params)
    return model.fit((_USERS[_E.rows], _ITEMS[_E.cols], _E.values + 3.0))


def test_maps_are_sorted_ids_and_predictions_take_ids():
    model = _fit(center="both")
    assert model.user_ids_.tolist() == sorted(_USERS.tolist())
    assert model.shape_ == (15, 12)
    # a user's prediction is that of its code, not of its position in _USERS
    code = model.user_ids_.tolist().index("user3")
    pred = model.predict(["user3"], [_ITEMS[0]])
    item = model.item_ids_.tolist().index(_ITEMS[0])
    assert pred == pytest.approx(model.to_dense()[code, item])


@pytest.mark.parametrize("center", ["both", "row", "column", "global", "none"])
def test_fallback_is_the_mean_plus_the_known_sides_offset(center):
    model = _fit(center=center, unknown="fallback")
    cen = model.centering_
    u = model.user_ids_.tolist().index("user4")
    i = model.item_ids_.tolist().index(_ITEMS[5])
    out = model.predict(["user4", "nobody", "nobody"], ["??", _ITEMS[5], "??"])
    expected = [
        cen.mean_ + cen.offsets_[0][u],  # known user, unknown item
        cen.mean_ + cen.offsets_[1][i],  # unknown user, known item
        cen.mean_,
    ]
    np.testing.assert_allclose(out, expected)
    if center == "none":
        np.testing.assert_array_equal(out, 0.0)


def test_nan_policy_and_the_default_error_name_the_parameter():
    model = _fit()
    with pytest.raises(DataValidationError, match=r"'nobody'.*unknown='nan'"):
        model.predict(["nobody"], [_ITEMS[0]])
    model.set_params(unknown="nan")
    out = model.predict(["nobody", "user1"], [_ITEMS[0], _ITEMS[0]])
    assert np.isnan(out[0]) and np.isfinite(out[1])
    # score reads the same input as fit; an unknown id makes it NaN here
    assert np.isnan(model.score((["nobody"], [_ITEMS[0]], [3.0])))
    with pytest.raises(InvalidParameterError, match="'unknown' parameter"):
        MatrixCompletion(unknown="ignore").fit(_E)


def test_positions_beyond_the_shape_follow_the_policy():
    model = MatrixCompletion(lam=0.5, random_state=0).fit(_E)
    assert model.user_ids_ is None and model.item_ids_ is None
    with pytest.raises(DataValidationError, match="out of range"):
        model.predict([15], [0])
    model.set_params(unknown="fallback")
    cen = model.centering_
    np.testing.assert_allclose(
        model.predict([15, 2], [0, 99]),
        [cen.mean_ + cen.offsets_[1][0], cen.mean_ + cen.offsets_[0][2]],
    )
    with pytest.raises(DataValidationError, match="out of range"):
        model.predict([-1], [0])  # a negative position is no unknown id


def test_validation_entries_are_read_in_the_fits_ids():
    half = _E.nnz // 2
    train = (_USERS[_E.rows[:half]], _ITEMS[_E.cols[:half]], _E.values[:half])
    val = (_USERS[_E.rows[half:]], _ITEMS[_E.cols[half:]], _E.values[half:])
    model = MatrixCompletion(n_lambdas=3, max_iter=30, random_state=0)
    known = np.isin(val[0], train[0]) & np.isin(val[1], train[1])
    model.fit(train, validation=tuple(v[known] for v in val))
    assert np.isfinite(model.path_["scores"]).all()
    with pytest.raises(DataValidationError, match="unseen at fit"):
        MatrixCompletion(random_state=0).fit(train, validation=(["x"], ["y"], [1.0]))


def test_shape_must_match_the_mapped_ids():
    with pytest.raises(DataValidationError, match="leave shape=None"):
        MatrixCompletion().fit((_USERS[_E.rows], _E.cols, _E.values), shape=(20, 12))
    # only the integer column is positions: its size may be given
    model = MatrixCompletion(lam=0.5, random_state=0).fit(
        (_USERS[_E.rows], _E.cols, _E.values), shape=(15, 14)
    )
    assert model.item_ids_ is None and model.shape_ == (15, 14)


def test_a_frame_with_a_missing_or_extra_column_is_refused():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"u": _USERS[_E.rows], "i": _ITEMS[_E.cols], "r": _E.values})
    with pytest.raises(DataValidationError, match=r"\(user, item, value\); got 2"):
        MatrixCompletion().fit(df[["u", "i"]])
    with pytest.raises(DataValidationError, match="got 4"):
        MatrixCompletion().fit(df.assign(t=1))
    with pytest.raises(DataValidationError, match="y=None with a DataFrame"):
        MatrixCompletion().fit(df, df["r"])
    dup = pd.concat([df, df.iloc[:1]])
    with pytest.raises(DataValidationError, match=r"repeated \(user, item\)"):
        MatrixCompletion().fit(dup)  # as the positional path refuses them


def test_tensor_fallback_keeps_the_known_modes_offsets():
    prob = make_low_rank_tensor(6, n_observed=150, random_state=0).observed
    names = [np.array([f"m{d}-{k}" for k in range(6)]) for d in range(3)]
    cols = [names[d][prob.indices[:, d]] for d in range(3)]
    model = TensorCompletion(lam=0.5, max_iter=20, center="both", random_state=0)
    model.fit((cols, prob.values))
    assert [len(ids) for ids in model.mode_ids_] == list(model.shape_)
    model.set_params(unknown="fallback")
    cen = model.centering_
    out = model.predict([["m0-1", "zz", "m2-2"]])
    expected = cen.mean_ + cen.offsets_[0][1] + cen.offsets_[2][2]
    np.testing.assert_allclose(out, [expected])


@requires_dataset("movielens-latest-small")
@pytest.mark.slow
def test_movielens_ids_fit_as_they_are_in_the_csv():
    """A new user's first fit: the raw userId / movieId columns of ratings.csv
    (movieIds up to 193,609, 9,724 used) give a 610 x 9,724 model, not
    611 x 193,610, and predict takes the raw ids."""
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(data_dir() / "movielens-latest-small" / "ratings.csv")
    model = MatrixCompletion(random_state=0).fit(df[["userId", "movieId", "rating"]])
    assert model.shape_ == (610, 9724)
    assert model.item_ids_.max() == 193609
    pred = model.predict(df["userId"][:100], df["movieId"][:100])
    assert np.isfinite(pred).all()
    assert model.score(df[["userId", "movieId", "rating"]]) > -1.0


def test_string_ids_without_pandas_give_the_same_model(monkeypatch):
    import embedopt.data.ids as ids_module

    with_pandas = _fit(center="both")
    monkeypatch.setattr(ids_module, "_pandas", lambda: None)  # NumPy alone
    without = _fit(center="both")
    np.testing.assert_array_equal(with_pandas.user_ids_, without.user_ids_)
    np.testing.assert_array_equal(with_pandas.U_, without.U_)
    queries = (["user3", "user11"], [_ITEMS[1], _ITEMS[4]])
    np.testing.assert_array_equal(
        without.predict(*queries), with_pandas.predict(*queries)
    )


def test_a_repeated_pair_is_named_in_the_users_ids_with_a_fix_for_their_data():
    users = np.array(["alice", "bob", "carol", "carol"])
    items = np.array(["x", "y", "z", "z"])
    with pytest.raises(DataValidationError) as exc:
        MatrixCompletion(lam=1.0).fit((users, items, np.array([4.0, 3, 5, 4])))
    message = str(exc.value)
    # the user's ids, not the codes (2, 2); a fix for what they passed
    assert "(user 'carol', item 'z')" in message and "groupby" in message
    assert "(2, 2)" not in message and "ObservedEntries" not in message
    pd = pytest.importorskip("pandas")
    columns = {"a": ["p", "q", "q"], "b": ["x", "y", "y"], "c": ["m", "n", "n"]}
    frame = pd.DataFrame({**columns, "r": [1.0, 2, 3]})
    with pytest.raises(DataValidationError, match="mode-0 'q', mode-1 'y'"):
        TensorCompletion(lam=1.0).fit(frame)
