"""Save and load fitted estimators without pickle.

``estimator.save(path)`` writes one file that loading cannot execute:

- a ZIP archive, stored uncompressed (the size on disk is the size of the
  arrays plus about 250 bytes per distinct array), with the members
- ``embedopt.json``: the format name and version, the embedopt / NumPy /
  torch versions that wrote it, the estimator's class (name and module), its
  parameters (``get_params()``; ``callback`` is stored as None), its fitted
  state (every attribute of ``vars(estimator)`` that is not a parameter,
  private ones included: predictions may need them) and a table of the
  arrays with the SHA-256, dtype and shape of each;
- ``embedopt.json.sha256``: the SHA-256 of ``embedopt.json``;
- ``arrays/<n>.npy``: one ``.npy`` file per distinct array (arrays with the
  same bytes, dtype and shape, such as a tensor and its NumPy view, are
  stored once; an array whose elements all have the same bits, such as the
  ones of a training-pairs matrix, as its first element), read back with
  ``allow_pickle=False``.

Values are stored by type, as tagged JSON: None, bool, int, str, float (NaN
and infinities included), NumPy scalars, lists, tuples, dicts (any keys of
these types), NumPy arrays (strings in object arrays as a unicode array,
restored as ``object``), torch tensors and parameters (dtype, device and
``requires_grad`` kept), torch dtypes and devices, scipy.sparse CSR / CSC /
COO matrices and arrays, NumPy ``Generator`` s (their bit generator's state),
``torch.nn.Module`` s of the registered classes (their attributes,
parameters, buffers, non-persistent ones included, and sub-modules), and
instances of the classes registered with :func:`persistable` (embedopt's
losses, centerings, id maps, towers...; their ``vars``). An object that
appears twice (a tower that is both a parameter and the fitted tower) is
stored once and loaded as one object. Anything else is refused at save time
with an error naming the parameter or attribute: pickle such an estimator
instead (pickle keeps working).

Arrays and tensors come back with the strides they were saved with (a
transposed rotation stays transposed) and tensors at the same offset from a
64-byte boundary, so a loaded model runs the same kernels on the same
operands and answers bit for bit as the model that saved it, on the same
machine; a view with gaps or negative strides comes back dense, its
dimensions in the same memory order.

Loading finds classes by the names in the file only among the registered
ones (and the estimator among embedopt's estimators, or the class
``Cls.load`` was called on); it never imports a module named in the file.
Tensors go to the device they were saved from when that device is
available here, else to the CPU, unless ``device`` says where.

Parameters are checked against the estimator's constraints, as ``fit``
checks them, and no state entry may hide a method or property: an edited
file is refused at load, not loaded to fail inside ``predict``.

A file of a newer format version, a truncated or altered file (an array's
or the JSON's SHA-256 differs, a ZIP CRC fails, a member is compressed, an
array declares more data than it holds or a constant array more elements
than the file has bytes: nothing is inflated or allocated beyond what the
file's size allows), a file that is not an
embedopt model, or the file of another estimator is refused with a
:class:`~embedopt.DataValidationError` that says what to do. The checksums
detect corruption, not a deliberate forgery (whoever can rewrite the file
can rewrite its checksums); what keeps loading safe is that nothing in the
file is executed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from .device import DeviceLike, resolve_device
from .docs import fill_doc
from .exceptions import DataValidationError, InvalidParameterError, NotFittedError
from .layouts import layout, placed_array, placed_tensor, read_npy

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "load_estimator",
    "persistable",
    "save_estimator",
]

#: The ``device`` parameter of every function that reads an estimator's file.
LOAD_DEVICE_DOC = """\
device : {"cpu", "cuda", "cuda:N"} or torch.device, optional
    Where its tensors go. Default: the device each tensor was saved from
    when it is available here, else the CPU."""

#: The ``format`` field of every embedopt model file.
FORMAT = "embedopt.estimator"
#: The newest format version this embedopt writes and reads.
FORMAT_VERSION = 1

_META = "embedopt.json"
_CHECKSUM = "embedopt.json.sha256"
_ARRAYS = "arrays/"

#: Classes whose instances may be stored, by "module:qualname".
_CLASSES: dict[str, type] = {}


def _class_key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def persistable(cls: type) -> type:
    """Class decorator: allow :meth:`BaseEstimator.save` to store instances.

    An instance is stored as its ``vars`` (a ``torch.nn.Module`` as its
    attributes, parameters, buffers and sub-modules) and loaded without
    calling ``__init__``, so every attribute must itself be storable. Only the
    registered classes are ever instantiated by loading.

    Parameters
    ----------
    cls : type

    Returns
    -------
    type
        ``cls``, registered.
    """
    _CLASSES[_class_key(cls)] = cls
    return cls


for _cls in (
    nn.Linear,
    nn.Embedding,
    nn.ReLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.GELU,
    nn.Identity,
    nn.Dropout,
    nn.LayerNorm,
    nn.Sequential,
    nn.ModuleList,
    nn.ModuleDict,
):
    persistable(_cls)

_BIT_GENERATORS = {
    "PCG64": np.random.PCG64,
    "PCG64DXSM": np.random.PCG64DXSM,
    "MT19937": np.random.MT19937,
    "Philox": np.random.Philox,
    "SFC64": np.random.SFC64,
}
_SPARSE = {"csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr")}
_SPARSE["coo"] = ("data", "row", "col")
#: torch dtypes NumPy lacks, stored as integers of the same width
_BIT_VIEWS = {2: torch.int16, 1: torch.uint8}
#: what a fresh Module holds; hooks must be empty to be saved
_MODULE_INTERNALS = frozenset(vars(nn.Module()))
_MODULE_TREE = frozenset(
    {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"}
)


def _constant(arr: np.ndarray) -> bool:
    """Whether ``arr`` has 2 or more elements, all of the same bits."""
    if arr.size < 2 or arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8:
        return False
    bits = arr.reshape(-1).view(f"u{arr.dtype.itemsize}")
    first = bits[0]
    return bool(bits[-1] == first and (bits == first).all())


class _Unstorable(Exception):
    """A value of a type the format does not hold (turned into a clear error)."""

    def __init__(self, what: str, value: Any):
        super().__init__(what)
        self.what, self.value = what, value


# -- writing ---------------------------------------------------------------------
class _Writer:
    """Turns values into tagged JSON, collecting the arrays to store."""

    def __init__(self) -> None:
        self.members: dict[str, bytes] = {}
        self.table: dict[str, dict] = {}
        self._by_digest: dict[str, str] = {}
        self._memo: dict[int, int] = {}
        self._keep: list = []  # keeps memoized objects alive (ids stay unique)

    def array(self, arr: np.ndarray) -> str:
        """Store ``arr`` (once per distinct bytes) and return its key.

        An array whose elements are all the same bits (the ones of a
        training-pairs matrix) is stored as one element and its shape.
        """
        filled = _constant(arr)
        buf = io.BytesIO()
        np.lib.format.write_array(
            buf, arr.reshape(-1)[:1] if filled else arr, allow_pickle=False
        )
        data = buf.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        unique = f"{digest} {arr.shape}" if filled else digest
        if unique not in self._by_digest:
            key = str(len(self._by_digest))
            self._by_digest[unique] = key
            self.members[key] = data
            self.table[key] = {
                "sha256": digest,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "filled": filled,
            }
        return self._by_digest[unique]

    def encode(self, value: Any, where: str) -> Any:
        """Tagged JSON of ``value`` (``where`` names it in errors)."""
        if isinstance(value, np.generic):  # before float and str: subclasses
            return {"$": "scalar", "array": self.encode(np.asarray(value), where)}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            items = [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return {"$": "tuple", "items": items}
        if isinstance(value, dict):
            return {
                "$": "dict",
                "keys": [self.encode(k, f"{where} key") for k in value],
                "values": [self.encode(v, f"{where}[{k!r}]") for k, v in value.items()],
            }
        if isinstance(value, np.ndarray):
            return self._ndarray(value, where)
        return self._memoized(value, where)

    def _ndarray(self, arr: np.ndarray, where: str) -> dict:
        if arr.dtype.kind == "O":  # ids: str objects, as UTF-8 and offsets
            if not all(isinstance(x, str) for x in arr.flat):
                raise _Unstorable(where, arr)
            encoded = [x.encode("utf-8", "surrogatepass") for x in arr.flat]
            lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
            return {
                "$": "strings",
                "shape": list(arr.shape),
                "utf8": self.array(np.frombuffer(b"".join(encoded), np.uint8)),
                "ends": self.array(np.cumsum(lengths)),
            }
        if arr.dtype.hasobject or arr.dtype.kind == "V":
            raise _Unstorable(where, arr)
        data = arr if arr.flags.c_contiguous else arr.copy(order="C")
        node = {"$": "ndarray", "key": self.array(data)}
        strides = [s // arr.itemsize for s in arr.strides]
        kept = layout(arr.shape, strides, arr.itemsize, None)
        return node if kept is None else {**node, "layout": kept}

    def _memoized(self, value: Any, where: str) -> Any:
        """Objects with an identity: stored once, referred to afterwards."""
        if id(value) in self._memo:
            return {"$": "ref", "id": self._memo[id(value)]}
        if not (isinstance(value, torch.Tensor) or _class_key(type(value)) in _CLASSES):
            return self._object(value, where)
        # numbered before its contents, as loading does: a reference back to
        # it from inside (a cycle) finds it
        number = self._memo[id(value)] = len(self._memo)
        self._keep.append(value)
        return {**self._object(value, where), "id": number}

    def _object(self, value: Any, where: str) -> dict:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, where)
        if isinstance(value, torch.dtype):
            return {"$": "torch_dtype", "name": str(value).removeprefix("torch.")}
        if isinstance(value, torch.device):
            return {"$": "torch_device", "name": str(value)}
        if sp.issparse(value) and value.format in _SPARSE:
            parts = {
                a: self.encode(getattr(value, a), where) for a in _SPARSE[value.format]
            }
            return {
                "$": "sparse",
                "format": value.format,
                "matrix": isinstance(value, sp.spmatrix),
                "shape": list(value.shape),
                "parts": parts,
            }
        if isinstance(value, np.random.Generator):
            state = value.bit_generator.state
            if state.get("bit_generator") not in _BIT_GENERATORS:
                raise _Unstorable(where, value)
            return {"$": "generator", "state": self.encode(state, where)}
        if _class_key(type(value)) not in _CLASSES:
            raise _Unstorable(where, value)
        if isinstance(value, nn.Module):
            return self._module(value, where)
        if not hasattr(value, "__dict__"):
            raise _Unstorable(where, value)
        state = self.encode(dict(vars(value)), where)
        return {"$": "object", "class": _class_key(type(value)), "state": state}

    def _tensor(self, t: torch.Tensor, where: str) -> dict:
        if t.is_sparse or t.layout != torch.strided or t.is_complex():
            raise _Unstorable(where, t)
        data = t.detach().to("cpu").contiguous()
        try:
            arr = data.numpy()
        except TypeError:  # bfloat16, float8: NumPy has no such dtype
            arr = data.view(_BIT_VIEWS[data.element_size()]).numpy()
        node = {
            "$": "tensor",
            "key": self.array(arr),
            "dtype": str(t.dtype).removeprefix("torch."),
            "device": str(t.device),
            "parameter": isinstance(t, nn.Parameter),
            "requires_grad": bool(t.requires_grad),
        }
        kept = layout(t.shape, t.stride(), t.element_size(), t.data_ptr())
        return node if kept is None else {**node, "layout": kept}

    def _module(self, module: nn.Module, where: str) -> dict:
        internals = {k: v for k, v in vars(module).items() if k in _MODULE_INTERNALS}
        hooks = [
            k
            for k, v in internals.items()
            if k not in _MODULE_TREE and isinstance(v, dict) and v
        ]
        if hooks:
            raise _Unstorable(f"{where} (it has hooks: {', '.join(hooks)})", module)
        attrs = {k: v for k, v in vars(module).items() if k not in _MODULE_INTERNALS}
        return {
            "$": "module",
            "class": _class_key(type(module)),
            "training": module.training,
            "attrs": self.encode(attrs, where),
            "parameters": self.encode(dict(module._parameters), where),
            "buffers": self.encode(dict(module._buffers), where),
            "non_persistent": sorted(module._non_persistent_buffers_set),
            "modules": self.encode(dict(module._modules), where),
        }


def _unstorable_error(estimator, exc: _Unstorable) -> InvalidParameterError:
    kind = type(exc.value)
    return InvalidParameterError(
        f"Cannot save this {type(estimator).__name__}: its {exc.what} holds a "
        f"{kind.__module__}.{kind.__qualname__}, which embedopt's model files do "
        "not store (they hold arrays, tensors, plain values and embedopt's own "
        "objects, never code). Give that parameter by its registry name (a "
        "string), or keep the model with pickle instead."
    )


def _fitted(estimator) -> bool:
    return any(k.endswith("_") and not k.startswith("_") for k in vars(estimator))


def save_estimator(estimator: Any, path: str | os.PathLike) -> None:
    """Write a fitted ``estimator`` to ``path`` (see the module docstring).

    Parameters
    ----------
    estimator : BaseEstimator
        Fitted.
    path : str or os.PathLike
        The file to write (replaced atomically if it exists).

    Raises
    ------
    NotFittedError
        If ``estimator`` is not fitted.
    InvalidParameterError
        If a parameter or fitted attribute holds a value the format cannot
        store (a custom loss, a callable, a module of a class of your own),
        or ``path`` is empty.
    IsADirectoryError, FileNotFoundError
        If ``path`` is a folder, or its folder does not exist.
    """
    name = type(estimator).__name__
    if not _fitted(estimator):
        raise NotFittedError(
            f"This {name} instance is not fitted yet: only fitted estimators are "
            "saved. Call 'fit' first (get_params() keeps an unfitted configuration)."
        )
    target = _save_target(path)
    params = estimator.get_params()
    if "callback" in params:
        params["callback"] = None  # a function: not stored, documented
    state = {k: v for k, v in vars(estimator).items() if k not in params}
    writer = _Writer()
    try:
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "versions": _versions(),
            "estimator": name,
            "module": type(estimator).__module__,
            "params": {
                k: writer.encode(v, f"'{k}' parameter") for k, v in params.items()
            },
            "state": {
                k: writer.encode(v, f"attribute {k!r}") for k, v in state.items()
            },
        }
    except _Unstorable as exc:
        raise _unstorable_error(estimator, exc) from None
    meta["arrays"] = writer.table
    _write_zip(target, meta, writer.members)


def _save_target(path) -> Path:
    """The file ``save`` writes, checked before any work.

    The errors name the path the user gave, not the temporary file the
    archive is first written to; they are the OSError a user catches.
    """
    try:
        text = os.fspath(path)
    except TypeError:  # not a path at all (a number, a file object)
        text = None
    if not isinstance(text, str) or not text:
        raise InvalidParameterError(
            f"Cannot save to {path!r}: give the name of the file to write, "
            "such as 'model.embedopt'."
        )
    target = Path(text)
    if target.is_dir():
        raise IsADirectoryError(
            f"Cannot save to '{target}': it is a folder. Give the name of a "
            f"file in it, such as '{target / 'model.embedopt'}'."
        )
    if not target.parent.is_dir():
        raise FileNotFoundError(
            f"Cannot save to '{target}': the folder '{target.parent}' does not "
            "exist. Create it first."
        )
    return target


def _versions() -> dict:
    from .. import __version__

    return {
        "embedopt": __version__,
        "numpy": np.__version__,
        "torch": torch.__version__,
    }


def _write_zip(path: Path, meta: dict, members: dict[str, bytes]) -> None:
    """Write the archive next to ``path``, then move it into place."""
    text = json.dumps(meta, separators=(",", ":")).encode()
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with (
            os.fdopen(fd, "wb") as f,
            zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf,
        ):
            zf.writestr(_META, text)
            zf.writestr(_CHECKSUM, hashlib.sha256(text).hexdigest())
            for key, data in members.items():
                zf.writestr(f"{_ARRAYS}{key}.npy", data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- reading ---------------------------------------------------------------------
class _Reader:
    """Rebuilds values from tagged JSON and the checked arrays."""

    def __init__(self, arrays: dict[str, np.ndarray], device: torch.device | None):
        self.arrays = arrays
        self.device = device
        self._used: set[str] = set()
        self._memo: dict[int, Any] = {}

    def array(self, key: str) -> np.ndarray:
        """The stored array ``key``; a copy after its first use."""
        arr = self.arrays[key]
        if key in self._used:
            return arr.copy()
        self._used.add(key)
        return arr

    def decode(self, value: Any) -> Any:
        """The value of one tagged JSON node."""
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        tag = value["$"]
        if tag == "float":
            return float(value["v"])
        if tag == "tuple":
            return tuple(self.decode(v) for v in value["items"])
        if tag == "dict":
            keys = [self.decode(k) for k in value["keys"]]
            return dict(
                zip(keys, [self.decode(v) for v in value["values"]], strict=True)
            )
        if tag == "scalar":
            return self.decode(value["array"])[()]
        if tag == "ndarray":
            return placed_array(self.array(value["key"]), value.get("layout"))
        if tag == "strings":
            return _strings(
                self.arrays[value["utf8"]], self.arrays[value["ends"]], value
            )
        if tag == "ref":
            return self._memo[value["id"]]
        return self._object(tag, value)

    def _object(self, tag: str, value: dict) -> Any:
        if tag == "torch_dtype":
            return _torch_dtype(value["name"])
        if tag == "torch_device":
            return torch.device(value["name"])
        if tag == "sparse":
            parts = {k: self.decode(v) for k, v in value["parts"].items()}
            fmt, shape = value["format"], tuple(value["shape"])
            cls = getattr(sp, f"{fmt}_{'matrix' if value['matrix'] else 'array'}")
            args = [parts[a] for a in _SPARSE[fmt]]
            data = (args[0], (args[1], args[2])) if fmt == "coo" else tuple(args)
            matrix = cls(data, shape=shape)
            if fmt != "coo":  # scipy may narrow the index dtype: keep the saved one
                matrix.indices, matrix.indptr = parts["indices"], parts["indptr"]
            return matrix
        if tag == "generator":
            state = self.decode(value["state"])
            bits = _BIT_GENERATORS[state["bit_generator"]]()
            bits.state = state
            return np.random.Generator(bits)
        if tag == "tensor":
            return self._remember(value, self._tensor(value))
        if tag == "module":
            return self._module(value)
        if tag == "object":
            obj = _registered(value["class"]).__new__(_registered(value["class"]))
            self._remember(value, obj)
            vars(obj).update(self.decode(value["state"]))
            return obj
        raise KeyError(tag)

    def _remember(self, node: dict, obj: Any) -> Any:
        self._memo[node["id"]] = obj
        return obj

    def _tensor(self, node: dict) -> torch.Tensor:
        arr = self.array(node["key"])
        dtype = _torch_dtype(node["dtype"])
        t = torch.from_numpy(arr)
        if t.dtype != dtype:
            t = t.view(dtype)
        device = self.device if self.device is not None else _where(node["device"])
        t = placed_tensor(t, node.get("layout"), device)
        if node["parameter"]:
            return nn.Parameter(t, requires_grad=node["requires_grad"])
        return t.requires_grad_(node["requires_grad"])

    def _module(self, node: dict) -> nn.Module:
        cls = _registered(node["class"])
        if not issubclass(cls, nn.Module):
            raise KeyError(node["class"])
        module = cls.__new__(cls)
        nn.Module.__init__(module)
        self._remember(node, module)
        vars(module).update(self.decode(node["attrs"]))
        module.training = bool(node["training"])
        module._parameters.update(self.decode(node["parameters"]))
        module._buffers.update(self.decode(node["buffers"]))
        module._non_persistent_buffers_set.update(node["non_persistent"])
        module._modules.update(self.decode(node["modules"]))
        return module


def _strings(utf8: np.ndarray, ends: np.ndarray, node: dict) -> np.ndarray:
    """The object array of str stored as UTF-8 bytes and end offsets."""
    data = utf8.tobytes()
    ends = ends.tolist()
    starts = [0, *ends[:-1]] if ends else []
    out = np.empty(len(ends), dtype=object)
    out[:] = [
        data[a:b].decode("utf-8", "surrogatepass")
        for a, b in zip(starts, ends, strict=True)
    ]
    return out.reshape(node["shape"])


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise KeyError(name)
    return dtype


def _where(saved: str) -> torch.device:
    """The saved device when it is available here, else the CPU."""
    dev = torch.device(saved)
    if dev.type in ("cpu", "meta"):
        return torch.device("cpu")
    try:
        torch.empty(0, device=dev)
    except Exception:  # no such device here (or no CUDA build at all)
        return torch.device("cpu")
    return dev


def _registered(key: str) -> type:
    if key not in _CLASSES:
        raise KeyError(key)
    return _CLASSES[key]


def _refuse(path, problem: str) -> DataValidationError:
    return DataValidationError(f"Cannot load the model file {str(path)!r}: {problem}")


_DAMAGED = (
    "it is damaged ({}). It may be truncated or altered: copy it again, or "
    "save the model again with estimator.save(path)."
)


def _member(zf: zipfile.ZipFile, name: str, path) -> bytes:
    """The bytes of member ``name``: stored ones only, so that what is read
    is what the file holds (a compressed member could inflate to gigabytes
    before its checksum is compared)."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise _refuse(path, _DAMAGED.format(f"member {name} is missing")) from None
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
        raise _refuse(
            path, _DAMAGED.format(f"member {name} is compressed; models store them")
        )
    try:
        return zf.read(info)
    except Exception as exc:  # CRC errors, truncated data
        raise _refuse(path, _DAMAGED.format(f"{name}: {exc}")) from exc


