#!/usr/bin/env bash
# Builds tubemq's C++ dependencies as static, position-independent libraries with Zig as a
# cross toolchain for x86_64 Linux with glibc 2.28 (the manylinux_2_28 baseline: RHEL 8,
# AlmaLinux 8, Debian 11, Ubuntu 20.04 and newer), and writes a CMake toolchain file that
# builds tubemq against them:
#
#   scripts/zig_deps.sh            # then: TUBEMQ_WHEEL_TOOLCHAIN=zig-2.28 scripts/wheels.sh OUT
#
# Why this route: no container runtime here, so no manylinux image; Zig (the `ziglang`
# package on PyPI) ships clang with the headers and stub libraries of any glibc version, so
# what it links needs nothing newer than glibc 2.28, and it links LLVM's libc++ statically,
# so the wheel needs no libstdc++ at all. The sources are Debian 12's, the very versions the
# host build uses (protobuf 3.21.12 pairs with the host's protoc), fetched with
# `apt-get source` through a private apt state in .cache/ (the system's apt configuration is
# left alone). Everything goes to .cache/zig-2.28/ (ignored by git); builds run under nice
# with at most 2 jobs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
Z=$ROOT/.cache/zig-2.28
PREFIX=$Z/prefix
TARGET=x86_64-linux-gnu.2.28
JOBS=${JOBS:-2}
log() { printf '[zig-deps] %s\n' "$*" >&2; }
mkdir -p "$Z/src" "$Z/build" "$Z/bin" "$PREFIX/include" "$PREFIX/lib"

# --- Zig, and compiler wrappers that CMake and Configure scripts take as plain compilers
if [[ ! -x $Z/venv/bin/python ]] || ! "$Z/venv/bin/python" -m ziglang version >/dev/null 2>&1; then
  log "installing ziglang into $Z/venv"
  python3 -m venv "$Z/venv"
  "$Z/venv/bin/python" -m pip install -q --disable-pip-version-check ziglang
fi
ZIG=$("$Z/venv/bin/python" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')/zig
for tool in cc c++ ar ranlib; do
  case $tool in
    cc | c++) command="$tool -target $TARGET" ;;
    *) command=$tool ;;
  esac
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$ZIG" "$command" >"$Z/bin/zig-$tool"
  chmod +x "$Z/bin/zig-$tool"
done
export CC=$Z/bin/zig-cc CXX=$Z/bin/zig-c++ AR=$Z/bin/zig-ar RANLIB=$Z/bin/zig-ranlib
export CFLAGS="-O2 -fPIC" CXXFLAGS="-O2 -fPIC"
log "zig $("$Z/venv/bin/python" -m ziglang version), target $TARGET"

# --- Debian's source packages, through a private apt state (deb-src lines of our own)
APT=$Z/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial"
cat >"$APT/sources.list" <<'EOF'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache")
# The upstream tarball of each: the Debian patches only package them.
source_tarball() {
  local package=$1 found
  found=$(ls "$Z/src/${package}_"*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -1 || true)
  if [[ -z $found ]]; then
    [[ -n $(ls "$APT/lists" 2>/dev/null | grep -v partial) ]] || apt-get "${apt_opts[@]}" update -qq
    (cd "$Z/src" && apt-get "${apt_opts[@]}" source --download-only -qq "$package" >&2 || true)
    found=$(ls "$Z/src/${package}_"*.orig.tar.* | grep -v '\.asc$' | head -1)
  fi
  echo "$found"
}
# Unpacks the tarball of PACKAGE into build/PACKAGE once and prints that directory.
unpack() {
  local package=$1 dir=$Z/build/$1
  if [[ ! -d $dir ]]; then
    mkdir -p "$dir"
    tar xf "$(source_tarball "$package")" -C "$dir" --strip-components=1
  fi
  echo "$dir"
}
cmake_build() {  # SOURCE BUILD [cmake options]: configure, build and install into PREFIX
  local source=$1 build=$2
  shift 2
  cmake -S "$source" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_AR="$AR" -DCMAKE_RANLIB="$RANLIB" -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF "$@" >&2
  nice -n 15 cmake --build "$build" -j "$JOBS" >&2
  cmake --install "$build" >&2
}

