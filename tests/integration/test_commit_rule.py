"""The commit rule under the loops users bring from Kafka, on the real cluster.

``commit(message)`` covers that message and the earlier ones of its batch; a batch is
confirmed once its last message is committed; no call confirms a message that was not
handed out. Each loop reads a backlog over 4 partitions, stops half-way, and a restarted
member of the same group reads the rest: nothing may be lost, everything not committed
must come again, and of what was committed only the batch in hand at the stop (whose
prefix could not be confirmed on its own) may come again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import tubemq
import tubemq.aio

pytestmark = pytest.mark.integration

# The 20 000-message loops fill topics[6]; the smaller tests read topics[7], so that none
# of them wades through the others' backlog.

FAST = {"heartbeat_period_ms": 1000}
COUNT = 20_000
EVERY_K = 7


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def produce(master: str, topic: str, marker: str, count: int) -> set[bytes]:
    """Sends ``count`` small messages and returns the values the broker acknowledged."""
    with tubemq.Producer(master=master, max_in_flight=5000) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, f"{marker}-{i}".encode()) for i in range(count)]
        producer.flush(timeout=120)
    return {f"{marker}-{i}".encode() for i, f in enumerate(futures) if f.exception() is None}


@dataclass
class FirstRun:
    """What the first member was handed (of our marker) and what its commits cover."""

    marker: bytes
    handed: list[bytes] = field(default_factory=list)
    covered: set[bytes] = field(default_factory=set)  # processed as far as commits say
    by_batch: dict[str, list[bytes]] = field(default_factory=dict)  # every value, in order
    # Handed out since the last commit_all(): what the next one adds. (Adding every value
    # handed out so far on each call was quadratic: on a cluster holding earlier runs'
    # backlog, the loop spent minutes here and never reached its own messages.)
    since_commit_all: list[bytes] = field(default_factory=list)

    def hand(self, message: tubemq.Message) -> None:
        value = message.value  # bytes, as a Kafka loop's message.value() is
        self.by_batch.setdefault(message.confirm_context, []).append(value)
        self.since_commit_all.append(value)
        if value.startswith(self.marker):
            self.handed.append(value)

    def commit_upto(self, message: tubemq.Message) -> None:
        """What commit(message) promises: it and the earlier messages of its batch."""
        self.covered.update(self.by_batch[message.confirm_context][: message.index + 1])

    def commit_all(self) -> None:
        self.covered.update(self.since_commit_all)
        self.since_commit_all.clear()


OnMessage = Callable[[tubemq.Consumer, tubemq.Message, int, FirstRun], None]


def kafka_loop(
    consumer: tubemq.Consumer, marker: bytes, stop_after: int, on_message: OnMessage
) -> FirstRun:
    """poll, process, commit - the loop every Kafka user writes - until ``stop_after``
    messages of ``marker`` were handed out. The topic holds other tests' messages too:
    they are committed by the same pattern, so that no batch waits on them."""
    run = FirstRun(marker)
    deadline = time.monotonic() + 120
    count = 0
    while len(run.handed) < stop_after:
        assert time.monotonic() < deadline, f"stalled after {len(run.handed)} messages"
        message = consumer.poll(1.0)
        if message is None:
            continue
        if message.error():  # as written for Kafka: here never true, a failed poll raises
            raise AssertionError(message.error())
        count += 1
        run.hand(message)
        on_message(consumer, message, count, run)
    return run


def read_rest(master: str, group: str, topic: str, marker: bytes, want: set[bytes]) -> list[bytes]:
    """A restarted member of ``group``: everything it is handed until ``want`` is seen."""
    got: list[bytes] = []
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="earliest", **FAST
    ) as consumer:
        deadline = time.monotonic() + 90
        quiet_until = None
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                quiet_until = None
                if bytes(message).startswith(marker):
                    got.append(bytes(message))
                continue
            if want <= set(got) and len(consumer.assignment()) == 4:
                # Everything expected is here and every partition is held; a quiet spell
                # shows that nothing else comes (a rolled-back batch included).
                quiet_until = quiet_until or time.monotonic() + 3
                if time.monotonic() >= quiet_until:
                    break
    return got


def manual(master: str, topic: str, group: str) -> tubemq.Consumer:
    """A member of ``group`` reading ``topic`` from the start, committing only when told."""
    return tubemq.Consumer(
        master=master,
        group=group,
        topics=[topic],
        consume_from="earliest",
        auto_commit=False,
        **FAST,
    )


def first_of_a_batch(
    consumer: tubemq.Consumer, marker: str, before: list[bytes] | None = None
) -> tubemq.Message:
    """The first message of a batch that starts with one of ours. The messages handed
    out before it are committed, and ours among them added to ``before``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        ours = bytes(message).startswith(marker.encode())
        if message.index == 0 and ours:
            return message
        if ours and before is not None:
            before.append(bytes(message))
        consumer.commit(message)
    raise AssertionError("no batch starting with our messages")


