"""Scenario 26 of behaviour.md §10: the broker restarts under a consuming member."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "consume_restart_topic"


@pytest.fixture(scope="module")
def own_cluster(private_cluster):
    with private_cluster([TOPIC], partitions=2) as cluster:
        yield cluster


def produce(master: str, marker: str, count: int) -> set[int]:
    with tubemq.Producer(master=master) as producer:
        producer.publish(TOPIC)
        return {producer.send(TOPIC, f"{marker}-{i}".encode()).message_id for i in range(count)}


def test_consumption_resumes_after_a_broker_restart(own_cluster):
    master, marker = own_cluster.master_address, f"br_{uuid.uuid4().hex[:8]}"
    before = produce(master, marker, 20)
    with tubemq.Consumer(
        master=master,
        group=f"g_{uuid.uuid4().hex[:8]}",
        topics=[TOPIC],
        consume_from="earliest",
        heartbeat_period_ms=1000,
    ) as consumer:
        seen: set[int] = set()
        deadline = time.monotonic() + 40
        while not before <= seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                seen.add(message.message_id)
        assert before <= seen
        own_cluster.stop_broker()
        # While the broker is down, polling neither raises an unexpected error nor spins.
        errors = []
        for _ in range(10):
            try:
                assert consumer.poll(0.3) is None
            except tubemq.TubeMQError as error:
                errors.append(error)
        assert all(error.retriable for error in errors), {e.code for e in errors}
        own_cluster.start_broker()
        after: set[int] = set()
        deadline = time.monotonic() + 150
        while not after and time.monotonic() < deadline:
            try:
                after = produce(master, f"{marker}-after", 10)
            except tubemq.TubeMQError:
                time.sleep(2)  # the restarted broker is not publishable yet
        assert after, "the restarted broker never accepted messages"
        deadline = time.monotonic() + 120
        while not after <= seen and time.monotonic() < deadline:
            try:
                message = consumer.poll(0.5)
            except tubemq.TubeMQError as error:
                assert error.retriable, error
                continue
            if message is not None:
                seen.add(message.message_id)
        assert after <= seen
