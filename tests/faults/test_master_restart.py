"""Scenario 8 of behaviour.md §10: the master restarts under a running producer."""

from __future__ import annotations

import threading
import time

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "restart_topic"


@pytest.fixture(scope="module")
def own_cluster(private_cluster):
    with private_cluster([TOPIC], partitions=2) as cluster:
        yield cluster


def test_sends_continue_through_a_master_restart_and_the_producer_reregisters(own_cluster):
    with tubemq.Producer(
        master=own_cluster.master_address, heartbeat_period_ms=500, rpc_timeout_ms=2000
    ) as producer:
        producer.publish(TOPIC)
        registrations = producer.counters()["registrations"]
        failures: list[tubemq.TubeMQError] = []
        sent = 0
        stop = threading.Event()

        def keep_sending() -> None:
            nonlocal sent
            while not stop.is_set():
                try:
                    producer.send(TOPIC, b"during the restart")
                    sent += 1
                except tubemq.TubeMQError as error:
                    failures.append(error)
                time.sleep(0.02)

        sender = threading.Thread(target=keep_sending)
        sender.start()
        try:
            time.sleep(1)
            own_cluster.restart_master()
            deadline = time.monotonic() + 90
            while producer.counters()["registrations"] == registrations:
                assert time.monotonic() < deadline, "the producer never re-registered"
                time.sleep(0.2)
            time.sleep(3)  # a few heartbeats on the new master
        finally:
            stop.set()
            sender.join(timeout=30)
        assert sent > 100
        assert failures == [], {error.code for error in failures}
        assert producer.send(TOPIC, b"after").message_id >= 0
