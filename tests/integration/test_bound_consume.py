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

    # Nothing was produced since: a plain member finds the partition committed up to the
    # end (the session read it all; its last commit rode on the release at close).
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], heartbeat_period_ms=1000
    ) as plain:
        deadline = time.monotonic() + 60
        while key not in plain.offsets() and time.monotonic() < deadline:
            plain.poll(0.5)
        assert plain.offsets()[key]["offset"] == end

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


def test_a_member_joining_an_allocated_session_says_its_offsets_were_not_applied(
    master, topics, caplog
):
    # The master applies bound offsets at a session's first allocation only; a member
    # that joins the live session later resumes at the group's commits. It must say so.
    topic, group = topics[1], f"bound_{uuid.uuid4().hex[:8]}"

    def member() -> tubemq.Consumer:
        return tubemq.Consumer(
            master=master,
            group=group,
            topics=[topic],
            consume_from="earliest",
            session_key="live",
            source_count=2,
            bound_offsets={f"1:{topic}:0": 0},
            heartbeat_period_ms=1000,
        )

    def decided(consumers: list[tubemq.Consumer], seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while any(c.bound_offsets_applied is None for c in consumers):
            assert time.monotonic() < deadline, [c.bound_offsets_applied for c in consumers]
            for consumer in consumers:
                consumer.poll(0.2)

    first, second = member(), member()
    late = None
    try:
        decided([first, second])
        # Usually both True; a member whose CONNECT comes after the other's ack may
        # already be too late (behaviour.md §3.10), and then says so too.
        assert True in (first.bound_offsets_applied, second.bound_offsets_applied)
        second.close()
        with caplog.at_level("WARNING", logger="tubemq"):
            late = member()
            decided([first, late])
            assert late.bound_offsets_applied is False
            deadline = time.monotonic() + 5  # the native log reaches Python on its thread
            said = f"consumer {late.client_id}: bound_offsets not applied"
            while said not in caplog.text:
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.1)
        assert caplog.text.count(said) == 1  # once, not at every rebalance
    finally:
        for consumer in (first, second, late):
            if consumer is not None:
                consumer.close()


def test_a_member_without_a_session_has_no_bound_offsets_answer(master, topics):
    with tubemq.Consumer(
        master=master, group=f"plain_{uuid.uuid4().hex[:8]}", topics=[topics[1]]
    ) as consumer:
        consumer.poll(1.0)
        assert consumer.bound_offsets_applied is None
