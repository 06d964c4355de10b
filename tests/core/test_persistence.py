"""save / load: every stored type, the refusals, and the file's integrity checks."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

import embedopt
from embedopt import DataValidationError, InvalidParameterError, NotFittedError
from embedopt._core import BaseEstimator
from embedopt._core import persistence as ps
from embedopt._load import ESTIMATORS
from embedopt.completion import MatrixCompletion, TensorCompletion
from embedopt.completion.losses import SquareLoss
from embedopt.data import IdMap, as_side_features
from embedopt.nn import build_tower
from embedopt.quantization import ProductQuantizer
from embedopt.similarity import TwoTowerModel
from tests._persistence import assert_same_estimator, assert_same_value
from tests.conftest import random_entries

pytestmark = pytest.mark.filterwarnings("ignore::embedopt.ConvergenceWarning")


class Holder(BaseEstimator):
    """An estimator of this test module: whatever state a test gives it."""

    def __init__(self, alpha: float = 1.0, *, extra=None, callback=None):
        self._store_params(locals())


def _holder(tmp_path, **state):
    est = Holder(extra={"k": (1, 2)}, callback=print)
    vars(est).update(state)
    est.save(tmp_path / "h.embedopt")
    return est, Holder.load(tmp_path / "h.embedopt")


def test_every_stored_type_round_trips(tmp_path):
    state = {
        "floats_": [0.5, float("nan"), float("inf"), -float("inf"), -0.0],
        "scalars_": (np.float32(1.5), np.int64(-3), np.bool_(True), np.str_("s")),
        "keys_": {1: "a", "b": 2, (3, "c"): None, None: True, 2.5: [1]},
        "big_int_": 2**80,
        "arrays_": [np.arange(6, dtype=np.int16).reshape(2, 3), np.zeros((0, 4))],
        "strings_": np.array(["b", "é", "", "x\x00", "\U0001f600"], dtype=object),
        "unicode_": np.array(["ab", "c"]),
        "fortran_": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        # constant arrays are stored as one element: same value, other shapes
        "filled_": [np.ones(5), np.ones((2, 3)), np.full(4, np.nan), np.ones((3, 2))],
        "filled_tensor_": torch.zeros(3, 2, dtype=torch.float16),
        "not_filled_": np.array([0.0, -0.0]),
        "tensors_": [
            torch.arange(4, dtype=torch.float64),
            torch.ones(2, 3, dtype=torch.bfloat16),
            torch.tensor([True, False]),
            torch.randn(3, 2).t(),  # not contiguous
            torch.ones(2, requires_grad=True),
            nn.Parameter(torch.zeros(2)),
        ],
        "dtypes_": (torch.float32, torch.device("cpu")),
        "sparse_": [
            sp.csr_matrix(np.eye(3)),
            sp.csc_array(np.eye(2)),
            sp.coo_matrix(np.eye(2)),
        ],
        "ids_": [IdMap.fit([5, 3, 5])[0], IdMap.fit(["u", "a"])[0]],
        "loss_": SquareLoss(),
        "_private": {"nested": {"deep": [np.ones(2)]}},
    }
    est, again = _holder(tmp_path, **state)
    assert again.callback is None  # functions are not stored
    again.callback = print
    assert_same_estimator(est, again)


def test_layouts_and_alignment_round_trip_so_products_are_bitwise(tmp_path):
    # A transposed operand sends a product down another BLAS kernel, and MKL
    # may round differently at another alignment: a loaded model answers bit
    # for bit as the saved one only if its arrays sit in memory the same way.
    gen = torch.Generator().manual_seed(0)
    R = torch.linalg.qr(torch.randn(8, 8, generator=gen))[0]
    state = {
        "t_": R.t(),  # strides (1, 8)
        "permuted_": torch.randn(2, 3, 4, generator=gen).permute(2, 0, 1),
        "shifted_": torch.randn(65, generator=gen)[1:].reshape(8, 8),  # 4 B off
        "column_": torch.randn(8, 16, generator=gen)[:, ::2],  # gaps: dense
        "f_": np.asfortranarray(np.random.default_rng(0).random((8, 8))),
        "nd_": np.random.default_rng(1).random((2, 3, 4)).transpose(1, 2, 0),
        "reversed_": np.arange(12.0)[::-1],  # negative strides: C order
    }
    est, again = _holder(tmp_path, **state)
    column, backwards = again.__dict__.pop("column_"), again.__dict__.pop("reversed_")
    del est.column_, est.reversed_
    assert_same_estimator(est, again)  # strides and offsets from 64 B included
    # a view with gaps is loaded dense, its dimensions in the same memory order
    assert torch.equal(column, state["column_"]) and column.stride() == (8, 1)
    assert np.array_equal(backwards, state["reversed_"]) and backwards.strides == (8,)
    # (fitted models hold no such view: assert_same_estimator compares strides)
    X = torch.randn(100, 8, generator=gen)
    for name in ("t_", "shifted_"):
        a, b = X @ getattr(est, name), X @ getattr(again, name)
        assert torch.equal(a, b), name


@pytest.mark.parametrize(
    "layout",
    [
        {"strides": [1, 1], "offset": 0},  # overlapping
        {"strides": [1], "offset": 0},  # another rank
        {"strides": [1, 2**40], "offset": 0},  # gaps: a huge allocation
        {"strides": [1, 2], "offset": 99},
        {"strides": [-1, 2], "offset": 0},
        {"strides": "C", "offset": 0},
    ],
)
def test_a_forged_layout_is_refused(tmp_path, layout):
    _holder(tmp_path, t_=torch.ones(3, 2).t(), a_=np.ones((3, 2)).T)
    members = _members(tmp_path / "h.embedopt")
    meta = json.loads(members["embedopt.json"])
    for name in ("t_", "a_"):
        edited = json.loads(json.dumps(meta))
        edited["state"][name]["layout"] = layout
        members["embedopt.json"] = json.dumps(edited).encode()
        _rewrite(tmp_path / "bad.embedopt", members, rehash=True)
        with pytest.raises(DataValidationError, match="Cannot load the model file"):
            Holder.load(tmp_path / "bad.embedopt")


def test_shared_objects_stay_shared_and_equal_arrays_are_stored_once(tmp_path):
    t = torch.randn(50, 4)
    module = nn.Linear(3, 2)
    _, again = _holder(tmp_path, a_=t, b_=[t, module], c_=module, d_=t.numpy())
    assert again.b_[0] is again.a_ and again.b_[1] is again.c_
    assert again.d_ is not again.a_  # one stored array, independent objects
    with zipfile.ZipFile(tmp_path / "h.embedopt") as zf:
        arrays = [n for n in zf.namelist() if n.startswith("arrays/")]
    # t (shared with d_), and the Linear's weight and bias
    assert len(arrays) == 3


def test_cycles_and_wide_sparse_indices(tmp_path):
    layer = nn.Linear(2, 2)
    box = SquareLoss()
    box.me = box  # an object that refers to itself
    wide = sp.csr_matrix(np.eye(3))
    wide.indices, wide.indptr = (
        wide.indices.astype(np.int64),
        wide.indptr.astype(np.int64),
    )
    est, again = _holder(tmp_path, box_=box, layers_=[layer, layer], wide_=wide)
    assert again.box_.me is again.box_ and again.layers_[0] is again.layers_[1]
    assert again.wide_.indices.dtype == np.int64
    assert_same_value(est.wide_, again.wide_)


def test_random_state_generator_is_stored(tmp_path):
    rng = np.random.default_rng(3)
    est = MatrixCompletion(lam=1.0, random_state=rng).fit(random_entries(8, 6)[0])
    est.save(tmp_path / "m.embedopt")
    again = MatrixCompletion.load(tmp_path / "m.embedopt")
    assert again.random_state.bit_generator.state == rng.bit_generator.state


def test_loss_instance_parameter_is_stored(tmp_path):
    entries = random_entries(8, 6)[0]
    est = MatrixCompletion(lam=1.0, loss=SquareLoss(), random_state=0).fit(entries)
    est.save(tmp_path / "m.embedopt")
    again = embedopt.load(tmp_path / "m.embedopt")
    assert isinstance(again.loss, SquareLoss)
    np.testing.assert_array_equal(
        again.predict([0, 1], [2, 3]), est.predict([0, 1], [2, 3])
    )


def test_unstorable_parameter_is_named_at_save_time(tmp_path):
    class MyLoss(SquareLoss):
        pass

    est = MatrixCompletion(lam=1.0, loss=MyLoss(), random_state=0)
    est.fit(random_entries(8, 6)[0])
    with pytest.raises(
        InvalidParameterError, match=r"'loss' parameter holds a .*MyLoss"
    ):
        est.save(tmp_path / "m.embedopt")
    assert not (tmp_path / "m.embedopt").exists()


def test_tower_modules_round_trip_and_foreign_modules_are_refused(tmp_path):
    pairs = (np.arange(12) % 6, np.arange(12) % 4)
    feats = as_side_features({"g": np.arange(6) % 2}, 6, "user")
    g = torch.Generator().manual_seed(0)
    tower = build_tower("hybrid", 6, 2, feats, hidden=4, generator=g)
    est = TwoTowerModel(2, user_tower=tower, max_iter=2, random_state=0).fit(pairs)
    est.save(tmp_path / "t.embedopt")
    again = embedopt.load(tmp_path / "t.embedopt")
    assert again.user_tower is again.user_tower_  # one module, as before
    assert_same_estimator(est, again)
    users = torch.arange(6)
    assert torch.equal(again.user_tower_(users), est.user_tower_(users))

    class MyTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(6, 2)
            self.n_ids, self.n_components = 6, 2

        def forward(self, ids):
            return self.table(ids)

    est = TwoTowerModel(2, user_tower=MyTower(), max_iter=2, random_state=0)
    est.fit(pairs)
    with pytest.raises(InvalidParameterError, match=r"'user_tower' parameter.*MyTower"):
        est.save(tmp_path / "t.embedopt")


def test_module_with_hooks_is_refused(tmp_path):
    layer = nn.Linear(2, 2)
    layer.register_forward_hook(lambda *a: None)
    est = Holder()
    est.layer_ = layer
    with pytest.raises(InvalidParameterError, match="hooks"):
        est.save(tmp_path / "h.embedopt")


def test_unfitted_estimator_is_not_saved(tmp_path):
    with pytest.raises(NotFittedError, match="get_params"):
        MatrixCompletion().save(tmp_path / "m.embedopt")


def test_loading_executes_no_pickle(tmp_path, monkeypatch):
    est = MatrixCompletion(lam=1.0, random_state=0).fit(random_entries(8, 6)[0])
    est.save(tmp_path / "m.embedopt")

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle used")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    assert_same_estimator(est, embedopt.load(tmp_path / "m.embedopt"))


def test_every_estimator_is_in_the_load_table():
    import embedopt.completion
    import embedopt.ordinal
    import embedopt.quantization
    import embedopt.sdp
    import embedopt.similarity

    public = {
        name
        for pkg in (
            embedopt.completion,
            embedopt.ordinal,
            embedopt.quantization,
            embedopt.sdp,
            embedopt.similarity,
        )
        for name in pkg.__all__
        if isinstance(getattr(pkg, name), type)
        and issubclass(getattr(pkg, name), BaseEstimator)
    }
    assert public == set(ESTIMATORS)


def test_device_argument(tmp_path):
    est = ProductQuantizer(2, n_centroids=2, max_iter=1, random_state=0)
    est.fit(np.random.default_rng(0).standard_normal((16, 4)))
    est.save(tmp_path / "p.embedopt")
    again = ProductQuantizer.load(tmp_path / "p.embedopt", device="cpu")
    assert again.rotation_tensor_.device.type == "cpu"
    with pytest.raises(InvalidParameterError, match="device"):
        ProductQuantizer.load(tmp_path / "p.embedopt", device="tpu")


def test_a_device_that_is_not_here_loads_on_the_cpu():
    assert ps._where("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert ps._where("cuda:0") == torch.device("cpu")


def test_file_size_is_about_the_arrays(tmp_path):
    entries = random_entries(300, 200, rank=5, frac=0.3)[0]
    est = MatrixCompletion(lam=1.0, random_state=0).fit(entries)
    est.save(tmp_path / "m.embedopt")
    size = (tmp_path / "m.embedopt").stat().st_size
    with zipfile.ZipFile(tmp_path / "m.embedopt") as zf:
        meta = json.loads(zf.read("embedopt.json"))
    stored = sum(
        np.prod(a["shape"], dtype=np.int64) * np.dtype(a["dtype"]).itemsize
        for a in meta["arrays"].values()
    )
    factors = est.U_.nbytes + est.s_.nbytes + est.V_.nbytes
    # the training entries recommend excludes, a CSR matrix (its ones count
    # here at full size; the file stores them as one value), and those kept
    # for partial_fit, each stored once too
    seen = est._seen_pairs()
    pairs = seen.data.nbytes + seen.indices.nbytes + seen.indptr.nbytes
    kept = est.entries_.indices.nbytes + est.entries_.values.nbytes
    assert stored < factors + pairs + kept + 40_000  # factors once
    assert size < stored + 300 * len(meta["arrays"]) + 20_000


# -- bad files -------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small MatrixCompletion model file, and the model."""
    path = tmp_path_factory.mktemp("saved") / "m.embedopt"
    est = MatrixCompletion(lam=1.0, random_state=0).fit(random_entries(10, 8)[0])
    est.save(path)
    return path, est


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rewrite(path, members: dict[str, bytes], *, rehash: bool = True) -> None:
    """Write ``members`` as a new archive (the JSON's checksum redone if asked)."""
    if rehash:
        members = {**members}
        members["embedopt.json.sha256"] = (
            hashlib.sha256(members["embedopt.json"]).hexdigest().encode()
        )
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _edit_meta(saved, tmp_path, edit, *, rehash=True):
    members = _members(saved[0])
    meta = json.loads(members["embedopt.json"])
    edit(meta)
    members["embedopt.json"] = json.dumps(meta).encode()
    _rewrite(tmp_path / "bad.embedopt", members, rehash=rehash)
    return tmp_path / "bad.embedopt"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataValidationError, match="no such file"):
        embedopt.load(tmp_path / "none.embedopt")
    with pytest.raises(DataValidationError, match="directory"):
        embedopt.load(tmp_path)


