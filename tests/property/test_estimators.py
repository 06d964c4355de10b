"""Property-based bad-input suite over every estimator (issue 14).

For every estimator, hypothesis generates

* bad data for ``fit`` (corrupted indices, values, features, labels, pairs,
  side features and keyword arguments, or no data at all),
* any value for each parameter declared in ``_parameter_constraints``
  (out of range, of the wrong type, misspelled names, and borderline valid
  values at the edges of the documented ranges),
* bad arguments for every method used after ``fit`` (``predict``,
  ``transform``, ``score``, ``recommend``, ``search``, ``kernel``...), on a
  tiny fitted model, and for the same methods before ``fit``,
* bad model files for ``load`` (truncated, flipped bytes, a newer format
  version, another estimator's file, tampered arrays, forged JSON, no file),

and checks that each call ends acceptably as defined in
:mod:`tests.property._harness`: the library's own exception (an
``EmbedoptError``) or a valid result with at most documented warnings, never
an internal error, a hang or a silent result for input that is wrong beyond
doubt. The default profile runs a few seeded examples per test; run
``pytest tests/property --hypothesis-profile=embedopt-thorough`` for 50x
more (the conftest prints the number of cases run per estimator and method).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse as sp
import torch

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from embedopt import InvalidParameterError  # noqa: E402
from embedopt.completion import MatrixCompletion, TensorCompletion  # noqa: E402
from embedopt.data import (  # noqa: E402
    Comparisons,
    make_low_rank_tensor,
    make_planted_embedding,
)
from embedopt.ordinal import OrdinalEmbedding  # noqa: E402
from embedopt.quantization import ProductQuantizer, TwoTowerRetrieval  # noqa: E402
from embedopt.sdp import ColoredMVU, KernelLearning  # noqa: E402
from embedopt.similarity import TwoTowerModel  # noqa: E402
from tests._persistence import assert_same_estimator  # noqa: E402

from ._harness import call, check_finite, examples  # noqa: E402
from ._strategies import (  # noqa: E402
    Bad,
    bad_counts,
    bad_indices,
    bad_matrices,
    bad_model_files,
    bad_values,
    borderline,
    junk,
    parameter_values,
    refuse,
)


@dataclass(frozen=True)
class Case:
    """Arguments of one call, and the :class:`Bad` piece they contain."""

    args: tuple
    kwargs: dict
    bad: Bad

    def __repr__(self) -> str:
        keys = f", kwargs {sorted(self.kwargs)}" if self.kwargs else ""
        return f"Case({self.bad!r}{keys})"

    def _repr_pretty_(self, printer, cycle):  # hypothesis' printer
        printer.text(repr(self))


def case(args=(), kwargs=None, bad=None) -> Case:
    return Case(tuple(args), dict(kwargs or {}), bad)


def relabel(bad: Bad, default: bool | None = None, **by_label) -> Bad:
    """``bad`` with its verdict set per label (``by_label``) or for every
    other label (``default``); None keeps the verdict of the strategy."""
    verdict = by_label.get(bad.label, default)
    return bad if verdict is None else Bad(bad.value, verdict, bad.label)


@dataclass
class Method:
    """A method used after fit: a strategy of cases given the fitted model,
    and a check of an accepted result."""

    cases: Callable
    check: Callable


@dataclass(eq=False)  # hashable: fitted() caches one model per subject
class Subject:
    """One estimator: how to build it small, what to fit it on, its methods."""

    name: str
    cls: type
    base: dict
    fit_cases: Callable
    fit_args: Callable
    check_fitted: Callable
    budget: frozenset = frozenset()
    extra_values: dict = field(default_factory=dict)
    methods: dict = field(default_factory=dict)

    def make(self, **params):
        return self.cls(**{**self.base, **params})

    def __repr__(self) -> str:
        return self.name

    def _repr_pretty_(self, printer, cycle):  # hypothesis' printer
        printer.text(self.name)


# -- shared pieces -------------------------------------------------------------


def _indices_in_tuple(arrays, slot, size, fixed=False, ids=False):
    """Cases corrupting index array ``slot`` of the tuple ``arrays``.

    ``ids``: the tuple is ``fit``'s data, where a column of strings is a
    column of the user's ids, mapped to codes (issue 22), not refused.
    """

    def build(bad):
        bad = relabel(
            bad,
            shorter=True,
            just_above=True if fixed else None,
            str=False if ids else None,
        )
        parts = list(arrays)
        parts[slot] = bad.value
        return bad, tuple(parts)

    return bad_indices(arrays[slot], size).map(build)


def query(bad: Bad) -> Bad:
    """For a method's query: empty input gives an empty result, not an error;
    a 2-D index array is flattened (numpy semantics)."""
    return relabel(
        bad, empty=False, no_rows=False, column=False, nested=False, scalar=False
    )


def paired(bad: Bad) -> Bad:
    """For values given beside index arrays: a shorter array is a mismatch."""
    return relabel(bad, shorter=True)


def _finite_attrs(est, *names):
    for name in names:
        check_finite(getattr(est, name), name)


def _ids_check(upper):
    def check(est, c, out):
        a = np.asarray(out)
        assert a.dtype.kind in "iu", a.dtype
        assert a.ndim == 2
        assert ((a >= -1) & (a < upper(est))).all(), a

    return check


# -- matrix and tensor completion ----------------------------------------------

_rng = np.random.default_rng(0)
_MC_SHAPE = (12, 10)
_mask = _rng.random(_MC_SHAPE) < 0.6
_MC_ROWS, _MC_COLS = (a.astype(np.int64) for a in np.nonzero(_mask))
_MC_VALS = (_rng.standard_normal((12, 2)) @ _rng.standard_normal((2, 10)))[_mask]


def _sample_weights(n: int):
    """Bad and borderline ``sample_weight`` of ``n`` entries (completion)."""
    w = np.linspace(0.5, 2.0, n)
    return st.sampled_from(
        [
            refuse(w[:-1], "sample_weight short"),
            refuse(np.r_[w, 1.0], "sample_weight long"),
            refuse(w[:, None], "sample_weight 2-D"),
            refuse(np.zeros(n), "sample_weight zeros"),
            refuse(np.r_[-1.0, w[1:]], "sample_weight negative"),
            refuse(np.r_[np.nan, w[1:]], "sample_weight nan"),
            refuse(np.r_[np.inf, w[1:]], "sample_weight inf"),
            refuse(w.astype(str), "sample_weight str"),
            refuse(w > 1, "sample_weight bool"),
            refuse(w * 1e-300, "sample_weight underflow32"),
            refuse(np.r_[1e39, w[1:]], "sample_weight overflow32"),
            borderline(w * 1e30, "sample_weight huge"),
            borderline(w * 1e-30, "sample_weight tiny"),
            borderline(np.r_[0.0, w[1:]], "sample_weight one zero"),
            borderline(np.arange(n) % 3, "sample_weight ints with zeros"),
            borderline(list(w), "sample_weight list"),
            borderline(torch.as_tensor(w), "sample_weight tensor"),
        ]
    )


def _mc_fit_cases():
    rows, cols, vals = _MC_ROWS, _MC_COLS, _MC_VALS
    coo = (rows, cols, vals)
    dense = np.full(_MC_SHAPE, np.nan)
    dense[rows, cols] = vals
    positions = np.stack([rows, cols], 1)

    def on_tuple(slot):
        return _indices_in_tuple(coo, slot, _MC_SHAPE[slot], ids=True).map(
            lambda bt: case([bt[1]], bad=bt[0])
        )

    def shape_case(bad):
        return case([coo], {"shape": bad.value}, bad)

    shapes = st.sampled_from(
        [
            refuse((11, 10), "shape too small"),
            refuse((12,), "shape 1-D"),
            refuse((12, 10, 1), "shape 3-D"),
            refuse((-12, 10), "shape negative"),
            refuse((12.5, 10), "shape float"),
            refuse((2**40, 2**40), "shape huge"),
            refuse("12x10", "shape str"),
            refuse((np.nan, 10), "shape nan"),
            borderline((12.0, 10.0), "shape integral floats"),
            borderline((np.int64(12), np.uint8(10)), "shape numpy ints"),
            borderline((40, 30), "shape larger"),
            borderline([12, 10], "shape list"),
        ]
    )
    return st.one_of(
        on_tuple(0),
        on_tuple(1),
        bad_values(vals).map(lambda b: case([(rows, cols, b.value)], bad=paired(b))),
        bad_matrices(dense).map(
            lambda b: case([b.value], bad=relabel(b, nan=False, sparse=False))
        ),
        bad_values(vals).map(lambda b: case([positions, b.value], bad=paired(b))),
        bad_matrices(positions.astype(float)).map(
            lambda b: case(
                [b.value, vals],
                # positions of strings are the user's ids (mapped, issue 22)
                bad=relabel(b, True, **_VALID_POSITIONS, str=False),
            )
        ),
        junk().map(lambda b: case([b.value], bad=b)),
        shapes.map(shape_case),
        _sample_weights(vals.size).map(
            lambda b: case([coo], {"sample_weight": b.value}, b)
        ),
        st.sampled_from(
            [
                refuse((rows, cols), "tuple of 2 for a matrix"),
                refuse((rows, cols, vals, vals), "tuple of 4"),
                refuse(sp.csr_matrix((12, 10)), "empty sparse"),
                refuse((rows, cols, np.full(vals.size, np.nan)), "all NaN"),
                refuse(np.full(_MC_SHAPE, np.nan), "dense all NaN"),
                refuse(
                    (
                        np.r_[rows, rows[:1]],
                        np.r_[cols, cols[:1]],
                        np.r_[vals, vals[:1]],
                    ),
                    "duplicate position",
                ),
                borderline(sp.coo_matrix((vals, (rows, cols)), shape=_MC_SHAPE), "coo"),
                borderline((rows[:1], cols[:1], vals[:1]), "one entry"),
                borderline((rows[:2], cols[:2], vals[:2]), "two entries"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
        junk("validation", optional=True).map(
            lambda b: case([coo], {"validation": b.value}, b)
        ),
        _indices_in_tuple(coo, 0, _MC_SHAPE[0]).map(
            lambda bt: case([coo], {"validation": bt[1]}, bt[0])
        ),
    )


def _completion_check(est):
    factors = est.factors_ if isinstance(est.factors_, list) else [est.factors_]
    for U, s, V in factors:
        for name, t in (("U", U), ("s", s), ("V", V)):
            check_finite(t.detach().cpu().numpy(), f"factor {name}")
    # the first id (code 0) of each mode: the user's id where fit mapped them
    ids = est.mode_ids_ if hasattr(est, "mode_ids_") else [est.user_ids_, est.item_ids_]
    ids = ids or [None] * len(est.shape_)
    first = [np.zeros(1, np.int64) if a is None else a[:1] for a in ids]
    check_finite(est.predict(tuple(first)), "predict", (1,))


#: Labels of corrupted float position matrices that are still valid positions.
_VALID_POSITIONS = dict(
    zeros=False,
    int=False,
    float16=False,
    tensor=False,
    fortran=False,
    tensor32=False,
    list=False,
    noncontiguous=False,
    one_row=False,
    duplicate_rows=False,
    shorter=False,
    constant=None,
)


def _positions_cases(est, ndim):
    """Cases for predict / decision_function of a fitted completion model."""
    shape = est.shape_
    rng = np.random.default_rng(1)
    idx = np.stack([rng.integers(0, s, 7) for s in shape], 1)
    arrays = tuple(idx.T)
    strategies = [
        _indices_in_tuple(arrays, d, shape[d], fixed=True).map(
            lambda bt: case([bt[1]], bad=bt[0])
        )
        for d in range(ndim)
    ]
    strategies.append(
        bad_matrices(idx.astype(float)).map(
            lambda b: case(
                [b.value],
                bad=relabel(b, True, **_VALID_POSITIONS),
            )
        )
    )
    strategies.append(junk().map(lambda b: case([b.value], bad=b)))
    if ndim == 2:
        strategies.append(
            bad_indices(idx[:, 1], shape[1]).map(
                lambda b: case([idx[:, 0], b.value], bad=relabel(b, just_above=True))
            )
        )
    return st.one_of(strategies)


def _positions_check(est, c, out):
    a = check_finite(out, "predictions")
    assert a.ndim == 1


def _score_cases(est, ndim):
    shape = est.shape_
    rng = np.random.default_rng(2)
    idx = np.stack([rng.integers(0, s, 5) for s in shape], 1)
    idx = np.unique(idx, axis=0)
    vals = rng.standard_normal(idx.shape[0])
    if ndim == 2:
        entries = (idx[:, 0], idx[:, 1], vals)
        index_cases = [
            _indices_in_tuple(entries, d, shape[d], fixed=True).map(
                lambda bt: case([bt[1]], bad=bt[0])
            )
            for d in range(2)
        ]
        values = bad_values(vals).map(
            lambda b: case([(idx[:, 0], idx[:, 1], b.value)], bad=paired(b))
        )
    else:
        index_cases = []
        values = bad_values(vals).map(lambda b: case([(idx, b.value)], bad=paired(b)))
    return st.one_of(
        *index_cases,
        values,
        bad_values(vals).map(lambda b: case([idx, b.value], bad=paired(b))),
        junk().map(lambda b: case([b.value], bad=b)),
    )


def _scalar_check(est, c, out):
    assert isinstance(out, float) and np.isfinite(out), out


def _to_dense_cases(est):
    return bad_counts("max_elements", minimum=0).map(lambda b: case([b.value], bad=b))


def _to_dense_check(est, c, out):
    check_finite(out, "to_dense", est.shape_)


def _completion_methods(ndim):
    return {
        "predict": Method(lambda est: _positions_cases(est, ndim), _positions_check),
        "decision_function": Method(
            lambda est: _positions_cases(est, ndim), _positions_check
        ),
        "score": Method(lambda est: _score_cases(est, ndim), _scalar_check),
        "to_dense": Method(_to_dense_cases, _to_dense_check),
    }


_COMPLETION_BUDGET = frozenset(
    {"max_iter", "n_lambdas", "power_iters", "patience", "max_rank"}
)

MATRIX_COMPLETION = Subject(
    name="MatrixCompletion",
    cls=MatrixCompletion,
    base=dict(lam=1.0, max_iter=15, n_lambdas=2, random_state=0, device="cpu"),
    fit_cases=_mc_fit_cases,
    fit_args=lambda: ((_MC_ROWS, _MC_COLS, _MC_VALS),),
    check_fitted=_completion_check,
    budget=_COMPLETION_BUDGET,
    methods=_completion_methods(2),  # and the retrieval surface, added below
)

#: Values of ``regularizer_params`` to try beside the generic ones: valid
#: dicts, keys the regularizer does not take, values out of range.
_REG_PARAMS = [
    {"gamma": 4.0},
    {"theta": 0.5},
    {"rank": 2},
    {"gamma": -1.0},
    {"gamma": np.nan},
    {"theta": 1.0, "gamma": 1.0},
    {"unknown": 1},
    {},
]

#: One nonconvex configuration of the same estimator (issue 24, part 3): the
#: reweighted solves, the path with its own grid, the regularizer's scale.
MATRIX_COMPLETION_MCP = Subject(
    name="MatrixCompletion(regularizer='mcp')",
    cls=MatrixCompletion,
    base={**MATRIX_COMPLETION.base, "regularizer": "mcp"},
    fit_cases=_mc_fit_cases,
    fit_args=lambda: ((_MC_ROWS, _MC_COLS, _MC_VALS),),
    check_fitted=_completion_check,
    budget=_COMPLETION_BUDGET,
    extra_values={"regularizer_params": _REG_PARAMS},
    methods=_completion_methods(2),
)
MATRIX_COMPLETION.extra_values["regularizer_params"] = _REG_PARAMS

_TC = make_low_rank_tensor(5, n_observed=60, random_state=0).observed


def _tc_fit_cases():
    idx, vals = _TC.indices, _TC.values
    columns = tuple(idx.T)

    def corrupt_column(d):
        return _indices_in_tuple(columns, d, _TC.shape[d], ids=True).map(
            lambda bt: case([(bt[1], vals)], bad=bt[0])
        )

    weights = st.sampled_from(
        [
            refuse([1.0, 1.0], "mode_weights short"),
            refuse([1.0, 1.0, 1.0, 1.0], "mode_weights long"),
            refuse([0.0, 0.0, 0.0], "mode_weights zeros"),
            refuse([-1.0, 1.0, 1.0], "mode_weights negative"),
            refuse(["a", "b", "c"], "mode_weights str"),
            refuse([np.nan, 1.0, 1.0], "mode_weights nan"),
            refuse([np.inf, 1.0, 1.0], "mode_weights inf"),
            borderline([[1.0], [1.0], [1.0]], "mode_weights nested"),
            borderline([1e-300, 1.0, 1.0], "mode_weights tiny"),
            borderline([0.0, 1.0, 1.0], "mode_weights one zero"),
            borderline((1, 2, 3), "mode_weights int tuple"),
            borderline(np.array([1.0, 1.0, 1e8]), "mode_weights large"),
        ]
    )
    return st.one_of(
        corrupt_column(0),
        corrupt_column(2),
        bad_values(vals).map(lambda b: case([(idx, b.value)], bad=paired(b))),
        bad_values(vals).map(lambda b: case([idx, b.value], bad=paired(b))),
        junk().map(lambda b: case([b.value], bad=b)),
        weights.map(lambda b: case([_TC], bad=b)),
        _sample_weights(_TC.nnz).map(
            lambda b: case([_TC], {"sample_weight": b.value}, b)
        ),
        st.sampled_from(
            [
                refuse((idx[:, :2], vals), "matrix positions"),
                refuse((idx[:, 0], idx[:, 1], vals), "matrix coo"),
                borderline(np.zeros((2, 2, 2)), "dense tensor"),
                refuse(np.full((2, 2, 2), np.nan), "dense tensor all NaN"),
                borderline((np.c_[idx, np.zeros(len(idx), int)], vals), "4-way"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _tc_fit(est, c):
    """mode_weights cases set the parameter instead of the data."""
    if c.bad.label.startswith("mode_weights"):
        est.set_params(mode_weights=c.bad.value)
    return est.fit(*c.args, **c.kwargs)


TENSOR_COMPLETION = Subject(
    name="TensorCompletion",
    cls=TensorCompletion,
    base=dict(lam=1.0, max_iter=8, n_lambdas=2, random_state=0, device="cpu"),
    fit_cases=_tc_fit_cases,
    fit_args=lambda: (_TC,),
    check_fitted=_completion_check,
    budget=_COMPLETION_BUDGET,
    extra_values={
        "mode_weights": [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0], (2, 2, 2)],
        "regularizer_params": _REG_PARAMS,
    },
    methods=_completion_methods(3),
)

# -- ordinal embedding -----------------------------------------------------------

_OE = make_planted_embedding(12, 2, n_train=150, n_test=20, random_state=0)
_OE_TRIPLETS = _OE.train.indices


def _oe_fit_cases():
    T = _OE_TRIPLETS
    n = 12

    def column(d):
        def build(b):
            v = b.value
            if isinstance(v, np.ndarray) and v.shape == T[:, d].shape:
                out = T.astype(np.result_type(T.dtype, v.dtype)).copy()
                out[:, d] = v
                # (bool and small ints become the array's int64; strings make
                # every column strings: the user's ids, mapped since issue 22)
                return case(
                    [out], bad=relabel(b, just_above=False, bool=False, str=False)
                )
            return case([[T[:, 0], T[:, 1], v]], bad=relabel(b, True))

        return bad_indices(T[:, d], n).map(build)

    responses = bad_values(np.ones(len(T))).map(
        lambda b: case(
            [T, b.value],
            bad=relabel(
                b,
                True,
                float16=False,
                int=False,
                tensor=False,
                fortran=False,
                complex_real=False,
                constant=None,
                extra_dim=False,
            ),
        )
    )
    kwargs = st.sampled_from(
        [
            refuse({"n_objects": 5}, "n_objects too small"),
            refuse({"n_objects": 0}, "n_objects 0"),
            refuse({"n_objects": -3}, "n_objects negative"),
            refuse({"n_objects": 2.5}, "n_objects float"),
            refuse({"n_objects": "12"}, "n_objects str"),
            refuse({"n_objects": 2**40}, "n_objects huge"),
            borderline({"n_objects": 13}, "n_objects larger"),
            borderline({"n_objects": np.int64(12)}, "n_objects numpy"),
            refuse({"init": np.zeros((12, 2))}, "init zeros"),
            refuse({"init": np.ones((12, 3))}, "init wrong width"),
            refuse({"init": np.ones((5, 2))}, "init wrong height"),
            refuse({"init": np.full((12, 2), np.nan)}, "init nan"),
            refuse({"init": "pca"}, "init str"),
            borderline({"init": np.arange(24.0).reshape(12, 2) * 1e200}, "init huge"),
            borderline({"init": np.eye(12, 2)}, "init eye"),
            refuse({"validation": "text"}, "validation str"),
            refuse({"validation": [[0, 1, 99]]}, "validation out of range"),
            refuse({"validation": np.zeros((0, 3), int)}, "validation empty"),
            borderline({"validation": T[:5]}, "validation subset"),
        ]
    )
    return st.one_of(
        column(0),
        column(2),
        responses,
        bad_matrices(T.astype(float)).map(
            lambda b: case(
                [b.value],
                bad=relabel(
                    b,
                    True,
                    tensor32=False,
                    list=False,
                    noncontiguous=False,
                    duplicate_rows=False,
                    one_row=False,
                    int=False,
                    float16=False,
                    fortran=False,
                    tensor=False,
                    shorter=False,
                    str=False,  # comparisons of strings: ids, mapped (issue 22)
                ),
            )
        ),
        junk().map(lambda b: case([b.value], bad=b)),
        kwargs.map(lambda b: case([T], b.value, b)),
        st.sampled_from(
            [
                refuse(np.zeros((4, 3), int), "all degenerate"),
                borderline(T[:1], "one triplet"),
                borderline(T[:2], "two triplets"),
                borderline(np.array([[0, 1, 2, 3]]), "one quadruplet"),
                borderline(np.c_[T, T[:, :1]], "quadruplets"),
                refuse(np.array([[0, 1, 2, 3, 4]]), "five columns"),
                borderline(Comparisons(T), "Comparisons"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _oe_check(est):
    check_finite(est.embedding_, "embedding_")
    assert est.embedding_.shape == (est.n_objects_, est.n_components)


def _objects_cases(est):
    n = est.n_objects_
    return st.one_of(
        bad_indices(np.arange(5), n).map(
            lambda b: case([b.value], bad=relabel(b, just_above=True))
        ),
        junk(optional=True).map(lambda b: case([b.value], bad=b)),
    )


def _transform_check(est, c, out):
    a = check_finite(out, "transform")
    assert a.shape[-1] == est.n_components


def _comparison_cases(est):
    T = _OE.test.indices
    n = est.n_objects_

    def build(b):
        v = b.value
        if isinstance(v, np.ndarray) and v.shape == T[:, 1].shape:
            out = T.astype(np.result_type(T.dtype, v.dtype)).copy()
            out[:, 1] = v
            return case([out], bad=relabel(b, just_above=True, bool=False))
        return case([[T[:, 0], v, T[:, 2]]], bad=relabel(b, True))

    return st.one_of(
        bad_indices(T[:, 1], n).map(build),
        junk().map(lambda b: case([b.value], bad=b)),
        st.just(case([T[:1]], bad=borderline(T[:1], "one"))),
        st.just(case([np.zeros((3, 3), int)], bad=borderline(0, "degenerate asked"))),
    )


def _oe_score_cases(est):
    T = _OE.test.indices
    return st.one_of(
        _comparison_cases(est),
        bad_values(np.ones(len(T))).map(
            lambda b: case(
                [T, b.value],
                bad=relabel(
                    b,
                    True,
                    float16=False,
                    int=False,
                    tensor=False,
                    fortran=False,
                    complex_real=False,
                    constant=None,
                    extra_dim=False,
                ),
            )
        ),
        st.just(case([np.zeros((3, 3), int)], bad=refuse(0, "all degenerate"))),
    )


def _decision_check(est, c, out):
    a = check_finite(out, "decision")
    assert a.ndim == 1


ORDINAL = Subject(
    name="OrdinalEmbedding",
    cls=OrdinalEmbedding,
    base=dict(n_components=2, max_iter=4, random_state=0, device="cpu"),
    fit_cases=_oe_fit_cases,
    fit_args=lambda: (_OE_TRIPLETS,),
    check_fitted=_oe_check,
    budget=frozenset({"max_iter", "module_epochs", "update_frequency"}),
    methods={
        "transform": Method(_objects_cases, _transform_check),
        "decision_function": Method(_comparison_cases, _decision_check),
        "predict": Method(_comparison_cases, _decision_check),
        "score": Method(_oe_score_cases, _scalar_check),
    },
)

# -- product quantization --------------------------------------------------------

_PQ_X = np.random.default_rng(0).standard_normal((120, 8)).astype(np.float32)


def _pq_fit_cases():
    X = _PQ_X
    return st.one_of(
        bad_matrices(X).map(lambda b: case([b.value], bad=relabel(b, one_row=True))),
        junk().map(lambda b: case([b.value], bad=b)),
        bad_matrices(X[:20]).map(
            lambda b: case(
                [X], {"validation": b.value}, relabel(b, one_row=False, transposed=True)
            )
        ),
        st.sampled_from(
            [
                refuse(X[:3], "fewer vectors than centroids"),
                borderline(X[:8], "as many vectors as centroids"),
                borderline(X.astype(np.float64) * 1e150, "float64 1e150"),
                borderline(X * np.float32(1e30), "float32 1e30"),
                borderline(np.round(X * 3).astype(np.int32), "int features"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _pq_check(est):
    check_finite(est.codebooks_, "codebooks_")
    check_finite(est.rotation_, "rotation_")
    X = np.ones((3, est.n_features_in_), np.float32)
    check_finite(est.transform(X), "transform", X.shape)


def _vectors_cases(est):
    X = _PQ_X[:6]
    return st.one_of(
        bad_matrices(X).map(lambda b: case([b.value], bad=relabel(b, transposed=True))),
        junk().map(lambda b: case([b.value], bad=b)),
    )


def _vectors_check(est, c, out):
    check_finite(out, "vectors")


def _codes_cases(est):
    codes = est.encode(_PQ_X[:6]).astype(np.int64)
    return st.one_of(
        bad_indices(codes[:, 0], est.n_centroids).map(
            lambda b: case(
                [np.c_[b.value, codes[:, 1:]]]
                if isinstance(b.value, np.ndarray) and b.value.shape == (6,)
                else [[b.value, codes[:, 1]]],
                bad=relabel(
                    b,
                    just_above=True,
                    list=True,
                    tensor=False,
                    integral_float=True,
                    bool=False,
                ),
            )
        ),
        junk().map(lambda b: case([b.value], bad=b)),
        st.just(case([codes[:, :1]], bad=refuse(0, "too few columns"))),
        st.just(case([codes.astype(np.uint8)], bad=borderline(0, "uint8 codes"))),
    )


def _search_cases(est):
    codes = est.encode(_PQ_X[:10])
    Q = _PQ_X[:3]
    return st.one_of(
        bad_counts("k").map(lambda b: case([Q, codes, b.value], bad=b)),
        _vectors_cases(est).map(lambda c: case([c.args[0], codes], bad=c.bad)),
        _codes_cases(est).map(lambda c: case([Q, c.args[0]], bad=c.bad)),
        st.sampled_from(
            [
                refuse("cosine", "metric"),
                refuse(None, "metric None"),
                borderline("ip", "metric ip"),
                refuse(3, "metric int"),
            ]
        ).map(
            lambda b: case(
                [Q, codes],
                {"metric": b.value} if b.value is not None else {"metric": "L2"},
                b,
            )
        ),
        st.just(case([Q, codes[:0]], bad=refuse(0, "no codes"))),
    )


def _search_check(est, c, out):
    scores, ids = out
    check_finite(scores, "scores")
    ids = np.asarray(ids)
    assert ids.ndim == 2 and ((ids >= -1) & (ids < len(c.args[1]))).all(), ids


QUANTIZER = Subject(
    name="ProductQuantizer",
    cls=ProductQuantizer,
    base=dict(
        n_subquantizers=2,
        n_centroids=4,
        max_iter=2,
        random_state=0,
        device="cpu",
        init_kmeans_iter=3,
        kmeans_iter=2,
        refine_iter=2,
    ),
    fit_cases=_pq_fit_cases,
    fit_args=lambda: (_PQ_X,),
    check_fitted=_pq_check,
    budget=frozenset(
        {
            "max_iter",
            "n_rotation_steps",
            "kmeans_iter",
            "init_kmeans_iter",
            "refine_iter",
        }
    ),
    extra_values={
        "rotation_init": [
            np.eye(8),
            np.eye(7),
            np.full((8, 8), np.nan),
            np.zeros((8, 8)),
            2 * np.eye(8),
        ]
    },
    methods={
        "encode": Method(
            _vectors_cases,
            lambda est, c, out: _ids_check(lambda e: e.n_centroids)(
                est, c, np.asarray(out).astype(np.int64)
            ),
        ),
        "transform": Method(_vectors_cases, _vectors_check),
        "distortion": Method(_vectors_cases, _scalar_check),
        "score": Method(_vectors_cases, _scalar_check),
        "decode": Method(_codes_cases, _vectors_check),
        "search": Method(_search_cases, _search_check),
    },
)

# -- two-tower retrieval (quantization) and two-tower model (similarity) ---------

_tt_rng = np.random.default_rng(0)
_TT_USERS = _tt_rng.integers(0, 20, 200)
_TT_ITEMS = (_TT_USERS % 4) * 3 + _tt_rng.integers(0, 3, 200)
_TT_PAIRS = np.unique(np.stack([_TT_USERS, _TT_ITEMS], 1), axis=0)
_TT = (_TT_PAIRS[:, 0], _TT_PAIRS[:, 1])
_TT_SHAPE = (20, 12)


def _feature_cases(n, side, *, fix_size=False):
    """Bad side features of n rows; with ``fix_size`` the features set the
    number of users / items (an extra row is one more user or item)."""
    extra = borderline if fix_size else refuse
    return st.sampled_from(
        [
            extra({"g": np.arange(n + 1) % 3}, f"{side} features extra row"),
            refuse({"g": np.arange(n - 1) % 3}, f"{side} features missing row"),
            refuse({"g": -np.ones(n, int)}, f"{side} features negative code"),
            refuse({"g": np.full(n, 2**40)}, f"{side} features huge code"),
            refuse({"d": np.full((n, 2), np.nan)}, f"{side} features nan"),
            refuse({"d": np.array(["x"] * n)}, f"{side} features str"),
            refuse({"d": np.ones((n, 2, 2))}, f"{side} features 3-D"),
            refuse([np.arange(n)], f"{side} features list"),
            refuse({"g": [[0], [1, 2]] * (n // 2)}, f"{side} features ragged"),
            refuse({"g": 3}, f"{side} features scalar"),
            borderline({}, f"{side} features empty dict"),
            borderline({"b": np.arange(n) % 2 == 0}, f"{side} features bool"),
            borderline({"d": np.ones((n, 1))}, f"{side} features constant"),
            borderline({"d": np.full((n, 2), 1e300)}, f"{side} features huge"),
        ]
    )


def _pairs_cases(pairs, shape, fixed=False, ids=False):
    """Cases corrupting (users, items[, values]) pairs (``ids``: fit's, where
    a column of strings is mapped)."""
    return st.one_of(
        _indices_in_tuple(pairs, 0, shape[0], fixed, ids).map(
            lambda bt: (bt[0], bt[1])
        ),
        _indices_in_tuple(pairs, 1, shape[1], fixed, ids).map(
            lambda bt: (bt[0], bt[1])
        ),
        bad_values(np.ones(len(pairs[0]))).map(
            lambda b: (paired(b), (*pairs[:2], b.value))
        ),
    )


def _ttr_fit_cases():
    return st.one_of(
        _pairs_cases(_TT, _TT_SHAPE, ids=True).map(
            lambda bp: case(
                [bp[1]],
                bad=relabel(
                    bp[0],
                    huge=None,
                    scaled=False,
                    tiny=False,
                    zeros=False,
                    constant=False,
                    overflow32=False,
                ),
            )
        ),
        junk().map(lambda b: case([b.value], bad=b)),
        _feature_cases(20, "user").map(
            lambda b: case([_TT], {"user_features": b.value}, b)
        ),
        _feature_cases(12, "item").map(
            lambda b: case([_TT], {"item_features": b.value}, b)
        ),
        st.sampled_from(
            [
                refuse({"shape": (5, 5)}, "shape too small"),
                refuse({"shape": (2**40, 12)}, "shape huge"),
                refuse({"shape": "20x12"}, "shape str"),
                refuse({"warm_start_from": "model"}, "warm start str"),
                refuse({"warm_start_from": TwoTowerRetrieval()}, "warm start unfit"),
                borderline({"shape": (25, 15)}, "shape larger"),
            ]
        ).map(lambda b: case([_TT], b.value, b)),
        st.sampled_from(
            [
                borderline((_TT[0][:3], _TT[1][:3]), "three pairs"),
                borderline((np.zeros(5, int), np.arange(5)), "one user"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _ttr_check(est):
    out = est.recommend(np.arange(min(3, est.shape_[0])), 2)
    _ranked_check(est, None, out)


def _score_check(est, c, out):
    _scalar_check(est, c, out)
    assert 0.0 <= out <= 1.0, out


def _held_out_cases(est):
    """Bad held-out pairs for ``score(X)`` (one float: precision@k)."""
    return st.one_of(
        _pairs_cases(_TT, est.shape_, fixed=True).map(
            lambda bp: case(
                [bp[1]],
                bad=relabel(
                    bp[0],
                    huge=None,
                    scaled=False,
                    tiny=False,
                    zeros=False,
                    constant=False,
                    overflow32=False,
                ),
            )
        ),
        junk().map(lambda b: case([b.value], bad=b)),
    )


def _ranked_check(est, c, out, side=1):
    """``(ids, scores)`` of the retrieval surface (nn.RetrievalMixin): item ids,
    or user ids (``side=0``, ``similar_users``)."""
    ids, scores = out
    _ids_check(lambda e: e.shape_[side])(est, c, ids)
    scores = np.asarray(scores)
    assert scores.shape == np.shape(ids), (scores.shape, np.shape(ids))
    assert not np.isnan(scores).any() and np.all((scores > -np.inf) == (ids >= 0))


def _similar_users_check(est, c, out):
    _ranked_check(est, c, out, side=0)


def _users_cases(est, n, k_default=3):
    return st.one_of(
        bad_indices(np.arange(4), n).map(
            lambda b: case(
                [b.value, k_default], bad=relabel(b, just_above=True, scalar=False)
            )
        ),
        bad_counts("k").map(lambda b: case([np.arange(3), b.value], bad=b)),
        junk().map(lambda b: case([b.value, k_default], bad=b)),
    )


def _ttr_recommend_cases(est):
    # the training pairs are excluded with exclude_seen (the retrieval surface)
    return _tm_recommend_cases(est)


def _ttr_evaluate_cases(est):
    return st.one_of(
        _pairs_cases(_TT, est.shape_, fixed=True).map(
            lambda bp: case(
                [bp[1]],
                bad=relabel(
                    bp[0],
                    huge=None,
                    scaled=False,
                    tiny=False,
                    zeros=False,
                    constant=False,
                    overflow32=False,
                ),
            )
        ),
        bad_counts("k").map(lambda b: case([_TT], {"k": b.value}, b)),
        junk().map(lambda b: case([b.value], bad=b)),
        _tm_bool_cases("exclude_seen").map(lambda c: case([_TT], c.kwargs, c.bad)),
    )


def _metrics_check(est, c, out):
    assert isinstance(out, dict)
    for key, v in out.items():
        assert np.isfinite(v), (key, v)


TWO_TOWER_RETRIEVAL = Subject(
    name="TwoTowerRetrieval",
    cls=TwoTowerRetrieval,
    base=dict(
        n_components=4,
        hidden=4,
        n_subquantizers=2,
        n_centroids=4,
        batch_size=16,
        warmup_steps=3,
        n_steps=3,
        warm_start_samples=32,
        warm_start_iter=2,
        log_every=2,
        random_state=0,
        device="cpu",
    ),
    fit_cases=_ttr_fit_cases,
    fit_args=lambda: (_TT,),
    check_fitted=_ttr_check,
    budget=frozenset(
        {"warmup_steps", "n_steps", "warm_start_samples", "warm_start_iter", "hidden"}
    ),
    methods={
        "recommend": Method(_ttr_recommend_cases, _ranked_check),
        "similar_items": Method(lambda est: _tm_similar_cases(est), _ranked_check),
        "similar_users": Method(
            lambda est: _similar_users_cases(est), _similar_users_check
        ),
        "evaluate": Method(_ttr_evaluate_cases, _metrics_check),
        "score": Method(_held_out_cases, _score_check),
        "predict": Method(
            lambda est: _tm_score_cases(est), lambda est, c, out: check_finite(out)
        ),
    },
)


_TM_LABELS = np.ones(len(_TT[0]))


def _tm_fit_cases():
    return st.one_of(
        _pairs_cases(_TT, _TT_SHAPE, ids=True).map(
            lambda bp: case([bp[1]], bad=relabel(bp[0], zeros=False, constant=False))
        ),
        junk().map(lambda b: case([b.value], bad=b)),
        _feature_cases(20, "user", fix_size=True).map(
            lambda b: case([_TT], {"user_features": b.value}, b)
        ),
        _feature_cases(12, "item", fix_size=True).map(
            lambda b: case([_TT], {"item_features": b.value}, b)
        ),
        _pairs_cases(_TT, _TT_SHAPE, fixed=True).map(
            lambda bp: case(
                [_TT],
                {"validation": bp[1]},
                relabel(
                    bp[0],
                    just_above=True,
                    huge=None,
                    scaled=False,
                    tiny=False,
                    zeros=False,
                    constant=False,
                    overflow32=False,
                ),
            )
        ),
        junk("validation", optional=True).map(
            lambda b: case([_TT], {"validation": b.value}, b)
        ),
        st.sampled_from(
            [
                refuse(sp.csr_matrix(_TT_SHAPE), "empty sparse"),
                borderline(sp.csr_matrix((_TM_LABELS, _TT), shape=_TT_SHAPE), "sparse"),
                refuse(
                    sp.csr_matrix((np.full(len(_TT[0]), np.nan), _TT), shape=_TT_SHAPE),
                    "sparse nan",
                ),
                borderline((_TT[0][:1], _TT[1][:1]), "one pair"),
                borderline((np.arange(12), np.arange(12)), "diagonal"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _tm_check(est):
    _finite_attrs(est, "user_embeddings_", "item_embeddings_")
    assert np.isfinite(est.objective_)


def _tm_score_cases(est):
    m, n = est.shape_
    u, i = np.arange(4) % m, np.arange(4) % n
    return st.one_of(
        bad_indices(u, m).map(
            lambda b: case([b.value, i], bad=relabel(b, just_above=True))
        ),
        bad_indices(i, n).map(
            lambda b: case([u, b.value], bad=relabel(b, just_above=True))
        ),
        junk().map(lambda b: case([b.value, i], bad=b)),
    )


def _tm_bool_cases(name):
    return st.sampled_from(
        [
            borderline(True, "True"),
            borderline(np.bool_(False), "np False"),
            refuse("no", "str"),
            refuse(None, "None"),
            refuse(2, "int"),
            refuse(np.array([True, False]), "array"),
        ]
    ).map(lambda b: case([np.arange(3), 3], {name: b.value}, b))


def _tm_recommend_cases(est):
    return st.one_of(
        _users_cases(est, est.shape_[0]),
        _tm_bool_cases("exclude_seen"),
        bad_indices(np.arange(4), est.shape_[1]).map(  # candidate items
            lambda b: case(
                [np.arange(3), 2],
                {"items": b.value},
                relabel(b, just_above=True, scalar=False),
            )
        ),
        bad_indices(np.arange(4), est.shape_[1]).map(  # items never returned
            lambda b: case(
                [np.arange(3), 2],
                {"filter_items": b.value},
                relabel(b, just_above=True),
            )
        ),
        st.sampled_from(
            [
                borderline(np.arange(est.shape_[1]), "filter every item"),
                borderline([], "filter nothing"),
            ]
        ).map(lambda b: case([np.arange(3), 2], {"filter_items": b.value}, b)),
    )


def _tm_similar_cases(est):
    return _users_cases(est, est.shape_[1])


def _similar_users_cases(est):
    return _users_cases(est, est.shape_[0])


#: The retrieval surface every recommender shares (nn.RetrievalMixin).
def _surface_methods():
    return {
        "recommend": Method(_tm_recommend_cases, _ranked_check),
        "similar_items": Method(_tm_similar_cases, _ranked_check),
        "similar_users": Method(_similar_users_cases, _similar_users_check),
    }


# MatrixCompletion is a recommender too (defined above the two towers' cases)
MATRIX_COMPLETION.methods.update(_surface_methods())


def _tm_evaluate_cases(est):
    return st.one_of(
        _pairs_cases(_TT, est.shape_, fixed=True).map(
            lambda bp: case(
                [bp[1]],
                bad=relabel(
                    bp[0],
                    huge=None,
                    scaled=False,
                    tiny=False,
                    zeros=False,
                    constant=False,
                    overflow32=False,
                ),
            )
        ),
        bad_counts("k").map(lambda b: case([_TT], {"k": b.value}, b)),
        junk().map(lambda b: case([b.value], bad=b)),
        _tm_bool_cases("exclude_seen").map(lambda c: case([_TT], c.kwargs, c.bad)),
    )


TWO_TOWER_MODEL = Subject(
    name="TwoTowerModel",
    cls=TwoTowerModel,
    base=dict(n_components=3, hidden=4, max_iter=3, random_state=0, device="cpu"),
    fit_cases=_tm_fit_cases,
    fit_args=lambda: (_TT,),
    check_fitted=_tm_check,
    budget=frozenset({"max_iter", "hidden"}),
    extra_values={
        "imputation": [
            (np.zeros(20), np.zeros(12)),
            (np.zeros(3), np.zeros(3)),
            (np.full(20, np.nan), np.zeros(12)),
            1e300,
            -1e300,
        ],
        "solver_options": [
            {"preconditioner": "bogus"},
            {"max_cg_iter": -1},
            {"unknown_option": 1},
        ],
        "user_tower": [torch.nn.Linear(3, 3), torch.nn.Identity()],
    },
    methods={
        "predict": Method(_tm_score_cases, lambda est, c, out: check_finite(out)),
        "score": Method(_held_out_cases, _score_check),
        **_surface_methods(),
        "evaluate": Method(_tm_evaluate_cases, _metrics_check),
    },
)

# -- semidefinite programs ----------------------------------------------------------

_kl_rng = np.random.default_rng(0)
_KL_Y = np.repeat([0, 1], 8)
_KL_X = _kl_rng.standard_normal((16, 3)) + 2.0 * _KL_Y[:, None]
_KL_ML = np.array([[0, 1], [2, 3], [8, 9]])
_KL_CL = np.array([[0, 8], [1, 9], [4, 12]])


def _pairs_matrix_cases(pairs, n, *, role):
    """Corrupt column 0 of an (m, 2) pair array."""

    def build(b):
        v = b.value
        if isinstance(v, np.ndarray) and v.shape == pairs[:, 0].shape:
            out = pairs.astype(np.result_type(pairs.dtype, v.dtype)).copy()
            out[:, 0] = v
            return relabel(
                Bad(out, b.must_refuse, f"{role}:{b.label}"),
                **{f"{role}:just_above": True, f"{role}:bool": False},
            )
        return Bad([v, pairs[:, 1]], True, f"{role}:{b.label}")

    return bad_indices(pairs[:, 0], n).map(build)


def _kl_fit_cases():
    X, y, ml, cl = _KL_X, _KL_Y, _KL_ML, _KL_CL
    n = len(X)
    lap = sp.csgraph.laplacian(sp.csr_matrix(np.ones((n, n)) - np.eye(n)))
    pairs = {"must_link": ml, "cannot_link": cl}
    return st.one_of(
        bad_matrices(X).map(
            lambda b: case(
                [b.value], pairs, bad=relabel(b, one_row=True, transposed=None)
            )
        ),
        junk().map(lambda b: case([b.value], pairs, bad=b)),
        _pairs_matrix_cases(ml, n, role="must_link").map(
            lambda b: case([X], {"must_link": b.value, "cannot_link": cl}, b)
        ),
        _pairs_matrix_cases(cl, n, role="cannot_link").map(
            lambda b: case([X], {"must_link": ml, "cannot_link": b.value}, b)
        ),
        junk("must_link").map(lambda b: case([X], {"must_link": b.value}, b)),
        bad_values(y).map(
            lambda b: case(
                [X, b.value],
                bad=relabel(
                    b,
                    nan=None,
                    inf=None,
                    str=False,
                    object_none=None,
                    complex=False,
                    shorter=True,
                    empty=True,
                    extra_dim=True,
                ),
            )
        ),
        bad_values(y).map(
            lambda b: case(
                [X],
                {"y": b.value},
                relabel(
                    b,
                    nan=None,
                    inf=None,
                    str=False,
                    object_none=None,
                    complex=False,
                    shorter=True,
                    empty=True,
                    extra_dim=True,
                ),
            )
        ),
        st.sampled_from(
            [
                refuse(sp.csr_matrix((n + 1, n + 1)), "laplacian too big"),
                refuse(np.full((n, n), np.nan), "laplacian nan"),
                refuse("graph", "laplacian str"),
                refuse(sp.csr_matrix(np.triu(np.ones((n, n)))), "laplacian asym"),
                borderline(lap, "laplacian complete graph"),
                borderline(sp.csr_matrix((n, n)), "laplacian zero"),
            ]
        ).map(lambda b: case([X], {**pairs, "laplacian": b.value}, b)),
        st.sampled_from(
            [
                refuse({"y": np.zeros(n)}, "one class"),
                borderline({"y": np.arange(n)}, "every pattern its class"),
                borderline({"y": np.array(["a", "b"] * (n // 2))}, "str labels"),
                refuse({"must_link": np.zeros((0, 2), int)}, "no pairs"),
                refuse({"must_link": [[0, 1], [0, 1]]}, "duplicate pair"),
                refuse({"must_link": [[0, 1]], "cannot_link": [[1, 0]]}, "conflict"),
            ]
        ).map(lambda b: case([X], b.value, b)),
    )


def _kl_check(est):
    check_finite(est.embedding_, "embedding_")
    assert np.isfinite(est.objective_)


def _kl_kernel_cases(est):
    n = len(est.embedding_)
    i = np.arange(4)
    return st.one_of(
        bad_indices(i, n).map(
            lambda b: case(
                [b.value, i],
                bad=relabel(
                    b,
                    just_above=True,
                    shorter=False,
                    empty=False,
                    column=False,
                    scalar=False,
                    nested=False,
                ),
            )
        ),
        junk().map(lambda b: case([b.value, i], bad=b)),
    )


def _kl_cluster_cases(est):
    n = len(est.embedding_)
    return st.one_of(
        bad_counts("n_clusters").map(
            lambda b: case([b.value], bad=relabel(b, **{"n_clusters:edge": None}))
        ),
        bad_counts("n_init", huge_ok=False).map(
            lambda b: case([2], {"n_init": b.value}, b)
        ),
        st.sampled_from(
            [refuse(n + 1, "more clusters than patterns"), borderline(n, "n clusters")]
        ).map(lambda b: case([b.value], bad=b)),
        st.sampled_from(
            [
                refuse("x", "random_state str"),
                refuse(-1, "negative seed"),
                borderline(np.random.default_rng(0), "generator"),
            ]
        ).map(lambda b: case([2], {"random_state": b.value}, b)),
    )


def _sdp_transform_cases(est):
    # new patterns: any number of rows (none included) with the fit's features
    X = _KL_X[:6] + 0.1
    return st.one_of(
        bad_matrices(X).map(
            lambda b: case([b.value], bad=relabel(b, transposed=True, no_rows=False))
        ),
        junk().map(lambda b: case([b.value], bad=b)),
    )


def _sdp_transform_check(est, c, out):
    a = np.asarray(out)
    assert a.ndim == 2 and a.shape[1] == est.embedding_.shape[1], a.shape
    check_finite(a, "transform")


def _kl_cluster_check(est, c, out):
    a = np.asarray(out)
    assert a.shape == (len(est.embedding_),) and a.dtype.kind in "iu"


KERNEL_LEARNING = Subject(
    name="KernelLearning",
    cls=KernelLearning,
    base=dict(n_components=3, n_neighbors=3, max_iter=30, random_state=0, device="cpu"),
    fit_cases=_kl_fit_cases,
    fit_args=lambda: (_KL_X, _KL_Y),
    check_fitted=_kl_check,
    budget=frozenset({"max_iter"}),
    methods={
        "kernel": Method(_kl_kernel_cases, lambda est, c, out: check_finite(out)),
        "cluster": Method(_kl_cluster_cases, _kl_cluster_check),
        "transform": Method(_sdp_transform_cases, _sdp_transform_check),
    },
)


def _cmvu_fit_cases():
    X, y = _KL_X, _KL_Y
    return st.one_of(
        bad_matrices(X).map(
            lambda b: case([b.value, y], bad=relabel(b, one_row=True, transposed=None))
        ),
        bad_matrices(X).map(
            lambda b: case([b.value], bad=relabel(b, one_row=True, transposed=None))
        ),
        junk().map(lambda b: case([b.value, y], bad=b)),
        bad_values(y).map(
            lambda b: case(
                [X, b.value],
                bad=relabel(
                    b,
                    nan=None,
                    inf=None,
                    str=False,
                    object_none=None,
                    complex=False,
                    shorter=True,
                    empty=True,
                    extra_dim=True,
                ),
            )
        ),
        st.sampled_from(
            [
                borderline(np.zeros(len(X)), "one class"),
                borderline(np.arange(len(X)), "every pattern its class"),
                borderline(np.array(["a", "b"] * 8), "str labels"),
                refuse(np.zeros((len(X), 2)), "2-D labels"),
            ]
        ).map(lambda b: case([X, b.value], bad=b)),
        st.sampled_from(
            [
                refuse(np.ones((3, 3)), "no more patterns than neighbours"),
                borderline(np.repeat(X[:2], 8, axis=0), "two distinct points"),
                borderline(np.c_[X, np.zeros((len(X), 1))], "zero feature"),
            ]
        ).map(lambda b: case([b.value], bad=b)),
    )


def _cmvu_fit_transform_cases(est):
    return _cmvu_fit_cases()


COLORED_MVU = Subject(
    name="ColoredMVU",
    cls=ColoredMVU,
    base=dict(n_components=2, n_neighbors=3, max_iter=30, random_state=0, device="cpu"),
    fit_cases=_cmvu_fit_cases,
    fit_args=lambda: (_KL_X, _KL_Y),
    check_fitted=lambda est: _finite_attrs(est, "embedding_"),
    budget=frozenset({"max_iter"}),
    methods={
        "fit_transform": Method(
            _cmvu_fit_transform_cases, lambda est, c, out: check_finite(out)
        ),
        "transform": Method(_sdp_transform_cases, _sdp_transform_check),
    },
)

SUBJECTS = [
    MATRIX_COMPLETION,
    TENSOR_COMPLETION,
    MATRIX_COMPLETION_MCP,  # not beside MATRIX_COMPLETION: a model file of
    # the next subject must be of another class (test_load_bad_model_files)
    ORDINAL,
    QUANTIZER,
    TWO_TOWER_RETRIEVAL,
    KERNEL_LEARNING,
    COLORED_MVU,
    TWO_TOWER_MODEL,
]
METHODS = [(s, m) for s in SUBJECTS for m in s.methods]


@functools.cache
def fitted(subject: Subject):
    """The tiny model of ``subject``, fitted once per session."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return subject.make().fit(*subject.fit_args())


