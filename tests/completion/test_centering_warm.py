"""A warm-started ``Centering.fit`` (``init``), as ``partial_fit(refit="all")``
uses it: three sweeps from the old offsets land nearer the offsets' fixed point
than the cold fit's ten sweeps from zero."""

from __future__ import annotations

import numpy as np

from embedopt.completion import MatrixCompletion
from embedopt.completion.centering import WARM_SWEEPS, Centering
from embedopt.data import ObservedEntries


def _skewed(m=300, n=120, nnz=6000, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.zipf(1.6, nnz * 3) % m  # power-law degrees: slow sweeps
    cols = rng.zipf(1.4, nnz * 3) % n
    pairs = np.unique(np.stack([rows, cols], 1), axis=0)[:nnz]
    a, b = rng.normal(size=m), rng.normal(size=n)
    vals = 3 + a[pairs[:, 0]] + b[pairs[:, 1]] + rng.normal(0, 0.5, len(pairs))
    return ObservedEntries(pairs, vals, (m, n))


def _gap(c: Centering, ref: Centering) -> float:
    return max(np.abs(c.offsets_[d] - ref.offsets_[d]).max() for d in range(2)) + abs(
        c.mean_ - ref.mean_
    )


def test_warm_sweeps_start_from_the_old_offsets_and_end_nearer_the_fixed_point():
    full = _skewed()
    rng = np.random.default_rng(1)
    old = full.subset(np.flatnonzero(rng.random(len(full.values)) < 0.99))
    previous = Centering("both").fit(old)
    fixed = Centering("both", n_sweeps=500).fit(full)  # the fixed point
    cold = Centering("both").fit(full)
    warm = Centering("both").fit(full, init=previous)
    assert WARM_SWEEPS < cold.n_sweeps
    assert _gap(warm, fixed) <= _gap(cold, fixed)
    assert _gap(warm, fixed) < 1e-2
    # init=None is the cold fit, bit for bit
    again = Centering("both").fit(full, init=None)
    for d in range(2):
        np.testing.assert_array_equal(again.offsets_[d], cold.offsets_[d])


def test_warm_start_pads_the_offsets_of_new_indices():
    full = _skewed()
    small = ObservedEntries(
        full.indices[full.indices[:, 0] < 250],
        full.values[full.indices[:, 0] < 250],
        (250, full.shape[1]),
    )
    previous = Centering("both").fit(small)
    warm = Centering("both").fit(full, init=previous)
    fixed = Centering("both", n_sweeps=500).fit(full)
    assert warm.offsets_[0].shape == (full.shape[0],)
    assert _gap(warm, fixed) < 5e-2


def test_refit_all_warm_starts_the_centering_near_a_cold_refit():
    full = _skewed(m=80, n=60, nnz=2000)
    rng = np.random.default_rng(2)
    added = rng.random(len(full.values)) < 0.02
    model = MatrixCompletion(
        lam=2.0, center="both", max_iter=30, dtype="float64", random_state=0
    ).fit(full.subset(np.flatnonzero(~added)))
    model.partial_fit(full.subset(np.flatnonzero(added)), refit="all")
    cold = Centering("both", reg=model.center_reg).fit(model.entries_)
    assert _gap(model.centering_, cold) < 1e-2
