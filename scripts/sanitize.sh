#!/usr/bin/env bash
# The C++ tests under sanitizers, each in a build directory of its own:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer, every ctest (the GoogleTest
#         suite and the fuzz corpus replay) -> build/asan
#   tsan  ThreadSanitizer, the GoogleTest suite (the fuzz replay is single-threaded)
#         -> build/tsan
#   python  the Python suite (unit, integration, faults, spark) on an extension built with
#         ASan+UBSan (-> .venv-asan, build/asan-python), with the clusters the tests start
#         themselves (run scripts/bootstrap.sh first: it installs Java and Maven; the first
#         cluster fetches the server jars into ~/.m2).
#         Leak detection is off: the interpreter itself keeps memory until exit.
# Usage: scripts/sanitize.sh [asan] [tsan] [python]   (no argument: asan and tsan).
# JOBS=2 by default; any finding aborts its test, so the command fails.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

configure_and_build() {  # <dir> <sanitizer flags>
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTUBEMQ_BUILD_TESTS=ON \
    -DTUBEMQ_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer -g" \
    -DCMAKE_EXE_LINKER_FLAGS="$2" >/dev/null
  ninja -C "$1" -j "$JOBS"
}

run_asan() {
  echo "[sanitize] ASan+UBSan: build/asan"
  configure_and_build build/asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure --timeout 300 -j "$JOBS"
}

run_tsan() {
  echo "[sanitize] TSan: build/tsan"
  configure_and_build build/tsan "-fsanitize=thread"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build/tsan --output-on-failure --timeout 300 -j "$JOBS" -E fuzz_replay
}

run_python() {
  echo "[sanitize] Python tests on an ASan+UBSan extension: .venv-asan"
  if [[ ! -x .venv/bin/python ]]; then
    echo "no .venv: run scripts/bootstrap.sh first" >&2
    exit 2
  fi
  local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  if [[ ! -x .venv-asan/bin/python ]]; then
    "$(.venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv .venv-asan
  fi
  .venv-asan/bin/python -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12"
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" .venv-asan/bin/python -m pip install -q \
    --no-build-isolation -Cbuild-dir=build/asan-python -Ccmake.build-type=Debug \
    -Ccmake.define.CMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer -g" \
    -Ccmake.define.CMAKE_SHARED_LINKER_FLAGS="$flags" ".[test,docs,spark]"
  # Python is not built with ASan, so the runtime must be loaded before anything else, and
  # every process the tests start inherits it: the child interpreters, PySpark's Python
  # workers and the JVMs of the test clusters (they run unharmed with it, only slower).
  # Left out: tests/typing (mypy and stubtest: no native code runs) and tests/packaging
  # (it builds and installs a release wheel of its own, not this build), and the two
  # flat-RSS checks of the create/close loops: under ASan, RSS grows with the allocator's
  # quarantine of freed memory, not with the client (leaks are LeakSanitizer's job, in
  # the asan target above; their fd and thread checks run in the regular suite).
  # procps' `ps` hangs with the runtime preloaded, and Spark's launcher script runs it, so
  # a `ps` first on PATH runs the real one without the preload.
  local shims=build/asan-python/shims
  mkdir -p "$shims"
  printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$(command -v ps)" >"$shims/ps"
  chmod +x "$shims/ps"
  PATH="$PWD/$shims:$PATH" \
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:allow_user_segv_handler=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    .venv-asan/bin/python -m pytest -q -p no:cacheprovider \
    tests/unit tests/integration tests/faults tests/spark \
    --deselect tests/faults/test_lifecycle.py::test_a_thousand_producers_created_and_closed_leak_nothing \
    --deselect tests/faults/test_lifecycle.py::test_a_thousand_consumers_created_and_closed_leak_nothing
}

targets=("$@")
if ((${#targets[@]} == 0)); then targets=(asan tsan); fi
for target in "${targets[@]}"; do
  case "$target" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    python) run_python ;;
    *) echo "unknown target '$target' (asan, tsan, python)" >&2; exit 2 ;;
  esac
done
