"""sample_weight of matrix and tensor completion: the weighted loss and its uses.

The objective is ``sum_Omega w_ij l(X_ij, O_ij) + lambda ||X||_*``: its value
and gradient are checked against the naive weighted sum and torch autograd,
integer weights against repeated entries, weight 0 against a removed entry,
weights 1 against no weights (bit for bit), and the estimators' contract.
"""

import numpy as np
import pytest
import torch

from embedopt._core import ConvergenceWarning, DataValidationError
from embedopt.completion import (
    Centering,
    CompletionProblem,
    MatrixCompletion,
    TensorCompletion,
    ais_impute,
    apg,
    dc_completion,
    postprocess,
    soft_impute,
)
from embedopt.completion.centering import split_weighted
from embedopt.completion.path import refit_entries, refit_sample_weight
from embedopt.completion.postprocess import _design_gram, _theta_cg, refine
from embedopt.completion.proximal import _default_step
from embedopt.data import (
    ObservedEntries,
    make_low_rank_tensor,
    split_entries,
)
from embedopt.linalg import SparsePlusLowRank
from tests._derivatives import autograd_grad, check_grad
from tests.conftest import random_entries

D = torch.float64
LOSSES = ("square", "logistic", "squared_hinge")


def _labels(entries, loss):
    if loss == "square":
        return entries
    return entries.with_values(np.where(entries.values >= 0, 1.0, -1.0))


def _matrix(loss="square", m=8, n=6, seed=0):
    entries, _, _ = random_entries(m=m, n=n, rank=2, frac=0.6, seed=seed)
    return _labels(entries, loss)


def _tensor(loss="square"):
    prob = make_low_rank_tensor(5, last_dim=3, rank=2, n_observed=40, random_state=0)
    return _labels(prob.observed, loss)


def _weights(n, seed=0, zeros=0):
    w = np.random.default_rng(seed).uniform(0.2, 3.0, n)
    w[:zeros] = 0.0
    return w


def _random_factors(problem, seed=0, rank=2):
    g = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(a, rank, generator=g, dtype=D),
            torch.rand(rank, generator=g, dtype=D),
            torch.randn(b, rank, generator=g, dtype=D),
        )
        for a, b in (unf.shape for unf in problem.unfoldings)
    ]


def _fold(M, d, shape):
    others = [k for k in range(len(shape)) if k != d]
    return np.moveaxis(M.reshape([shape[d]] + [shape[k] for k in others]), 0, d)


def _dense_model(factors, shape):
    X = np.zeros(shape)
    for d, (U, s, V) in enumerate(factors):
        X += _fold(((U * s) @ V.T).numpy(), d, shape)
    return torch.as_tensor(X)


def _torch_loss(name, x, y):
    if name == "square":
        return 0.5 * (x - y) ** 2
    if name == "logistic":
        return torch.nn.functional.softplus(-x * y)
    return 0.5 * torch.clamp(1 - x * y, min=0) ** 2


def _naive_objective(name, X, entries, w):
    """``sum_e w_e l(X[idx_e], y_e)``, entry by entry, in the input order."""
    y = torch.as_tensor(entries.values)
    x = X[tuple(torch.as_tensor(entries.indices).T)]
    return (torch.as_tensor(w) * _torch_loss(name, x, y)).sum()


def _dense_gradients(problem):
    """The sparse parts of the gradient that the solver forms, one per unfolding."""
    return lambda g: [
        SparsePlusLowRank.from_terms(unf.pattern, unf.to_block(g), []).to_dense()
        for unf in problem.unfoldings
    ]


def _unfold(T, d):
    return T.movedim(d, 0).reshape(T.shape[d], -1)


