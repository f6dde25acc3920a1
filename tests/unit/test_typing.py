"""Static checks in the test command: mypy --strict over the package and the examples,
stubtest of the extension's .pyi against the built module, and ruff."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check(*command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_strict_passes():
    _check("mypy")  # files and strictness come from pyproject.toml


def test_the_stub_matches_the_extension():
    _check("mypy.stubtest", "tubemq._core", "--allowlist", "tests/typing/stubtest_allowlist.txt")


def test_ruff_check_and_format_are_clean():
    paths = ["python", "tests", "examples", "bench", "docs"]
    _check("ruff", "check", *paths)
    _check("ruff", "format", "--check", *paths)
