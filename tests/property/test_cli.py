"""Property-based bad-input suite over every ``embedopt`` command (issue 14).

Hypothesis generates, for each command,

* a value for one of its options (drawn from the parser itself): wrong
  numbers, words, empty strings, unicode, paths, and valid edge values;
* a ``--data`` file of garbage (CSV text, ``.npy`` arrays, binary bytes)
  for the commands that read one;
* a dataset folder (``--data-dir``) whose files are corrupted copies of a
  tiny fake of each built-in dataset (MovieLens 100k, eurodist, the music
  triplets, LIBSVM a1a, the digits, GloVe),

and runs ``embedopt.cli.main`` on tiny problems. Every run must end like a
tool: exit status 0, or status 2 with exactly one ``embedopt: error: ...``
line on stderr (``embedopt: warning: ...`` lines aside) and no traceback.
Status 1 (an internal error), any other status or exception, or a run still
going after the time limit fails the example.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from embedopt.cli import build_parser, main  # noqa: E402

from ._harness import CASES_RUN, TIME_LIMIT, Hang, examples, watchdog  # noqa: E402

COMMANDS = ("complete", "ordinal", "quantize", "sdp", "similarity")


# -- tiny fakes of the built-in datasets --------------------------------------------


def _write_movielens_100k(folder: Path, rng) -> None:
    folder.mkdir()
    lines = []
    for user in range(1, 13):
        for item in rng.choice(np.arange(1, 11), 5, replace=False):
            lines.append(f"{user}\t{item}\t{rng.integers(1, 6)}\t88125{user:04d}")
    (folder / "u.data").write_text("\n".join(lines) + "\n")
    occupations = ["artist", "doctor", "other"]
    (folder / "u.occupation").write_text("\n".join(occupations) + "\n")
    (folder / "u.user").write_text(
        "".join(
            f"{u}|{20 + u}|{'MF'[u % 2]}|{occupations[u % 3]}|{10000 + u}\n"
            for u in range(1, 13)
        )
    )
    (folder / "u.item").write_text(
        "".join(
            f"{i}|Movie {i} (199{i % 10})|01-Jan-199{i % 10}||http://x/{i}|"
            + "|".join("1" if g == i % 19 else "0" for g in range(19))
            + "\n"
            for i in range(1, 11)
        )
    )


def _write_eurodist(folder: Path, rng) -> None:
    folder.mkdir()
    # 16 cities: 1,680 triplets, of which the command's 2,000 training draws
    # leave several hundred to test
    pts = rng.random((16, 2)) * 1000
    D = np.rint(np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))).astype(int)
    names = [f"City{k}" for k in range(16)]
    rows = ['"",' + ",".join(f'"{n}"' for n in names)]
    rows += [f'"{n}",' + ",".join(map(str, D[k])) for k, n in enumerate(names)]
    (folder / "eurodist.csv").write_text("\n".join(rows) + "\n")


def _write_music(folder: Path, rng) -> None:
    folder.mkdir()
    T = np.array([rng.choice(np.arange(1, 16), 3, replace=False) for _ in range(150)])
    lines = ["i,j,k (1-based)"] + [",".join(map(str, t)) for t in T]
    (folder / "music_triplets.csv").write_text("\n".join(lines) + "\n")
    tags = (rng.random((15, 4)) < 0.3).astype(int)
    rows = ["rock,pop,jazz,folk"] + [",".join(map(str, r)) for r in tags]
    (folder / "music_label_matrix.csv").write_text("\n".join(rows) + "\n")


def _write_a1a(folder: Path, rng) -> None:
    folder.mkdir()
    lines = []
    for k in range(40):
        feats = sorted(rng.choice(np.arange(1, 124), 6, replace=False))
        lines.append(f"{'+1' if k % 2 else '-1'} " + " ".join(f"{f}:1" for f in feats))
    (folder / "a1a").write_text("\n".join(lines) + "\n")


def _write_digits(folder: Path, rng) -> None:
    folder.mkdir()
    X = rng.integers(0, 17, (40, 64))
    y = np.arange(40) % 4
    text = "\n".join(",".join(map(str, [*x, c])) for x, c in zip(X, y, strict=True))
    with gzip.open(folder / "digits.csv.gz", "wt") as fh:
        fh.write(text + "\n")


def _write_glove(folder: Path, rng) -> None:
    folder.mkdir()
    np.save(
        folder / "glove_6B_50d_emb.npy",
        rng.standard_normal((120, 10)).astype(np.float32),
    )


def _write_bitcoin_alpha(folder: Path, rng) -> None:
    folder.mkdir()
    lines = ["source,target,weight,timestamp"]
    for source in range(1, 13):
        for target in rng.choice(np.arange(20, 32), 5, replace=False):
            lines.append(f"{source},{target},{rng.choice([-3, 1, 10])},14{source:04d}")
    (folder / "soc-sign-bitcoinalpha.csv").write_text("\n".join(lines) + "\n")


_WRITERS = {
    "movielens-100k": _write_movielens_100k,
    "signed-bitcoin-alpha": _write_bitcoin_alpha,
    "eurodist": _write_eurodist,
    "music-aset400-triplets": _write_music,
    "libsvm-adult": _write_a1a,
    "sklearn-digits": _write_digits,
    "glove-6b-50d": _write_glove,
}


@functools.cache
def fake_data_root() -> Path:
    """A folder of tiny, valid fakes of the built-in datasets (one per session)."""
    root = Path(tempfile.mkdtemp(prefix="embedopt-fake-data-"))
    rng = np.random.default_rng(0)
    for name, write in _WRITERS.items():
        write(root / name, rng)
    return root


def _tiny(command: str) -> list[str]:
    """Options that make each command's default problem tiny."""
    return {
        "complete": ["--size", "30", "--rank", "2", "--lam", "1", "--max-iter", "10"],
        "ordinal": [
            *("--n-objects", "12", "--n-train", "200", "--n-test", "50"),
            *("--dims", "2", "--max-iter", "2"),
        ],
        "quantize": [
            *("--n", "100", "--dim", "4", "-K", "4", "--iters", "2"),
            *("--methods", "none,gcd-g"),
        ],
        "sdp": ["--data", "synthetic", "--n", "30", "--rank", "2", "--max-iter", "20"],
        "similarity": [
            *("--data-dir", str(fake_data_root()), "--towers", "embedding"),
            *("--n-components", "2", "--max-iter", "2"),
        ],
    }[command]