# -- the weighted loss: value and gradient ---------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("kind", ["matrix", "tensor"])
def test_weighted_objective_and_gradient_match_naive_sum_and_autograd(loss, kind):
    entries = _matrix(loss) if kind == "matrix" else _tensor(loss)
    w = _weights(entries.nnz, zeros=3)
    P = CompletionProblem(entries, loss=loss, dtype="float64", sample_weight=w)
    factors = _random_factors(P)
    factors = factors[0] if kind == "matrix" else factors
    X = _dense_model(factors if kind == "tensor" else [factors], entries.shape)
    x = P.predict(factors)
    naive = _naive_objective(loss, X, entries, w)
    assert P.loss_total(x) == pytest.approx(float(naive), rel=1e-12)
    # The gradient the solver builds (w * l' on Omega, per unfolding) is the
    # autograd gradient of the naive weighted sum, unfolded.
    ref = autograd_grad(lambda T: _naive_objective(loss, T, entries, w), X)
    for d, G in enumerate(_dense_gradients(P)(P.loss_grad(x))):
        torch.testing.assert_close(G, _unfold(ref, d), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_weighted_gradient_against_finite_differences(loss):
    entries = _matrix(loss, m=5, n=4)
    w = _weights(entries.nnz)
    P = CompletionProblem(entries, loss=loss, dtype="float64", sample_weight=w)
    X = torch.randn(5, 4, generator=torch.Generator().manual_seed(1), dtype=D)
    rows, cols = P.pattern.row_indices(), P.pattern.col_indices()

    def fun(T):
        return torch.as_tensor(P.loss_total(T[rows, cols]), dtype=D)

    grad = torch.zeros_like(X)
    grad[rows, cols] = P.loss_grad(X[rows, cols])
    check_grad(fun, X, grad, autograd=False, rtol=1e-6, atol=1e-7)


def test_step_and_lambda_max_use_the_weights():
    entries = _matrix(m=12, n=9)
    w = _weights(entries.nnz)
    for loss in ("square", "logistic"):
        P = CompletionProblem(
            _labels(entries, loss), loss=loss, dtype="float64", sample_weight=w
        )
        assert _default_step(P) == pytest.approx(1 / (P.loss.rho * w.max()))
    P = CompletionProblem(entries, dtype="float64", sample_weight=w)
    G = _dense_gradients(P)(P.loss_grad(torch.zeros_like(P.y)))[0]
    lmax = P.lambda_max(n_iter=200, generator=torch.Generator().manual_seed(0))
    assert lmax == pytest.approx(float(torch.linalg.matrix_norm(G, 2)), rel=1e-6)
    T = _tensor()
    P = CompletionProblem(T, dtype="float64", sample_weight=_weights(T.nnz))
    assert _default_step(P) == pytest.approx(1 / (3**0.5 * P.max_weight))


def _repeated(entries, rep, values=None):
    """``entries`` with entry e listed once per occurrence of e in ``rep``."""
    vals = entries.values[rep] if values is None else values
    # validate=False: a CompletionProblem refuses duplicates, the naive sum not.
    return ObservedEntries(entries.indices[rep], vals, entries.shape, validate=False)


def _naive_value_and_gradient(entries, X):
    ones = np.ones(entries.nnz)
    value = float(_naive_objective("square", X, entries, ones))
    grad = autograd_grad(lambda T: _naive_objective("square", T, entries, ones), X)
    return value, grad


def test_integer_weights_equal_repeated_entries():
    entries = _matrix(m=10, n=7)
    w = np.random.default_rng(0).integers(1, 4, entries.nnz)
    repeated = _repeated(entries, np.repeat(np.arange(entries.nnz), w))
    P = CompletionProblem(entries, dtype="float64", sample_weight=w)
    f = _random_factors(P)[0]
    value, grad = _naive_value_and_gradient(repeated, _dense_model([f], P.shape))
    assert P.loss_total(P.predict(f)) == pytest.approx(value, rel=1e-12)
    G = _dense_gradients(P)(P.loss_grad(P.predict(f)))[0]
    torch.testing.assert_close(G, grad)
    _, grad0 = _naive_value_and_gradient(repeated, torch.zeros(P.shape, dtype=D))
    lmax = P.lambda_max(n_iter=200, generator=torch.Generator().manual_seed(0))
    assert lmax == pytest.approx(float(torch.linalg.matrix_norm(grad0, 2)), rel=1e-6)


def test_counts_of_averaged_duplicates_give_the_same_square_loss_gradient():
    # Repeated observations with different values, averaged and weighted by
    # their counts: the same gradient (and objective up to a constant).
    entries = _matrix(m=10, n=7)
    rng = np.random.default_rng(1)
    rep = np.repeat(np.arange(entries.nnz), rng.integers(1, 4, entries.nnz))
    noisy = _repeated(entries, rep, entries.values[rep] + rng.normal(size=rep.size))
    mean = noisy.aggregate_duplicates("mean")
    lin = np.ravel_multi_index(tuple(noisy.indices.T), noisy.shape)
    counts = np.unique(lin, return_counts=True)[1]
    P = CompletionProblem(mean, dtype="float64", sample_weight=counts)
    f1, f2 = _random_factors(P, seed=1)[0], _random_factors(P, seed=2)[0]
    X1, X2 = _dense_model([f1], P.shape), _dense_model([f2], P.shape)
    (v1, g1), (v2, _) = (_naive_value_and_gradient(noisy, X) for X in (X1, X2))
    G = _dense_gradients(P)(P.loss_grad(P.predict(f1)))[0]
    torch.testing.assert_close(G, g1)
    delta = P.loss_total(P.predict(f1)) - P.loss_total(P.predict(f2))
    assert delta == pytest.approx(v1 - v2, rel=1e-10)


@pytest.mark.parametrize("kind", ["matrix", "tensor"])
def test_zero_weight_is_a_removed_entry(kind):
    entries = _matrix(m=10, n=7) if kind == "matrix" else _tensor()
    w = _weights(entries.nnz, zeros=5)
    A = CompletionProblem(entries, dtype="float64", sample_weight=w)
    B = CompletionProblem(
        entries.subset(w > 0), dtype="float64", sample_weight=w[w > 0]
    )
    f = _random_factors(A)
    f = f[0] if kind == "matrix" else f
    assert A.loss_total(A.predict(f)) == pytest.approx(B.loss_total(B.predict(f)))
    for gA, gB in zip(
        _dense_gradients(A)(A.loss_grad(A.predict(f))),
        _dense_gradients(B)(B.loss_grad(B.predict(f))),
        strict=True,
    ):
        torch.testing.assert_close(gA, gB)
    assert _default_step(A) == _default_step(B)


# -- the solvers honour the weights ----------------------------------------------
def _optimality_gap(P, factors, lam):
    """How far ``(U, s, V)`` is from the weighted problem's optimality conditions.

    ``-G V = lam U`` on the solution's subspace and ``||G||_2 <= lam`` with G
    the weighted gradient (dense, tiny problems only).
    """
    U, _, V = factors
    G = _dense_gradients(P)(P.loss_grad(P.predict(factors)))[0]
    on = torch.linalg.norm(-G @ V - lam * U) / lam
    return float(on), float(torch.linalg.matrix_norm(G, 2)) / lam


@pytest.mark.parametrize("solver", [ais_impute, soft_impute, apg])
def test_every_solver_reaches_the_weighted_optimum(solver):
    entries = _matrix(m=20, n=15)
    w = _weights(entries.nnz, zeros=4)
    P = CompletionProblem(entries, dtype="float64", sample_weight=w)
    lam = 0.3 * P.lambda_max(generator=torch.Generator().manual_seed(0))
    res = solver(P, lam=lam, tol=1e-12, max_iter=3000, random_state=0)
    on, norm = _optimality_gap(P, res.x, lam)
    assert on < 1e-4 and norm < 1 + 1e-4
    # ... and not the unweighted one.
    Q = CompletionProblem(entries, dtype="float64")
    assert _optimality_gap(Q, res.x, lam)[0] > 1e-2
    assert res.history["objective"][-1] == pytest.approx(
        P.loss_total(P.predict(res.x)) + lam * float(res.x[1].sum()), rel=1e-10
    )


def test_dc_completion_reports_the_weighted_objective():
    entries = _matrix(m=20, n=15)
    P = CompletionProblem(entries, dtype="float64", sample_weight=_weights(entries.nnz))
    res = dc_completion(P, lam=1.0, rank=2, max_outer_iter=2, random_state=0)
    U, s, V = res.x
    value = P.loss_total(P.predict((U, s, V))) + 1.0 * float(s[2:].sum())
    assert res.history["objective"][-1] == pytest.approx(value, rel=1e-10)


# -- post-processing and refinement ------------------------------------------------
def test_weighted_singular_value_refit_is_weighted_least_squares():
    entries = _matrix(m=20, n=15)
    w = _weights(entries.nnz, zeros=3)
    P = CompletionProblem(entries, dtype="float64", sample_weight=w)
    U, s, V = _random_factors(P, rank=3)[0]
    U, V = torch.linalg.qr(U)[0], torch.linalg.qr(V)[0]
    rows, cols = P.pattern.row_indices(), P.pattern.col_indices()
    Dm = (U[rows] * V[cols]).numpy()
    sw = np.sqrt(P.weight.numpy())
    theta = np.linalg.lstsq(Dm * sw[:, None], P.y.numpy() * sw, rcond=None)[0]
    G, b = _design_gram(P, U, V)
    np.testing.assert_allclose(torch.linalg.solve(G, b).numpy(), theta, rtol=1e-8)
    np.testing.assert_allclose(_theta_cg(P, U, s, V).numpy(), theta, rtol=1e-6)
    s2 = postprocess(P, U, s, V)[1]
    np.testing.assert_allclose(np.sort(s2.numpy()), np.sort(np.abs(theta)), rtol=1e-8)


def test_weighted_logistic_refit_lowers_the_weighted_loss_to_a_stationary_point():
    entries = _matrix("logistic", m=20, n=15)
    P = CompletionProblem(
        entries, loss="logistic", dtype="float64", sample_weight=_weights(entries.nnz)
    )
    U, s, V = _random_factors(P, rank=3)[0]
    U, V = torch.linalg.qr(U)[0], torch.linalg.qr(V)[0]
    U2, s2, V2 = postprocess(P, U, s, V, tol=1e-12, max_iter=500)
    assert P.loss_total(P.predict((U2, s2, V2))) < P.loss_total(P.predict((U, s, V)))
    G = _dense_gradients(P)(P.loss_grad(P.predict((U2, s2, V2))))[0]
    assert float(torch.abs((U2 * (G @ V2)).sum(0)).max()) < 1e-5


def test_refine_ignores_zero_weight_entries():
    entries = _matrix(m=20, n=15)
    w = _weights(entries.nnz, zeros=6)
    A = CompletionProblem(entries, dtype="float64", sample_weight=w)
    B = CompletionProblem(
        entries.subset(w > 0), dtype="float64", sample_weight=w[w > 0]
    )
    U, s, V = _random_factors(A, rank=2)[0]
    U, V = torch.linalg.qr(U)[0], torch.linalg.qr(V)[0]
    XA = (lambda f: (f[0] * f[1]) @ f[2].T)(refine(A, U, s, V))
    XB = (lambda f: (f[0] * f[1]) @ f[2].T)(refine(B, U, s, V))
    torch.testing.assert_close(XA, XB)


# -- centering, split, validation error -------------------------------------------
def test_weighted_centering_equals_repeated_entries_and_ignores_zero_weights():
    entries = _matrix(m=12, n=9)
    w = np.random.default_rng(0).integers(0, 4, entries.nnz).astype(float)
    rep = np.repeat(np.arange(entries.nnz), w.astype(int))
    repeated = ObservedEntries(
        entries.indices[rep], entries.values[rep], entries.shape, validate=False
    )
    for mode in ("global", "row", "both"):
        a = Centering(mode, scale=True).fit(entries, w)
        b = Centering(mode, scale=True).fit(repeated)
        assert a.mean_ == pytest.approx(b.mean_) and a.scale_ == pytest.approx(b.scale_)
        for oa, ob in zip(a.offsets_, b.offsets_, strict=True):
            np.testing.assert_allclose(oa, ob, atol=1e-12)


def test_split_weighted_is_split_entries_with_the_weights_following():
    entries = _matrix(m=12, n=9)
    w = np.arange(entries.nnz, dtype=float) + 1
    parts = split_weighted(entries, w, (0.7, 0.3), np.random.default_rng(3))
    plain = split_entries(entries, (0.7, 0.3), random_state=np.random.default_rng(3))
    lookup = dict(zip(map(tuple, entries.indices), w, strict=True))
    for (part, pw), ref in zip(parts, plain, strict=True):
        np.testing.assert_array_equal(part.indices, ref.indices)
        np.testing.assert_array_equal(pw, [lookup[tuple(i)] for i in part.indices])


def test_validation_error_is_weighted():
    train, held = split_entries(_matrix(m=12, n=9), (0.7, 0.3), random_state=0)
    vw = _weights(held.nnz, zeros=2)
    P = CompletionProblem(train, validation=held, dtype="float64", validation_weight=vw)
    f = _random_factors(P)[0]
    X = _dense_model([f], held.shape).numpy()
    err = X[held.rows, held.cols] - held.values
    assert P.validation_score(f) == pytest.approx(
        np.sqrt(np.sum(vw * err**2) / vw.sum()), rel=1e-12
    )
    with pytest.raises(DataValidationError, match="without validation entries"):
        CompletionProblem(train, validation_weight=vw)


# -- the estimators ---------------------------------------------------------------
def _fitted_arrays(model):
    if isinstance(model, MatrixCompletion):
        return [model.U_, model.s_, model.V_]
    return [a.numpy() for f in model.factors_ for a in f]


@pytest.mark.parametrize(
    "make, data",
    [
        (lambda **k: MatrixCompletion(**k), lambda: random_entries(m=40, n=30)[0]),
        (
            lambda **k: TensorCompletion(max_iter=15, n_lambdas=3, **k),
            lambda: (
                make_low_rank_tensor(8, rank=2, n_observed=300, random_state=0).observed
            ),
        ),
    ],
    ids=["matrix", "tensor"],
)
@pytest.mark.parametrize("lam", ["auto", 1.0])
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")  # max_iter=15
@pytest.mark.bitwise_rerun
def test_unit_weights_give_bit_identical_fits(make, data, lam):
    entries = data()
    a = make(lam=lam, random_state=0, dtype="float64").fit(entries)
    b = make(lam=lam, random_state=0, dtype="float64").fit(
        entries, sample_weight=np.ones(entries.nnz)
    )
    for x, y in zip(_fitted_arrays(a), _fitted_arrays(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.lam_ == b.lam_ and a.center_ == b.center_
    np.testing.assert_array_equal(a.centering_.offsets_[0], b.centering_.offsets_[0])


def test_zero_weight_entries_do_not_change_a_fixed_lambda_fit():
    entries = random_entries(m=40, n=30, frac=0.4)[0]
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 2.0, entries.nnz)
    w[rng.random(entries.nnz) < 0.2] = 0.0
    garbage = entries.with_values(np.where(w > 0, entries.values, 1e3))
    kw = dict(lam=2.0, center="both", random_state=0, dtype="float64", tol=1e-8)
    a = MatrixCompletion(**kw).fit(garbage, sample_weight=w)
    b = MatrixCompletion(**kw).fit(entries.subset(w > 0), sample_weight=w[w > 0])
    np.testing.assert_allclose(a.to_dense(), b.to_dense(), atol=1e-5)


def test_weights_steer_the_fit_and_the_score():
    entries, U, V = random_entries(m=40, n=30, frac=0.5)
    truth = U @ V.T
    rng = np.random.default_rng(0)
    bad = rng.random(entries.nnz) < 0.15
    noisy = entries.with_values(entries.values + bad * rng.normal(0, 20, entries.nnz))
    w = np.where(bad, 0.0, 1.0)
    weighted = MatrixCompletion(center="none", random_state=0).fit(
        noisy, sample_weight=w
    )
    plain = MatrixCompletion(center="none", random_state=0).fit(noisy)
    rows, cols = np.nonzero(np.ones_like(truth))
    err = lambda m: np.sqrt(np.mean((m.predict(rows, cols) - truth.ravel()) ** 2))  # noqa: E731
    assert err(weighted) < 0.5 * err(plain)
    # score: the weighted RMSE; weights 1 is the plain score.
    pred = weighted.predict(noisy.rows, noisy.cols)
    sw = rng.uniform(0, 2, noisy.nnz)
    assert weighted.score(noisy, sample_weight=sw) == pytest.approx(
        -np.sqrt(np.sum(sw * (pred - noisy.values) ** 2) / sw.sum())
    )
    assert weighted.score(noisy, sample_weight=np.ones(noisy.nnz)) == pytest.approx(
        weighted.score(noisy)
    )


def test_weighted_accuracy_of_binary_losses():
    entries = _labels(random_entries(m=30, n=20)[0], "logistic")
    model = MatrixCompletion(lam=1.0, loss="logistic", random_state=0).fit(
        entries, sample_weight=_weights(entries.nnz)
    )
    sw = _weights(entries.nnz, seed=1)
    hit = model.predict(entries.rows, entries.cols) == entries.values
    assert model.score(entries, sample_weight=sw) == pytest.approx(
        np.sum(sw * hit) / sw.sum()
    )


BAD_WEIGHTS = [
    (lambda n: np.ones(n - 1), "one weight per entry"),
    (lambda n: np.ones((n, 1)), "one weight per entry"),
    (lambda n: np.r_[-1.0, np.ones(n - 1)], "negative, NaN or infinite"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "entry 0 has nan"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], "negative, NaN or infinite"),
    (lambda n: np.zeros(n), "0 for every entry"),
    (lambda n: np.array(["a"] * n), "must be real numbers"),
    (lambda n: np.ones(n, dtype=bool), "must be real numbers"),
]


@pytest.fixture(scope="module", params=["matrix", "tensor"])
def fitted_small(request):
    """A fitted estimator and its entries, for the bad-weight checks."""
    with pytest.warns(ConvergenceWarning):  # max_iter=5
        if request.param == "matrix":
            entries = _matrix()
            return MatrixCompletion(lam=1.0, max_iter=5).fit(entries), entries
        entries = _tensor()
        return TensorCompletion(lam=1.0, max_iter=5).fit(entries), entries


@pytest.mark.parametrize("bad, match", BAD_WEIGHTS)
def test_bad_weights_are_library_errors(bad, match, fitted_small):
    model, entries = fitted_small
    unfitted = type(model)(lam=1.0, max_iter=5)
    with pytest.raises(DataValidationError, match=match):
        unfitted.fit(entries, sample_weight=bad(entries.nnz))
    with pytest.raises(DataValidationError, match=match):
        CompletionProblem(entries, sample_weight=bad(entries.nnz))
    with pytest.raises(DataValidationError, match=match):
        model.score(entries, sample_weight=bad(entries.nnz))


def test_a_held_out_part_of_zero_weight_is_refused():
    entries = random_entries(m=30, n=20)[0]
    w = np.zeros(entries.nnz)
    w[0] = 1.0
    with pytest.raises(DataValidationError, match="sample_weight 0"):
        MatrixCompletion(random_state=0).fit(entries, sample_weight=w)


def test_refit_weights_append_one_per_new_validation_entry():
    entries = _matrix(m=12, n=9)
    train, held = split_entries(entries, (0.7, 0.3), random_state=0)
    w = _weights(train.nnz)
    overlap = held.subset(np.arange(3))
    assert refit_sample_weight(train, None, w) is w
    assert refit_sample_weight(train, held, None) is None
    np.testing.assert_array_equal(
        refit_sample_weight(train, held, w), np.r_[w, np.ones(held.nnz)]
    )
    # Positions already in the training entries add nothing.
    grown = refit_entries(train, overlap)
    ones = np.ones(grown.nnz)
    assert grown.nnz == train.nnz + 3
    assert refit_sample_weight(grown, overlap, ones) is ones
    model = MatrixCompletion(random_state=0, n_lambdas=3).fit(
        train, validation=held, sample_weight=w
    )
    assert np.isfinite(model.path_["scores"]).all()