def check_restart(
    run: FirstRun, rest: list[bytes], sent: set[bytes], in_hand: set[bytes]
) -> dict[str, int]:
    first, second = set(run.handed), set(rest)
    lost = sent - first - second
    not_committed = first - run.covered
    committed_again = (run.covered & second) - in_hand
    figures = {
        "handed out": len(run.handed) + len(rest),
        "distinct": len(first | second),
        "lost": len(lost),
        "redelivered after restart": len(first & second),
        "committed, seen again (batch in hand at the stop)": len(run.covered & second),
    }
    print(figures)  # for the closing note
    assert not lost, f"{len(lost)} messages never handed out, e.g. {sorted(lost)[:3]}"
    assert not_committed <= second, "a message handed out but not committed was not redelivered"
    assert not committed_again, f"{len(committed_again)} committed messages came again"
    assert len(run.handed) == len(first), "the first member was handed a message twice"
    return figures


def every_message(
    consumer: tubemq.Consumer, message: tubemq.Message, n: int, run: FirstRun
) -> None:
    consumer.commit(message)
    run.commit_upto(message)


def every_kth_message(
    consumer: tubemq.Consumer, message: tubemq.Message, n: int, run: FirstRun
) -> None:
    if n % EVERY_K == 0:
        consumer.commit(message)
        run.commit_upto(message)


def every_kth_everything(
    consumer: tubemq.Consumer, message: tubemq.Message, n: int, run: FirstRun
) -> None:
    if n % EVERY_K == 0:
        consumer.commit()  # Kafka's commit() without an argument: all handed out so far
        run.commit_all()


# on_message, auto_commit, commit_on_next_fetch (the commits ride on the partitions'
# next fetches; those still pending at the stop on the unregister at close).
PATTERNS = {
    "every message, manual": (every_message, False, False),
    "every message, auto_commit": (every_message, True, False),
    "every 7th message, auto_commit": (every_kth_message, True, False),
    "commit() every 7th, manual": (every_kth_everything, False, False),
    "every message, manual, on next fetch": (every_message, False, True),
    "every 7th message, auto_commit, on next fetch": (every_kth_message, True, True),
}


@pytest.mark.slow
@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_the_kafka_loop_loses_nothing_and_a_restart_sees_what_was_not_committed(
    master, topics, pattern
):
    on_message, auto_commit, on_next_fetch = PATTERNS[pattern]
    topic, marker, group = topics[6], unique("loop"), unique("g")
    sent = produce(master, topic, marker, COUNT)
    assert len(sent) == COUNT
    with tubemq.Consumer(
        master=master,
        group=group,
        topics=[topic],
        consume_from="earliest",
        auto_commit=auto_commit,
        commit_on_next_fetch=on_next_fetch,
        **FAST,
    ) as consumer:
        # Stop off a batch boundary (batches of small messages hold round numbers).
        run = kafka_loop(consumer, marker.encode(), COUNT // 2 + 333, on_message)
    # The batch in hand at the stop is rolled back whole at close (a committed prefix is
    # not confirmed alone); with auto_commit, the batches handed out before it count as
    # processed.
    in_hand = next(reversed(run.by_batch))
    batch_in_hand = set(run.by_batch[in_hand])
    if auto_commit:
        run.covered.update(v for c, b in run.by_batch.items() if c != in_hand for v in b)
    rest = read_rest(master, group, topic, marker.encode(), sent - run.covered - batch_in_hand)
    again = batch_in_hand & sent & set(rest)
    if again:  # rolled back whole: every message of it comes again
        assert again == batch_in_hand & sent
    else:  # confirmed whole: the stop fell on its last message, committed (or auto_commit)
        assert auto_commit or batch_in_hand <= run.covered
        run.covered |= batch_in_hand
    check_restart(run, rest, sent, batch_in_hand)


def test_the_whole_backlog_arrives_when_every_message_is_committed(master, topics):
    # The reported loss: 31 of 500 handed out, then nothing more.
    topic, marker = topics[7], unique("all")
    sent = produce(master, topic, marker, 2000)
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[topic], consume_from="earliest", **FAST
    ) as consumer:
        run = kafka_loop(consumer, marker.encode(), len(sent), every_message)
    assert set(run.handed) == sent and len(run.handed) == len(sent)