@pytest.mark.parametrize("content", [b"", b"junk" * 100, b"PK\x03\x04" + bytes(50)])
def test_not_a_zip(tmp_path, content):
    (tmp_path / "x").write_bytes(content)
    with pytest.raises(DataValidationError, match="not an embedopt model file"):
        embedopt.load(tmp_path / "x")


def test_zip_of_something_else(tmp_path):
    _rewrite(tmp_path / "x.zip", {"readme.txt": b"hi"}, rehash=False)
    with pytest.raises(DataValidationError, match="not an embedopt model file"):
        embedopt.load(tmp_path / "x.zip")
    _rewrite(tmp_path / "y.zip", {"embedopt.json": b'{"a": 1}'}, rehash=False)
    with pytest.raises(DataValidationError, match="does not describe an embedopt"):
        embedopt.load(tmp_path / "y.zip")


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_truncated(saved, tmp_path, keep):
    data = saved[0].read_bytes()
    (tmp_path / "t").write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(DataValidationError, match="truncated"):
        embedopt.load(tmp_path / "t")


def test_newer_format_version_asks_to_upgrade(saved, tmp_path):
    def edit(meta):
        meta["format_version"] = ps.FORMAT_VERSION + 1
        meta["versions"]["embedopt"] = "9.0"

    path = _edit_meta(saved, tmp_path, edit)
    with pytest.raises(DataValidationError, match=r"written by embedopt 9.0.*Upgrade"):
        embedopt.load(path)


