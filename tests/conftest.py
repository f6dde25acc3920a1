"""Shared fixtures: one real TubeMQ cluster per test session, with a pool of topics.

Creating a topic on a running TubeMQ server takes tens of seconds, so the session creates
every topic the suite needs up front, before the broker starts. Tests take topics from the
pool by name and never assume fixed ports.

Set ``TUBEMQ_TEST_CLUSTER_DIR`` to the working directory of a cluster started with
``tubemq cluster up --topics <the pool below>`` to reuse it across runs (it is then left
running); otherwise the session starts one in a temporary directory and stops it at the end.
The cluster and the Java peers (``java_classes``) take their jars from one place,
``tubemq.cluster.maven.server_classpath()``, so ``TUBEMQ_MAVEN_REPO`` chooses the Maven
repository for both.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from tubemq.cluster import LocalCluster

# Every topic the suite uses, created once per session.
# tests/spark; spark_grow gains a partition each time its test runs.
SPARK_TOPICS = [f"spark_{letter}" for letter in "abcdef"] + ["spark_grow"]
# Pacing and flow-control tests time fetches, so each has a topic nobody else writes to.
FLOW_TOPICS = [f"flow_{letter}" for letter in "abcd"]
# examples/pipeline.py, the main job, run by tests/spark/test_standalone.py.
PIPELINE_TOPICS = ["pipeline_events", "pipeline_windows"]
TOPIC_POOL = (
    [f"pool_topic_{index}" for index in range(8)] + SPARK_TOPICS + FLOW_TOPICS + PIPELINE_TOPICS
)
PARTITIONS = 4


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    reuse = os.environ.get("TUBEMQ_TEST_CLUSTER_DIR")
    if reuse:
        running = LocalCluster.load(Path(reuse))
        if not running.is_running():
            pytest.fail(f"TUBEMQ_TEST_CLUSTER_DIR={reuse} names no running cluster")
        yield running
        return
    local = LocalCluster(tmp_path_factory.mktemp("tubemq-cluster"))
    local.up(topics=TOPIC_POOL, partitions=PARTITIONS)
    try:
        yield local
    finally:
        local.down()


@pytest.fixture(scope="session")
def master(cluster: LocalCluster) -> str:
    """The master's ``host:port``."""
    return cluster.master_address


@pytest.fixture(scope="session")
def topics() -> list[str]:
    """The names of the pooled topics, each with ``PARTITIONS`` partitions on one broker."""
    return [topic for topic in TOPIC_POOL if topic not in SPARK_TOPICS + PIPELINE_TOPICS]


@pytest.fixture(scope="session")
def spark_topics() -> list[str]:
    """Topics of tests/spark, apart from the pool the client tests use."""
    return list(SPARK_TOPICS)


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The reference Java programs of tests/java, compiled against the official client."""
    import subprocess

    from tubemq.cluster import maven

    classes = tmp_path_factory.mktemp("java-classes")
    classpath = os.pathsep.join(str(jar) for jar in maven.server_classpath())
    sources = sorted(str(path) for path in (Path(__file__).parent / "java").glob("*.java"))
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", classpath, *sources],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return classes, f"{classes}{os.pathsep}{classpath}"


@pytest.fixture(scope="session")
def java_main(java_classes):
    """``java_main(main, *args, timeout=...)`` runs a class of tests/java. A fixture,
    because ``from conftest import`` finds whichever conftest.py pytest imported last."""
    return functools.partial(run_java, java_classes)


def run_java(java_classes: tuple[Path, str], main: str, *args: str, timeout: float):
    import subprocess

    return subprocess.run(
        ["java", "-Xmx128m", "-XX:+UseSerialGC", "-cp", java_classes[1], main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def reference_consumer(java_classes):
    """Runs the official Java client (tests/java/ReferenceConsumer.java) as a consumer.

    Returns ``consume(master, topic, group, marker, expected, seconds)``: the messages whose
    body contains ``marker``, as dicts of topic, partition_key, flag, msg_type, msg_time,
    attribute and body (bytes), in the order the Java client received them.
    """

    def consume(
        master: str, topic: str, group: str, marker: str, expected: int, seconds: int = 60
    ) -> list[dict]:
        done = run_java(
            java_classes,
            "ReferenceConsumer",
            master,
            topic,
            group,
            marker,
            str(expected),
            str(seconds),
            timeout=seconds + 60,
        )
        rows = []
        # The Java client's own log also goes to stdout; our lines have exactly 7 fields.
        for line in done.stdout.splitlines():
            fields = line.split("\t")
            if len(fields) != 7 or fields[0] != topic:
                continue
            rows.append(
                {
                    "topic": fields[0],
                    "partition_key": fields[1],
                    "flag": int(fields[2]),
                    "msg_type": None if fields[3] == "-" else fields[3],
                    "msg_time": None if fields[4] == "-" else fields[4],
                    "attribute": None if fields[5] == "-" else fields[5],
                    "body": bytes.fromhex(fields[6]),
                }
            )
        assert done.returncode == 0, (done.returncode, rows, done.stderr[-2000:])
        return rows

    return consume


@pytest.fixture(scope="session")
def reference_producer(java_classes):
    """Runs tests/java/ReferenceProducer.java; returns {body: message id} of what it sent."""

    def produce(master: str, topic: str, marker: str, count: int) -> dict[bytes, int]:
        done = run_java(
            java_classes, "ReferenceProducer", master, topic, marker, str(count), timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        sent = {}
        for line in done.stdout.splitlines():
            fields = line.split("\t")
            if len(fields) == 2 and fields[1].startswith(marker):
                sent[fields[1].encode()] = int(fields[0])
        assert len(sent) == count, done.stdout[-2000:]
        return sent

    return produce