def test_consume_and_iteration_follow_the_rule(master, topics):
    topic, marker = topics[7], unique("iter")
    sent = produce(master, topic, marker, 2000)
    seen: list[bytes] = []
    with manual(master, topic, unique("g")) as consumer:
        deadline = time.monotonic() + 60
        while len(seen) < len(sent) // 2:  # consume(n): a list at a time
            assert time.monotonic() < deadline
            for message in consumer.consume(50, timeout=1.0):
                if bytes(message).startswith(marker.encode()):
                    seen.append(bytes(message))
                consumer.commit(message)
        for message in consumer:  # iteration
            if bytes(message).startswith(marker.encode()):
                seen.append(bytes(message))
            consumer.commit(message)
            if set(seen) >= sent:
                break
            assert time.monotonic() < deadline
    assert set(seen) == sent


def test_a_commit_mid_batch_keeps_the_rest_coming_and_confirms_nothing_early(master, topics):
    topic, marker, group = topics[7], unique("mid"), unique("g")
    produce(master, topic, marker, 400)
    with manual(master, topic, group) as consumer:
        first = first_of_a_batch(consumer, marker)
        batch = [first, *consumer.consume(100_000, timeout=0)]
        assert len(batch) > 1, "need a batch of several messages"
        consumer.commit(first)  # the first message only: the rest is still handed out
        assert [m.index for m in batch] == list(range(len(batch)))
        committed_before = consumer.metrics()["committed"]
        consumer.commit(batch[-2])
        assert consumer.metrics()["committed"] == committed_before, "confirmed too early"
        consumer.commit(batch[-1])
        assert consumer.metrics()["committed"] == committed_before + 1
        consumer.commit(batch[0])  # a batch confirmed already: nothing to do, no error


def test_nack_redelivers_the_whole_batch_and_drops_what_was_not_handed_out(master, topics):
    topic, marker = topics[7], unique("nk")
    sent = produce(master, topic, marker, 400)
    with manual(master, topic, unique("g")) as consumer:
        before: list[bytes] = []
        first = first_of_a_batch(consumer, marker, before)
        consumer.nack(first)  # the rest of its batch is not handed out from this fetch
        with pytest.raises(tubemq.CommitError, match="rolled back"):
            consumer.commit(first)
        seen: list[tubemq.Message] = []
        deadline = time.monotonic() + 60
        while {bytes(m) for m in seen} | set(before) < sent:
            assert time.monotonic() < deadline
            message = consumer.poll(1.0)
            if message is not None:
                if bytes(message).startswith(marker.encode()):
                    seen.append(message)
                consumer.commit(message)
        again = [m for m in seen if m.message_id == first.message_id]
        assert again, "the nacked batch was not delivered again"


def test_close_on_a_partly_committed_batch_hands_it_to_the_next_member(master, topics):
    topic, marker, group = topics[7], unique("cl"), unique("g")
    sent = produce(master, topic, marker, 400)
    before: list[bytes] = []
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="earliest", **FAST
    ) as consumer:
        first = first_of_a_batch(consumer, marker, before)
        consumer.commit(first)
        held = bytes(first)
    rest = read_rest(master, group, topic, marker.encode(), sent - set(before))
    # The batch was rolled back whole, so its first message comes again too.
    assert held in rest
    assert set(rest) | set(before) == sent


