#!/usr/bin/env bash
# Long fuzz runs of cpp/fuzz/fuzz_target.cc under libFuzzer with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang only; the test command replays the same target
# without clang, as the ctest fuzz_replay). Installs clang if it is missing.
# Usage: scripts/fuzz.sh [seconds=300] [extra libFuzzer flags...]
# ONLY=inlong (or another parser's name below) fuzzes that parser alone (TUBEMQ_FUZZ_ONLY in
# the target), from the corpus entries named after it.
# New inputs go to build/fuzz/corpus (ONLY=x: build/fuzz/corpus-x; the repository's
# cpp/fuzz/corpus is only read); a crash leaves its input in build/fuzz/ as crash-*.
# JOBS is the build's parallelism; the fuzzer itself runs on one core.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-300}
shift || true
JOBS=${JOBS:-2}

if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-dev
fi

FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
FLAGS+=" -fsanitize-ignorelist=$PWD/cpp/fuzz/ubsan_ignorelist.txt"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTUBEMQ_BUILD_PYTHON=OFF -DTUBEMQ_BUILD_TESTS=OFF -DTUBEMQ_BUILD_LIBFUZZER=ON \
  -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
ninja -C build/fuzz -j "$JOBS" tubemq_fuzz
ONLY=${ONLY:-}
PARSERS=(frame response request brokers producer_topic consumer_topic_meta subscribe flow message inlong)
CORPUS=corpus
SEEDS=../../cpp/fuzz/corpus
if [[ -n $ONLY ]]; then
  for index in "${!PARSERS[@]}"; do
    if [[ ${PARSERS[$index]} == "$ONLY" ]]; then export TUBEMQ_FUZZ_ONLY=$index; fi
  done
  if [[ -z ${TUBEMQ_FUZZ_ONLY:-} ]]; then
    echo "ONLY must be one of: ${PARSERS[*]}" >&2
    exit 2
  fi
  CORPUS=corpus-$ONLY
  SEEDS=seeds-$ONLY
  rm -rf "build/fuzz/$SEEDS" && mkdir -p "build/fuzz/$SEEDS"
  cp cpp/fuzz/corpus/"$ONLY"* "build/fuzz/$SEEDS/"
fi
mkdir -p "build/fuzz/$CORPUS"
cd build/fuzz
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ./tubemq_fuzz -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 -max_len=4096 \
  "$@" "$CORPUS" "$SEEDS"
