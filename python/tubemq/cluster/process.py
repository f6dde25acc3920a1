"""Starting, watching and stopping the server JVMs, by PID."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from tubemq.cluster.errors import ClusterError

MASTER_CLASS = "org.apache.inlong.tubemq.server.tools.MasterStartup"
BROKER_CLASS = "org.apache.inlong.tubemq.server.tools.BrokerStartup"

# Small heaps and the serial collector: two JVMs share a 2-core machine with the tests.
# C1 only (QUICK_START_FLAGS) starts faster and costs less CPU than full JIT here.
# Upstream's scripts use CMS flags that Java 17 refuses; none of these replace them one
# for one. The exports/opens were not needed to start, serve and stop (enableMemStore=false
# keeps the broker off the store-close path that reaches JDK internals); they stay as a
# guard for that path, which topic deletion could still take.
JVM_FLAGS = [
    "-Xms64m",
    "-Xmx320m",
    "-XX:+UseSerialGC",
    "-XX:MaxDirectMemorySize=256m",
    "-Djava.net.preferIPv4Stack=true",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
]

# What a test cluster adds to JVM_FLAGS, unless it asks for the full JIT. A C1-only broker
# serves about half the messages per second of one with C2, once warm (1 KiB sends on one
# connection: about 21 000 against 40 000-50 000 here); the bench, which measures
# clients, must not be capped by it.
QUICK_START_FLAGS = ["-XX:TieredStopAtLevel=1"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports free on ``host`` right now, all distinct ("0.0.0.0": free on every address)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sockets.append(sock)  # closed below even if bind fails
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is not None and candidate.exists():
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise ClusterError(
            "no 'java' on PATH and no JAVA_HOME; the TubeMQ server needs "
            "Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
        )
    return found


def start_jvm(
    main_class: str,
    ini: Path,
    classpath: list[Path],
    workdir: Path,
    log_file: Path,
    env: Mapping[str, str] | None = None,
    full_jit: bool = False,
) -> int:
    """Starts a server JVM fully detached (own session, not our child); returns its PID.

    A short-lived shell starts the JVM in the background and prints its PID, so the JVM
    outlives ``tubemq cluster up`` and is never a zombie or a dangling ``Popen`` of ours.
    ``env`` adds variables to the JVM's environment. ``full_jit`` leaves the JVM its C2
    compiler, as in production: slower to start, faster once warm.
    """
    command = [
        java_executable(),
        *JVM_FLAGS,
        *([] if full_jit else QUICK_START_FLAGS),
        f"-Dlog4j.configurationFile={workdir / 'log4j2.xml'}",
        "-cp",
        os.pathsep.join(str(jar) for jar in classpath),
        main_class,
        "-f",
        str(ini),
    ]
    script = f"{shlex.join(command)} >>{shlex.quote(str(log_file))} 2>&1 </dev/null & echo $!"
    launcher = subprocess.run(
        ["/bin/sh", "-c", script],
        cwd=workdir,
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=30,
        env={**os.environ, **env} if env else None,
    )
    pid_text = launcher.stdout.strip()
    if launcher.returncode != 0 or not pid_text.isdigit():
        raise ClusterError(f"could not start {main_class}: {launcher.stderr.strip()}")
    return int(pid_text)


def is_alive(pid: int, main_class: str) -> bool:
    """True while ``pid`` is a running (not zombie) JVM of ``main_class``."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and main_class.encode() in cmdline


def stop(pid: int, main_class: str, grace_s: float = 10.0, hard: bool = False) -> None:
    """SIGTERM, then SIGKILL once ``grace_s`` has passed (``hard``: SIGKILL at once, no
    shutdown hook runs); returns when the JVM is gone."""
    if not is_alive(pid, main_class):
        return
    signals = [(signal.SIGKILL, 5.0)]
    if not hard:
        signals.insert(0, (signal.SIGTERM, grace_s))
    for sig, wait_s in signals:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not is_alive(pid, main_class):
                return
            time.sleep(0.1)
    raise ClusterError(f"process {pid} ({main_class}) survived SIGKILL")


def log_tail(log_file: Path, lines: int = 25) -> str:
    try:
        return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