def _fit(subject, est, c):
    if subject is TENSOR_COMPLETION:
        return _tc_fit(est, c)
    return est.fit(*c.args, **c.kwargs)


# -- the properties ---------------------------------------------------------------


@pytest.mark.parametrize("subject", SUBJECTS, ids=repr)
@examples(2)
@given(data=st.data())
def test_fit_on_bad_data(subject, data):
    c = data.draw(subject.fit_cases(), label="case")
    est = subject.make()
    out = call(
        f"{subject.name}.fit",
        "data",
        lambda: _fit(subject, est, c),
        must_refuse=c.bad.must_refuse,
        label=c.bad.label,
    )
    if not out.refused:
        assert out.value is est
        subject.check_fitted(est)


@pytest.mark.parametrize("subject", SUBJECTS, ids=repr)
@examples(2)
@given(data=st.data())
def test_fit_with_any_parameter_value(subject, data):
    constraints = subject.cls._parameter_constraints
    params = sorted(set(constraints) & set(subject.cls._get_param_names()))
    names = data.draw(
        st.lists(st.sampled_from(params), min_size=1, max_size=2, unique=True),
        label="parameters",
    )
    bads = {
        name: data.draw(
            parameter_values(
                name,
                constraints[name],
                budget=name in subject.budget,
                extra=subject.extra_values.get(name, ()),
            ),
            label=name,
        )
        for name in names
    }
    est = subject.make(**{name: b.value for name, b in bads.items()})
    must = any(b.must_refuse for b in bads.values())
    out = call(
        f"{subject.name}.fit",
        "params",
        lambda: est.fit(*subject.fit_args()),
        must_refuse=must,
        label=", ".join(repr(b) for b in bads.values()),
    )
    if out.refused and must:
        # named: the wrong parameter, or another drawn one that is wrong too
        assert isinstance(out.error, InvalidParameterError), repr(out.error)
        assert any(f"'{n}'" in str(out.error) for n in bads), str(out.error)
    if not out.refused:
        subject.check_fitted(est)


