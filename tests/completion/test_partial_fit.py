"""MatrixCompletion / TensorCompletion.partial_fit: fold-in and warm refits."""

import numpy as np
import pytest
import torch

import embedopt
from embedopt import DataValidationError, InvalidParameterError
from embedopt.completion import Centering, MatrixCompletion, TensorCompletion
from embedopt.completion.fold_in import as_svd, fold_in_factors, solve_rows
from embedopt.completion.losses import get_loss
from embedopt.data import ObservedEntries, make_low_rank_matrix, make_low_rank_tensor
from tests._persistence import assert_same_estimator

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")

E = make_low_rank_matrix(80, rank=3, random_state=0).observed


def _converged(loss="square", center="none", entries=E, **kw):
    """A nuclear-norm fit converged far below the defaults' tolerance, no
    post-processing."""
    return MatrixCompletion(
        lam=kw.pop("lam", 4.0),
        regularizer="nuclear",
        loss=loss,
        postprocess=False,
        tol=1e-10,
        max_iter=3000,
        center=center,
        dtype="float64",
        random_state=0,
        device="cpu",
        **kw,
    ).fit(entries)


def _without(factors, rows, cols):
    U, s, V = (f.clone() for f in factors)
    U[rows], V[cols] = 0, 0
    return U, s, V


def _masks(rows, cols, shape):
    new = [np.zeros(n, bool) for n in shape]
    new[0][rows], new[1][cols] = True, True
    return new


def test_fold_in_of_a_fitted_row_gives_that_row_back():
    # Every row of a converged nuclear-norm solution is the ridge solve (1)
    # given the other side: the KKT condition -G V = lam U, row by row.
    model = _converged()
    rows, cols = [3, 7, 40], [5, 66]
    out = fold_in_factors(
        _without(model.factors_, rows, cols),
        E.indices,
        E.values,
        None,
        _masks(rows, cols, E.shape),
        lam=model.lam_,
        loss=model._loss,
    )
    np.testing.assert_allclose(out[0][rows], model.factors_[0][rows], atol=1e-6)
    np.testing.assert_allclose(out[2][cols], model.factors_[2][cols], atol=1e-6)
    # the other rows are not touched, bit for bit
    keep = np.setdiff1d(np.arange(80), rows)
    assert torch.equal(out[0][keep], model.factors_[0][keep])


def test_ridge_rows_match_the_naive_normal_equations_with_weights():
    rng = np.random.default_rng(0)
    B = torch.as_tensor(rng.standard_normal((30, 4)))
    rows = rng.integers(0, 5, 60)
    cols = rng.integers(0, 30, 60)
    y, w = rng.standard_normal(60), rng.uniform(0.2, 2.0, 60)
    got = solve_rows(rows, cols, y, w, B, n_rows=6, lam=0.7, loss=get_loss("square"))
    for i in range(6):
        J = rows == i
        Bj = B.numpy()[cols[J]]
        A = Bj.T @ (w[J, None] * Bj) + 0.7 * np.eye(4)
        np.testing.assert_allclose(got[i], np.linalg.solve(A, Bj.T @ (w[J] * y[J])))
    assert not got[5].any()  # a row without entries is 0


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_fold_in_rows_of_other_losses_are_stationary(loss):
    rng = np.random.default_rng(1)
    B = torch.as_tensor(rng.standard_normal((20, 3)))
    rows, cols = rng.integers(0, 4, 50), rng.integers(0, 20, 50)
    y = np.where(rng.random(50) < 0.5, -1.0, 1.0)
    lam, fn = 0.5, get_loss(loss)
    a = solve_rows(rows, cols, y, None, B, n_rows=4, lam=lam, loss=fn)
    a = a.clone().requires_grad_(True)
    x = (a[torch.as_tensor(rows)] * B[torch.as_tensor(cols)]).sum(1)
    total = fn.value(x, torch.as_tensor(y)).sum() + lam / 2 * (a * a).sum()
    (grad,) = torch.autograd.grad(total, a)
    assert float(grad.abs().max()) < 1e-5


