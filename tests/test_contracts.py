"""The contract suite every estimator joins (DESIGN.md, test kind 4).

To add an estimator, append an :class:`EstimatorCase` to ``CASES``: how to
build it small, what to fit it on, how to get its output, the documented
options that must all run, parameters that must reach its solver, invalid
parameters and bad inputs with their errors.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import embedopt
import embedopt.completion.path as mc_module
import embedopt.quantization.estimators as pq_module
import embedopt.quantization.solvers as pq_solvers
import embedopt.quantization.two_tower as tt_module
import embedopt.sdp.estimators as kl_module
from embedopt._core import (
    DataValidationError,
    InvalidParameterError,
    NotFittedError,
    Registry,
    check_is_fitted,
    clone,
)
from embedopt.completion import (
    SOLVERS,
    MatrixCompletion,
    MinimaxConcavePenalty,
    TensorCompletion,
)
from embedopt.data import make_low_rank_tensor, make_planted_embedding
from embedopt.ordinal import LOSSES as OE_LOSSES
from embedopt.ordinal import SOLVERS as OE_SOLVERS
from embedopt.ordinal import OrdinalEmbedding
from embedopt.quantization import (
    ROTATIONS,
    ProductQuantizer,
    TwoTowerRetrieval,
)
from embedopt.quantization.two_tower import INDEX_ROTATIONS
from embedopt.sdp import SOLVERS as SDP_SOLVERS
from embedopt.sdp import ColoredMVU, KernelLearning
from embedopt.similarity import SOLVERS as SIM_SOLVERS
from embedopt.similarity import TwoTowerModel
from embedopt.similarity import estimators as sim_module
from tests._persistence import assert_same_estimator
from tests.conftest import random_entries


@dataclass
class Call:
    """Arguments of one ``fit`` call with keyword-only data (pairs, features).

    A ``bad_inputs`` entry is a tuple of positional arguments, or a ``Call``
    where ``fit`` takes part of its data by keyword.
    """

    args: tuple
    kwargs: dict

    @classmethod
    def of(cls, *args, **kwargs) -> Call:
        return cls(args, kwargs)


@dataclass
class EstimatorCase:
    name: str
    make: Callable[..., object]
    fit_args: Callable[[], tuple]
    output: Callable[[object, tuple], np.ndarray]
    fitted_attr: str
    options: list[dict] = field(default_factory=list)
    # (module, function name, {param: (value, solver kwarg)})
    wiring: list[tuple] = field(default_factory=list)
    bad_params: list[dict] = field(default_factory=list)
    bad_inputs: list[tuple[tuple | Call, type, str]] = field(default_factory=list)


#: A nonconvex regularizer given as an instance (reaches the path as it is).
_MCP = MinimaxConcavePenalty(gamma=4.0)

#: Two entries of a matrix, to pair with bad sample weights.
_TWO = ([0, 1], [0, 1], [1.0, 2.0])


def _mc_data():
    entries, _, _ = random_entries(m=24, n=18, rank=2, frac=0.6)
    return (entries,)


def _oe_data():
    prob = make_planted_embedding(20, 2, n_train=600, n_test=10, random_state=0)
    return (prob.train.indices,)


CASES = [
    EstimatorCase(
        name="MatrixCompletion",
        make=lambda **kw: MatrixCompletion(
            **{"n_lambdas": 4, "random_state": 0, "max_iter": 60, **kw}
        ),
        fit_args=_mc_data,
        output=lambda est, args: est.predict(args[0].rows, args[0].cols),
        fitted_attr="factors_",
        options=[{"solver": s} for s in SOLVERS]
        + [{"lam": 0.5, "postprocess": p} for p in (True, False)]
        + [{"center": c} for c in ("auto", "none", "global", "row", "column", "both")]
        + [
            {"scale": True},
            {"refit": False},
            {"max_rank": 2},
            {"dtype": "float64"},
            {"power_iters": 1},
            {"patience": None},
            {"verbose": 1},
            {"regularizer": "mcp"},
            {"regularizer": "tnn", "regularizer_params": {"rank": 2}},
        ],
        wiring=[
            (
                mc_module,
                "proximal_completion",
                {
                    "lam": (0.7, "lam"),
                    "max_iter": (7, "max_iter"),
                    "tol": (1e-3, "tol"),
                    "lam_decay": (0.5, "lam_decay"),
                    "power_iters": (2, "power_iters"),
                    "max_rank": (3, "max_rank"),
                    "verbose": (0, "verbose"),
                },
            ),
            (
                mc_module,
                "lambda_path",
                {
                    "n_lambdas": (3, "n_lambdas"),
                    "lambda_min_ratio": (0.05, "lambda_min_ratio"),
                    "patience": (2, "patience"),
                    "postprocess": (False, "postprocess"),
                    "solver": ("soft_impute", "solver"),
                    "regularizer": (_MCP, "regularizer"),
                },
            ),
        ],
        bad_params=[
            {"regularizer": "l0"},
            {"regularizer_params": {"theta": 0.0}},  # MCP's scale must be > 0
            {"max_iter": 0},
            {"tol": -1.0},
            {"lam": 0.0},
            {"lam_decay": 1.0},
            {"center": "rows"},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"validation_fraction": 1.0},
            {"random_state": "x"},
        ],
        bad_inputs=[
            ((np.full((3, 3), np.nan),), DataValidationError, "empty"),
            ((([0, -1], [0, 0], [1.0, 2.0]),), DataValidationError, "negative"),
            ((([0, 0], [0, 0], [1.0, 2.0]),), DataValidationError, "duplicate"),
            ((([0, 1], [0, 1], [1.0, np.inf]),), DataValidationError, "infinite"),
            (("text",), DataValidationError, "cannot read"),
            (Call.of(_TWO, sample_weight=[1.0]), DataValidationError, "one weight"),
            (Call.of(_TWO, sample_weight=[1.0, -1.0]), DataValidationError, "negative"),
            (Call.of(_TWO, sample_weight=[np.nan, 1]), DataValidationError, "finite"),
            (Call.of(_TWO, sample_weight=[0, 0]), DataValidationError, "every entry"),
        ],
    ),
    EstimatorCase(
        name="OrdinalEmbedding",
        make=lambda **kw: OrdinalEmbedding(
            **{"n_components": 2, "random_state": 0, "max_iter": 5, **kw}
        ),
        fit_args=_oe_data,
        output=lambda est, args: est.transform(),
        fitted_attr="embedding_",
        options=[{"solver": s} for s in (*OE_SOLVERS, "auto")]
        + [{"loss": loss} for loss in OE_LOSSES]
        + [{"solver": "lbfgs", "loss": loss} for loss in OE_LOSSES]
        + [
            {"output": "random"},
            {"solver": "svrg_sbb_pl", "module_epochs": 2},
            {"epsilon": 0.0},
            {"epsilon": 0.02, "relative_epsilon": False},
            {"batch_size": 1, "update_frequency": 200},
            {"learning_rate": 1.0},
            {"solver": "sgd", "learning_rate_decay": 0.5},
            {"solver": "cvx", "lam": 0.01},
            {"loss": "ckl", "mu": 0.5},
            {"loss": "tste", "alpha": 3.0},
            {"loss": "gnmds", "margin": 0.5},
            {"init_scale": 1.0},
            {"dtype": "float64"},
            {"verbose": 1},
        ],
        wiring=[
            (
                OE_SOLVERS,
                "svrg_sbb",
                {
                    # solver="auto" picks L-BFGS on this small set
                    "solver": ("svrg_sbb", None),
                    "epsilon": (0.05, "epsilon"),
                    "relative_epsilon": (False, "relative_epsilon"),
                    "batch_size": (7, "batch_size"),
                    "update_frequency": (300, "update_frequency"),
                    "learning_rate": (2.0, "learning_rate"),
                    "max_iter": (3, "max_iter"),
                    "tol": (1e-3, "tol"),
                    "output": ("random", "output"),
                    "init_scale": (0.05, "init_scale"),
                    # resolved once at the top of fit (resolve_fit_context)
                    "dtype": (torch.float64, "dtype"),
                    "verbose": (0, "verbose"),
                },
            ),
            (
                OE_SOLVERS,
                "lbfgs",
                {
                    "max_iter": (3, "max_iter"),
                    "tol": (1e-3, "tol"),
                    "init_scale": (0.05, "init_scale"),
                    "dtype": (torch.float32, "dtype"),
                    "verbose": (0, "verbose"),
                },
            ),
        ],
        bad_params=[
            {"n_components": 0},
            {"loss": "hinge"},
            {"solver": "adam"},
            {"epsilon": -1.0},
            {"batch_size": 0},
            {"max_iter": 0},
            {"output": "best"},
            {"init_scale": 0.0},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"random_state": "x"},
        ],
        bad_inputs=[
            (([[0, -1, 2]],), DataValidationError, "negative"),
            (([[0, 1.5, 2]],), DataValidationError, "integers"),
            (([[0, 1]],), DataValidationError, "shape"),
            ((np.zeros((0, 3), dtype=int),), DataValidationError, "empty"),
            (("text",), DataValidationError, "cannot read"),
        ],
    ),
]


def _tc_data():
    return (make_low_rank_tensor(10, n_observed=200, random_state=0).observed,)


CASES.append(
    EstimatorCase(
        name="TensorCompletion",
        make=lambda **kw: TensorCompletion(
            **{"n_lambdas": 3, "random_state": 0, "max_iter": 40, **kw}
        ),
        fit_args=_tc_data,
        output=lambda est, args: est.predict(args[0].indices),
        fitted_attr="factors_",
        options=[{"solver": s} for s in SOLVERS]
        + [{"lam": 0.5, "postprocess": p} for p in (True, False)]
        + [{"center": c} for c in ("none", "global", "both")]
        + [{"mode_weights": [1.0, 1.0, 1.0]}, {"refit": False}, {"max_rank": 2}]
        + [{"regularizer": "mcp", "regularizer_params": {"gamma": 4.0}}],
        wiring=[
            (
                mc_module,
                "proximal_completion",
                {
                    "lam": (0.7, "lam"),
                    "max_iter": (7, "max_iter"),
                    "mode_weights": ([1.0, 2.0, 3.0], "mode_weights"),
                },
            )
        ],
        bad_params=[
            {"max_iter": 0},
            {"mode_weights": 3.0},
            {"lam": "big"},
            {"regularizer_params": {"theta": 0.0}},
        ],
        bad_inputs=[
            ((([0, 1], [0, 1], [1.0, 2.0]),), DataValidationError, "3 or more modes"),
            (
                Call.of((np.eye(2, 3, dtype=int), [1.0, 2.0]), sample_weight=[-1, 1]),
                DataValidationError,
                "negative",
            ),
        ],
    )
)


def _pq_data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((300, 8)).astype(np.float32),)


CASES.append(
    EstimatorCase(
        name="ProductQuantizer",
        make=lambda **kw: ProductQuantizer(
            **{"n_subquantizers": 4, "n_centroids": 8, "max_iter": 3, **kw},
            **({} if "random_state" in kw else {"random_state": 0}),
        ),
        fit_args=_pq_data,
        output=lambda est, args: est.transform(args[0]),
        fitted_attr="codebooks_",
        options=[{"rotation": r} for r in ROTATIONS]
        + [{"rotation_init": r} for r in ("identity", "random", "eigenvalue")]
        + [
            {"rotation_init": np.eye(8)},
            {"kmeans_init": "random"},
            {"step_rule": "gradient"},
            {"learning_rate": 0.01},
            {"metric": "ip"},
            {"n_centroids": 300},
            {"dtype": "float64"},
            {"kmeans_iter": 0, "refine_iter": 0},
            {"tol": 0.5},
            {"verbose": 1},
        ],
        wiring=[
            (
                pq_module,
                "fit_product_quantizer",
                {
                    "rotation": ("cayley", "rotation"),
                    "n_rotation_steps": (2, "n_rotation_steps"),
                    "learning_rate": (0.05, "learning_rate"),
                    "step_rule": ("gradient", "step_rule"),
                    "refine_iter": (3, "refine_iter"),
                },
            ),
            (
                pq_solvers,
                "rotated_pq",
                {
                    "n_subquantizers": (2, "n_subquantizers"),
                    "n_centroids": (6, "n_centroids"),
                    "max_iter": (2, "max_iter"),
                    "kmeans_iter": (3, "kmeans_iter"),
                    "init_kmeans_iter": (5, "init_kmeans_iter"),
                    "kmeans_init": ("random", "kmeans_init"),
                    "tol": (1e-4, "tol"),
                    "rotation_init": ("random", "init"),
                    "verbose": (0, "verbose"),
                },
            ),
            (
                pq_solvers,
                "make_rotation_learner",
                {
                    "n_rotation_steps": (2, "n_steps"),
                    "learning_rate": (0.05, "learning_rate"),
                    "step_rule": ("gradient", "step_rule"),
                },
            ),
        ],
        bad_params=[
            {"n_subquantizers": 0},
            {"n_centroids": 70000},
            {"rotation": "svd"},
            {"rotation_init": "pca"},
            {"max_iter": 0},
            {"n_rotation_steps": 0},
            {"learning_rate": -1.0},
            {"step_rule": "newton"},
            {"metric": "cosine"},
            {"tol": -1.0},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"random_state": "x"},
        ],
        bad_inputs=[
            ((np.full((20, 8), np.nan),), DataValidationError, "NaN"),
            ((np.zeros((20, 6), np.float32),), InvalidParameterError, "divide"),
            ((np.zeros((5, 8), np.float32),), DataValidationError, "exceeds"),
            ((np.array([["x"] * 8] * 20),), DataValidationError, "dtype"),
            (("text",), DataValidationError, "real numbers"),
            ((np.zeros(8, np.float32),), DataValidationError, "2-D"),
        ],
    )
)


def _tt_data():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 20, 240)
    items = (users % 4) * 3 + rng.integers(0, 3, 240)  # 4 planted user groups
    pairs = np.unique(np.stack([users, items], 1), axis=0)
    return ((pairs[:, 0], pairs[:, 1]),)


CASES.append(
    EstimatorCase(
        name="TwoTowerRetrieval",
        make=lambda **kw: TwoTowerRetrieval(
            **{
                "n_components": 4,
                "hidden": 4,
                "n_subquantizers": 2,
                "n_centroids": 4,
                "batch_size": 16,
                "warmup_steps": 5,
                "n_steps": 6,
                "warm_start_samples": 32,
                "warm_start_iter": 2,
                "log_every": 3,
                "device": "cpu",
                **kw,
            },
            **({} if "random_state" in kw else {"random_state": 0}),
        ),
        fit_args=_tt_data,
        output=lambda est, args: np.hstack(est.recommend(np.arange(20), 3)),
        fitted_attr="net_",
        options=[{"rotation": r} for r in INDEX_ROTATIONS]
        + [
            {"loss": "softmax"},
            {"dtype": "float64"},
            {"distortion_weight": 0.0},
            {"warmup_steps": 0},
            {"verbose": 1},
        ],
        wiring=[
            (
                tt_module,
                "train_towers",
                {
                    "n_steps": (4, "n_steps"),
                    "batch_size": (8, "batch_size"),
                    "loss": ("softmax", "loss"),
                    "margin": (0.3, "margin"),
                    "temperature": (0.2, "temperature"),
                    "distortion_weight": (0.5, "distortion_weight"),
                    "log_every": (2, "log_every"),
                },
            ),
            (tt_module, "GivensOptimizer", {"rotation_learning_rate": (0.3, "lr")}),
        ],
        bad_params=[
            {"n_components": 0},
            {"rotation": "svd"},
            {"rotation": "opq"},
            {"loss": "mse"},
            {"batch_size": 1},
            {"temperature": 0.0},
            {"learning_rate": -1.0},
            {"n_steps": 0},
            {"device": "tpu"},
        ],
        bad_inputs=[
            (((np.array([-1, 0]), np.array([0, 1])),), DataValidationError, "non-neg"),
        ],
    )
)


#: Options and solver wiring shared by the two sdp estimators.
_SDP_OPTIONS = [{"solver": s} for s in (*SDP_SOLVERS, "auto")] + [
    # gamma is AAGD's, and the default solver on the CPU is BM-L-BFGS
    {"solver": "aagd", "gamma": "eq17"},
    {"solver": "aagd", "gamma": 2.0},
    {"lam": 0.0},
    {"init_scale": 0.5},
    {"tol": 0.0},
    {"dtype": "float32"},
    {"verbose": 1},
]
_SDP_AAGD_WIRING = (
    SDP_SOLVERS,
    "aagd",
    {
        "solver": ("aagd", None),
        "gamma": (2.5, "gamma"),
        "max_iter": (7, "max_iter"),
        "tol": (1e-3, "tol"),
        "init_scale": (0.5, "init_scale"),
        "dtype": (torch.float64, "dtype"),
        "verbose": (0, "verbose"),
    },
)
# solver="auto" (the default) on the CPU
_SDP_AUTO_WIRING = (
    SDP_SOLVERS,
    "bm_lbfgs",
    {
        "max_iter": (7, "max_iter"),
        "tol": (1e-3, "tol"),
        "init_scale": (0.5, "init_scale"),
        "dtype": (torch.float32, "dtype"),
        "verbose": (0, "verbose"),
    },
)


_X20 = np.random.default_rng(1).standard_normal((20, 3))


def _kl_data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    X = rng.standard_normal((20, 3)) + 2.0 * y[:, None]
    return (X, y)


CASES.append(
    EstimatorCase(
        name="KernelLearning",
        make=lambda **kw: KernelLearning(
            **{"n_components": 3, "n_pairs": 10, "max_iter": 60, **kw},
            **({} if "random_state" in kw else {"random_state": 0}),
        ),
        fit_args=_kl_data,
        # the kernel of the fitted patterns, and new patterns placed by transform
        output=lambda est, args: np.c_[
            est.kernel(np.arange(20)[:, None], np.arange(20)),
            est.transform(args[0] + 0.1),
        ],
        fitted_attr="embedding_",
        options=[*_SDP_OPTIONS, {"n_neighbors": 3, "bandwidth": 1.0}],
        wiring=[
            _SDP_AAGD_WIRING,
            _SDP_AUTO_WIRING,
            (kl_module, "NPKLProblem", {"lam": (0.7, "lam")}),
            (
                kl_module,
                "knn_laplacian",
                {"n_neighbors": (4, "n_neighbors"), "bandwidth": (2.0, "bandwidth")},
            ),
            (kl_module, "sample_pairs", {"n_pairs": (6, "n_pairs")}),
        ],
        bad_params=[
            {"n_components": 0},
            {"lam": -1.0},
            {"n_neighbors": 0},
            {"solver": "fw"},
            {"gamma": 0.0},
            {"max_iter": 0},
            {"tol": -1.0},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"random_state": "x"},
        ],
        bad_inputs=[
            # pairs are keyword-only: fit(X, y=None, *, must_link, cannot_link)
            (Call.of(_X20, must_link=[[0, 30]]), DataValidationError, "out of range"),
            (Call.of(_X20, must_link=[[2, 2]]), DataValidationError, "self-pair"),
            (
                Call.of(_X20, must_link=[[1, 2]], cannot_link=[[2, 1]]),
                DataValidationError,
                r"\(1, 2\) is both a must-link and a cannot-link",
            ),
            ((np.full((20, 3), np.nan), np.zeros(20)), DataValidationError, "NaN"),
            ((np.zeros((20, 3)), np.zeros(19)), DataValidationError, "one label"),
            ((np.zeros((20, 3)),), DataValidationError, "must_link"),
            ((np.zeros((2, 3)), [0, 1]), InvalidParameterError, "n_components"),
            (("text",), DataValidationError, "cannot read"),
        ],
    )
)


def _cmvu_data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    X = rng.standard_normal((20, 3)) + 1.5 * y[:, None]
    return (X, y)


def _cmvu_output(est, args):
    check_is_fitted(est, "embedding_")
    # the fitted embedding, and new patterns placed by transform
    return np.c_[est.embedding_, est.transform(args[0] + 0.1)]


CASES.append(
    EstimatorCase(
        name="ColoredMVU",
        make=lambda **kw: ColoredMVU(
            **{"n_components": 2, "max_iter": 60, **kw},
            **({} if "random_state" in kw else {"random_state": 0}),
        ),
        fit_args=_cmvu_data,
        output=_cmvu_output,
        fitted_attr="embedding_",
        options=[*_SDP_OPTIONS, {"n_neighbors": 3}],
        wiring=[
            _SDP_AAGD_WIRING,
            _SDP_AUTO_WIRING,
            (kl_module, "CMVUProblem", {"lam": (0.7, "lam")}),
            (kl_module, "knn_pairs", {"n_neighbors": (4, "n_neighbors")}),
        ],
        bad_params=[
            {"n_components": 0},
            {"lam": -1.0},
            {"n_neighbors": 0},
            {"solver": "fw"},
            {"gamma": 0.0},
            {"max_iter": 0},
            {"tol": -1.0},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"random_state": "x"},
        ],
        bad_inputs=[
            ((np.full((20, 3), np.nan),), DataValidationError, "NaN"),
            ((np.zeros((20, 3)), np.zeros(19)), DataValidationError, "one label"),
            ((np.zeros((20, 3)), [[0, 1]]), DataValidationError, "one label"),
            ((np.zeros((1, 3)),), DataValidationError, "at least 2 patterns"),
            ((np.ones((4, 3)),), DataValidationError, "n_neighbors=5 needs more"),
            (("text",), DataValidationError, "cannot read"),
        ],
    )
)


def _tm_pairs():
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 12, 60), rng.integers(0, 9, 60)
    keep = np.unique(users * 9 + items, return_index=True)[1]
    return users[keep], items[keep]


def _tm_data():
    # fit(X, y=None, *, user_features=...) takes the side features by keyword:
    # the towers over them come in as modules (_tm_towers), and the bad
    # features as Call entries of bad_inputs
    return (_tm_pairs(),)


def _tm_towers(kind):
    """Built-in towers over side features of the users and items of _tm_pairs."""
    from embedopt.data import as_side_features
    from embedopt.nn import build_tower

    rng = np.random.default_rng(1)
    uf = as_side_features({"group": np.arange(12) % 3}, 12, "user")
    vf = as_side_features({"dense": rng.standard_normal((9, 2))}, 9, "item")
    g = torch.Generator().manual_seed(0)
    user = build_tower(kind, 12, 3, uf, hidden=8, generator=g)
    item = build_tower(kind, 9, 3, vf, hidden=8, generator=g)
    return {"user_tower": user, "item_tower": item}


def _tt_output(est, args):
    check_is_fitted(est, "user_tower_")
    return est.predict(np.arange(12).repeat(9), np.tile(np.arange(9), 12))


CASES.append(
    EstimatorCase(
        name="TwoTowerModel",
        make=lambda **kw: TwoTowerModel(
            **{"n_components": 3, "hidden": 8, "max_iter": 3, "tol": 0.0, **kw},
            **({} if "random_state" in kw else {"random_state": 0}),
        ),
        fit_args=_tm_data,
        output=_tt_output,
        fitted_attr="user_tower_",
        options=[
            _tm_towers("hybrid"),  # with "auto": the ALS warm start, then GN
            {**_tm_towers("mlp"), "loss": "logistic"},
            {"solver": "gradient_descent"},
            {"solver": "gradient_descent", "solver_options": {"scaling": "diagonal"}},
            {**_tm_towers("hybrid"), "solver_options": {"preconditioner": "diagonal"}},
            {"user_tower": "embedding", "item_tower": _tm_towers("mlp")["item_tower"]},
            {"loss": "logistic", "imputed": "all", "weights": "popularity"},
            {"imputation": 0.5, "chunk_size": 5},
        ],
        wiring=[
            (
                SIM_SOLVERS,
                "gauss_newton",
                {
                    "solver": ("gauss_newton", None),
                    "max_iter": (2, "max_iter"),
                    "tol": (1e-3, "tol"),
                },
            ),
            (
                sim_module,
                "AllPairsObjective",
                {
                    "omega": (0.3, "omega"),
                    "lam": (0.7, "lam"),
                    "imputed": ("all", "imputed"),
                    "imputation": (0.25, "imputation"),
                    "chunk_size": (4, "chunk_size"),
                    "loss": ("logistic", "loss"),
                },
            ),
        ],
        bad_params=[
            {"n_components": 0},
            {"omega": -1.0},
            {"lam": float("nan")},
            {"user_tower": "tree"},
            {"solver": "newton"},
            {"max_iter": 0},
            {"imputed": "some"},
            {"weights": "idf"},
            {"dtype": "int32"},
            {"device": "tpu"},
            {"random_state": "x"},
        ],
        bad_inputs=[
            ((([0, 1], [1, 2], [1.0, np.nan]),), DataValidationError, "finite"),
            ((([], []),), DataValidationError, "non-empty"),
            # side features are keyword-only and must cover every id
            (
                Call.of(([0, 12], [1, 2]), user_features={"g": np.arange(12) % 3}),
                DataValidationError,
                "index 12 used",
            ),
            (
                Call.of(([0, 1], [1, 2]), user_features={"g": np.arange(1)}),
                DataValidationError,
                "rows",
            ),
        ],
    )
)

ids = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.smoke
def test_not_fitted_before_fit(case):
    est = case.make()
    assert not hasattr(est, case.fitted_attr)
    with pytest.raises(NotFittedError):
        case.output(est, case.fit_args())
    with pytest.raises(NotFittedError, match="only fitted estimators are saved"):
        est.save("never-written.embedopt")


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.smoke
def test_fit_returns_self_and_sets_trailing_underscore_attributes(case):
    est = case.make()
    before = set(vars(est))
    assert est.fit(*case.fit_args()) is est
    new = set(vars(est)) - before
    assert case.fitted_attr in new
    assert all(a.endswith("_") or a.startswith("_") for a in new)
    assert {"history_", "n_iter_", "stop_reason_"} <= new


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.bitwise_rerun
def test_same_seed_same_result(case):
    args = case.fit_args()
    a = case.output(case.make().fit(*args), args)
    b = case.output(case.make().fit(*args), args)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_clone_and_pickle(case):
    args = case.fit_args()
    est = case.make().fit(*args)
    c = clone(est)
    assert c.get_params() == est.get_params()
    assert not hasattr(c, case.fitted_attr)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(case.output(again, args), case.output(est, args))
    assert repr(est).startswith(case.name + "(")


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
@pytest.mark.smoke
def test_save_load_round_trip(case, tmp_path):
    args = case.fit_args()
    est = case.make().fit(*args)
    path = tmp_path / "model.embedopt"
    est.save(path)
    expected = case.output(est, args)
    for again in (type(est).load(path), embedopt.load(path)):
        assert_same_estimator(est, again)
        np.testing.assert_array_equal(case.output(again, args), expected, strict=True)
        # a loaded estimator pickles, and saves to the same content
        np.testing.assert_array_equal(
            case.output(pickle.loads(pickle.dumps(again)), args), expected
        )
        again.save(tmp_path / "again.embedopt")
        assert_same_estimator(est, type(est).load(tmp_path / "again.embedopt"))


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_every_documented_option_runs(case, tmp_path):
    args = case.fit_args()
    for opt in case.options:
        est = case.make(**opt).fit(*args)
        out = case.output(est, args)
        assert np.all(np.isfinite(out)), opt
        # and every fitted variant round-trips through save / load
        est.save(tmp_path / "model.embedopt")
        again = embedopt.load(tmp_path / "model.embedopt")
        np.testing.assert_array_equal(case.output(again, args), out, strict=True)


@pytest.mark.parametrize("case", CASES, ids=ids)
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_every_argument_reaches_its_solver(case, monkeypatch):
    args = case.fit_args()
    for module, fname, params in case.wiring:
        calls = []
        real = module[fname] if isinstance(module, Registry) else getattr(module, fname)

        def spy(*a, _real=real, _calls=calls, **kw):
            _calls.append((a, kw))
            return _real(*a, **kw)

        if isinstance(module, Registry):  # estimators look solvers up by name
            monkeypatch.setitem(module._entries, fname, spy)
        else:
            monkeypatch.setattr(module, fname, spy)
        settings = {p: v for p, (v, _) in params.items()}
        case.make(**settings).fit(*args)
        assert calls, f"{fname} was not called"
        for p, (v, kwarg) in params.items():
            if kwarg is None:  # a setting that selects the solver, not an argument
                continue
            seen = [
                kw.get(kwarg, a[1] if kwarg == "lam" and len(a) > 1 else None)
                for a, kw in calls
            ]
            assert v in seen, f"{p}={v!r} did not reach {fname}({kwarg}=...)"
        monkeypatch.undo()


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_invalid_parameters_rejected_before_work(case):
    args = case.fit_args()
    for bad in case.bad_params:
        est = case.make(**bad)
        with pytest.raises(InvalidParameterError) as exc:
            est.fit(*args)
        name = next(iter(bad))
        assert f"The '{name}' parameter of {case.name} must be" in str(exc.value)
        assert not hasattr(est, case.fitted_attr)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_bad_input_raises_documented_error(case):
    for inputs, err, match in case.bad_inputs:
        call = inputs if isinstance(inputs, Call) else Call(inputs, {})
        with pytest.raises(err, match=match):
            case.make().fit(*call.args, **call.kwargs)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_set_params_roundtrip(case):
    est = case.make()
    params = est.get_params()
    est.set_params(**params)
    assert est.get_params() == params


def test_two_tower_evaluate_before_fit_is_not_fitted_error():
    with pytest.raises(NotFittedError):
        TwoTowerRetrieval().evaluate(([0], [1]))


@pytest.mark.parametrize("rows", [["a"], [True], [object()]])
def test_completion_predict_refuses_non_integer_positions(rows):
    model = MatrixCompletion(lam=1.0, random_state=0).fit(
        random_entries(12, 10, seed=0)[0]
    )
    with pytest.raises(DataValidationError, match="row indices must be integers"):
        model.predict(rows, [0])


# -- the user's own ids (issue 22) ------------------------------------------------
#
# Every estimator that takes ids fits on them (a DataFrame, or a tuple of
# strings without pandas) and on the same data as positions and gives the
# same results after decoding; the estimators over feature matrices take none.
# The names below sort like the positions (zero-padded), so the sorted codes
# of the ids are the positions and the two fits are the same fit.


def _names(prefix, n):
    return np.array([f"{prefix}{k:03d}" for k in range(n)])


@dataclass
class IdCase:
    name: str
    #: positional fit args -> (the same data with string ids as a tuple,
    #: the column layout of its frame)
    with_ids: Callable[[tuple], tuple]
    #: (model on positions, model on ids, the positional fit args) ->
    #: (output of the first, output of the second in the same ids)
    outputs: Callable[[object, object, tuple], tuple]
    #: the fitted attributes holding the ids
    id_attrs: tuple


def _mc_ids(args):
    e = args[0]
    return (
        (_names("u", e.shape[0])[e.rows], _names("i", e.shape[1])[e.cols], e.values),
    )


def _mc_outputs(a, b, args):
    e = args[0]
    names = _names("u", e.shape[0])[e.rows], _names("i", e.shape[1])[e.cols]
    return a.predict(e.rows, e.cols), b.predict(*names)


def _tc_ids(args):
    e = args[0]
    cols = [_names(f"m{d}_", e.shape[d])[e.indices[:, d]] for d in range(e.ndim)]
    return ((cols, e.values),)


def _tc_outputs(a, b, args):
    e = args[0]
    cols = [_names(f"m{d}_", e.shape[d])[e.indices[:, d]] for d in range(e.ndim)]
    return a.predict(e.indices), b.predict(np.stack(cols, 1))


def _oe_outputs(a, b, args):
    return a.transform(), b.transform(_names("o", a.n_objects_))


def _pair_ids(args):
    users, items = args[0]
    return ((_names("u", users.max() + 1)[users], _names("i", items.max() + 1)[items]),)


def _tm_outputs(a, b, args):
    m, n = a.shape_
    u, i = np.arange(m).repeat(n), np.tile(np.arange(n), m)
    return a.predict(u, i), b.predict(_names("u", m)[u], _names("i", n)[i])


def _ttr_outputs(a, b, args):
    m, n = a.shape_
    ids, scores = a.recommend(np.arange(m), 3)
    ids_b, scores_b = b.recommend(_names("u", m), 3)
    return np.hstack([_names("i", n)[ids], scores]), np.hstack([ids_b, scores_b])


ID_CASES = [
    IdCase("MatrixCompletion", _mc_ids, _mc_outputs, ("user_ids_", "item_ids_")),
    IdCase("TensorCompletion", _tc_ids, _tc_outputs, ("mode_ids_",)),
    IdCase(
        "OrdinalEmbedding",
        lambda args: (_names("o", args[0].max() + 1)[args[0]],),
        _oe_outputs,
        ("object_ids_",),
    ),
    IdCase("TwoTowerModel", _pair_ids, _tm_outputs, ("user_ids_", "item_ids_")),
    IdCase("TwoTowerRetrieval", _pair_ids, _ttr_outputs, ("user_ids_", "item_ids_")),
]
#: Estimators over feature matrices (samples x features): no ids to map.
NO_IDS = {"KernelLearning", "ColoredMVU", "ProductQuantizer"}
_BY_NAME = {c.name: c for c in CASES}


def test_every_estimator_says_whether_it_takes_ids():
    assert {c.name for c in ID_CASES} | NO_IDS == set(_BY_NAME)
    assert not {c.name for c in ID_CASES} & NO_IDS


def _frame(args, id_case):
    """The string-id data as a DataFrame: id columns, then the values."""
    pd = pytest.importorskip("pandas")
    data = id_case.with_ids(args)[0]
    if isinstance(data, tuple) and isinstance(data[0], list):  # (columns, values)
        data = (*data[0], data[1])
    columns = list(data.T) if isinstance(data, np.ndarray) else list(data)
    return pd.DataFrame({f"c{j}": c for j, c in enumerate(columns)})


@pytest.mark.parametrize("id_case", ID_CASES, ids=[c.name for c in ID_CASES])
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_string_ids_fit_as_positions_and_predict_in_the_same_ids(id_case):
    case = _BY_NAME[id_case.name]
    args = case.fit_args()
    a = case.make().fit(*args)
    assert all(getattr(a, attr) is None for attr in id_case.id_attrs)
    b = case.make().fit(*id_case.with_ids(args))  # a tuple of strings: no pandas
    out_a, out_b = id_case.outputs(a, b, args)
    np.testing.assert_array_equal(out_a, out_b)
    for attr in id_case.id_attrs:
        ids = getattr(b, attr)
        for column in ids if isinstance(ids, list) else [ids]:
            assert column.dtype.kind == "U"  # storable without pickle


@pytest.mark.parametrize("id_case", ID_CASES, ids=[c.name for c in ID_CASES])
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_a_data_frame_round_trips_through_the_ids(id_case, tmp_path):
    case = _BY_NAME[id_case.name]
    args = case.fit_args()
    frame = _frame(args, id_case)
    a = case.make().fit(*args)
    b = case.make().fit(frame)
    np.testing.assert_array_equal(*id_case.outputs(a, b, args))
    # the ids are saved with the model (no pickle) and predict the same
    b.save(tmp_path / "ids.embedopt")
    again = type(b).load(tmp_path / "ids.embedopt")
    assert_same_estimator(b, again)
    np.testing.assert_array_equal(*id_case.outputs(a, again, args))
    # integer ids exactly 0..n-1 in a frame: identity maps, the positional fit
    is_numeric = pytest.importorskip("pandas").api.types.is_numeric_dtype
    ints = frame.apply(
        lambda col: col if is_numeric(col) else col.str[-3:].astype(np.int64)
    )
    c = case.make().fit(ints)
    np.testing.assert_array_equal(case.output(c, args), case.output(a, args))
    for attr in id_case.id_attrs:
        ids = getattr(c, attr)
        for column in ids if isinstance(ids, list) else [ids]:
            assert column.dtype == np.int64
            np.testing.assert_array_equal(column, np.arange(column.size))


# -- the one recommend surface (issue 23) -------------------------------------------
#
# Every recommender (nn.RetrievalMixin) answers recommend / similar_items /
# similar_users the same way on the edges: k larger than the catalogue,
# users whose every item is seen, filters that remove everything, unknown ids.

RECOMMENDERS = ["MatrixCompletion", "TwoTowerModel", "TwoTowerRetrieval"]


def _recommender(name):
    import warnings

    case = _BY_NAME[name]
    args = case.fit_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the tiny fits
        return case.make().fit(*args), args


@pytest.mark.parametrize("name", RECOMMENDERS)
def test_every_recommender_answers_the_edges_alike(name):
    est, _ = _recommender(name)
    m, n = est.shape_
    users = np.arange(m)
    # k larger than the catalogue: one column per item, every item once
    ids, scores = est.recommend(users, n + 3, exclude_seen=False)
    assert ids.shape == scores.shape == (m, n)
    assert all(sorted(row) == list(range(n)) for row in ids)
    # with the seen items excluded, each row pads exactly its history
    ids, scores = est.recommend(users, n)
    seen = est._seen_pairs()
    np.testing.assert_array_equal((ids == -1).sum(1), np.diff(seen.indptr))
    assert np.array_equal(np.isneginf(scores), ids == -1)
    # a filter that removes every item: rows of pads
    ids, scores = est.recommend(users[:2], 3, filter_items=np.arange(n))
    assert (ids == -1).all() and np.isneginf(scores).all() and ids.shape == (2, 3)
    # similar_*: never the id itself, k capped at the side's size
    for method, size in ((est.similar_items, n), (est.similar_users, m)):
        ids, scores = method(np.arange(size), size + 2)
        assert ids.shape == (size, size)
        assert (ids != np.arange(size)[:, None]).all()
        assert np.array_equal(ids == -1, np.isneginf(scores))


@pytest.mark.parametrize("name", RECOMMENDERS)
def test_every_recommender_follows_unknown_on_each_argument(name):
    est, _ = _recommender(name)
    m, n = est.shape_
    for call in (
        lambda: est.recommend([m], 2),
        lambda: est.recommend([0], 2, items=[n]),
        lambda: est.recommend([0], 2, filter_items=[n]),
        lambda: est.similar_items([n], 2),
        lambda: est.similar_users([m], 2),
    ):
        with pytest.raises(DataValidationError, match="must lie in"):
            call()
    est.set_params(unknown="nan")
    ids, scores = est.recommend([m, 0], 2)
    assert (ids[0] == -1).all() and np.isnan(scores[0]).all()
    assert np.isfinite(scores[1]).all()
    with pytest.raises(DataValidationError, match="at least one known item"):
        est.recommend([0], 2, items=[n])
    np.testing.assert_array_equal(  # an unknown item to filter: nothing to do
        est.recommend([0], 2, filter_items=[n])[0], est.recommend([0], 2)[0]
    )
    est.set_params(unknown="fallback")
    for ids, scores in (
        est.recommend([m], 2),
        est.similar_items([n], 2),
        est.similar_users([m], 2),
    ):
        assert (ids >= 0).all() and np.isfinite(scores).all()
    ids, _ = est.recommend([m], 3, filter_items=[0, 1])
    assert not np.isin(ids, [0, 1]).any()  # the fallback ranking is filtered too


@pytest.mark.parametrize("name", RECOMMENDERS)
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_every_recommender_answers_in_the_users_ids(name):
    id_case = next(c for c in ID_CASES if c.name == name)
    case = _BY_NAME[name]
    args = case.fit_args()
    a = case.make().fit(*args)
    b = case.make().fit(*id_case.with_ids(args))
    m, n = a.shape_
    users, items = _names("u", m), _names("i", n)
    out_a = a.recommend(np.arange(m), 3, filter_items=[1, 2])
    out_b = b.recommend(users, 3, filter_items=items[[1, 2]])
    np.testing.assert_array_equal(
        np.where(out_a[0] >= 0, items[out_a[0]], ""), out_b[0]
    )
    np.testing.assert_array_equal(out_a[1], out_b[1])
    sim_a, _ = a.similar_users(np.arange(m), 2)
    sim_b, _ = b.similar_users(users, 2)
    np.testing.assert_array_equal(np.where(sim_a >= 0, users[sim_a], ""), sim_b)


# -- partial_fit (issue 23) -------------------------------------------------------
#
# An estimator with partial_fit acts as fit when unfitted, adds entries of
# known and new ids (positions grow the shape, ids grow their maps), refuses
# an empty batch, a frame of another layout and an unknown refit, and leaves
# a model it refused as it was.


def _held_first_index(args):
    """The fit args split in two: mode-0 index 0 held out, then its entries."""
    e = args[0]
    first = e.indices[:, 0] > 0
    return (e.subset(np.flatnonzero(first)),), (e.subset(np.flatnonzero(~first)),)


def _held_object(args):
    """Comparisons without object 0, then those with it."""
    t = args[0]
    first = (t != 0).all(axis=1)
    return (t[first],), (t[~first],)


def _held_first_user(args):
    """(users, items) pairs without user 0, then those of user 0."""
    users, items = args[0]
    first = users != 0
    return ((users[first], items[first]),), ((users[~first], items[~first]),)


#: case name -> (split of the fit args, the refit modes partial_fit takes)
PARTIAL_FIT = {
    "MatrixCompletion": (_held_first_index, ("new", "all")),
    "TensorCompletion": (_held_first_index, ("all",)),
    "OrdinalEmbedding": (_held_object, ("new", "all")),
    "TwoTowerModel": (_held_first_user, ("new", "all")),
}


def test_every_estimator_with_partial_fit_is_listed():
    have = {c.name for c in CASES if hasattr(c.make(), "partial_fit")}
    assert have == set(PARTIAL_FIT)


@pytest.mark.parametrize("name", sorted(PARTIAL_FIT))
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_partial_fit_acts_as_fit_then_adds(name):
    case, (split, modes) = _BY_NAME[name], PARTIAL_FIT[name]
    args = case.fit_args()
    a, b = case.make().partial_fit(*args), case.make().fit(*args)
    np.testing.assert_array_equal(case.output(a, args), case.output(b, args))
    first, rest = split(args)
    for refit in modes:
        model = case.make().fit(*first)
        assert model.partial_fit(*rest, refit=refit) is model
        assert np.isfinite(case.output(model, args)).all()
    with pytest.raises(InvalidParameterError, match="refit"):
        model.partial_fit(*rest, refit="some")


@pytest.mark.parametrize("name", sorted(PARTIAL_FIT))
@pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")
def test_partial_fit_with_new_ids_grows_the_maps(name):
    case, id_case = _BY_NAME[name], next(c for c in ID_CASES if c.name == name)
    frame = _frame(case.fit_args(), id_case)
    values = name not in ("OrdinalEmbedding", "TwoTowerModel")  # ids only
    held = frame.iloc[0, 0]
    first = (frame.iloc[:, : frame.shape[1] - values] != held).all(axis=1)
    refit = PARTIAL_FIT[name][1][0]
    model = case.make().fit(frame[first])
    state = model.U_.copy() if hasattr(model, "U_") else None
    with pytest.raises(DataValidationError):
        model.partial_fit(frame[~first].iloc[:0], refit=refit)
    with pytest.raises(DataValidationError, match="column"):
        model.partial_fit(frame[~first].assign(extra=1.0, more=2.0), refit=refit)
    if state is not None:
        np.testing.assert_array_equal(model.U_, state)  # refused: nothing moved
    model.partial_fit(frame[~first], refit=refit)
    ids = getattr(model, id_case.id_attrs[0])
    ids = ids[0] if isinstance(ids, list) else ids
    assert held in set(ids) and list(ids) == sorted(ids)
    row = frame[~first].iloc[:3]
    if name == "TwoTowerModel":  # predict(users, items)
        assert np.isfinite(model.predict(row.iloc[:, 0], row.iloc[:, 1])).all()
    else:
        assert np.isfinite(model.predict(row.iloc[:, : row.shape[1] - values])).all()
