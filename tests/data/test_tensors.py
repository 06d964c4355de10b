"""The real-tensor builders: shapes, the time modes, the image stacks."""

import datetime

import numpy as np
import pytest

from embedopt._core import DataValidationError, InvalidParameterError
from embedopt.data import load_image_tensor, load_movielens, load_movielens_tensor
from tests.conftest import data_dir, requires_dataset


@requires_dataset("movielens-100k")
def test_movielens_tensor_modes_follow_the_timestamps():
    ml = load_movielens("100k")
    t3 = load_movielens_tensor("100k")
    t4 = load_movielens_tensor("100k", ("weekday", "hour"), hour_buckets=6)
    assert t3.shape == (*ml.entries.shape, 7) and t4.shape == (*ml.entries.shape, 7, 6)
    assert t3.nnz == t4.nnz == ml.entries.nnz
    np.testing.assert_array_equal(t4.values, ml.entries.values)
    np.testing.assert_array_equal(t4.indices[:, :2], ml.entries.indices)
    for k in (0, 17, 999):  # the naive computation through datetime (UTC)
        when = datetime.datetime.fromtimestamp(
            int(ml.timestamps[k]), tz=datetime.timezone.utc
        )
        assert t4.indices[k, 2] == when.weekday()
        assert t4.indices[k, 3] == when.hour // 4


@requires_dataset("movielens-100k")
def test_movielens_tensor_rejects_bad_arguments():
    with pytest.raises(InvalidParameterError, match="contexts"):
        load_movielens_tensor("100k", ("month",))
    with pytest.raises(InvalidParameterError, match="divisor of 24"):
        load_movielens_tensor("100k", ("hour",), hour_buckets=5)


@requires_dataset("movielens-1m")
def test_movielens_tensor_needs_timestamps():
    if (data_dir() / "movielens-1m" / "ratings.dat").is_file():
        pytest.skip("the official ratings.dat has timestamps")
    with pytest.raises(DataValidationError, match="no timestamps"):
        load_movielens_tensor("1m")


@requires_dataset("test-images")
def test_image_tensor_and_stacks():
    img = load_image_tensor("astronaut", downsample=8)
    assert img.shape == (64, 64, 3) and img.nnz == 64 * 64 * 3
    assert 0.0 <= img.values.min() and img.values.max() <= 1.0
    blur = load_image_tensor("astronaut", downsample=8, stack="blur", n_frames=3)
    assert blur.shape == (64, 64, 3, 3)
    dense = blur.values.reshape(blur.shape)
    np.testing.assert_allclose(dense[..., 0].ravel(), img.values)  # frame 0: sharp
    assert dense[..., 2].std() < dense[..., 0].std()  # blurred frames: smoother
    pan = load_image_tensor("astronaut", downsample=8, stack="pan", n_frames=4)
    assert pan.shape == (64, 61, 3, 4)
    p = pan.values.reshape(pan.shape)
    np.testing.assert_array_equal(p[:, 1:, :, 0], p[:, :-1, :, 1])  # shifted by 1


@requires_dataset("test-images")
def test_image_tensor_rejects_bad_arguments():
    with pytest.raises(InvalidParameterError, match="stack"):
        load_image_tensor(stack="zoom")
    with pytest.raises(InvalidParameterError, match="n_frames"):
        load_image_tensor(stack="blur", n_frames=1)
    with pytest.raises(DataValidationError, match="grayscale"):
        load_image_tensor("camera")
