"""Shared fixtures: one real TubeMQ cluster per test session, with a pool of topics.

Creating a topic on a running TubeMQ server takes tens of seconds, so the session creates
every topic the suite needs up front, before the broker starts. Tests take topics from the
pool by name and never assume fixed ports.

Set ``TUBEMQ_TEST_CLUSTER_DIR`` to the working directory of a cluster started with
``tubemq cluster up --topics <the pool below>`` to reuse it across runs (it is then left
running); otherwise the session starts one in a temporary directory and stops it at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tubemq.cluster import LocalCluster

# Every topic the suite uses, created once per session.
TOPIC_POOL = [f"pool_topic_{index}" for index in range(8)]
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
    return list(TOPIC_POOL)
