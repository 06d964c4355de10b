"""The bugs the property suite found, each pinned by a plain, seeded test.

Every test here failed before its fix with an internal error (NumPy's or
torch's ``ValueError``, ``TypeError``, ``IndexError``, ``MemoryError``,
``RuntimeError``), a NumPy warning, a hang, or a silent result, and now
checks the library's own error or a valid result. They need no hypothesis.
"""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest
import torch

from embedopt import (
    DataValidationError,
    DataWarning,
    InvalidParameterError,
    NumericalInstabilityError,
)
from embedopt._core import as_array, check_param
from embedopt.cli import main
from embedopt.completion import MatrixCompletion
from embedopt.data import (
    ObservedEntries,
    as_interactions,
    as_side_features,
    load_digits,
    load_eurodist,
    load_glove,
    load_movielens,
    load_movielens_side_features,
    load_music_triplets,
    make_correlated_gaussian,
    make_low_rank_matrix,
    make_planted_embedding,
)
from embedopt.metrics import rmse
from embedopt.nn import EmbeddingTower
from embedopt.ordinal import OrdinalEmbedding
from embedopt.quantization import ProductQuantizer, TwoTowerRetrieval
from embedopt.sdp import ColoredMVU, KernelLearning, knn_laplacian
from embedopt.similarity import TwoTowerModel, get_loss

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")

RAGGED = [[0, 1], [2]]
HUGE = 2**40  # far beyond any memory


# -- _core --------------------------------------------------------------------------


def test_as_array_refuses_ragged_lists_with_the_library_error():
    with pytest.raises(DataValidationError, match="X could not be read as an array"):
        as_array(RAGGED, "X")
    np.testing.assert_array_equal(as_array(torch.arange(3), "X"), [0, 1, 2])


@pytest.mark.parametrize("constraint", [["auto"], ["dtype"]], ids=["options", "dtype"])
def test_an_array_parameter_is_refused_not_compared(constraint):
    from embedopt._core import Options

    cons = [Options(constraint)] if constraint == ["auto"] else constraint
    with pytest.raises(InvalidParameterError, match="'p' parameter of X"):
        check_param("X", "p", np.array([1.0, 2.0]), cons)


@pytest.mark.parametrize(
    ("est", "param"),
    [(MatrixCompletion(lam=1.0), "center_reg"), (TwoTowerRetrieval(), "margin")],
)
def test_a_float_parameter_given_an_int_beyond_int64_is_refused(est, param):
    # numpy / torch raised OverflowError on it deep inside the fit
    est.set_params(**{param: 2**63})
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
        est.fit(([0, 1], [0, 1], [1.0, 2.0]))


# -- data ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(12.5, 10), ("12", 10), (np.nan, 10), 12, (True, 3)])
def test_observed_entries_refuse_a_shape_that_is_not_ints(shape):
    with pytest.raises(DataValidationError, match="shape must be a tuple of ints"):
        ObservedEntries(([0, 1], [0, 1]), [1.0, 2.0], shape)


def test_boolean_index_arrays_in_a_tuple_are_refused_not_cast():
    # np.stack used to turn (bool, int) into int64: True -> row 1
    with pytest.raises(DataValidationError, match="got booleans"):
        ObservedEntries((np.array([True, False]), np.array([0, 1])), [1.0, 2.0])


def test_ragged_dense_and_index_input_is_refused():
    with pytest.raises(DataValidationError, match="could not be read"):
        ObservedEntries.from_dense([[1.0, np.nan], [2.0]])
    with pytest.raises(DataValidationError, match="could not be read"):
        ObservedEntries((np.array(5), np.array([0, 1])), [1.0, 2.0])


def test_complex_interaction_values_are_refused():
    with pytest.raises(DataValidationError, match="real numbers"):
        as_interactions(([0, 1], [1, 0], np.array([1 + 1j, 2.0])))


def test_side_features_ragged_wrapped_or_beyond_float32_are_refused():
    with pytest.raises(DataValidationError, match="could not be read"):
        as_side_features({"g": [[0], [1, 2]]}, 2, "user")
    with pytest.raises(DataValidationError, match="above 2\\*\\*63"):
        as_side_features({"g": np.array([0, 2**64 - 1], dtype=np.uint64)}, 2, "user")
    with pytest.raises(DataValidationError, match="float32 range"):
        as_side_features({"d": np.full((2, 1), 1e300)}, 2, "item")


