"""Authentication against a master that requires it (protocol.md §8, server.md §5)."""

from __future__ import annotations

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "auth_topic"


@pytest.fixture(scope="module")
def auth_cluster(private_cluster):
    with private_cluster(
        [TOPIC],
        partitions=2,
        master_settings={"startProduceAuthenticate": "true"},
    ) as cluster:
        yield cluster


def test_missing_credentials_are_refused_with_415(auth_cluster):
    with pytest.raises(tubemq.AuthenticationError) as info:
        tubemq.Producer(master=auth_cluster.master_address, register_attempts=1)
    assert info.value.code == 415
    assert not info.value.retriable
    assert info.value.message


def test_signed_producer_registers_heartbeats_and_sends(auth_cluster):
    with tubemq.Producer(
        master=auth_cluster.master_address,
        auth_user="tester",
        auth_password="secret",
        heartbeat_period_ms=500,
    ) as producer:
        producer.publish(TOPIC)
        result = producer.send(TOPIC, b"signed")
        assert result.message_id >= 0
        future = producer.send_async(TOPIC, b"signed too", attrs={"k": "v"})
        assert future.result(timeout=10).message_id >= 0
        assert producer.counters()["heartbeats_failed"] == 0
