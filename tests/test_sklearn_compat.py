"""scikit-learn's tools on every estimator: ``clone``, ``cross_val_score`` and
``Pipeline``, where they make sense (DESIGN.md: the scikit-learn conventions).

``CASES`` is the table of DEVELOPERS.md ("Estimators"): for each estimator,
what X and y are, the fit parameters a fold needs, and whether a
cross-validated score and a pipeline make sense. Where one does not, the
reason is written beside it and tested as far as it can be.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from embedopt._core import DataValidationError
from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.data import make_low_rank_tensor, make_planted_embedding, split_by_user
from embedopt.ordinal import OrdinalEmbedding
from embedopt.quantization import ProductQuantizer, TwoTowerRetrieval
from embedopt.sdp import ColoredMVU, KernelLearning
from embedopt.similarity import TwoTowerModel
from tests.conftest import random_entries

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import KFold, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


@dataclass
class Case:
    name: str
    make: Callable[[], object]
    data: Callable[[], tuple]  # -> (X, y, fit_params)
    # None: a cross-validated score makes sense; else why not
    no_cross_validation: str | None = None
    # a transformer of X that may precede the estimator in a Pipeline
    before: Callable[[], object] | None = None
    # None: a Pipeline makes sense; else why not
    no_pipeline: str | None = None


def _matrix():
    entries, _, _ = random_entries(m=24, n=18, rank=2, frac=0.6)
    return entries.indices, entries.values, {"shape": entries.shape}


def _tensor():
    prob = make_low_rank_tensor(10, n_observed=200, random_state=0)
    obs = prob.observed
    return obs.indices, obs.values, {"shape": obs.shape}


def _triplets():
    prob = make_planted_embedding(20, 2, n_train=600, n_test=10, random_state=0)
    return prob.train.indices, None, {"n_objects": 20}


def _blobs():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 8)
    X = rng.normal(size=(24, 2)) + 2.5 * np.stack([y == 1, y == 2], axis=1)
    return X, y, {}


def _vectors():
    X = np.random.default_rng(0).normal(size=(240, 8)).astype(np.float32)
    return X, None, {}


def _pair_split():
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 30, 400), rng.integers(0, 20, 400)
    return split_by_user((users, items), (0.8, 0.2), random_state=0)


def _pairs():
    return _pair_split()[0], None, {}


PAIRS = (
    "X is a set of (user, item) pairs: folds of it change the inferred "
    "numbers of users and items, and scikit-learn cannot index a tuple of id "
    "arrays or a sparse matrix by row; split with embedopt.data.split_by_user"
)
NO_PAIR_TRANSFORMER = "no scikit-learn transformer takes or gives (user, item) pairs"

TRANSDUCTIVE = (
    "transductive score: score judges the embedding of the fitted patterns "
    "(clustering, leave-one-out 1-NN), so a held-out fold has no rows to score; "
    "transform places held-out patterns, so a Pipeline of the embedding and a "
    "classifier cross-validates"
)

CASES = [
    Case(
        "MatrixCompletion",
        lambda: MatrixCompletion(lam=0.5, max_iter=50, random_state=0),
        _matrix,
    ),
    Case(
        "TensorCompletion",
        lambda: TensorCompletion(lam=0.5, max_iter=50, random_state=0),
        _tensor,
    ),
    Case(
        "OrdinalEmbedding",
        lambda: OrdinalEmbedding(2, max_iter=20, random_state=0),
        _triplets,
    ),
    Case(
        "KernelLearning",
        lambda: KernelLearning(3, n_pairs=20, max_iter=100, random_state=0),
        _blobs,
        no_cross_validation=TRANSDUCTIVE,
        before=StandardScaler,
    ),
    Case(
        "ColoredMVU",
        lambda: ColoredMVU(2, max_iter=100, random_state=0),
        _blobs,
        no_cross_validation=TRANSDUCTIVE,
        before=StandardScaler,
    ),
    Case(
        "TwoTowerModel",
        lambda: TwoTowerModel(3, hidden=8, max_iter=3, tol=0.0, random_state=0),
        _pairs,
        no_cross_validation=PAIRS,
        no_pipeline=NO_PAIR_TRANSFORMER,
    ),
    Case(
        "TwoTowerRetrieval",
        lambda: TwoTowerRetrieval(
            n_components=4,
            hidden=4,
            n_subquantizers=2,
            n_centroids=4,
            batch_size=16,
            warmup_steps=5,
            n_steps=6,
            warm_start_samples=32,
            warm_start_iter=2,
            log_every=3,
            device="cpu",
            random_state=0,
        ),
        _pairs,
        no_cross_validation=PAIRS,
        no_pipeline=NO_PAIR_TRANSFORMER,
    ),
    Case(
        "ProductQuantizer",
        lambda: ProductQuantizer(2, 8, max_iter=3, random_state=0),
        _vectors,
        before=StandardScaler,
    ),
]


def _fit_args(X, y):
    return (X,) if y is None else (X, y)


@pytest.fixture(autouse=True)
def _quiet():
    # tiny budgets: convergence warnings are expected and beside the point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_clone_gives_an_unfitted_copy_with_the_same_parameters(case):
    X, y, params = case.data()
    est = case.make().fit(*_fit_args(X, y), **params)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "solver_") and hasattr(est, "solver_")


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.no_cross_validation is None], ids=lambda c: c.name
)
def test_cross_val_score_gives_one_float_per_fold(case):
    X, y, params = case.data()
    scores = cross_val_score(
        case.make(),
        X,
        y,
        cv=KFold(3, shuffle=True, random_state=0),
        params=params,
        error_score="raise",
    )
    assert scores.shape == (3,) and np.isfinite(scores).all()


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.no_cross_validation == PAIRS], ids=lambda c: c.name
)
def test_a_pair_model_scores_held_out_pairs_with_one_float(case):
    # what cross-validation would do, done with split_by_user: clone, fit on
    # the training pairs, score the held-out ones
    train, test = _pair_split()
    score = clone(case.make()).fit(train).score(test)
    assert isinstance(score, float) and 0.0 <= score <= 1.0


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.no_cross_validation == TRANSDUCTIVE],
    ids=lambda c: c.name,
)
def test_a_transductive_estimator_refuses_rows_it_did_not_fit(case):
    X, y, params = case.data()
    est = case.make().fit(*_fit_args(X, y), **params)
    with pytest.raises(DataValidationError, match="transductive"):
        est.score(X[:-3], y[:-3])


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.no_cross_validation == TRANSDUCTIVE],
    ids=lambda c: c.name,
)
def test_an_embedding_then_a_classifier_cross_validates(case):
    # transform places the held-out fold by its neighbours in the fitted one
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    X, y, _ = case.data()
    pipe = Pipeline(
        [
            ("before", case.before()),
            ("model", case.make()),
            ("classify", KNeighborsClassifier(1)),
        ]
    )
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(pipe, X, y, cv=cv, error_score="raise")
    assert scores.shape == (3,) and scores.mean() >= 0.75, scores
    # the classifier sees the rows transform gives the held-out patterns
    train, test = next(cv.split(X, y))
    pipe.fit(X[train], y[train])
    model = pipe.named_steps["model"]
    Xt = pipe.named_steps["before"].transform(X[test])
    nearest = np.argmin(
        ((model.transform(Xt)[:, None] - model.embedding_[None]) ** 2).sum(-1), 1
    )
    np.testing.assert_array_equal(pipe.predict(X[test]), y[train][nearest])


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.no_pipeline is None], ids=lambda c: c.name
)
def test_a_pipeline_fits_and_scores_as_the_estimator_does(case):
    X, y, params = case.data()
    steps = [("model", case.make())]
    Xt = X
    if case.before is not None:
        steps.insert(0, ("before", case.before()))
        Xt = case.before().fit_transform(X)
    pipe = Pipeline(steps).fit(
        *_fit_args(X, y), **{f"model__{k}": v for k, v in params.items()}
    )
    alone = case.make().fit(*_fit_args(Xt, y), **params)
    assert pipe.score(X, y) == pytest.approx(alone.score(Xt, y))