def test_synthetic_data_of_impossible_size_is_refused_before_drawing():
    # NumPy raised "Maximum allowed dimension exceeded" (embedopt complete
    # --size 2**63, quantize --n 2**63, ordinal --dims 2**63)
    with pytest.raises(DataValidationError, match="would take at least"):
        make_planted_embedding(12, 2**63)
    with pytest.raises(DataValidationError, match="would take at least"):
        make_low_rank_matrix(2**63, rank=2)
    with pytest.raises(DataValidationError, match="would take at least"):
        make_correlated_gaussian(2**63, 4)


# -- dataset files ------------------------------------------------------------------


def _folder(tmp_path, name, files):
    folder = tmp_path / name
    folder.mkdir()
    for file, content in files.items():
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(folder / file, mode) as fh:
            fh.write(content)
    return tmp_path


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("1\t1\t5\t881250949\n1\tx\t3\t881250949\n", "u.data is not in the expected"),
        ("1\t1\t5\t881250949\n2\t1\n", "u.data is not in the expected"),
        ("1.5\t1\t5\t881250949\n", "user ids must be integers"),
        ("", "has no ratings"),
    ],
)
def test_malformed_movielens_ratings_name_the_file(tmp_path, content, match):
    root = _folder(tmp_path, "movielens-100k", {"u.data": content})
    with pytest.raises(DataValidationError, match=match):
        load_movielens("100k", root)


def test_malformed_movielens_side_features_name_the_file(tmp_path):
    files = {
        "u.data": "1\t1\t5\t881250949\n2\t1\t3\t881250949\n",
        "u.occupation": "artist\n",
        "u.user": "1|24|M|artist|85711\n2|x|F|artist\n",
        "u.item": "1|Toy|01-Jan-1995||url|" + "|".join("0" * 19) + "\n",
    }
    root = _folder(tmp_path, "movielens-100k", files)
    with pytest.raises(DataValidationError, match=r"u\.user is not in the expected"):
        load_movielens_side_features(root, dataset="100k")
    (root / "movielens-100k" / "u.user").write_text("1|24|M|a|1\n2|30|F|a|2\n")
    (root / "movielens-100k" / "u.item").write_text("1|Toy|01-Jan-1995|0|0\n")
    with pytest.raises(DataValidationError, match=r"u\.item is not in the expected"):
        load_movielens_side_features(root, dataset="100k")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('"",A,B\nA,0,1\nB,1\n', "is not in the expected format"),
        ('"",A,B\nA,0,x\nB,1,0\n', "is not in the expected format"),
        ('"",A,B,C\nA,0,1\nB,1,0\n', "3 city names but a 2 x 2"),
        ('"",A,B\nA,0,-1\nB,-1,0\n', "non-negative"),
        ("", "is not in the expected format"),
    ],
)
def test_malformed_eurodist_names_the_file(tmp_path, content, match):
    root = _folder(tmp_path, "eurodist", {"eurodist.csv": content})
    with pytest.raises(DataValidationError, match=match):
        load_eurodist(root)


@pytest.mark.parametrize(
    ("triplets", "labels", "match"),
    [
        ("i,j,k\n1,2,x\n", None, "is not in the expected format"),
        ("i,j,k\n", None, "0 lines"),
        ("i,j,k\n0,1,2\n", None, "1-based"),
        ("i,j,k\n1,2,3\n", "a,b\n1,0\n", "1 rows of tags"),
        ("i,j,k\n1,2,3\n", "", "is not in the expected format"),
    ],
)
def test_malformed_music_triplets_name_the_file(tmp_path, triplets, labels, match):
    files = {"music_triplets.csv": triplets}
    if labels is not None:
        files["music_label_matrix.csv"] = labels
    root = _folder(tmp_path, "music-aset400-triplets", files)
    with pytest.raises(DataValidationError, match=match):
        load_music_triplets(root)


