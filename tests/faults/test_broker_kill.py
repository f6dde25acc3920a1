"""The broker is killed (SIGKILL) and restarted during a steady produce + consume run:
no send that reported success is lost, the messages delivered twice are only those the
broker could not have remembered as consumed, and consumption resumes by itself."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "killed_broker_topic"
# The broker keeps committed offsets in memory and writes them out every 5 s, synced
# 1 s later (broker.ini offsetStgCacheFlushMs, offsetStgFileSyncMs): a kill forgets the
# commits of up to ~6 s, so their messages come again. Slack for scheduling on top.
OFFSET_MEMORY_S = 6.0 + 4.0


@pytest.fixture(scope="module")
def own_cluster(private_cluster):
    with private_cluster([TOPIC], partitions=2) as cluster:
        yield cluster


class SteadyProducer(threading.Thread):
    """Sends numbered messages one by one until stopped; keeps those the broker stored."""

    def __init__(self, master: str, marker: str) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self.master, self.marker = master, marker
        self.stored: list[bytes] = []
        self.failures: list[tubemq.TubeMQError] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with tubemq.Producer(master=self.master, rpc_timeout_ms=3000) as producer:
            producer.publish(TOPIC)
            index = 0
            while not self.stop.is_set():
                value = f"{self.marker}-{index}".encode()
                index += 1
                try:
                    producer.send(TOPIC, value)
                except tubemq.TubeMQError as error:
                    self.failures.append(error)
                    time.sleep(0.2)
                    continue
                self.stored.append(value)
                time.sleep(0.005)  # a steady ~150 msg/s, not a flood


def test_a_killed_broker_loses_no_stored_message_and_consumption_resumes(own_cluster):
    master, marker = own_cluster.master_address, f"kill-{uuid.uuid4().hex[:8]}"
    producer = SteadyProducer(master, marker)
    first_seen: dict[bytes, float] = {}
    duplicates: list[bytes] = []
    kill_at = restarted_at = 0.0
    with tubemq.Consumer(
        master=master,
        group=f"g_{uuid.uuid4().hex[:8]}",
        topics=[TOPIC],
        consume_from="earliest",
        heartbeat_period_ms=1000,
        rpc_timeout_ms=3000,
    ) as consumer:

        def drain(seconds: float, until=None) -> None:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not (until and until()):
                try:
                    message = consumer.poll(0.2)
                except tubemq.TubeMQError as error:
                    assert error.retriable, error
                    continue
                if message is None or not bytes(message).startswith(marker.encode()):
                    continue
                value = bytes(message)
                if value in first_seen:
                    duplicates.append(value)
                else:
                    first_seen[value] = time.monotonic()

        producer.start()
        drain(60, until=lambda: len(first_seen) >= 1000)
        assert len(first_seen) >= 1000, "the steady run never got going"
        kill_at = time.monotonic()
        own_cluster.kill_broker()
        drain(3)
        own_cluster.start_broker()
        restarted_at = time.monotonic()
        stored_at_restart = len(producer.stored)
        # Both sides resume by themselves: no client is made again.
        drain(150, until=lambda: len(producer.stored) >= stored_at_restart + 1000)
        producer.stop.set()
        producer.join(timeout=30)
        stored = set(producer.stored)
        drain(120, until=lambda: stored <= first_seen.keys())

    assert len(producer.stored) >= stored_at_restart + 1000, "sends never resumed"
    # Retriable, or a send timed out at the dead broker whose outcome is unknown (1003).
    assert all(
        error.retriable or isinstance(error, tubemq.OutcomeUnknownError)
        for error in producer.failures
    ), producer.failures[:3]
    lost = stored - first_seen.keys()
    assert not lost, f"{len(lost)} of {len(stored)} stored messages never arrived"
    # Only commits the broker had not yet written out when it died are redelivered.
    forgotten_since = kill_at - OFFSET_MEMORY_S
    early = [value for value in duplicates if first_seen[value] < forgotten_since]
    assert not early, f"{len(early)} messages consumed long before the kill came again"
    print(
        f"stored {len(stored)}, sends failed {len(producer.failures)}, delivered twice "
        f"{len(duplicates)}, broker restarted {restarted_at - kill_at:.1f} s after the kill"
    )
