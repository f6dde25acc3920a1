"""Scenario 6 of behaviour.md §10: the broker goes away in the middle of async sends."""

from __future__ import annotations

import collections
import threading
import time

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "fault_topic"


def _retriable_or_unknown(error: tubemq.TubeMQError) -> bool:
    return error.retriable or isinstance(error, tubemq.OutcomeUnknownError)


@pytest.fixture(scope="module")
def own_cluster(private_cluster):
    with private_cluster([TOPIC]) as cluster:
        yield cluster


def test_every_callback_fires_once_when_the_broker_stops_halfway(own_cluster):
    calls: collections.Counter[int] = collections.Counter()
    outcomes: dict[int, tubemq.TubeMQError | None] = {}
    lock = threading.Lock()

    def callback_for(index: int):
        def on_delivery(error, result):
            with lock:
                calls[index] += 1
                outcomes[index] = error

        return on_delivery

    with tubemq.Producer(
        master=own_cluster.master_address, rpc_timeout_ms=3000, heartbeat_period_ms=1000
    ) as producer:
        producer.publish(TOPIC)
        futures = []
        for index in range(1000):
            if index == 500:
                own_cluster.stop_broker()
            futures.append(
                producer.send_async(TOPIC, f"m{index}".encode(), callback=callback_for(index))
            )
        assert producer.flush(timeout=120) == 0
        assert all(future.done() for future in futures)
        assert sorted(calls) == list(range(1000))
        assert set(calls.values()) == {1}, "some callback fired more than once"
        failures = [error for error in outcomes.values() if error is not None]
        assert failures, "sends to a stopped broker cannot all succeed"
        # Retriable, or honestly unknown: a send the stopping broker left unanswered
        # until the deadline may have been stored (1003), so it must not claim otherwise.
        assert all(_retriable_or_unknown(error) for error in failures), {e.code for e in failures}
        assert sum(1 for error in outcomes.values() if error is None) >= 400

        own_cluster.start_broker()
        deadline = time.monotonic() + 120
        while True:
            try:
                result = producer.send(TOPIC, b"after the restart")
                break
            except tubemq.TubeMQError as error:
                assert _retriable_or_unknown(error), error
                assert time.monotonic() < deadline, f"no successful send after restart: {error}"
                time.sleep(1)
        assert result.message_id >= 0
