"""Building from source without one of the libraries stops at configure time with a
message naming the library and the package that provides it (what a user of the sdist
sees on a machine that lacks it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("package", "debian"),
    [
        ("Protobuf", "libprotobuf-dev"),
        ("log4cplus", "liblog4cplus-dev"),
        ("ZLIB", "zlib1g-dev"),
        ("OpenSSL", "libssl-dev"),
    ],
)
def test_a_missing_library_is_named_with_its_package(package, debian, tmp_path):
    cmake = shutil.which("cmake")
    assert cmake, "cmake is part of the build requirements"
    done = subprocess.run(
        [
            cmake,
            "-S",
            str(ROOT),
            "-B",
            str(tmp_path),
            "-DTUBEMQ_BUILD_PYTHON=OFF",
            f"-DCMAKE_DISABLE_FIND_PACKAGE_{package}=ON",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    assert f"tubemq needs {package}, which was not found" in message, done.stderr[-1500:]
    assert debian in message
