#!/usr/bin/env bash
# The one device check of a session lent a GPU machine (DEVELOPERS.md, "A GPU
# session"): the GPU tests, every estimator's defaults on the CPU and on CUDA
# side by side (benchmarks/device_check.py), then the default suite, and the
# whole suite again with device="auto" meaning CUDA (EMBEDOPT_DEVICE=cuda).
# Each step has its own time limit, so one that hangs cannot eat the others'
# device time. It ends with a summary block of fixed lines (device, versions,
# each step's pytest counts and seconds, the tests that failed on CUDA) to
# paste into benchmarks/README.md and compare across runs. Results go to $OUT.
#
#   OUT=/tmp/gpu bash benchmarks/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src"
export EMBEDOPT_DATA="${EMBEDOPT_DATA:-$PWD/.gpu_data}"
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
log="$OUT/log.txt"

# step NAME LIMIT_S CMD...: run CMD, keep its output in $OUT/NAME.txt and one
# summary line "NAME: <pytest's last line or exit status> (<seconds> s)".
step() {
    local name="$1" limit="$2"
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    local result
    result=$(grep -E "[0-9]+ (passed|failed|error)" "$OUT/$name.txt" | tail -1 |
        sed -E 's/=+//g; s/^ +| +$//g')
    [ "$rc" = 124 ] && result="timed out after $limit s ${result}"
    echo "$name: ${result:-exit status $rc} ($((SECONDS - start)) s)" >>"$OUT/summary.txt"
    tail -15 "$OUT/$name.txt"
}

: >"$OUT/summary.txt"
{
    nvidia-smi -L
    python3 -c "import torch; print('torch', torch.__version__)"
    python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
    echo "## pytest -m gpu"
    step gpu_tests 150 python3 -m pytest -m gpu -p no:cacheprovider -q -o addopts=""
    echo "## device_check"
    step device_check 240 python3 benchmarks/device_check.py --out "$OUT/device_check.md"
    # The default suite must pass here as anywhere (tests/conftest.py keeps
    # device="auto" on the CPU). Then the same suite with "auto" = CUDA: it
    # must pass too, a test that needs bitwise reruns skipping with the reason
    # (tests/conftest.py, marker bitwise_rerun). Serial: the xdist workers'
    # collection mismatch of that machine (a gzip timestamp in a test
    # parameter) is fixed, but -n on one GPU is not yet measured there.
    echo "## default suite"
    step default_suite 300 python3 -m pytest -p no:cacheprovider -rfE --tb=line
    echo "## whole suite, device auto = cuda"
    EMBEDOPT_DEVICE=cuda step suite_cuda 300 python3 -m pytest -p no:cacheprovider \
        -rfE --tb=line
    grep -E "^(FAILED|ERROR)|^/.*src/embedopt" "$OUT/suite_cuda.txt" | tail -40
} 2>&1 | grep -vE "^\S+ +[0-9]+ cases" | tee "$log"

# The block to compare across runs (README: "On a GPU").
{
    echo "## summary"
    echo "date: $(date -u +%Y-%m-%d)  commit: $(git rev-parse --short HEAD 2>/dev/null)"
    echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
    python3 -c "import torch; print('torch:', torch.__version__, '| cuda:', torch.version.cuda)"
    cat "$OUT/summary.txt"
    echo "failed on CUDA (auto = cuda):"
    grep -E "^(FAILED|ERROR)" "$OUT/suite_cuda.txt" | sed -E 's/ - .*//' | sort | sed 's/^/  /'
} 2>&1 | tee "$OUT/summary.md" | tee -a "$log"