def test_music_triplets_with_astral_text_do_not_crash_numpy(tmp_path):
    # np.loadtxt(..., dtype=np.int64) segfaults (NumPy 2.4.6, about 3 runs in
    # 4) on a field holding a character beyond U+FFFF: the loader parses floats
    content = "i,j,k\n1,\U000de794,3\n".encode()
    root = _folder(tmp_path, "music-aset400-triplets", {"music_triplets.csv": content})
    with pytest.raises(DataValidationError, match="is not in the expected format"):
        load_music_triplets(root)
    (root / "music-aset400-triplets" / "music_triplets.csv").write_text("i\n1,2,2.5\n")
    with pytest.raises(DataValidationError, match="artist indices must be integers"):
        load_music_triplets(root)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        # mtime=0: the same bytes at every collection (pytest-xdist's workers
        # must collect the same test ids; gzip's header holds the time)
        (gzip.compress(b"1,2,0\n1,x,1\n", mtime=0), "is not in the expected format"),
        (b"not gzip", "is not in the expected format"),
        (gzip.compress(b"1,2,0.5\n", mtime=0), "labels must be integers"),
    ],
    ids=["bad-value", "not-gzip", "float-label"],
)
def test_malformed_digits_name_the_file(tmp_path, content, match):
    root = _folder(tmp_path, "sklearn-digits", {"digits.csv.gz": content})
    with pytest.raises(DataValidationError, match=match):
        load_digits(root)


def test_malformed_glove_names_the_file(tmp_path):
    root = _folder(tmp_path, "glove-6b-50d", {"glove_6B_50d_emb.npy": b"junk"})
    with pytest.raises(DataValidationError, match="is not in the expected format"):
        load_glove(root)
    np.save(root / "glove-6b-50d" / "glove_6B_50d_emb.npy", np.array(["a", "b"]))
    with pytest.raises(DataValidationError, match="expected a 2-D array"):
        load_glove(root)


# -- metrics, towers ------------------------------------------------------------------


def test_rmse_does_not_overflow_near_the_float64_range():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rmse([1e300, 0.0], [0.0, 0.0]) == pytest.approx(1e300 / np.sqrt(2))


def test_a_table_beyond_memory_is_refused_before_allocation():
    with pytest.raises(DataValidationError, match="embedding table of"):
        EmbeddingTower(HUGE, 4)


# -- completion -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def completion_model():
    rng = np.random.default_rng(0)
    rows, cols = np.nonzero(rng.random((10, 8)) < 0.6)
    return MatrixCompletion(lam=1.0, max_iter=10, random_state=0, device="cpu").fit(
        (rows, cols, rng.standard_normal(rows.size))
    )


def test_completion_predict_refuses_ragged_positions(completion_model):
    with pytest.raises(DataValidationError, match="could not be read"):
        completion_model.predict([[0, 1], [2]])


@pytest.mark.parametrize("bad", [None, "5", [3], -1, True, 2.5])
def test_to_dense_checks_max_elements(completion_model, bad):
    with pytest.raises(InvalidParameterError, match="'max_elements' parameter"):
        completion_model.to_dense(bad)


def test_completion_score_is_finite_for_huge_values(completion_model):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = completion_model.score(([0, 1], [0, 1], [1e300, 0.0]))
    assert np.isfinite(score) and score < -1e299


# -- ordinal --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ordinal_model():
    prob = make_planted_embedding(10, 2, n_train=100, n_test=10, random_state=0)
    return OrdinalEmbedding(2, max_iter=2, random_state=0, device="cpu").fit(prob.train)


def test_ordinal_transform_refuses_ragged_objects(ordinal_model):
    with pytest.raises(DataValidationError, match="could not be read"):
        ordinal_model.transform(RAGGED)


def test_ordinal_batch_size_may_be_a_small_numpy_int():
    # np.uint8(2) overflowed in the solver's step arithmetic (2**20 // b)
    prob = make_planted_embedding(10, 2, n_train=50, n_test=10, random_state=0)
    est = OrdinalEmbedding(2, batch_size=np.uint8(2), max_iter=1, random_state=0)
    assert np.isfinite(est.fit(prob.train).embedding_).all()


def test_ordinal_init_of_text_is_refused():
    prob = make_planted_embedding(10, 2, n_train=50, n_test=10, random_state=0)
    est = OrdinalEmbedding(2, max_iter=2, random_state=0, device="cpu")
    with pytest.raises(DataValidationError, match="init must be a real"):
        est.fit(prob.train, init=np.full((10, 2), "x"))


# -- quantization ---------------------------------------------------------------------


def test_rotation_init_of_text_is_refused():
    X = np.random.default_rng(0).standard_normal((40, 4)).astype(np.float32)
    pq = ProductQuantizer(2, 4, rotation_init=["a", "b"], random_state=0)
    with pytest.raises(DataValidationError, match="rotation_init must be a finite"):
        pq.fit(X)


def test_decode_refuses_ragged_codes():
    X = np.random.default_rng(0).standard_normal((40, 4)).astype(np.float32)
    pq = ProductQuantizer(2, 4, max_iter=1, random_state=0, device="cpu").fit(X)
    with pytest.raises(DataValidationError, match="codes could not be read"):
        pq.decode([[0, 1], [2]])


