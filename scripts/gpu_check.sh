#!/usr/bin/env bash
# Issue 37's checks on a machine with an NVIDIA GPU, run from source (no install: the GPU
# machines here reach no package registry; they have cupy, torch, pytest, hypothesis and
# scikit-learn): the GPU tests on the real cupy, the digits job on GPU and CPU, the benchmark
# beside PyTorch CUDA eager. About 7 minutes at most; logs and summary.json in $OUT (a temporary
# folder where it is unset); the last lines printed are the summary. See scripts/gpu_check.py.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
exec "${PYTHON:-python3}" scripts/gpu_check.py "$@"