def test_an_unfinished_batch_without_auto_commit_is_named_in_a_warning(master, topics, caplog):
    topic, marker = topics[7], unique("wa")
    produce(master, topic, marker, 40)
    with (
        manual(master, topic, unique("g")) as consumer,
        caplog.at_level(logging.WARNING, logger="tubemq.consumer"),
    ):
        deadline = time.monotonic() + 20
        while "are not committed" not in caplog.text:
            assert time.monotonic() < deadline, "no warning about the held partitions"
            consumer.poll(0.5)  # handed out, never committed
        warned = [r for r in caplog.records if "are not committed" in r.getMessage()]
        assert all(r.getMessage().count(":") >= 2 for r in warned)  # names the partition


def test_the_assigned_consumer_follows_the_rule(master, topics):
    topic, marker = topics[7], unique("as")
    sent = produce(master, topic, marker, 2000)
    seen: list[bytes] = []
    with tubemq.AssignedConsumer(
        master=master, group=unique("g"), topics=[topic], auto_commit=False
    ) as consumer:
        consumer.assign({key: 0 for key in consumer.my_partitions()})
        deadline = time.monotonic() + 60
        while not set(seen) >= sent:
            assert time.monotonic() < deadline
            message = consumer.poll(1.0)
            if message is not None:
                if bytes(message).startswith(marker.encode()):
                    seen.append(bytes(message))
                consumer.commit(message)
    assert set(seen) == sent and len(seen) == len(sent)


def test_the_asyncio_consumer_follows_the_rule(master, topics):
    topic, marker = topics[7], unique("ai")
    sent = produce(master, topic, marker, 2000)

    async def scenario() -> list[bytes]:
        seen: list[bytes] = []
        async with tubemq.aio.Consumer(
            master=master,
            group=unique("g"),
            topics=[topic],
            consume_from="earliest",
            auto_commit=False,
            **FAST,
        ) as consumer:
            deadline = time.monotonic() + 60
            async for message in consumer:
                if bytes(message).startswith(marker.encode()):
                    seen.append(bytes(message))
                await consumer.commit(message)
                if set(seen) >= sent or time.monotonic() > deadline:
                    break
        return seen

    seen = asyncio.run(scenario())
    assert set(seen) == sent and len(seen) == len(sent)


@pytest.mark.parametrize("setting", [{}, {"commit_on_next_fetch": True}], ids=["default", "set"])
def test_commits_on_the_next_fetch_reach_the_broker_by_fetch_and_by_unassign(
    master, topics, setting
):
    """``commit_on_next_fetch`` (the default): a commit sends nothing; the partition's
    next fetch commits it, and unassign commits the one still pending. A member taking
    the partition at the group's offset starts after both."""
    topic, group = topics[7], unique("g")
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False, **setting
    ) as first:
        key = first.my_partitions()[0]
        with tubemq.Producer(master=master) as producer:  # batches of 1 KiB: several
            producer.publish(topic)
            for i in range(2000):
                producer.send_async(topic, b"%04d" % i + b"n" * 1020, partition=key)
            producer.flush(timeout=60)
        first.assign({key: 0})
        batches = []
        while len(batches) < 2:
            batch = first.poll_batch(5.0)
            assert batch is not None and batch.partition_key == key
            first.commit(batch)  # no request: rides on the next fetch, or on the unassign
            batches.append(batch)
        # The second fetch committed the first batch: the broker read on from there.
        assert batches[1].offset > batches[0].offset
        first.unassign([key])
        assert first.metrics()["commit_failures"] == 0
    handed = {m.message_id for b in batches for m in b.messages()}
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False
    ) as second:
        second.assign([key])  # at the group's committed offset
        after = second.poll_batch(5.0)
        assert after is not None
        assert after.offset > batches[1].offset  # both commits reached the broker
        assert not handed & {m.message_id for m in after.messages()}