@pytest.mark.parametrize(
    ("subject", "method"), METHODS, ids=[f"{s.name}.{m}" for s, m in METHODS]
)
@examples(3)
@given(data=st.data())
def test_methods_on_bad_input(subject, method, data):
    est = fitted(subject)
    spec = subject.methods[method]
    c = data.draw(spec.cases(est), label="case")
    bad = query(c.bad)
    out = call(
        f"{subject.name}.{method}",
        "input",
        lambda: getattr(est, method)(*c.args, **c.kwargs),
        must_refuse=bad.must_refuse,
        label=bad.label,
    )
    if not out.refused:
        spec.check(est, c, out.value)


_BEFORE_FIT = [(s, m) for s, m in METHODS if m != "fit_transform"]


@pytest.mark.parametrize(
    ("subject", "method"), _BEFORE_FIT, ids=[f"{s.name}.{m}" for s, m in _BEFORE_FIT]
)
@examples(1)
@given(data=st.data())
def test_methods_before_fit(subject, method, data):
    c = data.draw(subject.methods[method].cases(fitted(subject)), label="case")
    est = subject.make()
    call(
        f"{subject.name}.{method}",
        "before fit",
        lambda: getattr(est, method)(*c.args, **c.kwargs),
        must_refuse=True,
        label="not fitted",
    )


