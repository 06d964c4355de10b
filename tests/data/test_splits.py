"""Per-user random splits of interactions."""

from __future__ import annotations

import numpy as np


def test_split_by_user_keeps_every_user_in_training_and_partitions():
    from embedopt.data import split_by_user

    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(5), [1, 2, 5, 10, 20])
    items = np.concatenate([rng.permutation(30)[:c] for c in [1, 2, 5, 10, 20]])
    train, test = split_by_user((users, items), (0.8, 0.2), random_state=0)
    assert train.shape == test.shape == (5, 30)
    assert len(train) + len(test) == users.size
    pairs = {*zip(train.users, train.items, strict=True)}
    pairs |= {*zip(test.users, test.items, strict=True)}
    assert len(pairs) == users.size  # disjoint and complete
    assert np.array_equal(np.bincount(train.users, minlength=5), [1, 2, 4, 8, 16])
    assert np.array_equal(np.bincount(test.users, minlength=5), [0, 0, 1, 2, 4])
    again = split_by_user((users, items), (0.8, 0.2), random_state=0)
    assert np.array_equal(again[1].items, test.items)
