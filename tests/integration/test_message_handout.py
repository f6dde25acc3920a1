"""How the messages of the batch at hand are handed out (python/tubemq/_consumer_base.py, the
native cursor of bindings/message_cursor.cc), on the real cluster: ``poll()`` and
iteration share one hand-out, every message once and in order; a bad timeout is refused
even when a message is ready; after close() or in a forked child nothing more of the
batch is handed out."""

from __future__ import annotations

import os
import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}
COUNT = 40


def joined(consumer: tubemq.Consumer, partitions: int = 4) -> None:
    deadline = time.monotonic() + 40
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, consumer.assignment()
        assert consumer.poll(0.2) is None  # a new "latest" group has nothing yet


@pytest.fixture
def loaded(master, topics):
    """A consumer holding a fresh batch: COUNT messages sent to one partition before its
    next fetch, the first of them handed out already. Yields (consumer, first, sent)."""
    topic, marker = topics[7], uuid.uuid4().hex[:10]
    consumer = tubemq.Consumer(
        master=master,
        group=f"g_handout_{marker}",
        topics=[topic],
        consume_from="latest",
        **FAST,
    )
    try:
        joined(consumer)
        sent = [f"{marker}-{i:03d}".encode() for i in range(COUNT)]
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            for value in sent:
                producer.send_async(topic, value, partition=f"1:{topic}:0")
            assert producer.flush(timeout=30) == 0
        first = None
        deadline = time.monotonic() + 30
        while first is None and time.monotonic() < deadline:
            first = consumer.poll(0.5)
        assert first is not None and bytes(first) == sent[0]
        # The fetch brought more than this one: the rest is at hand.
        assert consumer.metrics()["in_flight"] > 0
        yield consumer, first, sent
    finally:
        consumer.close()


def _rest(consumer: tubemq.Consumer, count: int) -> list[bytes]:
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            got.append(bytes(message))
    return got


def test_poll_and_iteration_hand_out_each_message_once_in_order(loaded):
    consumer, first, sent = loaded
    handed = [bytes(first)]
    in_flight = consumer.metrics()["in_flight"]
    for message in consumer:  # the native iterator, sharing the poll()'s batch
        handed.append(bytes(message))
        if len(handed) == 5:
            break
    assert consumer.metrics()["in_flight"] == in_flight - 4
    handed.append(bytes(consumer.poll(0)))
    handed += [bytes(m) for m in consumer.consume(3, timeout=0)]
    iterator = iter(consumer)
    handed.append(bytes(next(iterator)))
    handed += _rest(consumer, COUNT - len(handed))
    assert handed == sent


def test_commit_without_argument_covers_what_iteration_handed_out(loaded):
    consumer, first, _ = loaded
    batch_size = consumer.metrics()["in_flight"] + 1
    iterator = iter(consumer)
    last = first
    for _ in range(batch_size - 1):
        last = next(iterator)
    assert last.index == batch_size - 1 and consumer.metrics()["in_flight"] == 0
    committed = consumer.metrics()["committed"]
    consumer.commit()  # every message handed out: the batch, confirmed
    assert consumer.metrics()["committed"] == committed + 1


def test_a_bad_timeout_is_refused_with_a_message_at_hand_and_loses_nothing(loaded):
    consumer, _, sent = loaded
    for bad, error in (
        ("1", tubemq.ArgumentTypeError),
        (True, tubemq.ArgumentTypeError),
        (-1, tubemq.ConfigError),
        (float("nan"), tubemq.ConfigError),
    ):
        with pytest.raises(error) as info:
            consumer.poll(bad)
        assert info.value.key == "timeout"
    assert bytes(consumer.poll(0)) == sent[1]  # the next message, not skipped


def test_after_close_nothing_more_of_the_batch_is_handed_out(loaded):
    consumer, _, _ = loaded
    iterator = iter(consumer)
    next(iterator)
    consumer.close()
    with pytest.raises(tubemq.ClientClosedError):
        consumer.poll(0)
    with pytest.raises(tubemq.ClientClosedError):
        next(iterator)
    with pytest.raises(tubemq.ClientClosedError):
        consumer.metrics()


def test_a_forked_child_is_not_handed_the_parents_messages(loaded):
    consumer, _, sent = loaded
    iterator = iter(consumer)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        status = 1
        try:
            outcome = []
            for name, call in (
                ("poll", lambda: consumer.poll(0)),
                ("next", lambda: next(iterator)),
                ("iter", lambda: next(iter(consumer))),
            ):
                try:
                    call()
                    outcome.append(f"{name}:handed out")
                except tubemq.ForkedClientError as error:
                    outcome.append(f"{name}:{error.code}")
            os.write(write_end, " ".join(outcome).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    report = os.read(read_end, 1000).decode()
    os.close(read_end)
    assert os.waitstatus_to_exitcode(status) == 0, report
    assert report == "poll:1012 next:1012 iter:1012"
    # The parent goes on with its batch where it was.
    assert bytes(next(iterator)) == sent[1]
    assert bytes(consumer.poll(0)) == sent[2]