def test_fold_in_of_a_logistic_fit_gives_its_rows_back():
    signs = ObservedEntries(E.indices, np.where(E.values >= 0, 1.0, -1.0), E.shape)
    model = _converged("logistic", entries=signs, lam=2.0)
    rows = [2, 11]
    out = fold_in_factors(
        _without(model.factors_, rows, []),
        signs.indices,
        signs.values,
        None,
        _masks(rows, [], E.shape),
        lam=model.lam_,
        loss=model._loss,
    )
    np.testing.assert_allclose(out[0][rows], model.factors_[0][rows], atol=1e-4)


def test_centering_fold_in_is_the_fixed_point_of_the_fitted_offsets():
    values = (
        E.values + np.random.default_rng(0).normal(3, 1, E.shape[0])[E.indices[:, 0]]
    )
    entries = E.with_values(values)
    cen = Centering("both", n_sweeps=200).fit(entries)
    fitted = [o.copy() for o in cen.offsets_]
    new = _masks([4, 9], [12], E.shape)
    cen.offsets_[0][new[0]], cen.offsets_[1][new[1]] = 0, 0
    cen.fold_in(entries, new)
    np.testing.assert_allclose(cen.offsets_[0], fitted[0], atol=1e-6)
    np.testing.assert_allclose(cen.offsets_[1], fitted[1], atol=1e-6)


def _frame_parts(held_users=(5, 17), held_item=42):
    pd = pytest.importorskip("pandas")
    u = np.char.add("u", E.indices[:, 0].astype(str))
    i = np.char.add("i", E.indices[:, 1].astype(str))
    df = pd.DataFrame({"user": u, "item": i, "rating": E.values + 3})
    held = df.user.isin([f"u{k}" for k in held_users]) | (df.item == f"i{held_item}")
    return df, held


def test_new_users_and_items_join_the_ids_and_known_predictions_stay():
    df, held = _frame_parts()
    model = MatrixCompletion(random_state=0, device="cpu").fit(df[~held])
    known = df[~held].iloc[:50]
    before = model.predict(known.user, known.item)
    ranks = model.rank_
    model.partial_fit(df[held])
    assert list(model.user_ids_) == sorted(df.user.unique())
    assert list(model.item_ids_) == sorted(df.item.unique())
    assert model.shape_ == (80, 80) and model.entries_.nnz == len(df)
    np.testing.assert_array_equal(model.predict(known.user, known.item), before)
    assert model.rank_ == ranks
    # the folded-in users predict their own ratings about as well as a full fit
    full = MatrixCompletion(random_state=0, device="cpu").fit(df)
    part = df[held]
    err = np.sqrt(np.mean((model.predict(part.user, part.item) - part.rating) ** 2))
    ref = np.sqrt(np.mean((full.predict(part.user, part.item) - part.rating) ** 2))
    assert err < 1.5 * ref + 0.02


def test_fold_in_agrees_with_the_full_solver_when_one_user_is_added():
    # the solver on every entry moves the item side a little; the fold-in
    # keeps it fixed: close, not equal
    rest = E.subset(np.flatnonzero(E.indices[:, 0] != 10))
    user = E.subset(np.flatnonzero(E.indices[:, 0] == 10))
    full = _converged()
    part = _converged(entries=rest)
    part.partial_fit(user)
    cols = np.arange(80)
    got = part.predict(np.full(80, 10), cols)
    want = full.predict(np.full(80, 10), cols)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_positions_grow_the_shape():
    rest = E.subset(np.flatnonzero(E.indices[:, 0] < 70))
    rows, cols, vals = (a[E.indices[:, 0] >= 70] for a in (*E.indices.T, E.values))
    model = MatrixCompletion(lam=2.0, random_state=0, device="cpu")
    model.fit((rest.indices[:, 0], rest.indices[:, 1], rest.values))
    assert model.shape_[0] == 70
    model.partial_fit((rows, cols, vals))
    assert model.shape_ == (80, 80) and model.U_.shape[0] == 80
    assert model.user_ids_ is None
    assert np.isfinite(model.predict(rows, cols)).all()


