"""Authentication against a master that requires it for producers and consumers, and
topic authorization of consumer groups (protocol.md §8; the server side in docs/security.md)."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "auth_topic"
GUARDED = "guarded_topic"  # only groups the admin allowed may consume it
CREDENTIALS = {"auth_user": "tester", "auth_password": "secret"}


@pytest.fixture(scope="module")
def auth_cluster(private_cluster):
    with private_cluster(
        [TOPIC, GUARDED],
        partitions=2,
        master_settings={
            "startProduceAuthenticate": "true",
            "startConsumeAuthenticate": "true",
        },
    ) as cluster:
        admin = cluster.admin()
        admin.modify("admin_set_topic_authorize_control", topicName=GUARDED, isEnable="true")
        admin.modify(
            "admin_add_authorized_consumergroup_info", topicName=GUARDED, groupName="allowed"
        )
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
        **CREDENTIALS,
        heartbeat_period_ms=500,
    ) as producer:
        producer.publish(TOPIC)
        result = producer.send(TOPIC, b"signed")
        assert result.message_id >= 0
        future = producer.send_async(TOPIC, b"signed too", attrs={"k": "v"})
        assert future.result(timeout=10).message_id >= 0
        assert producer.counters()["heartbeats_failed"] == 0


def consume_all(consumer: tubemq.Consumer, marker: bytes, expected: int) -> set[bytes]:
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and bytes(message).startswith(marker):
            seen.add(bytes(message))
    return seen


def produce_marked(master: str, topic: str, marker: bytes, count: int) -> set[bytes]:
    values = {marker + b"-%d" % index for index in range(count)}
    with tubemq.Producer(master=master, **CREDENTIALS) as producer:
        producer.publish(topic)
        for value in values:
            producer.send(topic, value)
    return values


def test_a_consumer_without_credentials_is_refused_with_415(auth_cluster):
    with pytest.raises(tubemq.AuthenticationError) as info:
        tubemq.Consumer(
            master=auth_cluster.master_address,
            group="anonymous",
            topics=[TOPIC],
            register_attempts=1,
        )
    assert info.value.code == 415 and not info.value.retriable


def test_a_signed_consumer_fetches_and_commits_with_the_authorized_token(auth_cluster):
    marker = f"auth-{uuid.uuid4().hex[:8]}".encode()
    sent = produce_marked(auth_cluster.master_address, TOPIC, marker, 60)
    group = f"signed_{uuid.uuid4().hex[:8]}"
    settings = {"group": group, "topics": [TOPIC], "consume_from": "earliest", **CREDENTIALS}
    with tubemq.Consumer(master=auth_cluster.master_address, **settings) as consumer:
        assert consume_all(consumer, marker, len(sent)) == sent
        metrics = consumer.metrics()
        assert metrics["committed"] >= 1 and metrics["fetch_errors"] == 0
    # The commits reached the broker: the group's next member reads only what came after.
    later = produce_marked(auth_cluster.master_address, TOPIC, marker + b"-later", 5)
    with tubemq.Consumer(master=auth_cluster.master_address, **settings) as successor:
        assert consume_all(successor, marker, len(later)) == later


def test_a_group_not_allowed_on_the_topic_is_refused_with_450(auth_cluster):
    settings = {"topics": [GUARDED], "register_attempts": 1, **CREDENTIALS}
    with pytest.raises(tubemq.AuthorizationError) as info:
        tubemq.Consumer(master=auth_cluster.master_address, group="intruder", **settings)
    assert info.value.code == 450 and not info.value.retriable
    assert info.value.message

    marker = f"guarded-{uuid.uuid4().hex[:8]}".encode()
    sent = produce_marked(auth_cluster.master_address, GUARDED, marker, 20)
    with tubemq.Consumer(
        master=auth_cluster.master_address, group="allowed", consume_from="earliest", **settings
    ) as consumer:
        assert consume_all(consumer, marker, len(sent)) == sent