def test_another_estimators_file(saved, tmp_path):
    with pytest.raises(DataValidationError, match=r"holds a MatrixCompletion.*not a "):
        TensorCompletion.load(saved[0])
    with pytest.raises(DataValidationError, match="not a Holder"):
        Holder.load(saved[0])
    est = Holder()
    est.a_ = 1
    est.save(tmp_path / "h.embedopt")
    with pytest.raises(
        DataValidationError, match=r"not one of embedopt's.*Holder.load"
    ):
        embedopt.load(tmp_path / "h.embedopt")


def test_tampered_array_bytes(saved, tmp_path):
    # the ZIP's own CRC catches an edited byte...
    data = bytearray(saved[0].read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        arrays = [i for i in zf.infolist() if i.filename.startswith("arrays/")]
    info = max(arrays, key=lambda i: i.file_size)
    data[info.header_offset + 30 + len(info.filename) + 140] ^= 0xFF
    (tmp_path / "a").write_bytes(bytes(data))
    with pytest.raises(DataValidationError, match="damaged"):
        embedopt.load(tmp_path / "a")
    # ... and the SHA-256 a member rewritten with a valid CRC
    members = _members(saved[0])
    member = bytearray(members[info.filename])
    member[-1] ^= 0x01
    members[info.filename] = bytes(member)
    _rewrite(tmp_path / "b", members)
    with pytest.raises(DataValidationError, match=r"SHA-256 of arrays/.* differs"):
        embedopt.load(tmp_path / "b")


def test_a_compressed_member_is_refused_before_it_is_inflated(saved, tmp_path):
    members = _members(saved[0])
    with zipfile.ZipFile(tmp_path / "z", "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(DataValidationError, match="is compressed"):
        embedopt.load(tmp_path / "z")


def _forge_array(saved, tmp_path, npy: bytes, **table_entry):
    """The saved file with its largest array replaced by ``npy`` (the
    table's checksum, and the JSON's, redone: a forgery, not damage)."""
    members = _members(saved[0])
    meta = json.loads(members["embedopt.json"])
    key = max(meta["arrays"], key=lambda k: len(members[f"arrays/{k}.npy"]))
    members[f"arrays/{key}.npy"] = npy
    meta["arrays"][key].update(sha256=hashlib.sha256(npy).hexdigest(), **table_entry)
    members["embedopt.json"] = json.dumps(meta).encode()
    _rewrite(tmp_path / "f.embedopt", members)
    return tmp_path / "f.embedopt"


def test_declared_sizes_are_bounded_by_the_file(saved, tmp_path):
    # an .npy header declaring 2**40 float64 over a few bytes of data: numpy
    # would allocate it before reading
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)}
    )
    path = _forge_array(saved, tmp_path, buf.getvalue() + bytes(16), shape=[2**40])
    with pytest.raises(DataValidationError, match="declares 8796093022208 bytes"):
        embedopt.load(path)
    # a constant array stored as one element may not declare more elements
    # than the file has bytes (10**8 from a 22 KiB file was 763 MiB)
    one = io.BytesIO()
    np.lib.format.write_array(one, np.ones(1))
    path = _forge_array(saved, tmp_path, one.getvalue(), shape=[10**8], filled=True)
    with pytest.raises(DataValidationError, match="a constant array of shape"):
        embedopt.load(path)