#: Runs of the commands on each fake dataset (``--data-dir`` is added).
DATASET_RUNS = {
    "movielens-100k": [
        "complete",
        "--data",
        "movielens-100k",
        "--lam",
        "1",
        "--max-iter",
        "10",
    ],
    "signed-bitcoin-alpha": [
        "complete",
        "--data",
        "bitcoin-alpha",
        "--loss",
        "logistic",
        "--lam",
        "1",
        "--max-iter",
        "10",
    ],
    "eurodist": ["ordinal", "--data", "eurodist", "--max-iter", "2"],
    "music-aset400-triplets": ["ordinal", "--data", "music", "--max-iter", "2"],
    "glove-6b-50d": [
        "quantize",
        "--data",
        "glove",
        "--n",
        "60",
        "-K",
        "4",
        "--iters",
        "2",
        "--methods",
        "none,gcd-g",
    ],
    "libsvm-adult": ["sdp", "--data", "a1a", "--max-iter", "20", "--n-pairs", "5"],
    "sklearn-digits": [
        "sdp",
        "--data",
        "digits",
        "--max-iter",
        "20",
        "--n-pairs",
        "5",
        "--problem",
        "cmvu",
    ],
}
#: The similarity command reads MovieLens 100k too.
SIMILARITY_RUN = [
    "similarity",
    "--data",
    "100k",
    "--towers",
    "embedding",
    "--n-components",
    "2",
    "--max-iter",
    "2",
]


# -- running a command --------------------------------------------------------------