@pytest.fixture(scope="module")
def retrieval_model():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 10, 80)
    items = (users % 3) * 2 + rng.integers(0, 2, 80)
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    return TwoTowerRetrieval(
        4,
        hidden=4,
        n_subquantizers=2,
        n_centroids=4,
        batch_size=8,
        warmup_steps=2,
        n_steps=2,
        warm_start_samples=16,
        warm_start_iter=1,
        log_every=1,
        random_state=0,
        device="cpu",
    ).fit((pairs[:, 0], pairs[:, 1]))


@pytest.mark.parametrize("users", [[0.7], ["1"], [True], None, slice(0, 2)])
def test_retrieval_recommend_refuses_users_that_are_not_ints(retrieval_model, users):
    # floats and digit strings used to be truncated / parsed silently
    with pytest.raises(DataValidationError, match="users"):
        retrieval_model.recommend(users, 2)


def test_retrieval_recommend_caps_k_at_the_number_of_items(retrieval_model):
    ids, scores = retrieval_model.recommend([0, 1], HUGE, exclude_seen=False)
    # (that was a 24 TiB allocation)
    assert ids.shape == scores.shape
    assert ids.shape == (2, retrieval_model.shape_[1])
    assert ((ids >= 0) & (ids < retrieval_model.shape_[1])).all()


def test_retrieval_learning_rate_beyond_the_dtype_is_refused():
    # torch's Adam raised "value cannot be converted to type float"
    est = TwoTowerRetrieval(
        4,
        hidden=4,
        n_subquantizers=2,
        n_centroids=2,
        batch_size=4,
        warmup_steps=2,
        n_steps=2,
        warm_start_samples=4,
        warm_start_iter=1,
        learning_rate=1e300,
        random_state=0,
        device="cpu",
    )
    with pytest.raises(InvalidParameterError, match="'learning_rate' parameter"):
        est.fit((np.arange(6), np.arange(6) % 3))


def test_retrieval_fit_refuses_huge_indices_and_batches_before_allocation():
    est = TwoTowerRetrieval(
        4,
        hidden=4,
        n_subquantizers=2,
        n_centroids=2,
        batch_size=4,
        warmup_steps=1,
        n_steps=1,
        warm_start_samples=4,
        warm_start_iter=1,
        random_state=0,
        device="cpu",
    )
    with pytest.warns(DataWarning, match="inferred size"):
        with pytest.raises(DataValidationError, match="would take at least"):
            est.fit((np.array([0, 1, 2**62]), np.array([0, 1, 1])))
    with pytest.raises(DataValidationError, match="would take at least"):
        est.set_params(batch_size=10**12).fit((np.arange(6), np.arange(6) % 3))
    with pytest.raises(DataValidationError, match="would take at least"):
        est.set_params(batch_size=4).fit(
            (np.arange(6), np.arange(6) % 3),
            user_features={"g": np.array([0, 1, 2, 3, 4, HUGE])},
        )


# -- similarity -----------------------------------------------------------------------

_PAIRS = (np.arange(12) % 6, np.arange(12) % 4)


@pytest.fixture(scope="module")
def similarity_model():
    return TwoTowerModel(2, max_iter=2, random_state=0, device="cpu").fit(_PAIRS)


@pytest.mark.parametrize("flag", [None, "no", 2, np.array([True, False])])
def test_exclude_seen_must_be_a_bool(similarity_model, flag):
    with pytest.raises(InvalidParameterError, match="'exclude_seen' parameter"):
        similarity_model.recommend([0], 2, exclude_seen=flag)
    with pytest.raises(InvalidParameterError, match="'exclude_seen' parameter"):
        similarity_model.evaluate(_PAIRS, exclude_seen=flag)


def test_similarity_refuses_ragged_ids(similarity_model):
    with pytest.raises(DataValidationError, match="could not be read"):
        similarity_model.predict(RAGGED, [0, 1])


@pytest.mark.parametrize(
    ("features", "match"),
    [([np.arange(6)], "must be a dict"), ({"g": 3}, "got a scalar")],
)
def test_similarity_side_features_that_are_no_dict_of_rows(features, match):
    est = TwoTowerModel(2, max_iter=1, random_state=0, device="cpu")
    with pytest.raises(DataValidationError, match=match):
        est.fit(_PAIRS, user_features=features)


