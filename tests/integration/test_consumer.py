"""The server-balanced consumer against the real cluster (behaviour.md §10 scenarios 10,
11, 13, 15-17, 21) and interoperability with the official Java producer."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def drain(consumer: tubemq.Consumer, marker: bytes, expected: int, seconds: float = 45):
    """Messages whose value starts with ``marker``, until ``expected`` arrived."""
    got = []
    deadline = time.monotonic() + seconds
    while len(got) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and bytes(message).startswith(marker):
            got.append(message)
    return got


def replay(events: list[tuple[str, list[str]]]) -> set[str]:
    held: set[str] = set()
    for kind, keys in events:
        held = held | set(keys) if kind == "assign" else held - set(keys)
    return held


def joined(consumer: tubemq.Consumer, partitions: int = 4) -> None:
    """Waits until the consumer holds ``partitions`` partitions."""
    deadline = time.monotonic() + 40
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, consumer.assignment()
        assert consumer.poll(0.2) is None  # a new "latest" group has nothing to read yet


def produce(master: str, topic: str, marker: str, count: int, **kwargs) -> dict[bytes, int]:
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        return {
            f"{marker}-{i}".encode(): producer.send(
                topic, f"{marker}-{i}".encode(), **kwargs
            ).message_id
            for i in range(count)
        }


def test_earliest_delivers_everything_with_ids_attributes_and_zero_copy_values(master, topics):
    # Scenario 11, plus what a message carries.
    topic, marker = topics[7], unique("ear")
    sent = produce(
        master, topic, marker, 30, msg_type="A", msg_time="202501011230", attrs={"k": "v"}
    )
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="earliest", **FAST
    ) as consumer:
        got = drain(consumer, marker.encode(), 30)
        assert {bytes(m): m.message_id for m in got} == sent
        message = got[0]
        view = memoryview(message)
        assert view.readonly and bytes(view) == bytes(message)
        assert message.topic == topic
        assert message.partition_key.startswith(f"1:{topic}:")
        assert message.msg_type == "A" and message.msg_time == "202501011230"
        assert message.attrs == {"k": "v"}
        assert sorted(consumer.assignment()) == [f"1:{topic}:{i}" for i in range(4)]


def test_a_new_group_with_default_settings_gets_its_first_message_promptly(master, topics):
    # No heartbeat_period_ms here: the defaults a user keeps (a 10 s heartbeat). The
    # member's partitions come in a heartbeat reply, so a new member asks quickly until
    # they do, instead of waiting a whole period.
    topic, marker = topics[7], unique("first")
    produce(master, topic, marker, 5)
    began = time.monotonic()
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="earliest"
    ) as consumer:
        message = consumer.poll(30)
        waited = time.monotonic() - began
    assert message is not None
    assert waited < 5, f"the first message took {waited:.1f} s"


def test_latest_skips_the_backlog_of_a_new_group(master, topics):
    # Scenario 10.
    topic, marker = topics[2], unique("lat")
    produce(master, topic, f"{marker}-old", 10)
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="latest", **FAST
    ) as consumer:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
            consumer.poll(0.2)
        time.sleep(1)
        fresh = produce(master, topic, f"{marker}-new", 10)
        got = drain(consumer, marker.encode(), 10, seconds=20)
        assert {bytes(m) for m in got} == set(fresh)


def test_nack_redelivers_the_same_messages(master, topics):
    # Scenario 13.
    topic, marker = topics[2], unique("nack")
    with tubemq.Consumer(
        master=master,
        group=unique("g"),
        topics=[topic],
        consume_from="latest",
        auto_commit=False,
        **FAST,
    ) as consumer:
        joined(consumer)
        produce(master, topic, marker, 8)
        first = drain(consumer, marker.encode(), 1)[0]
        partition, first_id = first.partition_key, first.message_id
        consumer.nack(first)
        with pytest.raises(tubemq.CommitError):
            consumer.commit(first)  # that batch is settled already
        seen_again = False
        deadline = time.monotonic() + 20
        while not seen_again and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.partition_key == partition and message.message_id == first_id:
                seen_again = True
            consumer.commit(message)
        assert seen_again


def test_restart_resumes_after_the_last_commit(master, topics):
    # Scenario 15: committed batches are not delivered again; the uncommitted one is.
    topic, marker, group = topics[2], unique("res"), unique("g")
    committed: set[bytes] = set()
    held_back: set[bytes] = set()
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="latest", auto_commit=False, **FAST
    ) as consumer:
        joined(consumer)
        sent = produce(master, topic, marker, 40)
        for batch_index in range(3):
            message = consumer.poll(5.0)
            assert message is not None
            messages = [message, *consumer.consume(1000, timeout=0)]
            batch = {bytes(m) for m in messages}
            if batch_index < 2:
                committed |= batch
                # One commit per message, as a Kafka loop does: what one call returns may
                # hold batches of several partitions, and commit(message) settles only
                # the batch that message came in.
                for handed_out in messages:
                    consumer.commit(handed_out)
            else:
                held_back = batch
    assert committed and held_back
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="latest", **FAST
    ) as consumer:
        rest = drain(consumer, marker.encode(), len(sent) - len(committed), seconds=45)
        values = {bytes(m) for m in rest}
    assert values == set(sent) - committed
    assert held_back <= values


def test_two_members_share_the_partitions_and_one_takes_over(master, topics):
    # Scenarios 16 and 17, with the assignment callbacks of the first member.
    topic, group = topics[1], unique("g")
    events: list[tuple[str, list[str]]] = []
    with tubemq.Consumer(
        master=master,
        group=group,
        topics=[topic],
        **FAST,
        on_assign=lambda keys: events.append(("assign", keys)),
        on_revoke=lambda keys: events.append(("revoke", keys)),
    ) as first:
        second = tubemq.Consumer(master=master, group=group, topics=[topic], **FAST)
        try:
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                first.poll(0.2)
                second.poll(0.2)
                a, b = first.assignment(), second.assignment()
                if len(a) == 2 and len(b) == 2:
                    break
            assert len(first.assignment()) == 2 and len(second.assignment()) == 2
            assert not set(first.assignment()) & set(second.assignment())
            first.poll(0.2)
            assert replay(events) == set(first.assignment())
        finally:
            second.close()
        deadline = time.monotonic() + 40
        while len(first.assignment()) < 4 and time.monotonic() < deadline:
            first.poll(0.2)
        assert sorted(first.assignment()) == [f"1:{topic}:{i}" for i in range(4)]
        first.poll(0.2)
        # The callbacks, replayed, give exactly what the member holds.
        assert replay(events) == set(first.assignment())
    assert any(kind == "assign" for kind, _ in events)


def test_filters_deliver_only_the_chosen_msg_types(master, topics):
    # Scenario 21.
    topic, marker = topics[7], unique("flt")
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for i in range(10):
            producer.send(topic, f"{marker}-A-{i}".encode(), msg_type="A")
            producer.send(topic, f"{marker}-B-{i}".encode(), msg_type="B")
            producer.send(topic, f"{marker}-none-{i}".encode())
    with tubemq.Consumer(
        master=master, group=unique("g"), topics={topic: ["A"]}, consume_from="earliest", **FAST
    ) as consumer:
        got = drain(consumer, marker.encode(), 10)
        assert sorted(bytes(m) for m in got) == sorted(
            f"{marker}-A-{i}".encode() for i in range(10)
        )
        # No B or untyped message of ours comes after the A ones either.
        late = drain(consumer, marker.encode(), 1, seconds=2)
        assert late == []


def test_we_read_what_the_java_client_produces(master, topics, reference_producer):
    topic, marker = topics[3], unique("java")
    sent = reference_producer(master, topic, marker, 6)
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="earliest", **FAST
    ) as consumer:
        got = {bytes(m): m for m in drain(consumer, marker.encode(), 6)}
    assert {body: m.message_id for body, m in got.items()} == sent
    typed = got[f"{marker}-0".encode()]
    assert typed.msg_type == "A" and typed.msg_time == "202501011230"
    assert typed.attrs == {"k": "v0"}
    plain = got[f"{marker}-1".encode()]
    assert plain.msg_type is None and plain.attrs == {}


def test_bad_consumer_config_is_refused_by_name(master):
    with pytest.raises(tubemq.ConfigError, match="consume_from"):
        tubemq.Consumer(master=master, group="g_cfg", topics=["t_cfg"], consume_from="newest")
    with pytest.raises(tubemq.ConfigError, match="needs 'group'"):
        tubemq.Consumer(master=master, topics=["t_cfg"])
    with pytest.raises(tubemq.ConfigError, match="filters of 't_cfg'"):
        tubemq.Consumer(master=master, group="g_cfg", topics={"t_cfg": "A"})


def test_members_with_different_topic_sets_are_refused_at_once(master, topics):
    # Scenario 22.
    group = unique("g")
    with tubemq.Consumer(master=master, group=group, topics=[topics[1]], **FAST):
        started = time.monotonic()
        with pytest.raises(tubemq.ConsumerGroupConflictError) as info:
            tubemq.Consumer(master=master, group=group, topics=[topics[1], topics[2]], **FAST)
        assert info.value.code == 425
        assert not info.value.retriable
        assert time.monotonic() - started < 5  # refused, not retried


def test_max_always_skips_the_backlog_at_every_start(master, topics):
    # Scenario 12.
    topic, group, marker = topics[2], unique("g"), unique("max")
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="latest", **FAST
    ) as consumer:
        joined(consumer)
    produce(master, topic, f"{marker}-backlog", 10)
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="max_always", **FAST
    ) as consumer:
        joined(consumer)
        fresh = produce(master, topic, f"{marker}-fresh", 5)
        got = drain(consumer, marker.encode(), 5, seconds=20)
        assert {bytes(m) for m in got} == set(fresh)
        assert consumer.poll(1.5) is None


def test_graceful_close_commits_and_frees_partitions_at_once(master, topics):
    # Scenario 29.
    topic, group, marker = topics[2], unique("g"), unique("close")
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="latest", **FAST
    ) as first:
        joined(first)
        produce(master, topic, marker, 12)
        assert len(drain(first, marker.encode(), 12)) == 12
    started = time.monotonic()
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="latest", **FAST
    ) as second:
        joined(second)  # no PARTITION_OCCUPIED wait for a lease to expire
        assert time.monotonic() - started < 15
        assert second.poll(1.5) is None  # everything was committed at close
        offsets = second.offsets()
        assert all(entry["lag"] == 0 for entry in offsets.values()), offsets


def test_paused_partitions_are_not_fetched_until_resumed(master, topics):
    topic, marker = topics[2], unique("pause")
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="latest", **FAST
    ) as consumer:
        joined(consumer)
        keep, *stopped = consumer.assignment()
        consumer.pause(stopped)
        assert consumer.paused() == sorted(stopped)
        sent = produce(master, topic, marker, 40)
        early = drain(consumer, marker.encode(), 40, seconds=4)
        assert early and {m.partition_key for m in early} == {keep}
        with pytest.raises(tubemq.ConfigError, match="not held"):
            consumer.resume(["9:nowhere:0"])
        consumer.resume(stopped)
        late = drain(consumer, marker.encode(), 40 - len(early), seconds=20)
        assert {bytes(m) for m in early + late} == set(sent)


@pytest.mark.parametrize("fetch_ahead_bytes", [None, 0])
def test_while_a_batch_is_worked_on_the_other_partitions_are_fetched_already(
    master, topics, fetch_ahead_bytes
):
    # Issue 18: the next batches are on their way while the application works, within
    # fetch_ahead_bytes; 0 fetches one batch at a time, when a poll asks.
    topic = topics[0]
    produce(master, topic, unique("ahead"), 40)  # spread over the 4 partitions
    options = {} if fetch_ahead_bytes is None else {"fetch_ahead_bytes": fetch_ahead_bytes}
    with tubemq.Consumer(
        master=master, group=unique("ahead"), topics=[topic], consume_from="earliest",
        **FAST, **options,
    ) as consumer:  # fmt: skip
        # The whole assignment first (it arrives with the heartbeats, polls or not), so
        # the one poll below finds all four partitions free, each with its messages.
        deadline = time.monotonic() + 45
        while len(consumer.assignment()) < 4:
            assert time.monotonic() < deadline, consumer.assignment()
            time.sleep(0.05)
        batch = consumer.poll_batch(10)
        assert batch is not None
        before = consumer.metrics()
        time.sleep(1.0)  # the application works on `batch`; no poll meanwhile
        during = consumer.metrics()
        consumer.commit(batch)
        waiting = consumer.poll_batch(0)  # do not wait: only a batch already here
    if fetch_ahead_bytes == 0:
        assert during["fetches"] == before["fetches"]
        assert waiting is None
    else:
        # The other three partitions were fetched meanwhile; one of them is handed out
        # at once, and none of them counted as delivered until then.
        assert during["fetches"] - during["batches"] >= 3
        assert during["batches"] == before["batches"]
        assert waiting is not None and waiting.partition_key != batch.partition_key
