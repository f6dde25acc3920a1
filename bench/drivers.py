"""The three clients under test, each a command that runs one workload in a process of
its own and prints one JSON line: our Python client (``bench.py_worker``), our C++ core
with no Python (``bench/cpp/native_bench.cc``) and the official Java client
(``bench/java/JavaBench.java`` on the server's ``tubemq-client`` jar)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tubemq.cluster import maven

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "bench"
NATIVE_BENCH = BUILD_DIR / "native_bench"
JAVA_CLASSES = BUILD_DIR / "java"
JAVA_SOURCE = ROOT / "bench" / "java" / "JavaBench.java"

CLIENTS = ("python", "cpp", "java")


def build_native() -> Path:
    """Configures and builds the C++ driver (incremental; the core's own sources count)."""
    if not (BUILD_DIR / "build.ninja").exists() and not (BUILD_DIR / "Makefile").exists():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(
            [
                "cmake", "-S", str(ROOT), "-B", str(BUILD_DIR), *generator,
                "-DTUBEMQ_BUILD_BENCH=ON", "-DTUBEMQ_BUILD_PYTHON=OFF",
                "-DCMAKE_BUILD_TYPE=Release",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    subprocess.run(
        ["cmake", "--build", str(BUILD_DIR), "--target", "native_bench"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return NATIVE_BENCH


def java_classpath() -> str:
    return os.pathsep.join([*(str(jar) for jar in maven.server_classpath()), str(JAVA_CLASSES)])


def build_java() -> None:
    """Compiles JavaBench against the server's client jar when the source is newer."""
    target = JAVA_CLASSES / "JavaBench.class"
    if target.exists() and target.stat().st_mtime >= JAVA_SOURCE.stat().st_mtime:
        return
    JAVA_CLASSES.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-d", str(JAVA_CLASSES), "-cp", java_classpath(), str(JAVA_SOURCE)],
        check=True,
    )


def command(client: str, workload_args: list[str], log_config: Path | None) -> list[str]:
    """The command line that runs one workload through ``client``."""
    if client == "python":
        return [sys.executable, "-m", "bench.py_worker", *workload_args]
    if client == "cpp":
        return [str(NATIVE_BENCH), *workload_args]
    if client == "java":
        logging = [f"-Dlog4j.configurationFile={log_config}"] if log_config else []
        return [
            "java", "-Xmx512m", "-cp", java_classpath(), *logging, "JavaBench", *workload_args
        ]  # fmt: skip
    raise ValueError(f"unknown client {client}")
