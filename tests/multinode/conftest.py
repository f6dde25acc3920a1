"""One cluster of three brokers and three masters for all of tests/multinode (issue 16).

It is started and stopped with the ``tubemq cluster`` command, as a user would, and takes
about 40 s to come up on a quiet 2-core machine. Tests that stop, kill or take a node
offline bring it back before they end. Select these tests with ``-m multinode``.
"""

from __future__ import annotations

import time

import pytest
from multinode_support import BROKERS, MASTERS, PARTITIONS, TOPICS, cluster_command

from tubemq.cluster import LocalCluster


@pytest.fixture(scope="session")
def started(tmp_path_factory: pytest.TempPathFactory):
    """The cluster, started and stopped as a user would (``tubemq cluster up|down``), and
    what ``up`` printed."""
    workdir = tmp_path_factory.mktemp("multinode")
    began = time.monotonic()
    up = cluster_command(
        "up",
        "--workdir",
        str(workdir),
        "--topics",
        ",".join(TOPICS),
        "--partitions",
        str(PARTITIONS),
        "--brokers",
        str(BROKERS),
        "--masters",
        str(MASTERS),
    )
    assert up.returncode == 0, up.stderr
    # Shown with -s or -rA: the figure issue 16 asks for.
    print(f"\n{BROKERS} brokers + {MASTERS} masters ready in {time.monotonic() - began:.1f} s")
    cluster = LocalCluster.load(workdir)
    try:
        yield cluster, up.stdout
    finally:
        down = cluster_command("down", "--workdir", str(workdir))
        assert down.returncode == 0, down.stderr
        assert not any(cluster.is_node_running(name) for name in cluster.node_names)


@pytest.fixture(scope="session")
def topology(started) -> LocalCluster:
    return started[0]
