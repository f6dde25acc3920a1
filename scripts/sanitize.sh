#!/usr/bin/env bash
# The C++ tests under sanitizers, each in a build directory of its own:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer, every ctest (the GoogleTest
#         suite and the fuzz corpus replay) -> build/asan
#   tsan  ThreadSanitizer, the GoogleTest suite (the fuzz replay is single-threaded)
#         -> build/tsan
# Usage: scripts/sanitize.sh [asan] [tsan]   (no argument: both). JOBS=2 by default;
# any finding aborts its test, so the command fails.
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

targets=("$@")
if ((${#targets[@]} == 0)); then targets=(asan tsan); fi
for target in "${targets[@]}"; do
  case "$target" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "unknown target '$target' (asan, tsan)" >&2; exit 2 ;;
  esac
done