@contextlib.contextmanager
def _working_folder(path):
    """``os.chdir`` for the block (contextlib.chdir needs Python 3.11)."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(argv: list[str], kind: str) -> tuple[int, str, str]:
    """``main(argv)`` with stdout/stderr captured; checks that it ended like a
    tool (see the module doc) and returns (status, stdout, stderr)."""
    subject = f"embedopt {argv[0] if argv else ''}".strip()
    out, err = io.StringIO(), io.StringIO()
    try:
        # in a folder of its own: a generated --json value such as "abc" is a
        # valid file name, written there
        with tempfile.TemporaryDirectory() as cwd, _working_folder(cwd):
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                with watchdog(TIME_LIMIT):
                    try:
                        status = main(argv)
                    except SystemExit as exc:  # argparse: usage errors, --help
                        status = exc.code
    except Hang as exc:
        CASES_RUN[subject, kind, "failed"] += 1
        raise AssertionError(f"{argv}: {exc} (a hang)") from None
    except BaseException:
        CASES_RUN[subject, kind, "failed"] += 1
        raise
    stdout, stderr = out.getvalue(), err.getvalue()
    where = (
        f"embedopt {' '.join(argv)}\n--- stderr:\n{stderr[-3000:]}\n--- stdout:\n"
        f"{stdout[-1000:]}"
    )
    ok = status in (0, 2) and "Traceback" not in stdout + stderr
    errors = [
        line
        for line in stderr.splitlines()
        if not line.startswith("embedopt: warning: ")
    ]
    if status == 2:
        ok = ok and len(errors) == 1 and errors[0].startswith("embedopt: error: ")
    elif status == 0:
        ok = ok and not errors
    if not argv:  # no command: the usage on stdout, status 2
        ok = status == 2 and stdout.startswith("usage:") and not stderr
    CASES_RUN[subject, kind, "refused" if status == 2 else "accepted"] += ok
    CASES_RUN[subject, kind, "failed"] += not ok
    assert ok, f"exit status {status}; expected 0, or 2 with one error line:\n{where}"
    return status, stdout, stderr


# -- option values -------------------------------------------------------------------

#: Values for any option: numbers out of range or of the wrong kind, words,
#: unicode, paths, and a few valid ones. No huge valid values for options
#: that set the amount of work (see _BUDGET).
OPTION_VALUES = [
    "",
    " ",
    "abc",
    "-1",
    "0",
    "1",
    "2",
    "-0",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "-1e400",
    "1e-400",
    "2.5",
    "0.5",
    "1e308",
    "0x10",
    "1_000",
    "\uff13",
    "\u0663",
    "auto",
    "AUTO",
    "none",
    "None",
    "true",
    "yes",
    "-",
    "--",
    "--debug",
    "=",
    ",",
    ",,",
    "a,b",
    "none,,opq",
    "gcd-g,gcd-g",
    "cayley,",
    "float16",
    "int32",
    "cuda",
    "cuda:99",
    "cuda:-1",
    " cpu",
    "meta",
    "\t",
    "\u00e9",
    "\U0001f642",
    "a" * 300,
    "/",
    "/dev/null",
    "/nonexistent/x.json",
    "x.xyz",
    "%s",
    "{}",
    "$EMBEDOPT_DATA",
    "~",
]
HUGE_VALUES = [str(2**40), str(2**63), "99999999999999999999", "1e18"]
#: Options whose value sets the amount of work: a huge valid value is a long
#: run, not a bug.
_BUDGET = {"--max-iter", "--iters", "--steps", "--update-frequency", "--every"}


def _options(command: str) -> list[argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [
        a
        for a in sub.choices[command]._actions
        if a.option_strings and not set(a.option_strings) & {"-h", "--help"}
    ]


@st.composite
def option_argv(draw, command: str):
    action = draw(st.sampled_from(_options(command)), label="option")
    flag = draw(st.sampled_from(action.option_strings))
    if action.nargs == 0:  # a switch; a value after it is a stray argument
        extra = draw(st.sampled_from([[], ["stray"]]))
        return [flag, *extra]
    values = list(OPTION_VALUES) + list(action.choices or [])
    if not _BUDGET & set(action.option_strings):
        values += HUGE_VALUES
    value = draw(st.sampled_from(values), label="value")
    form = draw(st.sampled_from(["separate", "equals", "missing"]))
    if form == "equals" and flag.startswith("--"):
        return [f"{flag}={value}"]
    if form == "missing":
        return [flag]
    return [flag, value]


@pytest.mark.parametrize("command", COMMANDS)
@examples(1.5)
@given(data=st.data())
def test_option_values(command, data):
    args = data.draw(option_argv(command), label="args")
    run_cli([command, *_tiny(command), *args], "options")


@examples(1)
@given(
    argv=st.lists(
        st.sampled_from(
            [
                *COMMANDS,
                "--version",
                "--debug",
                "-x",
                "--nope",
                "complete2",
                "",
                "-",
                "--",
                "help",
                "--help=x",
            ]
        ),
        max_size=3,
    )
)
def test_top_level_arguments(argv):
    if argv[:1] in ([c] for c in COMMANDS):  # a whole default run: too big
        argv = [*argv[:1], "--nope"]
    if "--debug" in argv:  # shows the traceback on purpose
        argv = [a for a in argv if a != "--debug"]
    run_cli(argv, "arguments")


# -- data files ----------------------------------------------------------------------

_CSV_TOKENS = [
    "0",
    "1",
    "2",
    "3",
    "-1",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "",
    "x",
    " ",
    str(2**40),
    str(2**63),
    "1e-300",
    "0x1",
]


@st.composite
def csv_text(draw):
    rows = draw(
        st.lists(
            st.lists(st.sampled_from(_CSV_TOKENS), min_size=1, max_size=5),
            min_size=0,
            max_size=8,
        )
    )
    sep = draw(st.sampled_from([",", ";", "\t", ", "]))
    header = draw(st.sampled_from(["", "a,b,c\n", "# comment\n", "\ufeffrow,col\n"]))
    return header + "\n".join(sep.join(r) for r in rows) + "\n"


@st.composite
def npy_array(draw):
    return draw(
        st.sampled_from(
            [
                np.zeros((0, 4)),
                np.zeros(6),
                np.zeros((3, 2, 2)),
                np.full((20, 4), np.nan),
                np.full((20, 4), 1e39),
                np.ones((20, 4), dtype=np.complex128),
                np.array([["a"] * 4] * 20),
                np.arange(80).reshape(20, 4),
                np.ones((20, 4), dtype=bool),
                np.ones((3, 4)),
                np.ones((20, 1)),
                np.ones((2**5, 2**6), dtype=np.float16),
                np.array(3.0),
            ]
        )
    )


@st.composite
def data_file(draw, command: str):
    """(file name, bytes) of a bad --data file for ``command``."""
    kind = draw(st.sampled_from(["csv", "npy", "fvecs", "binary", "empty"]))
    if command != "quantize" and kind in ("npy", "fvecs"):
        kind = "csv"
    if kind == "csv":
        name = "data.npy" if command == "quantize" else "data.csv"
        return name, draw(csv_text()).encode()
    if kind == "npy":
        buf = io.BytesIO()
        np.save(buf, draw(npy_array()))
        return "data.npy", buf.getvalue()
    if kind == "fvecs":
        dim = draw(st.sampled_from([0, 4, -1, 2**31 - 1]))
        body = np.int32(dim).tobytes() + np.ones(4, np.float32).tobytes()
        return "data.fvecs", body * draw(st.integers(1, 3)) + b"\x00" * draw(
            st.integers(0, 3)
        )
    if kind == "binary":
        return "data.csv", bytes(draw(st.lists(st.integers(0, 255), max_size=64)))
    return "data.csv", b""


_FILE_RUNS = {
    "complete": ["--lam", "1", "--max-iter", "10"],
    "ordinal": ["--max-iter", "2"],
    "quantize": ["-K", "2", "--iters", "2", "--methods", "none,gcd-g"],
}


@pytest.mark.parametrize("command", sorted(_FILE_RUNS))
@examples(1)
@given(data=st.data())
def test_data_files(command, data):
    name, content = data.draw(data_file(command), label="file")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        run_cli([command, "--data", str(path), *_FILE_RUNS[command]], "data file")


# -- corrupted dataset folders -------------------------------------------------------

_FIELD_TOKENS = [
    "",
    "x",
    "nan",
    "inf",
    "-1",
    "0",
    "1e400",
    "2.5",
    str(2**40),
    str(2**63),
    " ",
    "\u00e9",
    "1,2",
    "|",
    "::",
]


@st.composite
def corrupted_text(draw, text: str, sep: str):
    lines = text.splitlines()
    kind = draw(
        st.sampled_from(
            [
                "field",
                "drop_field",
                "add_field",
                "blank",
                "truncate",
                "empty",
                "garbage",
                "crlf",
                "bom",
                "duplicate",
                "drop_lines",
            ]
        )
    )
    if kind == "empty":
        return ""
    if kind == "garbage":
        return draw(st.text(max_size=80))
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if kind == "crlf":
        return text.replace("\n", "\r\n")
    if kind == "bom":
        return "\ufeff" + text
    if kind == "drop_lines":
        return "\n".join(lines[: draw(st.integers(0, 2))]) + "\n"
    k = draw(st.integers(0, len(lines) - 1))
    fields = lines[k].split(sep)
    j = draw(st.integers(0, len(fields) - 1))
    if kind == "field":
        fields[j] = draw(st.sampled_from(_FIELD_TOKENS))
    elif kind == "drop_field":
        del fields[j]
    elif kind == "add_field":
        fields.insert(j, draw(st.sampled_from(_FIELD_TOKENS)))
    elif kind == "blank":
        fields = [""]
    else:  # duplicate
        lines.insert(k, lines[k])
    lines[k] = sep.join(fields)
    return "\n".join(lines) + "\n"


_SEPARATORS = {
    ".data": "\t",
    ".user": "|",
    ".item": "|",
    ".csv": ",",
    "": " ",
    ".occupation": "|",
}


@st.composite
def corrupted_dataset(draw, name: str):
    """(file name inside the dataset folder, new bytes) for dataset ``name``."""
    folder = fake_data_root() / name
    files = sorted(p.name for p in folder.iterdir())
    file = draw(st.sampled_from(files), label="file")
    path = folder / file
    if file.endswith(".npy"):
        if draw(st.booleans()):
            return file, draw(st.binary(max_size=64))
        buf = io.BytesIO()
        np.save(buf, draw(npy_array()))
        return file, buf.getvalue()
    if file.endswith(".gz"):
        text = gzip.decompress(path.read_bytes()).decode()
        new = draw(corrupted_text(text, ","))
        if draw(st.booleans()):
            return file, new.encode()  # not gzip at all
        return file, gzip.compress(new.encode("utf-8", "surrogatepass"))
    text = path.read_text()
    sep = _SEPARATORS.get(Path(file).suffix, ",")
    if file == "a1a":
        sep = " " if draw(st.booleans()) else ":"
    new = draw(corrupted_text(text, sep))
    return file, new.encode("utf-8", "surrogatepass")


_DATASETS = [*sorted(DATASET_RUNS), "similarity"]


@pytest.mark.parametrize("dataset", _DATASETS)
@examples(1.5)
@given(data=st.data())
def test_corrupted_datasets(dataset, data):
    name = "movielens-100k" if dataset == "similarity" else dataset
    argv = SIMILARITY_RUN if dataset == "similarity" else DATASET_RUNS[dataset]
    file, content = data.draw(corrupted_dataset(name), label="corrupted")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(fake_data_root() / name, Path(tmp) / name)
        (Path(tmp) / name / file).write_bytes(content)
        run_cli([*argv, "--data-dir", tmp], "dataset")


@pytest.mark.parametrize("dataset", _DATASETS)
def test_the_fake_datasets_are_valid(dataset):
    """The fakes themselves run cleanly: the corruptions are what fails."""
    argv = SIMILARITY_RUN if dataset == "similarity" else DATASET_RUNS[dataset]
    status, out, _ = run_cli([*argv, "--data-dir", str(fake_data_root())], "valid")
    assert status == 0 and out