def test_a_new_entry_at_a_known_position_replaces_it():
    model = MatrixCompletion(lam=2.0, random_state=0, device="cpu").fit(E)
    U = model.U_.copy()
    r, c = E.indices[0]
    model.partial_fit(([r], [c], [99.0]))
    assert model.entries_.nnz == E.nnz
    at = np.flatnonzero((model.entries_.indices == [r, c]).all(1))
    assert model.entries_.values[at].tolist() == [99.0]
    np.testing.assert_array_equal(model.U_, U)  # refit="new": nothing moves


def test_refit_all_reaches_the_cold_objective_at_the_fitted_lambda():
    rest = E.subset(np.flatnonzero(E.indices[:, 0] >= 3))
    new = E.subset(np.flatnonzero(E.indices[:, 0] < 3))
    warm = MatrixCompletion(random_state=0, device="cpu").fit(rest)
    warm.partial_fit(new, refit="all")
    cold = MatrixCompletion(
        lam=warm.lam_, center=warm.center_, random_state=0, device="cpu"
    ).fit(E)
    assert warm.objective_ <= cold.objective_ * (1 + 1e-3)
    assert warm.n_iter_ < cold.n_iter_
    np.testing.assert_allclose(warm.centering_.mean_, cold.centering_.mean_)


def test_sample_weights_follow_the_entries():
    rest = E.subset(np.flatnonzero(E.indices[:, 0] >= 3))
    new = E.subset(np.flatnonzero(E.indices[:, 0] < 3))
    # the nuclear norm: its fold-in ridge is the scalar lam
    kw = dict(lam=2.0, regularizer="nuclear", random_state=0, device="cpu")
    model = MatrixCompletion(**kw).fit(rest)
    assert model.sample_weight_ is None
    model.partial_fit(new, sample_weight=np.full(new.nnz, 2.0))
    assert model.sample_weight_.tolist() == [1.0] * rest.nnz + [2.0] * new.nnz
    # weight 2 on a user's square loss is the ridge lam / 2
    ref = MatrixCompletion(**kw).fit(rest)
    ref.lam_ = 1.0
    ref.partial_fit(new)
    np.testing.assert_allclose(model.U_[:3], ref.U_[:3], rtol=1e-5, atol=1e-7)


def test_unfitted_partial_fit_is_fit():
    a = MatrixCompletion(lam=2.0, random_state=0, device="cpu").partial_fit(E)
    b = MatrixCompletion(lam=2.0, random_state=0, device="cpu").fit(E)
    np.testing.assert_array_equal(a.U_, b.U_)


def test_refusals():
    df, held = _frame_parts()
    model = MatrixCompletion(lam=2.0, random_state=0, device="cpu").fit(df[~held])
    U = model.U_.copy()
    with pytest.raises(InvalidParameterError, match="refit"):
        model.partial_fit(df[held], refit="some")
    with pytest.raises(DataValidationError, match="column"):
        model.partial_fit(df[held].iloc[:, :2].assign(a=1, b=2))
    with pytest.raises(DataValidationError):
        model.partial_fit(df[held].iloc[:0])
    with pytest.raises(DataValidationError, match="strings"):
        model.partial_fit(([1, 2], [3, 4], [1.0, 2.0]))
    np.testing.assert_array_equal(model.U_, U)  # a refused call changes nothing
    assert model.shape_ == (78, 79)


def test_save_load_after_partial_fit(tmp_path):
    df, held = _frame_parts()
    model = MatrixCompletion(lam=2.0, random_state=0, device="cpu").fit(df[~held])
    model.save(tmp_path / "m.embedopt")
    loaded = embedopt.load(tmp_path / "m.embedopt")
    assert_same_estimator(model, loaded)
    model.partial_fit(df[held])
    loaded.partial_fit(df[held])
    assert_same_estimator(model, loaded)
    model.save(tmp_path / "n.embedopt")
    assert_same_estimator(model, embedopt.load(tmp_path / "n.embedopt"))


