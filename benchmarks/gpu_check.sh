#!/usr/bin/env bash
# The one device check of a session lent a GPU machine (DEVELOPERS.md, "A GPU
# session"): the GPU tests, every estimator's defaults on the CPU and on CUDA
# side by side (benchmarks/device_check.py), then the whole default suite with
# device="auto" meaning CUDA. Each step has its own time limit, so one that
# hangs cannot eat the others' device time. Results go to $OUT.
#
#   OUT=/tmp/gpu bash benchmarks/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src"
export EMBEDOPT_DATA="${EMBEDOPT_DATA:-$PWD/.gpu_data}"
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
log="$OUT/log.txt"
{
    nvidia-smi -L
    python3 -c "import torch; print('torch', torch.__version__)"
    python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
    echo "## pytest -m gpu"
    timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -q -o addopts="" 2>&1 |
        tail -15
    echo "## device_check"
    timeout 240 python3 benchmarks/device_check.py --out "$OUT/device_check.md" 2>&1 |
        tail -12
    echo "## whole suite, device auto = cuda"
    timeout 200 python3 -m pytest -p no:cacheprovider -q -x -n 8 \
        -o addopts="-m 'not slow'" 2>&1 | grep -vE "^\S+ +[0-9]+ cases" | tail -25
} 2>&1 | tee "$log"