# --- zlib (static: the wheel then needs no libz.so.1 either)
if [[ ! -f $PREFIX/lib/libz.a ]]; then
  log "zlib"
  dir=$(unpack zlib)
  (cd "$dir" && ./configure --static --prefix="$PREFIX" >&2 && nice -n 15 make -j "$JOBS" libz.a >&2 \
    && make install >&2)
fi

# --- OpenSSL: the libraries only (no apps, tests or docs)
if [[ ! -f $PREFIX/lib/libcrypto.a ]]; then
  log "OpenSSL"
  dir=$(unpack openssl)
  (cd "$dir" && ./Configure linux-x86_64 no-shared no-tests \
      --prefix="$PREFIX" --libdir=lib --openssldir=/etc/ssl >&2 \
    && nice -n 15 make -j "$JOBS" build_libs >&2 && make install_dev >&2)
fi

# --- protobuf: the runtime library only; the host's protoc (the same 3.21.12) generates
if [[ ! -f $PREFIX/lib/libprotobuf.a ]]; then
  log "protobuf"
  dir=$(unpack protobuf)
  cmake_build "$dir" "$Z/build/protobuf-build" -Dprotobuf_BUILD_TESTS=OFF \
    -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_BUILD_LIBPROTOC=OFF -Dprotobuf_WITH_ZLIB=OFF
fi

# --- log4cplus
if [[ ! -f $PREFIX/lib/liblog4cplus.a && ! -f $PREFIX/lib/liblog4cplusU.a ]]; then
  log "log4cplus"
  dir=$(unpack log4cplus)
  cmake_build "$dir" "$Z/build/log4cplus-build" -DLOG4CPLUS_BUILD_TESTING=OFF \
    -DWITH_UNIT_TESTS=OFF -DLOG4CPLUS_BUILD_LOGGINGSERVER=OFF -DLOG4CPLUS_ENABLE_DECORATED_LIBRARY_NAME=OFF
fi

# --- header-only libraries: copied from the host's Debian packages, so that no -I/usr/include
# (with the host's newer glibc headers) reaches the compile line
for header in asio.hpp asio rapidjson; do
  [[ -e $PREFIX/include/$header ]] || cp -r "/usr/include/$header" "$PREFIX/include/"
done
# rapidjson 1.1.0 declares a copy assignment of GenericStringRef that assigns a const member;
# GCC lets it pass, Zig's clang does not ("cannot assign to non-static data member 'length'
# with const-qualified type"). It is never called: the copy in this prefix drops it.
sed -i '/GenericStringRef& operator=(const GenericStringRef& rhs) { s = rhs.s; length = rhs.length; }/d' \
  "$PREFIX/include/rapidjson/document.h"

cat >"$PREFIX/toolchain.cmake" <<EOF
# Written by scripts/zig_deps.sh: tubemq against the static libraries in this prefix,
# compiled and linked by Zig for $TARGET.
set(CMAKE_C_COMPILER "$CC")
set(CMAKE_CXX_COMPILER "$CXX")
set(CMAKE_AR "$AR" CACHE FILEPATH "")
set(CMAKE_RANLIB "$RANLIB" CACHE FILEPATH "")
# Only this prefix, never the host's /usr (whose libraries need a newer glibc).
set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH OFF)
list(PREPEND CMAKE_PREFIX_PATH "$PREFIX")
set(Protobuf_USE_STATIC_LIBS ON)
set(Protobuf_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "")
set(OPENSSL_ROOT_DIR "$PREFIX")
set(OPENSSL_USE_STATIC_LIBS TRUE)
set(ZLIB_USE_STATIC_LIBS ON)
# pybind11 would add -flto, which Zig's linker does not take for a shared library
set(CMAKE_INTERPROCEDURAL_OPTIMIZATION OFF)
EOF
log "done: $PREFIX/toolchain.cmake"