def test_as_svd_keeps_the_product():
    rng = np.random.default_rng(0)
    U, V = torch.as_tensor(rng.random((9, 3))), torch.as_tensor(rng.random((7, 3)))
    s = torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)
    Q, t, W = as_svd(U, s, V)
    torch.testing.assert_close((Q * t) @ W.T, (U * s) @ V.T)
    torch.testing.assert_close(Q.T @ Q, torch.eye(3, dtype=torch.float64))


def test_tensor_partial_fit_grows_a_mode_and_refits_all():
    T = make_low_rank_tensor(12, random_state=0).observed
    low = T.indices[:, 0] < 10
    idx, vals = T.indices, T.values
    model = TensorCompletion(lam=1.0, max_iter=30, random_state=0, device="cpu")
    model.fit((idx[low], vals[low]))
    assert model.shape_[0] == 10
    with pytest.raises(InvalidParameterError, match="refit='all'"):
        model.partial_fit((idx[~low], vals[~low]))
    model.partial_fit((idx[~low], vals[~low]), refit="all")
    assert model.shape_ == T.shape and model.entries_.nnz == T.nnz
    assert np.isfinite(model.predict(idx[~low])).all()


@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_recommend_after_partial_fit_excludes_what_was_added_in_the_new_codes():
    # partial_fit re-sorts the id codes: the seen pairs of recommend must move
    # with them (else a row of someone else) and take in the added entries
    rng = np.random.default_rng(0)
    r, c = rng.integers(0, 30, 400), rng.integers(0, 20, 400)
    keep = np.unique(r * 20 + c, return_index=True)[1]
    r, c, v = r[keep], c[keep], rng.normal(size=keep.size)
    users = np.array([f"u{i:02d}" for i in r])
    items = np.array([f"i{j:02d}" for j in c])
    first = r != 0  # u00 arrives later and takes code 0
    model = MatrixCompletion(lam=1.0, random_state=0)
    model.fit((users[first], items[first], v[first]))
    model.partial_fit((users[~first], items[~first], v[~first]))
    for user in ("u00", "u05"):
        ids, _ = model.recommend([user], k=20)
        rated = set(items[users == user])
        assert not rated & set(ids[0])
        assert len([i for i in ids[0] if i]) == 20 - len(rated)


def test_fold_in_of_a_frozen_mcp_fit_gives_that_row_back():
    # A converged fit with MCP frozen at its start solves the weighted
    # nuclear norm lam sum_l w_l sigma_l: its rows are the per-component
    # ridge solves lam w_l of (1), which fold-in uses for a nonconvex model.
    from embedopt.completion.fold_in import component_ridge
    from embedopt.completion.path import _frozen_regularizer
    from embedopt.completion.problem import CompletionProblem
    from embedopt.completion.proximal import proximal_completion
    from embedopt.completion.regularizers import MinimaxConcavePenalty

    problem = CompletionProblem(E, dtype="float64")
    reg = MinimaxConcavePenalty(gamma=4.0)
    start = proximal_completion(problem, lam=4.0, regularizer=reg, tol=1e-8).x
    options = _frozen_regularizer({"regularizer": reg}, start, 4.0)
    U, s, V = proximal_completion(
        problem, start, lam=4.0, tol=1e-12, max_iter=5000, **options
    ).x
    assert (options["weights"][: s.numel()] < 1).any()  # not the nuclear norm
    rows, cols = [3, 7, 40], [5, 66]
    ridge = component_ridge(4.0, options["weights"][: s.numel()], 1e-12)
    out = fold_in_factors(
        _without((U, s, V), rows, cols),
        E.indices,
        E.values,
        None,
        _masks(rows, cols, E.shape),
        lam=ridge,
        loss=get_loss("square"),
    )
    np.testing.assert_allclose(out[0][rows], U[rows], atol=1e-6)
    np.testing.assert_allclose(out[2][cols], V[cols], atol=1e-6)
