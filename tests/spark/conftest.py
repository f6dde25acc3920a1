"""Spark fixtures. A process holds one SparkContext at a time, so the session's Spark
sessions come from one holder (``spark_sessions``) that stops the current one before it
starts one of the other kind:

* ``spark``: ``local[2]``, for most tests (module scope, so the switch happens between
  modules);
* ``cluster_spark``: the driver in this process, its executors on a Spark standalone
  cluster of two 1-core workers (``standalone``, started on first use, stopped at the end
  of the session, logs in the session's tmp dir).

Python workers, local or on the cluster, run this interpreter (the venv's, which has
tubemq installed).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytest puts this folder on sys.path
from standalone import StandaloneCluster, cluster_conf, wait_for_executors

import tubemq

# PySpark warns about the pandas it finds; the suite turns warnings into errors.
SPARK_WARNINGS = [
    "ignore:PySpark does not yet fully support pandas:FutureWarning",
    "ignore::DeprecationWarning:pyspark",
    "ignore::ResourceWarning",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            for spec in SPARK_WARNINGS:
                item.add_marker(pytest.mark.filterwarnings(spec))


def has_data_source_api() -> bool:
    import pyspark

    return int(pyspark.__version__.split(".")[0]) >= 4


class SparkSessions:
    """Hands out the SparkSession a test needs, stopping the other kind first."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._kind: str | None = None
        self._session: Any = None
        self._standalone: StandaloneCluster | None = None

    @property
    def standalone(self) -> StandaloneCluster:
        if self._standalone is None:
            root = Path(self._factory.mktemp("spark-standalone"))
            self._standalone = StandaloneCluster(root).start()
        return self._standalone

    def local(self) -> Any:
        return self._get("local", {"spark.master": "local[2]"})

    def cluster(self) -> Any:
        return self._get("cluster", cluster_conf(self.standalone.master_url))

    def _get(self, kind: str, conf: dict[str, str]) -> Any:
        if self._kind == kind:
            return self._session
        self.release()
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        # The driver JVM (launched with the first session) binds to loopback only.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession

        import tubemq.spark

        builder = (
            SparkSession.builder.appName(f"tubemq-tests-{kind}")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "1g")
            .config("spark.sql.warehouse.dir", str(self._factory.mktemp("warehouse")))
        )
        for key, value in conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        if has_data_source_api():  # PySpark 3.5 has none; tests/spark/test_versions.py
            tubemq.spark.register(session)
        if kind == "cluster":
            wait_for_executors(session, int(conf["spark.cores.max"]))
        self._kind, self._session = kind, session
        return session

    def release(self) -> None:
        """Stops the current session: its application leaves the cluster's cores free."""
        if self._session is not None:
            self._session.stop()
        self._kind, self._session = None, None

    def close(self) -> None:
        self.release()
        if self._standalone is not None:
            self._standalone.stop()
            self._standalone = None


@pytest.fixture(scope="session")
def spark_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSessions]:
    sessions = SparkSessions(tmp_path_factory)
    try:
        yield sessions
    finally:
        sessions.close()


@pytest.fixture(scope="module")
def spark(spark_sessions: SparkSessions) -> Any:
    return spark_sessions.local()


@pytest.fixture
def cluster_spark(spark_sessions: SparkSessions) -> Any:
    return spark_sessions.cluster()


@pytest.fixture
def standalone(spark_sessions: SparkSessions) -> StandaloneCluster:
    return spark_sessions.standalone


@pytest.fixture(autouse=True, scope="module")
def _close_test_process_clients():
    """Closes the clients the tests' own process cached (offset queries), so that no
    native service outlives a module (tests/unit checks for a quiet process)."""
    yield
    from tubemq.spark import _clients

    _clients.close_all()


@pytest.fixture(scope="session")
def consume_marked(master: str):
    """``consume_marked(topic, marker, expected)``: the messages of ``topic`` whose value
    starts with ``marker``, read by the server-balanced consumer of a new group from the
    earliest offset until ``expected`` arrived (or 90 s passed)."""

    def consume(topic: str, marker: str, expected: int, seconds: float = 90) -> list:
        got = []
        group = f"check_{uuid.uuid4().hex[:10]}"
        with tubemq.Consumer(
            master=master, group=group, topics=[topic], consume_from="earliest"
        ) as consumer:
            deadline = time.monotonic() + seconds
            prefix = marker.encode()
            while len(got) < expected and time.monotonic() < deadline:
                for message in consumer.consume(1000, timeout=0.5):
                    if bytes(message).startswith(prefix):
                        got.append(message)
        return got

    return consume
