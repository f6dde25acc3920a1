"""``tubemq cluster``: the real master and broker, as a user drives them from a shell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tubemq
from tubemq.cluster import LocalCluster
from tubemq.cluster import process as cluster_process

pytestmark = pytest.mark.integration

TUBEMQ_COMMAND = str(Path(sys.executable).with_name("tubemq"))


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TUBEMQ_COMMAND, *args], capture_output=True, text=True, timeout=timeout)


def parse_lines(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def test_status_describes_the_running_cluster(cluster):
    result = run("cluster", "status", "--workdir", str(cluster.workdir))
    assert result.returncode == 0, result.stderr
    lines = parse_lines(result.stdout)
    assert lines["master"] == cluster.master_address
    assert lines["broker"] == cluster.broker_address
    assert lines["master_web"] == cluster.master_web_address
    assert set(lines["topics"].split(",")) >= set(cluster.topics)


def test_every_pooled_topic_is_publishable_and_subscribable(cluster, topics):
    answer = cluster.admin().query("admin_query_topic_info", topicName=",".join(topics))
    by_name = {item["topicName"]: item for item in answer["data"]}
    assert set(by_name) == set(topics)
    for item in by_name.values():
        assert item["isSrvAcceptPublish"] is True
        assert item["isSrvAcceptSubscribe"] is True
        assert item["totalRunNumPartCount"] == 4


@pytest.mark.slow
def test_up_status_down_leaves_nothing_running(tmp_path):
    workdir = tmp_path / "lifecycle"
    up = run(
        "cluster",
        "up",
        "--workdir",
        str(workdir),
        "--topics",
        "lifecycle_topic",
        "--partitions",
        "2",
    )
    assert up.returncode == 0, up.stderr
    lines = parse_lines(up.stdout)
    assert set(lines) == {"master", "broker", "master_web"}
    state = LocalCluster.load(workdir)
    pids = state._state["pids"]
    try:
        with tubemq.Producer(master=lines["master"]) as producer:
            producer.publish("lifecycle_topic")
            assert len(producer.partitions("lifecycle_topic")) == 2
        assert run("cluster", "status", "--workdir", str(workdir)).returncode == 0
    finally:
        down = run("cluster", "down", "--workdir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert not cluster_process.is_alive(pids["master"], cluster_process.MASTER_CLASS)
    assert not cluster_process.is_alive(pids["broker"], cluster_process.BROKER_CLASS)
    status = run("cluster", "status", "--workdir", str(workdir))
    assert status.returncode == 1
    assert "not running" in status.stdout
    # Idempotent.
    assert run("cluster", "down", "--workdir", str(workdir)).returncode == 0