def _open_zip(path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise _refuse(path, "there is no such file. Check the path.") from None
    except IsADirectoryError:
        raise _refuse(path, "it is a directory, not a file.") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _refuse(
            path,
            "it is not an embedopt model file, or it is truncated (not a readable "
            f"ZIP archive: {exc}). Models are written by estimator.save(path).",
        ) from exc


def _written_by(meta: dict) -> str:
    versions = meta.get("versions")
    written = versions.get("embedopt") if isinstance(versions, dict) else None
    return str(written) if written is not None else "an unknown embedopt"


def _read_meta(zf: zipfile.ZipFile, path) -> dict:
    if _META not in zf.namelist():
        raise _refuse(
            path,
            f"it is a ZIP archive without {_META}, not an embedopt model file. "
            "Models are written by estimator.save(path).",
        )
    text = _member(zf, _META, path)
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _refuse(path, _DAMAGED.format(f"{_META} is not JSON: {exc}")) from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _refuse(path, f"{_META} does not describe an embedopt model.")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _refuse(path, _DAMAGED.format(f"format version {version!r}"))
    if version > FORMAT_VERSION:
        written = _written_by(meta)
        raise _refuse(
            path,
            f"it has format version {version}, written by embedopt {written}; this "
            f"embedopt ({_versions()['embedopt']}) reads versions up to "
            f"{FORMAT_VERSION}. Upgrade embedopt to load it.",
        )
    checksum = _member(zf, _CHECKSUM, path).decode("ascii", "replace").strip()
    if checksum != hashlib.sha256(text).hexdigest():
        raise _refuse(path, _DAMAGED.format(f"the SHA-256 of {_META} differs"))
    return meta


def _filled_size_problem(info: dict, budget: int) -> str | None:
    """A constant array is stored as one element and its declared shape: at
    most one element per byte of the archive (a training-pairs matrix of
    ones is stored beside its indices, 4 or more bytes per element)."""
    shape = info["shape"]
    if not (
        isinstance(shape, list)
        and all(type(n) is int and n >= 0 for n in shape)
        and math.prod(shape) <= budget
    ):
        return f"a constant array of shape {shape!r} in a file of {budget} bytes"
    return None


def _read_arrays(zf: zipfile.ZipFile, table: dict, path) -> dict[str, np.ndarray]:
    arrays = {}
    budget = sum(i.file_size for i in zf.infolist())
    for key, info in table.items():
        name = f"{_ARRAYS}{key}.npy"
        data = _member(zf, name, path)
        if hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise _refuse(path, _DAMAGED.format(f"the SHA-256 of {name} differs"))
        try:
            problem = _filled_size_problem(info, budget) if info["filled"] else None
            if problem is not None:  # a checksum that matches bad bytes: forged
                raise _refuse(path, _DAMAGED.format(f"{name}: {problem}"))
            arr = read_npy(data)
        except DataValidationError:
            raise
        except Exception as exc:  # a checksum that matches bad bytes: forged
            raise _refuse(path, _DAMAGED.format(f"{name}: {exc}")) from exc
        shape = [1] if info["filled"] else info["shape"]
        if arr.dtype.str != info["dtype"] or list(arr.shape) != shape:
            raise _refuse(path, _DAMAGED.format(f"{name} has another dtype or shape"))
        if info["filled"]:
            arr = np.broadcast_to(arr, info["shape"]).copy()
        arrays[key] = arr
    return arrays


def _estimator_class(
    meta: dict, expected: type | None, find: Callable[[str], type | None], path
) -> type:
    """The class to build: ``expected`` (``Cls.load``) or the file's, if embedopt's."""
    name, module = meta.get("estimator"), meta.get("module")
    if expected is not None:
        if (expected.__name__, expected.__module__) != (name, module):
            raise _refuse(
                path,
                f"it holds a {name} (from {module}), not a {expected.__name__}. "
                f"Load it with embedopt.load(path), or {name}.load(path).",
            )
        return expected
    cls = find(name) if isinstance(name, str) else None
    if cls is None or cls.__module__ != module:
        raise _refuse(
            path,
            f"it holds a {name} (from {module}), which is not one of embedopt's "
            f"estimators. Load it with its own class: {name}.load(path).",
        )
    return cls


@fill_doc(device=LOAD_DEVICE_DOC)
def load_estimator(
    path: str | os.PathLike,
    *,
    expected: type | None = None,
    find: Callable[[str], type | None] = lambda name: None,
    device: DeviceLike = None,
) -> Any:
    """Read an estimator written by :func:`save_estimator`.

    Parameters
    ----------
    path : str or os.PathLike
    expected : type, optional
        The estimator class the file must hold (``Cls.load``).
    find : callable, optional
        ``find(name)``: the embedopt estimator class of that name, or None
        (``embedopt.load``; used when ``expected`` is None).
    {device}

    Returns
    -------
    BaseEstimator

    Raises
    ------
    DataValidationError
        For a missing, truncated, altered or foreign file, a newer format
        version, or the file of another estimator.
    """
    dev = None if device is None else resolve_device(device)
    with _open_zip(path) as zf:
        meta = _read_meta(zf, path)
        cls = _estimator_class(meta, expected, find, path)
        try:
            arrays = _read_arrays(zf, meta["arrays"], path)
            reader = _Reader(arrays, dev)
            params = {k: reader.decode(v) for k, v in meta["params"].items()}
            state = {k: reader.decode(v) for k, v in meta["state"].items()}
        except DataValidationError:
            raise
        except (
            KeyError,
            TypeError,
            ValueError,
            IndexError,
            AttributeError,
            RuntimeError,
        ) as exc:
            # the checksums matched: a file edited with its checksums redone
            raise _refuse(path, _DAMAGED.format(f"unreadable entry {exc!r}")) from exc
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise _refuse(
            path,
            f"{cls.__name__} of this embedopt ({_versions()['embedopt']}) has no "
            f"parameters {unknown}; the file was written by embedopt "
            f"{_written_by(meta)}. Load it with that version.",
        )
    estimator = cls(**params)
    _check_loaded(estimator, state, path, meta)
    vars(estimator).update(state)
    return estimator


def _check_loaded(estimator, state: dict, path, meta: dict) -> None:
    """Refuse a file that would load and fail later: parameters outside
    their constraints (checked as ``fit`` checks them), or a state entry that
    would hide a method or property (a file naming one ``predict``)."""
    try:
        estimator._validate_params()
    except InvalidParameterError as exc:
        raise _refuse(
            path, _DAMAGED.format(f"a parameter no fit accepts: {exc}")
        ) from None
    cls = type(estimator)
    for name in state:
        shadowed = getattr(cls, name, None)
        if (
            not name.isidentifier()
            or callable(shadowed)
            or isinstance(shadowed, property)
        ):
            raise _refuse(
                path,
                _DAMAGED.format(
                    f"the state entry {name!r} is not an attribute of "
                    f"{cls.__name__} (written by embedopt {_written_by(meta)})"
                ),
            )
