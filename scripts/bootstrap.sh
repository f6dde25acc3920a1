#!/usr/bin/env bash
# Installs whatever this Debian machine lacks for tubemq, then builds and installs the
# package into ./.venv. Idempotent: each step checks first, so a second run takes seconds.
# It needs no cache: scripts/fresh_check.sh proves that from an empty pip cache and an
# empty Maven repository.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler libprotobuf-dev liblog4cplus-dev libasio-dev rapidjson-dev libssl-dev
  zlib1g-dev libgtest-dev python3-venv openjdk-17-jdk-headless maven
  python3-dev  # Python.h for the extension, when the venv is made from Debian's python3
  openssl  # the TLS test cluster's client key pair
)

log() { printf '[bootstrap] %s\n' "$*"; }

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$package")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv with $($PYTHON --version)"
  $PYTHON -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate
python -m pip install -q --upgrade pip
# Third-party packages install the ordinary way, with build isolation: an sdist among them
# (pyspark is one) then brings its own build tools and needs nothing from a warm cache.
# `build` too: our own build below runs without isolation, on what is installed here.
# An assignment, so that set -e stops on a failing extras.py; an array, so that no
# requirement is split or globbed. tests/unit/test_bootstrap.py keeps these lines honest.
requirements=$(python scripts/extras.py build runtime test spark docs)
mapfile -t requirements <<<"$requirements"
python -m pip install -q "${requirements[@]}"

# Only our own package is built without isolation, in a fixed directory, so that repeated
# runs rebuild only what changed.
log "building and installing tubemq into .venv"
python -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=build/release .
log "ready: $(python -c 'import tubemq; print("tubemq", tubemq.__version__)')"
