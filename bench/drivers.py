"""The clients under test, each a long-lived driver process that answers one JSON line
per command (the protocol is in ``bench/py_worker.py``): our Python client
(``bench.py_worker``), our C++ core with no Python (``bench/cpp/native_bench.cc``) and
the official Java client (``bench/java/JavaBench.java`` on the ``tubemq-client`` jar),
once as it comes and once tuned as a Java user would tune it."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.procfs import status_mib
from tubemq.cluster import maven

ROOT = Path(__file__).resolve().parent.parent
# TUBEMQ_BENCH_BUILD_DIR: an existing CMake build of the core to add the driver to
# (configured here with -DTUBEMQ_BUILD_BENCH=ON), so that the core is not compiled twice.
BUILD_DIR = Path(os.environ.get("TUBEMQ_BENCH_BUILD_DIR") or ROOT / "build" / "bench")
NATIVE_BENCH = BUILD_DIR / "native_bench"
JAVA_CLASSES = ROOT / "build" / "bench" / "java"
JAVA_SOURCE = ROOT / "bench" / "java" / "JavaBench.java"

CLIENTS = ("python", "cpp", "java-default", "java-tuned")
LABELS = {
    "python": "ours (Python)",
    "cpp": "ours (C++)",
    "java-default": "Java, default",
    "java-tuned": "Java, tuned",
}
# Modes Java is not run for: consume-batch is our batch path (Batch.values(); the Java
# client hands out message objects only); latency-tuned is our tuning (Java tuned runs
# its own under "latency"); idle waits in our poll, where a Java pull consumer needs a
# loop of the user's own.
NOT_JAVA = frozenset({"consume-batch", "latency-tuned", "idle"})
# Modes only Python runs: slow-callback measures what a slow Python callback does to
# send_async's pace and to memory (the outcomes wait for the Python delivery thread).
PYTHON_ONLY = frozenset({"slow-callback"})
# The tuned JVM: a fixed heap (no resizing while measured) and the throughput
# collector; the client settings are in JavaBench.TUNED (the driver reports them).
JAVA_TUNED_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseParallelGC")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def build_native() -> Path:
    """Configures and builds the C++ driver (incremental; the core's own sources count)."""
    configured = (BUILD_DIR / "build.ninja").exists() or (BUILD_DIR / "Makefile").exists()
    cache = BUILD_DIR / "CMakeCache.txt"
    if not configured or "TUBEMQ_BUILD_BENCH:BOOL=ON" not in cache.read_text():
        generator = ["-G", "Ninja"] if shutil.which("ninja") and not configured else []
        subprocess.run(
            [
                "cmake", "-S", str(ROOT), "-B", str(BUILD_DIR), *generator,
                "-DTUBEMQ_BUILD_BENCH=ON", "-DCMAKE_BUILD_TYPE=Release",
                *([] if configured else ["-DTUBEMQ_BUILD_PYTHON=OFF"]),
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


def command(client: str, master: str, log_config: Path | None) -> list[str]:
    """The command line of ``client``'s driver process."""
    if client == "python":
        return [sys.executable, "-m", "bench.py_worker", "--master", master]
    if client == "cpp":
        return [str(NATIVE_BENCH), "--master", master]
    if client in ("java-default", "java-tuned"):
        variant = client.split("-")[1]
        jvm = JAVA_TUNED_JVM if variant == "tuned" else ()
        logging = [f"-Dlog4j.configurationFile={log_config}"] if log_config else []
        return [
            "java", *jvm, "-cp", java_classpath(), *logging, "JavaBench",
            "--master", master, "--variant", variant,
        ]  # fmt: skip
    raise ValueError(f"unknown client {client}")


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def peak_rss_mib(pid: int) -> float:
    return status_mib(pid, "VmHWM")


def rss_mib(pid: int) -> float:
    """The resident set now (not its peak): what shows growth from window to window."""
    return status_mib(pid, "VmRSS")


WRITE_CALLS = ("write", "writev", "sendto", "sendmsg", "sendmmsg")
# What perf counts over a window, per process (every thread): the system calls entered,
# those that write to a socket or file, and the context switches (voluntary and not), the
# per-message costs issue 25 names.
KERNEL_EVENTS = {
    "raw_syscalls:sys_enter": "syscalls",
    "context-switches": "ctx_switches",
    **{f"syscalls:sys_enter_{call}": "writes" for call in WRITE_CALLS},
}


class KernelCounts:
    """``perf stat`` attached to a driver for one window; without perf (or without the
    permission to count another process) the window simply carries no such figures."""

    available: bool | None = None  # probed once per run

    def __init__(self, pid: int) -> None:
        self._process: subprocess.Popen[str] | None = None
        if KernelCounts.available is None:
            KernelCounts.available = self._probe()
        if KernelCounts.available:
            self._process = subprocess.Popen(
                ["perf", "stat", "-x", ",", "-e", ",".join(KERNEL_EVENTS), "-p", str(pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            time.sleep(0.05)  # attached before the window's command is sent

    @staticmethod
    def _probe() -> bool:
        if shutil.which("perf") is None:
            return False
        probe = subprocess.run(
            ["perf", "stat", "-x", ",", "-e", ",".join(KERNEL_EVENTS), "true"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return probe.returncode == 0 and "not supported" not in probe.stderr

    def stop(self) -> dict[str, int]:
        """The counts since the start, by the names of KERNEL_EVENTS' values."""
        if self._process is None:
            return {}
        self._process.send_signal(signal.SIGINT)
        _, text = self._process.communicate(timeout=30)
        counts = {}
        for line in text.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] in KERNEL_EVENTS and fields[0].isdigit():
                name = KERNEL_EVENTS[fields[2]]
                counts[name] = counts.get(name, 0) + int(fields[0])
        return counts


class Driver:
    """One client's driver process: started once, asked for window after window."""

    def __init__(self, client: str, master: str, log_config: Path | None, timeout: float):
        self.client, self.timeout = client, timeout
        self._stderr = tempfile.TemporaryFile()
        started = time.monotonic()
        self._process = subprocess.Popen(
            command(client, master, log_config),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
            text=True,
        )
        ready = self._answer()
        # Spawn to ready: interpreter or JVM start-up and loading the client library.
        self.startup = {
            "wall_s": time.monotonic() - started,
            "cpu_s": process_cpu_seconds(self._process.pid),
            "settings": ready.get("settings"),
        }

    @property
    def pid(self) -> int:
        return self._process.pid

    def _answer(self) -> dict[str, Any]:
        """The next JSON line of the driver; other lines (log noise) are skipped."""
        assert self._process.stdout is not None
        deadline = time.monotonic() + self.timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self.kill()
                    raise RuntimeError(f"{self.client}: no answer in {self.timeout:.0f} s")
                line = self._process.stdout.readline()
                if not line:
                    raise RuntimeError(f"{self.client} exited:\n{self.stderr_tail()}")
                if line.startswith("{"):
                    answer = json.loads(line)
                    if "error" in answer:
                        raise RuntimeError(f"{self.client}: {answer['error']}")
                    return answer

    def window(self, mode: str, size: int, topic: str, seconds: float, max_count: int,
               attrs: bool = False, rate: float = 0.0) -> dict[str, Any]:  # fmt: skip
        assert self._process.stdin is not None
        command = f"window {mode} {size} {topic} {seconds} {max_count} {int(attrs)} {rate}\n"
        counts = KernelCounts(self.pid)
        self._process.stdin.write(command)
        self._process.stdin.flush()
        try:
            answer = self._answer()
        finally:
            answer_counts = counts.stop()
        # Counted from the command to the answer: slightly more than the timed window (a
        # consumer's join, the payloads made before the clock starts).
        answer.update(answer_counts)
        answer["peak_rss_mib"] = round(peak_rss_mib(self.pid), 1)
        answer["rss_mib"] = round(rss_mib(self.pid), 1)
        return answer

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.write("quit\n")
                self._process.stdin.close()
                self._process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._stderr.close()
