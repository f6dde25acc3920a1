"""Spark fixtures: one local SparkSession (``local[2]``) per test session, ``tubemq``
registered, its Python workers running this interpreter (which has tubemq installed)."""

from __future__ import annotations

import os
import sys
import time
import uuid

import pytest

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


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tubemq.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tubemq-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(session)
    yield session
    session.stop()


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
