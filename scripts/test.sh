#!/usr/bin/env bash
# The whole test suite: C++ unit tests (ctest), then the Python unit and integration
# tests against a real TubeMQ master and broker that the session starts and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# shellcheck disable=SC1091
source .venv/bin/activate

echo "[test] C++ tests"
cmake -S . -B build/ctest -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DTUBEMQ_BUILD_TESTS=ON -DTUBEMQ_BUILD_PYTHON=OFF >/dev/null
cmake --build build/ctest
ctest --test-dir build/ctest --output-on-failure --timeout 120

echo "[test] Python tests"
# The slowest tests by name, so that the time each part adds to the suite is on record.
python -m pytest -v --durations=40 "$@"
