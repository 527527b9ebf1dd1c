#!/usr/bin/env bash
# Install typed_nn with its dev, debug, examples and distributed extras into a fresh virtual
# environment, then run every check: ruff, generated-code freshness, mypy --strict (package,
# tests, scripts, benchmarks), pyright (package), pytest (the static typing cases and the docs'
# code with mypy, pyright, pyrefly and ty, README examples, the README install command in a fresh
# venv checked by mypy and pyright from outside the repository).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${TYPED_NN_VENV:-.ci/venv}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e ".[dev,debug,examples,distributed]"
export PATH="$PWD/$venv/bin:$PATH"
# tests/test_distributed.py trains under `mpiexec -n 2` (the distributed extra's MPICH): here a
# missing mpi4py or mpiexec fails the run instead of skipping those tests.
export TYPED_NN_REQUIRE_MPI=1

echo "== ruff"
ruff check .
ruff format --check .
echo "== generated code"
python scripts/gen_operators.py --check
python scripts/gen_op_overloads.py --check
echo "== mypy --strict"
mypy
echo "== pyright"
# The venv's interpreter, as the pytest cases pass it: pyright resolves imports (the extras,
# mypy for the plugin) in the environment of the python it is given, not the one it runs from.
pyright --pythonpath "$(command -v python)" typed_nn
echo "== the evaluator's differential fuzzer (40 s, a fresh seed; scripts/fuzz.py)"
python scripts/fuzz.py --seconds 40
echo "== pytest"
# Each pass runs on the machine's cores (pytest-xdist; at most 4 workers: the MPI tests start
# two ranks each). pytest exits 5 when it collected no test: that is a failure here, not a pass.
parallel=(-n auto --maxprocesses 4)
status=0
python -m pytest -q -p no:cacheprovider "${parallel[@]}" || status=$?
if [ "$status" -ne 0 ]; then
    echo "pytest failed with exit code $status" >&2
    exit "$status"
fi
echo "== pytest, debug mode (TYPED_NN_DEBUG=1: beartype, jaxtyping, NaN/Inf checks)"
status=0
# The install test (README install command in a fresh venv, then mypy and pyright on a user
# file) ran in the normal pass: debug mode changes nothing it checks.
TYPED_NN_DEBUG=1 python -m pytest -q -p no:cacheprovider "${parallel[@]}" -m "not install" || status=$?
if [ "$status" -ne 0 ]; then
    echo "pytest in debug mode failed with exit code $status" >&2
    exit "$status"
fi
