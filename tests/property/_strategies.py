"""Hypothesis strategies for bad inputs, each tagged with what it must cause.

Every strategy of this module draws a :class:`Bad` value: the value, whether
it is wrong beyond doubt (``must_refuse``: the call has to raise the
library's own error) or only borderline (the call may also return a valid
result), and a short label for the report of a failing example.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import zipfile
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from hypothesis import strategies as st

from embedopt._core import InstanceOf, Interval, Options


@dataclass(frozen=True)
class Bad:
    """A generated input: ``value``, whether it ``must_refuse``, a ``label``."""

    value: object
    must_refuse: bool
    label: str

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        text = repr(self.value)
        if len(text) > 300:
            text = text[:300] + "..."
        verdict = "must refuse" if self.must_refuse else "borderline"
        return f"Bad({self.label}, {verdict}: {text})"

    def _repr_pretty_(self, printer, cycle):  # hypothesis' printer
        printer.text(repr(self))


def refuse(value, label: str) -> Bad:
    return Bad(value, True, label)


def borderline(value, label: str) -> Bad:
    return Bad(value, False, label)


# -- anything at all -----------------------------------------------------------

#: Values that are no data and no parameter of any estimator (None aside:
#: it is the default of optional arguments).
NOT_DATA = st.sampled_from(
    [
        "text",
        "",
        b"bytes",
        -1,
        2.5,
        float("nan"),
        True,
        1j,
        {"a": 1},
        {1, 2},
        object(),
        print,
        Ellipsis,
        slice(0, 3),
        range(0),
        (),
    ]
)


def _arrays_of_odd_kind():
    """Arrays and array-likes that hold no usable numbers."""
    return st.sampled_from(
        [
            np.array([]),
            np.zeros((0, 0)),
            np.array(-5),
            np.array(["a", "b", "c"]),
            np.array([None, 1, 2], dtype=object),
            np.array([1 + 2j, 3j]),
            np.array(["2024-01-01"], dtype="datetime64[D]"),
            [[1, 2], [3]],
            [[[]]],
            [None],
            torch.zeros(0),
            torch.tensor([True, False]),
        ]
    )


def junk(label: str = "junk", *, optional: bool = False):
    """Something that is not the expected input at all (must be refused);
    None too unless the argument is ``optional``."""
    values = [NOT_DATA, _arrays_of_odd_kind()]
    if not optional:
        values.append(st.none())
    return st.one_of(values).map(lambda v: refuse(v, f"{label}:{type(v).__name__}"))


# -- index arrays -------------------------------------------------------------

HUGE_INDICES = [2**40, 2**53, 2**62, 2**63 - 1]  # all far beyond any memory


@st.composite
def bad_indices(draw, valid: np.ndarray, size: int):
    """A corrupted copy of the 1-D integer index array ``valid`` (< size).

    ``shorter`` is borderline here; callers that pair the array with others
    of the full length make it must-refuse.

    Parameters
    ----------
    valid : numpy.ndarray of int, 1-D, non-empty
    size : int
        The number of objects the indices refer to.
    """
    a = np.asarray(valid).copy()
    pos = draw(st.integers(0, a.size - 1))
    kind = draw(
        st.sampled_from(
            [
                "negative",
                "huge",
                "uint64_wrapped",
                "fraction",
                "integral_float",
                "nan",
                "inf",
                "bool",
                "str",
                "object_none",
                "complex",
                "small_dtype",
                "shorter",
                "empty",
                "column",
                "scalar",
                "list",
                "nested",
                "tensor",
                "just_above",
            ]
        )
    )
    if kind == "negative":
        a[pos] = draw(st.sampled_from([-1, -size, -(2**31), -(2**63)]))
        return refuse(a, kind)
    if kind == "huge":
        a[pos] = draw(st.sampled_from(HUGE_INDICES))
        return refuse(a, kind)
    if kind == "uint64_wrapped":
        b = a.astype(np.uint64)
        b[pos] = np.uint64(2**64 - draw(st.integers(1, 5)))  # a wrapped -k
        return refuse(b, kind)
    if kind == "fraction":
        b = a.astype(np.float64)
        b[pos] += draw(st.sampled_from([0.5, 1e-9, -0.25]))
        return refuse(b, kind)
    if kind == "integral_float":
        return borderline(
            a.astype(draw(st.sampled_from([np.float64, np.float32]))), kind
        )
    if kind in ("nan", "inf"):
        b = a.astype(np.float64)
        b[pos] = np.nan if kind == "nan" else draw(st.sampled_from([np.inf, -np.inf]))
        return refuse(b, kind)
    if kind == "bool":
        return refuse(a.astype(bool), kind)
    if kind == "str":
        return refuse(a.astype(str), kind)
    if kind == "object_none":
        b = a.astype(object)
        b[pos] = None
        return refuse(b, kind)
    if kind == "complex":
        return refuse(a.astype(np.complex128), kind)
    if kind == "small_dtype":
        dtype = draw(st.sampled_from([np.int8, np.uint8, np.int16, np.int32]))
        if np.iinfo(dtype).max >= size:
            return borderline(a.astype(dtype), kind)
        return borderline(a, kind)
    if kind == "shorter":  # wrong only beside arrays of the full length
        return borderline(a[:-1] if a.size > 1 else a[:0], kind)
    if kind == "empty":
        return refuse(a[:0], kind)
    if kind == "column":
        return refuse(a[:, None], kind)
    if kind == "scalar":
        return refuse(a[pos], kind)
    if kind == "list":
        return borderline(a.tolist(), kind)
    if kind == "nested":
        return refuse([[int(x)] for x in a], kind)
    if kind == "tensor":
        return borderline(torch.as_tensor(a), kind)
    # "just_above": one index past the end; refused where the size is fixed,
    # a slightly larger inferred size elsewhere
    a[pos] = size
    return borderline(a, kind)


# -- numeric values (observed entries, labels, features) ----------------------


@st.composite
def bad_values(draw, valid: np.ndarray):
    """A corrupted copy of the float array ``valid`` (any shape)."""
    a = np.asarray(valid, dtype=np.float64).copy()
    flat = a.reshape(-1)
    pos = draw(st.integers(0, flat.size - 1))
    kind = draw(
        st.sampled_from(
            [
                "nan",
                "inf",
                "huge",
                "overflow32",
                "tiny",
                "scaled",
                "zeros",
                "constant",
                "str",
                "object_none",
                "complex",
                "complex_real",
                "bool",
                "int",
                "float16",
                "shorter",
                "empty",
                "extra_dim",
                "tensor",
                "fortran",
            ]
        )
    )
    if kind in ("nan", "inf"):
        flat[pos] = (
            np.nan if kind == "nan" else draw(st.sampled_from([np.inf, -np.inf]))
        )
        return refuse(a, kind)
    if kind == "huge":
        flat[pos] = draw(st.sampled_from([1e30, -1e38, 1e300, -1e308]))
        return borderline(a, kind)
    if kind == "overflow32":  # finite in float64, inf once cast to float32
        flat[pos] = 1e39
        return borderline(a, kind)
    if kind == "tiny":
        return borderline(a * 1e-300, kind)
    if kind == "scaled":
        return borderline(a * draw(st.sampled_from([1e-30, 1e15, 1e30])), kind)
    if kind == "zeros":
        return borderline(np.zeros_like(a), kind)
    if kind == "constant":
        return borderline(np.full_like(a, draw(st.sampled_from([1.0, -7.5]))), kind)
    if kind == "str":
        return refuse(a.astype(str), kind)
    if kind == "object_none":
        b = a.astype(object)
        b.reshape(-1)[pos] = None
        return refuse(b, kind)
    if kind == "complex":
        b = a.astype(np.complex128)
        b.reshape(-1)[pos] += 1j
        return refuse(b, kind)
    if kind == "complex_real":  # complex dtype, zero imaginary parts
        return borderline(a.astype(np.complex128), kind)
    if kind == "bool":
        return borderline(a > 0, kind)
    if kind == "int":
        return borderline(np.round(a).astype(np.int64), kind)
    if kind == "float16":
        return borderline(a.astype(np.float16), kind)
    if kind == "shorter":  # wrong only beside arrays of the full length
        return borderline(a[:-1], kind)
    if kind == "empty":
        return refuse(a[:0], kind)
    if kind == "extra_dim":  # same size: values are read flat
        return borderline(a[None, ...][..., None], kind)
    if kind == "tensor":
        return borderline(torch.as_tensor(a), kind)
    return borderline(np.asfortranarray(a), kind)


@st.composite
def bad_matrices(draw, valid: np.ndarray):
    """A corrupted copy of the 2-D feature matrix ``valid`` (n x d)."""
    a = np.asarray(valid, dtype=np.float64)
    kind = draw(
        st.sampled_from(
            [
                "values",
                "one_row",
                "no_rows",
                "no_columns",
                "1-D",
                "3-D",
                "transposed",
                "duplicate_rows",
                "sparse",
                "sparse_nan",
                "list",
                "ragged",
                "tensor32",
                "noncontiguous",
            ]
        )
    )
    if kind == "values":
        bad = draw(bad_values(a))
        if bad.label == "extra_dim":  # a 4-D array is no feature matrix
            return refuse(bad.value, bad.label)
        return bad
    if kind == "one_row":
        return borderline(a[:1], kind)
    if kind == "no_rows":
        return refuse(a[:0], kind)
    if kind == "no_columns":
        return refuse(a[:, :0], kind)
    if kind == "1-D":
        return refuse(a[:, 0], kind)
    if kind == "3-D":
        return refuse(a[:, :, None], kind)
    if kind == "transposed":
        return borderline(a.T, kind)
    if kind == "duplicate_rows":
        return borderline(np.repeat(a[:1], a.shape[0], axis=0), kind)
    if kind == "sparse":
        return borderline(sp.csr_matrix(a), kind)
    if kind == "sparse_nan":
        b = sp.csr_matrix(a)
        b.data[0] = np.nan
        return refuse(b, kind)
    if kind == "list":
        return borderline(a.tolist(), kind)
    if kind == "ragged":
        rows = a.tolist()
        rows[-1] = rows[-1][:-1]
        return refuse(rows, kind)
    if kind == "tensor32":
        return borderline(torch.as_tensor(a, dtype=torch.float32), kind)
    return borderline(np.repeat(a, 2, axis=1)[:, ::2], kind)


# -- scalars: k, n_clusters, max_elements ... ----------------------------------


def bad_counts(label: str, *, minimum: int = 1, huge_ok: bool = True):
    """Ints below ``minimum`` and non-ints (refused); small and, when
    ``huge_ok``, huge ints (borderline)."""
    wrong = st.one_of(
        st.integers(-(2**63), minimum - 1),
        st.sampled_from(
            [None, "3", 2.0, 2.5, float("nan"), float("inf"), True, [3], np.array([3])]
        ),
    ).map(lambda v: refuse(v, f"{label}:wrong"))
    edges = [minimum, minimum + 1, np.int64(minimum + 2), np.uint8(minimum + 1)]
    if huge_ok:
        edges += [2**40, 2**63 - 1]
    return st.one_of(
        wrong, st.sampled_from(edges).map(lambda v: borderline(v, f"{label}:edge"))
    )


# -- estimator parameters, from their declared constraints -------------------

#: Values of every type, to try on any parameter.
_WILD = [
    None,
    True,
    False,
    np.bool_(True),
    0,
    -1,
    1,
    2,
    np.int64(3),
    np.uint8(2),
    -(2**63),
    2**63,
    0.0,
    -0.0,
    1e-300,
    5e-324,
    0.5,
    1.0,
    1.5,
    np.float32(0.25),
    -1e-9,
    1e300,
    float("inf"),
    float("-inf"),
    float("nan"),
    np.float64("nan"),
    1 + 1j,
    "",
    "auto",
    "AUTO",
    " auto",
    "none",
    "nan",
    "0",
    "1e-3",
    "float16",
    "cuda:x",
    "meta",
    [],
    [1.0],
    (1, 2),
    {},
    {"bogus": 1},
    np.array(1.0),
    np.array([1.0, 2.0]),
    torch.tensor(2.0),
    object(),
    print,
    np.float16,
    torch.int64,
    torch.device("meta"),
]


def _numeric(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _only_numbers(constraints) -> bool:
    """The constraints admit numbers only (and maybe None)."""
    return all(isinstance(c, Interval) or c is None for c in constraints)


def certainly_invalid(value, constraints) -> bool:
    """Whether ``value`` is wrong for the documented constraints, by rules of
    this test module (independent of the library's validator): NaN for any
    parameter; a non-number, an infinity or a number outside every interval
    for a numbers-only parameter; None where None is not listed."""
    if isinstance(value, float) and math.isnan(value):
        return True
    if value is None:
        return _only_numbers(constraints) and None not in constraints
    if not _only_numbers(constraints):
        return False
    if not _numeric(value):
        return True
    x = float(value)
    for c in constraints:
        if c is None:
            continue
        if math.isinf(x) and (c.left if x < 0 else c.right) is None:
            continue
        if c.kind is int and not float(x).is_integer():
            continue
        if c.kind is int and not isinstance(value, numbers.Integral):
            continue
        lo_ok = c.left is None or (
            x >= c.left if c.closed in ("both", "left") else x > c.left
        )
        hi_ok = c.right is None or (
            x <= c.right if c.closed in ("both", "right") else x < c.right
        )
        if lo_ok and hi_ok:
            return False
    return True


def _interval_values(c: Interval, budget: bool) -> list:
    """Values at and around the bounds of an interval."""
    lo = 0 if c.left is None else c.left
    if c.kind is int:
        lo = math.ceil(lo)
        near = [lo - 1, lo, lo + 1, lo + 2]
        if not budget:
            near += [2**40, 10**12, 2**62]  # far beyond any memory
        if c.right is not None:
            near += [int(c.right), int(c.right) + 1]
        return near
    near = [lo, math.nextafter(lo, math.inf), lo + 1e-300, lo + 1e-8, lo - 1e-12]
    near += [lo + 1.0, lo + 1e8, 1e300 if c.right is None else c.right]
    if c.right is not None:
        near += [math.nextafter(c.right, -math.inf), c.right + 1e-9]
    return near


#: Valid values of the constraint shorthands (and of None).
_SHORTHAND_VALUES = {
    None: [None],
    "boolean": [True, False, np.bool_(True)],
    "callable": [lambda state: None, lambda state: True],
    "random_state": [0, 2**32, 2**63 - 1, np.int64(7), np.random.default_rng(0)],
    "device": ["cpu", "auto", torch.device("cpu"), "cuda", "cuda:7"],
    "dtype": ["float32", "float64", np.float64, np.dtype("float32"), torch.float64],
}


def _option_values(c: Options) -> list:
    names = [str(o) for o in c.options]
    out = list(c.options)
    out += [n.upper() for n in names] + [n.replace("_", "-") for n in names]
    out += [n + "x" for n in names] + [n[:-1] for n in names if len(n) > 1]
    return out


def parameter_values(name: str, constraints: list, *, budget: bool, extra=()):
    """Any value for the parameter ``name``, tagged must-refuse when
    :func:`certainly_invalid` says so.

    Parameters
    ----------
    name : str
    constraints : list
        The estimator's ``_parameter_constraints[name]``.
    budget : bool
        The parameter sets the amount of work (iterations, steps, samples):
        no huge values.
    extra : sequence
        More values to try (estimator-specific).
    """
    edges = []
    for c in constraints:
        if isinstance(c, Interval):
            edges += _interval_values(c, budget)
        elif isinstance(c, Options):
            edges += _option_values(c)
        elif isinstance(c, InstanceOf):
            edges += [[], [1.0], [0.0, 0.0, 0.0], ["a", "b", "c"], (np.nan,)]
        else:
            edges += _SHORTHAND_VALUES[c]
    edges += list(extra)
    wild = list(_WILD)
    if name == "callback":  # a callable that raises is the user's error
        wild = [v for v in wild if not callable(v)]
    if budget:  # huge valid budgets are slow, not wrong: keep them out

        def cheap(v):
            return not (
                _numeric(v)
                and (v > 10 or math.isinf(float(v)))
                and not certainly_invalid(v, constraints)
            )

        edges, wild = [v for v in edges if cheap(v)], [v for v in wild if cheap(v)]

    def tag(v):
        if certainly_invalid(v, constraints):
            return refuse(v, f"{name}:invalid")
        return borderline(v, f"{name}:any")

    # half from the edges of the documented values, half from anything
    return st.one_of(st.sampled_from(edges), st.sampled_from(wild)).map(tag)


# -- model files (save / load) ---------------------------------------------------


def _zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _zip_bytes(members: dict[str, bytes], *, rehash: bool = True) -> bytes:
    """An archive of ``members``; the checksum of the JSON redone if asked."""
    if rehash and "embedopt.json" in members:
        digest = hashlib.sha256(members["embedopt.json"]).hexdigest()
        members = {**members, "embedopt.json.sha256": digest.encode()}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def _with_meta(data: bytes, edit) -> bytes:
    members = _zip_members(data)
    meta = json.loads(members["embedopt.json"])
    edit(meta)
    members["embedopt.json"] = json.dumps(meta).encode()
    return _zip_bytes(members)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["$", "key", "id", "class", "x"]), inner)
    ),
    max_leaves=6,
)


_FILE_DAMAGES = [
    *("truncated", "flipped", "newer", "other", "junk"),
    *("zip", "array", "forged", "missing"),
]


@st.composite
def bad_model_files(draw, valid: bytes, other: bytes):
    """A damaged or foreign model file (bytes; None: no file at all).

    ``valid`` is a model file of the estimator under test, ``other`` one of
    another estimator. Only a flipped byte and a forged JSON entry may load
    (a byte of the ZIP's headers that nothing checks, a forged value that is
    valid); the rest must be refused.
    """
    kind = draw(st.sampled_from(_FILE_DAMAGES))
    if kind == "truncated":
        return refuse(valid[: draw(st.integers(0, len(valid) - 1))], kind)
    if kind == "flipped":
        data = bytearray(valid)
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))
        return borderline(bytes(data), f"{kind} at {at}")
    if kind == "newer":
        step = draw(st.integers(1, 2**40))
        return refuse(
            _with_meta(valid, lambda m: m.update(format_version=1 + step)), kind
        )
    if kind == "other":
        return refuse(other, kind)
    if kind == "junk":
        return refuse(draw(st.binary(max_size=200)), kind)
    if kind == "zip":
        names = st.text("abc/.json", min_size=1, max_size=12)
        return refuse(_zip_bytes(draw(st.dictionaries(names, st.binary()))), kind)
    if kind == "array":
        members = _zip_members(valid)
        name = draw(st.sampled_from(sorted(n for n in members if n.endswith(".npy"))))
        content = bytearray(members[name])
        content[draw(st.integers(0, len(content) - 1))] ^= draw(st.integers(1, 255))
        return refuse(_zip_bytes({**members, name: bytes(content)}), kind)
    if kind == "forged":
        meta = json.loads(_zip_members(valid)["embedopt.json"])
        section = draw(st.sampled_from(["params", "state"]))
        key = draw(st.sampled_from(sorted(meta[section])))
        value = draw(_JSON)
        edit = lambda m: m[section].update({key: value})  # noqa: E731
        return borderline(_with_meta(valid, edit), f"forged {section}[{key!r}]")
    return refuse(None, kind)
