#!/usr/bin/env bash
# Issue 38 on a machine with an NVIDIA GPU, from source (no install, no package registry):
# compiled steps replayed as CUDA graphs beside the plain replay and PyTorch CUDA eager, about
# 4 minutes at most; the summary in $OUT/gpu_speed.json. See scripts/gpu_speed.py.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec timeout 300 "${PYTHON:-python3}" scripts/gpu_speed.py "$@"
