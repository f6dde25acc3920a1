"""Fault tests run on clusters of their own: stopping a broker or restarting a master makes
topics unusable for tens of seconds, which would disturb tests on the session cluster."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping

import pytest

from tubemq.cluster import LocalCluster


@pytest.fixture(scope="session")
def private_cluster(tmp_path_factory: pytest.TempPathFactory):
    """``with private_cluster(topics, ...) as cluster:`` in a module-scoped fixture."""
    return functools.partial(_private_cluster, tmp_path_factory)


@contextlib.contextmanager
def _private_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    topics: list[str],
    partitions: int = 4,
    master_settings: Mapping[str, str] | None = None,
) -> Iterator[LocalCluster]:
    """A cluster for one test module, stopped when the module is done."""
    cluster = LocalCluster(tmp_path_factory.mktemp("private-cluster"))
    cluster.up(topics=topics, partitions=partitions, master_settings=master_settings)
    try:
        yield cluster
    finally:
        cluster.down()