@pytest.mark.parametrize(
    "setting, call, waits",
    [
        ({}, {}, False),
        ({}, {"asynchronous": False}, True),
        ({"commit_on_next_fetch": False}, {}, True),
        ({"commit_on_next_fetch": False}, {"asynchronous": True}, False),
    ],
    ids=["default", "asynchronous=False", "configured to wait", "configured, asynchronous=True"],
)
def test_a_commit_waits_for_the_broker_only_when_asked_to(master, topics, setting, call, waits):
    """As in Kafka clients, ``commit()`` is asynchronous unless asked otherwise: it sends
    nothing, and the partition's next fetch carries it, so ``offsets()`` moves with that
    fetch. ``commit(batch, asynchronous=False)`` (or any commit with
    ``commit_on_next_fetch=False``) has the broker store it before it returns, so
    ``offsets()`` shows it at once. Either way the next batch starts after it."""
    topic, group = topics[7], unique("g")
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False, fetch_ahead_bytes=0,
        **setting,
    ) as consumer:  # fmt: skip
        key = consumer.my_partitions()[0]
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            for i in range(600):
                producer.send_async(topic, b"%04d" % i + b"w" * 1020, partition=key)
            producer.flush(timeout=60)
        consumer.assign({key: 0})
        batch = consumer.poll_batch(5.0)
        assert batch is not None and len(batch)
        assert consumer.offsets()[key]["offset"] == batch.offset  # fetched, not committed
        consumer.commit(batch, **call)
        moved = consumer.offsets()[key]["offset"] > batch.offset
        assert moved == waits, consumer.offsets()[key]
        after = consumer.poll_batch(5.0)  # a fetch: it carries the commit if nothing did
        assert after is not None and after.offset > batch.offset
        assert consumer.offsets()[key]["offset"] == after.offset
        # Read and commit to the end the same way: the "nothing new" fetch that carries
        # the last commit brings offsets() (and lag) to the end as well.
        consumer.commit(after, **call)
        deadline = time.monotonic() + 30
        while consumer.offsets()[key]["lag"] and time.monotonic() < deadline:
            more = consumer.poll_batch(0.5)
            if more is not None:
                consumer.commit(more, **call)
        at_end = consumer.offsets()[key]
        assert at_end["lag"] == 0 and at_end["offset"] == at_end["max_offset"] > 0, at_end


def test_an_interrupt_as_a_batch_arrives_confirms_none_of_it(master, topics):
    # Ctrl-C lands between two steps of poll(): the fetched batch was tracked, then put
    # where poll() hands messages out from. Interrupted between the two, the batch
    # counted as handed out whole, and close() with auto_commit confirmed it unread. Now
    # it is put in place first: the same interrupt leaves it untracked, rolled back.
    topic, marker, group = topics[7], unique("kbi"), unique("g")
    produce(master, topic, marker, 400)
    interrupted: list[bytes] = []
    consumer = tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="earliest", **FAST
    )
    real_cursor = consumer._cursor

    class InterruptedCursor:
        """The consumer's cursor, with a KeyboardInterrupt as our first batch arrives."""

        def load(self, batch: Any, entry: Any) -> None:
            ours = [bytes(m) for m in batch.messages() if bytes(m).startswith(marker.encode())]
            if ours and not interrupted:
                interrupted.extend(ours)
                raise KeyboardInterrupt
            real_cursor.load(batch, entry)

        def __getattr__(self, name: str) -> object:
            return getattr(real_cursor, name)

        def __len__(self) -> int:
            return len(real_cursor)

    consumer._cursor = InterruptedCursor()  # type: ignore[assignment]
    deadline = time.monotonic() + 60
    with pytest.raises(KeyboardInterrupt):
        while time.monotonic() < deadline:
            consumer.poll(0.5)
    assert interrupted, "no batch of ours arrived"
    consumer.close()  # auto_commit: confirms what was handed out, and nothing else
    again = read_rest(master, group, topic, marker.encode(), set(interrupted))
    assert set(interrupted) <= set(again)
