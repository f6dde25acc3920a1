"""A Spark standalone cluster on loopback for the tests: one master, n workers.

It lives with the tests, not in the package: the tests are its only user. A deployment
runs Spark's own cluster manager (or YARN, Kubernetes) started by its operators; what a
user of ``tubemq.spark`` needs from us there is the package on every node (docs/spark.md),
not a launcher.

The daemons run from the installed pyspark (``$SPARK_HOME/bin/spark-class``), each in the
foreground as a child of the test process, so that their PIDs are ours to stop; pip's
pyspark ships no ``sbin/start-master.sh``. Each worker has its own work directory (the
executors' stdout/stderr land there) and the daemons' logs go to ``root``.

Executors are JVMs (``CoarseGrainedExecutorBackend``) that a worker forks for an
application; they start the Python workers with the interpreter the application names
(``spark.pyspark.python``). Because the workers run on this machine, an application that
names this venv's interpreter gets ``tubemq`` on every executor: the "package installed
on every node" deployment.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; the fields after its ')' do not.
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(roots: Iterable[int]) -> list[int]:
    """Every living process below ``roots`` (from /proc; Linux only)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class StandaloneCluster:
    """``start()``, then ``master_url`` for ``SparkSession.builder.master``; ``stop()``."""

    def __init__(
        self,
        root: Path,
        *,
        workers: int = 2,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        daemon_memory: str = "256m",
    ) -> None:
        self.root = root
        self.workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.port = free_port()
        self.webui_port = free_port()
        self._master: subprocess.Popen[bytes] | None = None
        self._workers: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui_url(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",  # nothing listens beyond loopback
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_LOG_DIR=str(self.root),
        )
        # A driver's settings in the environment would reach the daemons too.
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        return env

    def _spawn(self, name: str, main: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "ab")
        try:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main, *args],
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.root,
            )
        finally:
            log.close()

    def start(self, timeout: float = 180) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        master_args = ["--host", "127.0.0.1", "--port", str(self.port)]
        master_args += ["--webui-port", str(self.webui_port)]
        self._master = self._spawn("master", "org.apache.spark.deploy.master.Master", *master_args)
        for index in range(self.workers):
            work = self.root / f"worker-{index}"
            work.mkdir(exist_ok=True)
            # Ports 0: each worker takes free ones; the master's JSON tells them.
            worker_args = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
            worker_args += ["--cores", str(self.worker_cores), "--memory", self.worker_memory]
            worker_args += ["--work-dir", str(work), self.master_url]
            worker = "org.apache.spark.deploy.worker.Worker"
            self._workers.append(self._spawn(f"worker-{index}", worker, *worker_args))
        (self.root / "pids").write_text(
            "\n".join(str(p.pid) for p in [self._master, *self._workers]) + "\n"
        )
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict[str, Any]:
        """The master's view (its web UI's ``/json``): workers, cores, applications."""
        with urllib.request.urlopen(f"{self.webui_url}/json", timeout=5) as reply:
            state: dict[str, Any] = json.load(reply)
        return state

    def wait_ready(self, timeout: float) -> None:
        """Until every worker registered ALIVE with the master."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for process in [self._master, *self._workers]:
                if process is not None and process.poll() is not None:
                    raise RuntimeError(
                        f"a Spark daemon exited ({process.args}); logs in {self.root}"
                    )
            try:
                last = self.state()
                alive = [w for w in last.get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= self.workers:
                    return
            except OSError as error:
                last = error
            time.sleep(0.5)
        raise TimeoutError(
            f"the Spark standalone cluster was not ready: {last}; logs in {self.root}"
        )

    def daemon_pids(self) -> list[int]:
        return [p.pid for p in [self._master, *self._workers] if p is not None]

    def executor_pids(self, app_id: str | None = None) -> list[int]:
        """The executor JVMs the workers run (of ``app_id`` only, if given)."""
        found = []
        for pid in descendants(p.pid for p in self._workers):
            command = _cmdline(pid)
            if EXECUTOR_CLASS not in command or not _alive(pid):
                continue
            if app_id is None or app_id in command:
                found.append(pid)
        return sorted(found)

    def kill_executor(self, app_id: str | None = None) -> int:
        """SIGKILLs one executor JVM of ``app_id``; returns its PID. Its Python workers
        lose their JVM and exit; the worker reports the loss to the master."""
        pids = self.executor_pids(app_id)
        if not pids:
            raise RuntimeError(f"no executor of {app_id or 'any application'} is running")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def wait_executors(self, app_id: str, count: int, timeout: float = 120) -> list[int]:
        deadline = time.monotonic() + timeout
        while True:
            pids = self.executor_pids(app_id)
            if len(pids) >= count or time.monotonic() > deadline:
                return pids
            time.sleep(0.5)

    def stop(self, timeout: float = 30) -> None:
        """Workers first (they stop their executors), then the master; SIGKILL whatever
        of ours is left after ``timeout``."""
        below = descendants(p.pid for p in self._workers)
        for group in (self._workers, [self._master]):
            for process in group:
                if process is not None and process.poll() is None:
                    process.terminate()
            deadline = time.monotonic() + timeout
            for process in group:
                if process is None:
                    continue
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
        for pid in below:  # executors or Python workers a killed worker left behind
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._workers, self._master = [], None


def cluster_conf(master_url: str, python: str = sys.executable) -> dict[str, str]:
    """What an application on the cluster sets, in this process or a child driver."""
    return {
        "spark.master": master_url,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.cores.max": "2",
        # The executors' Python workers: the venv's interpreter, which sees tubemq.
        "spark.pyspark.python": python,
        # A lost executor's task goes to the other one without waiting for locality.
        "spark.locality.wait": "0s",
    }


def wait_for_executors(spark: Any, count: int, timeout: float = 120) -> None:
    """Waits until ``count`` executors have registered with the session's driver.

    A new application's executors are JVMs starting on the same two CPUs as everything
    else. A query planned meanwhile starts a Python worker on the driver that Spark gives
    a fixed 10 s to connect back (``PythonWorkerFactory``, not configurable): under that
    start-up load it can miss them ("Python worker failed to connect back")."""
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus  # the driver counts too
    deadline = time.monotonic() + timeout
    while status().size() < count + 1:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} executors did not register within {timeout} s")
        time.sleep(0.2)