def test_similarity_huge_index_is_refused_before_allocation():
    est = TwoTowerModel(2, max_iter=1, random_state=0, device="cpu")
    with pytest.warns(DataWarning), pytest.raises(DataValidationError, match="would"):
        est.fit((np.array([0, 1, HUGE]), np.array([0, 1, 1])))


def test_a_loss_that_is_no_loss_names_the_parameter():
    est = TwoTowerModel(2, loss=float("nan"), random_state=0)
    with pytest.raises(InvalidParameterError, match="'loss' parameter"):
        est.fit(_PAIRS)


@pytest.mark.parametrize(
    ("tower", "match"),
    [
        (torch.nn.Identity(), "returned a torch.int64 tensor"),
        (torch.nn.Linear(3, 3), "failed on a probe"),
        (torch.nn.Embedding(6, 5), "one width"),
    ],
)
def test_a_custom_tower_is_probed_before_the_fit(tower, match):
    # torch raised inside the objective (vjp of int64 outputs, shape errors)
    est = TwoTowerModel(3, user_tower=tower, max_iter=1, random_state=0)
    with pytest.raises(InvalidParameterError, match=match):
        est.fit(_PAIRS)


def test_unknown_solver_options_are_refused():
    est = TwoTowerModel(
        2,
        max_iter=1,
        solver="gauss_newton",
        random_state=0,
        solver_options={"bogus": 1},
    )
    with pytest.raises(InvalidParameterError, match="key\\(s\\) \\['bogus'\\]"):
        est.fit(_PAIRS)


@pytest.mark.parametrize(
    ("loss", "match"),
    [(print, "returned <class 'NoneType'>"), (lambda y, z: 1 / 0, "ZeroDivision")],
)
def test_a_custom_loss_is_probed_before_the_fit(loss, match):
    with pytest.raises(InvalidParameterError, match=match):
        get_loss(loss)
    good = get_loss(lambda y, z: (y - z) ** 2)
    assert good.first(torch.zeros(2), torch.ones(2)).tolist() == [2.0, 2.0]


# -- sdp ------------------------------------------------------------------------------

_KL_X = (
    np.random.default_rng(0).standard_normal((12, 3)) + np.repeat([0, 3], 6)[:, None]
)


@pytest.fixture(scope="module")
def kernel_model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # two separate clusters
        return KernelLearning(2, n_neighbors=3, max_iter=20, random_state=0).fit(
            _KL_X, must_link=[[0, 1]], cannot_link=[[0, 6]]
        )


@pytest.mark.parametrize("y", [[np.nan] + [0] * 11, [None] + [0] * 11])
def test_sdp_labels_must_be_classes(y):
    with pytest.raises(DataValidationError, match="y "):
        KernelLearning(2, n_neighbors=3, random_state=0).fit(_KL_X, y=np.array(y))
    with pytest.raises(DataValidationError, match="y "):
        ColoredMVU(2, n_neighbors=3, random_state=0).fit(_KL_X, np.array(y))


@pytest.mark.parametrize(
    "pairs", [[["a", "b"]], np.array([[True, False]]), [[0, 1], [2]]]
)
def test_pairs_of_text_booleans_or_ragged_lists_are_refused(pairs):
    with pytest.raises(DataValidationError, match="must_link"):
        KernelLearning(2, n_neighbors=3, random_state=0).fit(
            _KL_X, must_link=pairs, cannot_link=[[0, 6]]
        )


def test_no_pairwise_constraints_at_all_is_refused():
    with pytest.raises(DataValidationError, match="No pairwise constraints"):
        KernelLearning(2, n_neighbors=3, random_state=0).fit(
            _KL_X, must_link=[], cannot_link=[]
        )


@pytest.mark.parametrize("X", [np.zeros((12, 0)), _KL_X + 1j])
def test_features_without_columns_or_complex_are_refused(X):
    with pytest.raises(DataValidationError, match="X must be"):
        ColoredMVU(2, n_neighbors=3, random_state=0).fit(X)


def test_kernel_indices_that_do_not_broadcast(kernel_model):
    with pytest.raises(DataValidationError, match="must broadcast together"):
        kernel_model.kernel([0, 1, 2], [0, 1])
    with pytest.raises(DataValidationError, match="could not be read"):
        kernel_model.kernel(RAGGED, 0)


