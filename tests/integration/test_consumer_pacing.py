"""How the server-balanced consumer paces itself when it has nothing to read (behaviour.md
§10 scenarios 14, 19 and 20), against the real cluster.

Fetch timing is observed through the core's DEBUG record ``fetch <partition key>: <code>
kept=<messages> offset=<current>/<max>``, which reaches Python ``logging`` with the native
time it was written at.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

import tubemq

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}
# Topics of their own (FLOW_TOPICS in conftest.py), written to by no other test.
CONFIRM_TOPIC = "flow_a"
EMPTY_TOPIC = "flow_b"

_FETCH = re.compile(r"fetch (\S+): (-?\d+)( escFlowCtrl)?( kept=\d+)?")


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


class FetchLog(logging.Handler):
    """Every fetch the core logs: partition key -> [(native time, reply code)]."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._lock_rows = threading.Lock()
        self._rows: list[tuple[float, str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = _FETCH.match(record.getMessage())
        if match:
            with self._lock_rows:
                self._rows.append((record.created, match.group(1), int(match.group(2))))

    def count(self) -> int:
        with self._lock_rows:
            return len(self._rows)

    def settle(self) -> None:
        """Waits until records written before now have been handed to Python."""
        seen, deadline = -1, time.monotonic() + 5
        while self.count() != seen and time.monotonic() < deadline:
            seen = self.count()
            time.sleep(0.6)  # more than the log dispatcher's wait slice

    def per_partition(self) -> dict[str, list[tuple[float, int]]]:
        with self._lock_rows:
            rows = sorted(self._rows)
        out: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
        for created, key, code in rows:
            out[key].append((created, code))
        return dict(out)


@pytest.fixture
def fetch_log():
    logger = logging.getLogger("tubemq")
    handler, level = FetchLog(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # set before a client starts, so the core formats them
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def gaps(rows: list[tuple[float, int]]) -> list[float]:
    return [later[0] - earlier[0] for earlier, later in zip(rows, rows[1:])]


def produce(master: str, topic: str, marker: str, count: int) -> dict[bytes, int]:
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        return {
            f"{marker}-{i}".encode(): producer.send(topic, f"{marker}-{i}".encode()).message_id
            for i in range(count)
        }


def joined(consumer: tubemq.Consumer, partitions: int = 4) -> None:
    deadline = time.monotonic() + 40
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, consumer.assignment()
        assert consumer.poll(0.2) is None  # a new "latest" group has nothing to read yet


def unconfirming(master: str, topic: str) -> tubemq.Consumer:
    """A member of a new group reading ``topic`` from its end, committing only when told,
    whose batches the core gives up after 3 s unconfirmed (20 s by default)."""
    return tubemq.Consumer(
        master=master,
        group=unique("g"),
        topics=[topic],
        consume_from="latest",
        auto_commit=False,
        confirm_timeout_ms=3000,
        **FAST,
    )


def test_an_unconfirmed_batch_is_delivered_again_after_the_confirm_timeout(master):
    # Scenario 14, with a 3 s confirm timeout instead of 20 s.
    topic, marker = CONFIRM_TOPIC, unique("unconfirmed")
    with unconfirming(master, topic) as consumer:
        joined(consumer)
        sent = produce(master, topic, marker, 8)
        first = consumer.consume(1000, timeout=10)  # one batch, never confirmed
        fetched_at = time.monotonic()
        assert first and {bytes(m) for m in first} <= set(sent)
        partition = first[0].partition_key
        again: list[tubemq.Message] = []
        deadline = fetched_at + 30
        while not again and time.monotonic() < deadline:
            batch = consumer.consume(1000, timeout=0.5)
            if batch and batch[0].partition_key == partition:
                again, again_at = batch, time.monotonic()
            elif batch:
                consumer.commit(batch[-1])  # the other partitions' batches are settled
        assert again, f"the batch of {partition} was never delivered again"
        # Not before the timeout (the sweep runs every second), and the very same batch.
        assert again_at - fetched_at >= 2.5
        assert [(m.message_id, bytes(m)) for m in again] == [
            (m.message_id, bytes(m)) for m in first
        ]
        with pytest.raises(tubemq.CommitError) as info:
            consumer.commit(first[0])  # its batch timed out: the old context is void
        assert info.value.code == 2004
        consumer.commit(again[-1])
        # Committed this time: it does not come back, not even after another timeout.
        settled = {m.message_id for m in again}
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            batch = consumer.consume(1000, timeout=0.5)
            assert not settled & {m.message_id for m in batch}, "a committed batch came back"
            if batch:
                consumer.commit(batch[-1])


def test_a_batch_given_up_while_at_hand_refuses_commits_after_poll_batch_took_it_again(master):
    # poll() hands out a whole batch, the core gives it up (confirm timeout), and
    # poll_batch() takes it again: the old batch is still the one poll() handed out last,
    # but committing its messages must say it was rolled back, not mark it as processed.
    topic, marker = CONFIRM_TOPIC, unique("athand")
    with unconfirming(master, topic) as consumer:
        joined(consumer)
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            partition = producer.partitions(topic)[0]
            for i in range(6):  # one partition: the batch holds several messages
                producer.send(topic, f"{marker}-{i}".encode(), partition=partition)
        first: list[tubemq.Message] = []
        deadline = time.monotonic() + 20
        while len(first) < 2:
            assert time.monotonic() < deadline, "no batch of several messages"
            first = consumer.consume(1000, timeout=1)
        again = None
        deadline = time.monotonic() + 30
        while again is None:
            assert time.monotonic() < deadline, "the batch was never delivered again"
            batch = consumer.poll_batch(0.5)
            if batch is not None and batch.partition_key == first[0].partition_key:
                again = batch
            elif batch is not None:
                consumer.commit(batch)
        with pytest.raises(tubemq.CommitError) as info:
            consumer.commit(first[0])  # not its batch's last message, and rolled back
        assert info.value.code == 2004
        consumer.commit(again)  # the batch as delivered again is committed whole
        assert [m.message_id for m in again.messages()] == [m.message_id for m in first]


@contextlib.contextmanager
def consumer_and_producer(
    master: str, topic: str
) -> Iterator[tuple[tubemq.Consumer, tubemq.Producer]]:
    """A consumer of a new group holding every partition of ``topic`` from its end, and
    a producer that published it."""
    with (
        tubemq.Consumer(
            master=master, group=unique("g"), topics=[topic], consume_from="latest", **FAST
        ) as consumer,
        tubemq.Producer(master=master) as producer,
    ):
        producer.publish(topic)
        joined(consumer)
        yield consumer, producer


def test_an_empty_topic_backs_off_to_msg_not_found_wait_and_no_further(master, fetch_log):
    # Scenario 19 with default settings (msg_not_found_wait_ms 400), paced adaptively
    # (issue 26): each partition's empty streak waits 0.5, 1, 2 ... ms, then 400 ms.
    with tubemq.Consumer(
        master=master, group=unique("g"), topics=[EMPTY_TOPIC], consume_from="latest", **FAST
    ) as consumer:
        started = time.monotonic()
        while time.monotonic() - started < 10:
            assert consumer.poll(0.5) is None  # "no data" is never an exception
        held = consumer.assignment()
    fetch_log.settle()
    fetches = fetch_log.per_partition()
    assert sorted(fetches) == held == [f"1:{EMPTY_TOPIC}:{i}" for i in range(4)]
    for key, rows in fetches.items():
        assert {code for _, code in rows} == {404}, (key, rows)
        spacing = gaps(rows)
        # Polled all along (~9 s after the first rebalance): a quick ramp of about a
        # dozen fetches, then one per 400 ms - never a tight loop, never a longer rest.
        assert 12 <= len(rows) <= 12 + 10 / 0.35, (key, len(rows))
        ramp, steady = spacing[:9], spacing[10:]
        assert sum(ramp) < 0.8, (key, ramp)  # 0.5+1+...+128 ms, plus the round trips
        assert steady and min(steady) >= 0.35, (key, spacing)
        assert max(steady) < 0.8, (key, spacing)


def test_a_partition_whose_neighbours_are_busy_rests_as_an_empty_one(master, fetch_log):
    # A topic's partitions share one store at the broker, and a fetch that finds only
    # its neighbours' index entries is a 200 that brings nothing. Paced as data, an idle
    # partition was fetched once for every message its busy neighbour received; at the
    # end of the index it now rests as an empty one does. Nothing sent is lost.
    marker = unique("busy")
    with consumer_and_producer(master, CONFIRM_TOPIC) as (consumer, producer):
        busy = producer.partitions(CONFIRM_TOPIC)[0].key
        count, sent, got = 1500, set(), set()

        def send() -> None:
            for i in range(count):
                value = f"{marker}-{i}".encode()
                producer.send_async(CONFIRM_TOPIC, value, partition=busy)
                sent.add(value)
                time.sleep(0.001)
            producer.flush(timeout=30)

        sender = threading.Thread(target=send)
        started = time.time()
        sender.start()
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and bytes(message).startswith(marker.encode()):
                assert message.partition_key == busy
                got.add(bytes(message))
                consumer.commit(message)
        sender.join()
        ended = time.time()
    assert got == sent and len(got) == count
    fetch_log.settle()
    fetches = fetch_log.per_partition()
    idle = [key for key in fetches if key != busy]
    assert len(idle) == 3, sorted(fetches)
    for key in idle:
        during = [code for created, code in fetches[key] if started <= created <= ended]
        # Before: about one fetch per message the busy partition received (~1 500).
        # Resting as an empty partition does, one per 400 ms once the ramp is over.
        assert 0 < len(during) < 150, (key, len(during), ended - started)


def test_a_sibling_that_finds_the_store_grown_ends_the_short_rests_and_nothing_is_lost(master):
    # The 4 partitions share one store: a reply for any of them shows where its index
    # ends, and a partition resting after "nothing new" is fetched at once when that end
    # moved on (behaviour.md §3.8.1). At a trickle over every partition such early ends
    # are common; each delivers what it finds exactly once.
    marker = unique("sib")
    with consumer_and_producer(master, CONFIRM_TOPIC) as (consumer, producer):
        keys = [partition.key for partition in producer.partitions(CONFIRM_TOPIC)]
        assert len(keys) == 4
        count, sent, got = 400, [], []

        def send() -> None:
            for i in range(count):
                value = f"{marker}-{i}".encode()
                producer.send_async(CONFIRM_TOPIC, value, partition=keys[i % 4])
                sent.append(value)
                time.sleep(0.002)
            producer.flush(timeout=30)

        sender = threading.Thread(target=send)
        before = consumer.metrics()["rests_cut_short"]
        sender.start()
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and bytes(message).startswith(marker.encode()):
                got.append(bytes(message))
                consumer.commit(message)
        sender.join()
        cut_short = consumer.metrics()["rests_cut_short"] - before
    assert sorted(got) == sorted(sent) and len(got) == count  # each once
    assert cut_short > 0


def test_after_an_idle_spell_a_read_that_stops_short_of_the_end_reads_on(master):
    # Idle, the partitions back off together to msg_not_found_wait_ms. Then one message
    # to each: a partition whose read meets a sibling's entry first stops a few entries
    # short of the store's end. At a store that was quiet those entries are there to
    # read (behaviour.md §3.8.1, "A 200 that brings nothing"): it reads on at once, and
    # every message arrives together instead of a quarter of the quiet time (2 s) later.
    with (
        tubemq.Consumer(
            master=master, group=unique("g"), topics=[CONFIRM_TOPIC], consume_from="latest",
            msg_not_found_wait_ms=2000, **FAST,
        ) as consumer,
        tubemq.Producer(master=master) as producer,
    ):  # fmt: skip
        producer.publish(CONFIRM_TOPIC)
        joined(consumer)
        keys = [partition.key for partition in producer.partitions(CONFIRM_TOPIC)]
        assert len(keys) == 4
        until = time.monotonic() + 8  # the back-off reaches 2 s rests within ~4 s
        while time.monotonic() < until:
            assert consumer.poll(0.2) is None
        marker = unique("quiet").encode()
        for key in keys:
            producer.send(CONFIRM_TOPIC, marker + key.encode(), partition=key)
        arrivals: dict[bytes, float] = {}
        deadline = time.monotonic() + 10
        while len(arrivals) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and bytes(message).startswith(marker):
                arrivals[bytes(message)] = time.monotonic()
                consumer.commit(message)
    assert sorted(arrivals) == sorted(marker + key.encode() for key in keys)
    spread = max(arrivals.values()) - min(arrivals.values())
    assert spread < 0.5, spread


def test_a_member_without_partitions_waits_out_the_poll_timeout_without_spinning(master, fetch_log):
    # Scenario 20: five members share four partitions, so one of them holds none.
    group = unique("g")
    members = [
        tubemq.Consumer(
            master=master, group=group, topics=[EMPTY_TOPIC], consume_from="latest", **FAST
        )
        for _ in range(5)
    ]
    try:
        deadline = time.monotonic() + 60
        while True:
            sizes = [len(member.assignment()) for member in members]
            if sorted(sizes) == [0, 1, 1, 1, 1]:
                break
            assert time.monotonic() < deadline, sizes
            time.sleep(0.5)
        idle = members[sizes.index(0)]
        fetch_log.settle()
        fetched_before = fetch_log.count()
        for _ in range(2):
            cpu, started = time.process_time(), time.monotonic()
            assert idle.poll(2.0) is None
            elapsed, cpu_used = time.monotonic() - started, time.process_time() - cpu
            assert 1.95 <= elapsed < 5.0, elapsed
            # A busy loop would burn about one core for the whole 2 s.
            assert cpu_used < 0.5, cpu_used
        assert idle.assignment() == []
        fetch_log.settle()
        assert fetch_log.count() == fetched_before  # nothing to fetch, nothing fetched
    finally:
        for member in members:
            member.close()
