"""Bound consume (behaviour.md §3.10, §10 scenario 25): a session key makes a
server-balanced group start from offsets the members name; a plain restart resumes at
the committed offset, and a new session key starts over from the named offsets."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _first_batch_offset(consumer: tubemq.Consumer, key: str, seconds: float = 60) -> int:
    """The start offset of the first batch fetched from ``key`` (committing as it goes)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.partition_key == key:
            return message.batch_offset
    raise AssertionError(f"no batch from {key} within {seconds} s")


def test_a_session_starts_where_its_members_say_and_a_new_session_starts_again(master, topics):
    topic, group = topics[1], f"bound_{uuid.uuid4().hex[:8]}"
    key = f"1:{topic}:1"
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for index in range(40):
            producer.send(topic, f"bound-{index}".encode())
    with tubemq.AssignedConsumer(master=master, group=f"probe_{group}", topics=[topic]) as probe:
        probe.assign({key: None})
        probe.poll(0.5)
        end = probe.offsets()[key]["max_offset"]
    start = end - 20 * tubemq.INDEX_ENTRY_SIZE  # inside the data, 20 entries before the end
    assert start > 0

    def bound(session: str) -> tubemq.Consumer:
        return tubemq.Consumer(
            master=master,
            group=group,
            topics=[topic],
            consume_from="earliest",
            session_key=session,
            source_count=1,
            bound_offsets={key: start},
            heartbeat_period_ms=1000,
        )

    with bound("s1") as consumer:
        assert _first_batch_offset(consumer, key) == start
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 3.0:  # read and (auto-)commit the rest
            if consumer.poll(0.5) is not None:
                idle_since = time.monotonic()
        committed = consumer.offsets()[key]["offset"]
    assert committed > start

    # Nothing was produced since: a plain member finds the partition at the commit.
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], heartbeat_period_ms=1000
    ) as plain:
        deadline = time.monotonic() + 60
        while key not in plain.offsets() and time.monotonic() < deadline:
            plain.poll(0.5)
        assert plain.offsets()[key]["offset"] == committed

    with bound("s2") as again:
        assert _first_batch_offset(again, key) == start


def test_bound_offsets_must_name_partitions_of_subscribed_topics(master, topics):
    with pytest.raises(tubemq.ConfigError, match="bound offset"):
        tubemq.Consumer(
            master=master,
            group="bound_bad",
            topics=[topics[1]],
            session_key="s",
            source_count=1,
            bound_offsets={"1:other_topic:0": 0},
        )
    with pytest.raises(tubemq.ConfigError, match="source_count"):
        tubemq.Consumer(master=master, group="bound_bad", topics=[topics[1]], session_key="s")