@pytest.mark.parametrize(
    ("arg", "value"),
    [("n_init", None), ("n_init", 0), ("n_init", float("nan")), ("n_clusters", True)],
)
def test_cluster_checks_its_arguments(kernel_model, arg, value):
    kwargs = {"n_clusters": 2, arg: value}
    with pytest.raises(InvalidParameterError, match=f"'{arg}' parameter"):
        kernel_model.cluster(**kwargs)


@pytest.mark.parametrize(
    "params",
    [
        {"init_scale": 1e300, "solver": "bm_agd"},
        # gamma is AAGD's (the default solver on the CPU is BM-L-BFGS)
        {"init_scale": 1e300, "solver": "aagd", "gamma": "eq17"},
        {"lam": 1e300, "solver": "aagd", "gamma": "eq17"},
    ],
)
@pytest.mark.filterwarnings("ignore::embedopt.DataWarning")  # two clusters
def test_an_overflowing_sdp_solve_is_a_numerical_instability(params):
    # OverflowError / LinAlgError escaped from the solvers' step sizes
    est = ColoredMVU(2, n_neighbors=3, max_iter=5, random_state=0, **params)
    with pytest.raises(NumericalInstabilityError, match="too large"):
        est.fit(_KL_X, np.repeat([0, 1], 6))


def test_a_bandwidth_that_underflows_every_weight_is_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataValidationError, match="underflows to 0"):
            knn_laplacian(_KL_X, n_neighbors=3, bandwidth=5e-324)
        # some weights vanish: isolated vertices, no NaN in the Laplacian
        X = np.r_[_KL_X, [[1e3, 1e3, 1e3]]]
        L = knn_laplacian(X, n_neighbors=3, bandwidth=1.0, warn_disconnected=False)
    assert np.isfinite(L.toarray()).all()


def test_disconnected_graph_warnings_are_data_warnings():
    X = np.r_[np.zeros((4, 2)), np.full((4, 2), 100.0)] + np.arange(8)[:, None] * 1e-3
    with pytest.warns(DataWarning, match="connected components"):
        knn_laplacian(X, n_neighbors=2)
    with pytest.warns(DataWarning, match="connected components"):
        ColoredMVU(1, n_neighbors=2, max_iter=5, random_state=0).fit(X)


# -- the command line -----------------------------------------------------------------


def _error_line(capsys, argv, *, at_parse: bool) -> str:
    """The one error line of a command refused at parse time (SystemExit 2)
    or while running (status 2)."""
    if at_parse:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    else:
        assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("embedopt: error: "), err
    return err[0]


def test_a_path_too_long_for_the_file_system_is_an_option_error(capsys):
    line = _error_line(capsys, ["complete", "--data", "a" * 300], at_parse=True)
    assert "argument --data" in line and "File name too long" in line


def test_an_option_given_double_dash_as_its_value(capsys):
    # argparse (3.11) drops the "--" and stores [], which reached the command;
    # 3.12's keeps "--" as the value, which the option's own check refuses
    line = _error_line(capsys, ["quantize", "--data=--"], at_parse=True)
    assert "argument --data: " in line
    assert "expected one argument" in line or "'--' is neither" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["complete", "--size", "99999999999999999999"],  # np.log of a big int
        ["sdp", "--data", "synthetic", "--n", str(2**63)],  # NumPy's dimension
    ],
)
def test_huge_synthetic_sizes_end_in_one_error_line(capsys, argv):
    assert "would take at least" in _error_line(capsys, argv, at_parse=False)


def test_libsvm_feature_index_zero_is_refused_not_read_as_the_last(capsys, tmp_path):
    folder = tmp_path / "libsvm-adult"
    folder.mkdir()
    (folder / "a1a").write_text("+1 1:1 2:1\n-1 0:1\n")
    argv = ["sdp", "--data", "a1a", "--data-dir", str(tmp_path)]
    line = _error_line(capsys, argv, at_parse=False)
    assert "line 2: not a LIBSVM line" in line


def test_eurodist_with_too_few_cities_to_test_says_so(capsys, tmp_path):
    folder = tmp_path / "eurodist"
    folder.mkdir()
    D = np.abs(np.subtract.outer(np.arange(4.0), np.arange(4.0)))
    rows = ['"",A,B,C,D'] + [
        f"{c}," + ",".join(map(str, r)) for c, r in zip("ABCD", D, strict=True)
    ]
    (folder / "eurodist.csv").write_text("\n".join(rows) + "\n")
    argv = ["ordinal", "--data", "eurodist", "--data-dir", str(tmp_path)]
    line = _error_line(capsys, argv, at_parse=False)
    assert "none is left to test" in line
