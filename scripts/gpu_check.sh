#!/usr/bin/env bash
# Issue 10's checks on a machine with an NVIDIA GPU and cupy, run from source (no install:
# the GPU machines here reach no package registry; they have cupy, torch, pytest, hypothesis
# and scikit-learn): the GPU tests on the real cupy, the digits job on the GPU, the benchmark
# beside PyTorch CUDA eager. Output goes to stdout; copy the numbers into benchmarks/RESULTS.md.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
status=0
echo "== pytest -m gpu (the real cupy)"
python3 -m pytest -m gpu -k device -q -p no:cacheprovider tests/ || status=1
echo "== typed-nn train digits --device gpu"
python3 -c "import sys; from typed_nn.cli import main; sys.exit(main(sys.argv[1:]))" \
    train digits --device gpu --no-progress --out "${TMPDIR:-/tmp}/typed_nn_gpu" || status=1
echo "== benchmarks/gpu.py"
python3 benchmarks/gpu.py || status=1
exit $status