@functools.cache
def saved(subject: Subject) -> bytes:
    """The model file of :func:`fitted` ``(subject)``."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        fitted(subject).save(Path(folder) / "model.embedopt")
        return (Path(folder) / "model.embedopt").read_bytes()


@pytest.mark.parametrize("subject", SUBJECTS, ids=repr)
@examples(1)
@given(data=st.data())
def test_load_bad_model_files(subject, data):
    import tempfile
    from pathlib import Path

    other = SUBJECTS[(SUBJECTS.index(subject) + 1) % len(SUBJECTS)]
    bad = data.draw(bad_model_files(saved(subject), saved(other)), label="file")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.embedopt"
        if bad.value is not None:
            path.write_bytes(bad.value)
        out = call(
            f"{subject.name}.load",
            "file",
            lambda: subject.cls.load(path),
            must_refuse=bad.must_refuse,
            label=bad.label,
        )
    if not out.refused:
        assert type(out.value) is subject.cls
        if bad.label.startswith("flipped"):  # a byte nothing reads: same model
            assert_same_estimator(fitted(subject), out.value)


# -- partial_fit (issue 23) ---------------------------------------------------------
#
# Bad values in a batch of new entries (some at rows and columns the model has
# not seen, which partial_fit grows the model for) end acceptably; a refused
# batch leaves the model exactly as it was, an accepted one predicts finite
# values everywhere.

_PARTIAL = [MATRIX_COMPLETION, MATRIX_COMPLETION_MCP, TENSOR_COMPLETION]


def _partial_batch(est, values):
    shape = est.shape_
    idx = np.stack([np.arange(3) % s for s in shape], 1)
    idx[0, 0] = shape[0]  # one new row (mode-0 index)
    if len(shape) == 2:
        return (idx[:, 0], idx[:, 1], values)
    return (idx, values)


@pytest.mark.parametrize("subject", _PARTIAL, ids=repr)
@examples(1)
@given(data=st.data())
def test_partial_fit_on_bad_values(subject, data):
    import copy

    est = copy.deepcopy(fitted(subject))
    before = copy.deepcopy(est)
    b = data.draw(bad_values(np.array([1.0, -0.5, 2.0])), label="values")
    refit = "new" if subject is MATRIX_COMPLETION else "all"
    bad = paired(b)
    out = call(
        f"{subject.name}.partial_fit",
        "values",
        lambda: est.partial_fit(_partial_batch(est, b.value), refit=refit),
        must_refuse=bad.must_refuse,
        label=bad.label,
    )
    if out.refused:
        assert_same_estimator(est, before)
    else:
        assert out.value is est
        check_finite(est.to_dense(), "partial_fit", est.shape_)
