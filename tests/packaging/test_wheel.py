"""The wheel users install: built, repaired to a manylinux wheel that carries its own
libraries, installed into a fresh virtual environment, and used against the real cluster.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# Libraries every manylinux system provides (the policy's allow-list, as far as a C++
# extension can need them); anything else must travel inside the wheel.
SYSTEM_LIBRARIES = {
    "libc.so.6",
    "libm.so.6",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libz.so.1",
    "ld-linux-x86-64.so.2",
}


def _run(*command: str | Path, cwd: Path | None = None, timeout: float = 900) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def repaired_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # The release build directory of scripts/bootstrap.sh makes this an incremental build.
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-build-isolation",
        "--no-deps",
        "-w",
        out,
        "-Cbuild-dir=build/release",
        ".",
        cwd=ROOT,
    )
    built = next(out.glob("tubemq-*.whl"))
    _run(sys.executable, "-m", "auditwheel", "repair", "-w", out / "repaired", built)
    return next((out / "repaired").glob("tubemq-*.whl"))


def test_the_repaired_wheel_is_manylinux_and_needs_only_system_libraries(repaired_wheel, tmp_path):
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", repaired_wheel.name), repaired_wheel.name
    with zipfile.ZipFile(repaired_wheel) as wheel:
        names = wheel.namelist()
        wheel.extractall(tmp_path)
    bundled = {
        Path(name).name for name in names if name.startswith("tubemq.libs/") and ".so" in name
    }
    assert any(name.startswith("libprotobuf") for name in bundled), bundled
    assert any(name.startswith("liblog4cplus") for name in bundled), bundled
    assert any(name.startswith("libcrypto") for name in bundled), bundled
    assert any(name.startswith("libssl") for name in bundled), bundled  # TLS
    licenses = {Path(name).stem for name in names if name.startswith("tubemq/licenses/")}
    assert {"protobuf", "log4cplus", "openssl", "asio", "rapidjson", "pybind11"} <= licenses
    # Every library the extension and the bundled ones need is bundled or a system one.
    extension = next(name for name in names if re.match(r"tubemq/_core\..*\.so$", name))
    libraries = [tmp_path / extension, *(tmp_path / "tubemq.libs" / name for name in bundled)]
    for library in libraries:
        needed = re.findall(r"\(NEEDED\).*\[(.+?)\]", _run("readelf", "-d", library))
        outside = {name for name in needed if name not in bundled} - SYSTEM_LIBRARIES
        assert not outside, f"{library.name} needs {outside}"
    size = repaired_wheel.stat().st_size
    print(f"wheel {repaired_wheel.name}: {size} bytes, bundles {sorted(bundled)}")


def test_the_wheel_works_in_a_fresh_environment(repaired_wheel, tmp_path, master, topics):
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", repaired_wheel)
    # scripts/wheels.sh runs the same round trip for every Python's wheel.
    out = _run(
        python,
        ROOT / "scripts" / "wheel_roundtrip.py",
        "--master",
        master,
        "--topic",
        topics[4],
        "--source",
        ROOT,
        "--bundled",
        cwd=tmp_path,
        timeout=180,
    )
    assert "ROUND TRIP OK" in out