def test_tampered_json(saved, tmp_path):
    def edit(meta):
        meta["params"]["lam"] = 2.0

    path = _edit_meta(saved, tmp_path, edit, rehash=False)
    with pytest.raises(DataValidationError, match=r"SHA-256 of embedopt.json differs"):
        embedopt.load(path)


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.update(estimator="os.system"),
        lambda m: m["state"]["centering_"].update(**{"class": "builtins:eval"}),
        lambda m: m["state"].update(x_={"$": "module", "class": "os:system"}),
        lambda m: m["state"].update(x_={"$": "what"}),
        lambda m: m["state"].update(x_={"$": "ref", "id": 99}),
        lambda m: m["state"].update(x_={"$": "torch_dtype", "name": "nn"}),
        lambda m: m["state"].update(x_={"$": "ndarray", "key": "999"}),
        lambda m: m["params"].update(nonsense=1),
        lambda m: m["arrays"].update({"0": 5}),
        lambda m: m.pop("state"),
        lambda m: m["state"].update(
            x_={"$": "tensor", "key": "0", "dtype": "int64", "id": 50}
        ),
        lambda m: m["state"].update(x_={"$": "strings", "utf8": "0", "ends": "0"}),
        # loads, then fails inside predict or answers wrongly: refused at load
        lambda m: m["params"].update(unknown="bogus"),
        lambda m: m["params"].update(lam=-1.0),
        lambda m: m["state"].update(predict=1),
        lambda m: m["state"].update(**{"not a name": 1}),
    ],
)
def test_forged_json_with_valid_checksum(saved, tmp_path, edit):
    path = _edit_meta(saved, tmp_path, edit)
    with pytest.raises(DataValidationError, match="Cannot load the model file"):
        embedopt.load(path)


def test_a_path_that_names_no_file_is_refused_by_its_own_name(saved, tmp_path):
    _, est = saved
    folder = tmp_path / "models"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="it is a folder") as exc:
        est.save(folder)
    assert str(folder / "model.embedopt") in str(exc.value)
    with pytest.raises(FileNotFoundError, match="does not exist") as exc:
        est.save(tmp_path / "missing" / "m.embedopt")
    assert str(tmp_path / "missing") in str(exc.value)
    for bad in ("", 3, None):
        with pytest.raises(InvalidParameterError, match="name of the file"):
            est.save(bad)
    # the message names the user's path, never the temporary file; nothing
    # is left behind
    assert ".tmp" not in str(exc.value) and list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def test_file_objects_and_pickle_still_work(saved):
    path, est = saved
    with open(path, "rb") as f:
        assert_same_estimator(est, MatrixCompletion.load(f))
    again = pickle.loads(pickle.dumps(est))
    assert_same_value(again.factors_, est.factors_)
