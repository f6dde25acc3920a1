"""Sending to a topic without publishing it first, as Kafka and Pulsar users do: the
first send publishes it, and nothing is lost on the way. A failure nobody can be told
of (produce() without a callback) is logged, not dropped without a word."""

from __future__ import annotations

import logging
import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration

COUNT = 3000


def _joined(consumer: tubemq.Consumer) -> None:
    deadline = time.monotonic() + 40
    while len(consumer.assignment()) < 4:
        assert time.monotonic() < deadline, consumer.assignment()
        assert consumer.poll(0.2) is None  # a new "latest" group has nothing yet


def _read_marked(consumer: tubemq.Consumer, marker: bytes, wanted: int) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < wanted and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and bytes(message).startswith(marker):
            got.append(bytes(message))
            consumer.commit(message)
    return got


def test_a_kafka_style_loop_delivers_every_message_without_publish(master, topics):
    # produce() with no callback, then flush(): the loop a confluent-kafka user writes.
    # Before publish on first send, each of these failed with 443, reported to nobody.
    topic, marker = topics[3], f"kafka-{uuid.uuid4().hex[:8]}".encode()
    with tubemq.Consumer(
        master=master, group=f"g_{uuid.uuid4().hex[:8]}", topics=[topic], consume_from="latest"
    ) as consumer:
        _joined(consumer)
        with tubemq.Producer(master=master) as producer:
            assert producer.published_topics() == []
            for index in range(COUNT):
                producer.produce(topic, marker + b"-%d" % index)
            assert producer.flush(timeout=60) == 0
            assert producer.published_topics() == [topic]
            assert producer.counters()["sent_ok"] == COUNT
        got = _read_marked(consumer, marker, COUNT)
    assert sorted(got) == sorted(marker + b"-%d" % index for index in range(COUNT))


def test_every_send_path_publishes_its_topic_first(master, topics):
    topic = topics[3]
    with tubemq.Producer(master=master) as producer:
        assert producer.send(topic, b"sync").topic == topic
    with tubemq.Producer(master=master) as producer:
        handles = [producer.send_async(topic, b"async %d" % i) for i in range(50)]
        assert {handle.result(timeout=30).topic for handle in handles} == {topic}
    with tubemq.Producer(master=master) as producer:
        # A pinned partition needs the topic's partitions: they are asked for first.
        result = producer.send(topic, b"pinned", partition=2)
        assert result.partition_key == f"1:{topic}:2"
    with tubemq.Producer(master=master) as producer:
        assert [info.key for info in producer.partitions(topic)] == [
            f"1:{topic}:{partition}" for partition in range(4)
        ]


def test_a_topic_the_master_does_not_know_fails_its_sends_with_why(master):
    with tubemq.Producer(master=master) as producer:
        began = time.monotonic()
        handles = [producer.send_async("not_deployed_anywhere", b"x") for _ in range(5)]
        errors = [handle.exception(timeout=30) for handle in handles]
        assert {type(error) for error in errors} == {tubemq.InvalidMessageError}
        assert {error.code for error in errors} == {443}
        assert "not publishable" in str(errors[0])
        # One publish for all five (its rounds: about 4 s), not one per send.
        assert time.monotonic() - began < 15
        # Later sends fail at once: the topic stays declared, still without partitions.
        with pytest.raises(tubemq.InvalidMessageError) as info:
            producer.send("not_deployed_anywhere", b"x", timeout=2)
        assert info.value.code == 444
        assert producer.counters()["sent_ok"] == 0


def test_a_failure_with_nobody_to_tell_is_logged(master, caplog):
    caplog.set_level(logging.WARNING, logger="tubemq.delivery")
    with tubemq.Producer(master=master) as producer:
        for _ in range(3):
            producer.produce("not:a:topic", b"lost")  # no callback, no handle
        producer.send_async("not:a:topic", b"dropped")  # the handle thrown away
        assert producer.flush(timeout=10) == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "tubemq.delivery"]
    # The first at once, the rest summed up by the flush: each of the four is counted.
    assert sum(int(warning.split()[0]) for warning in warnings) == 4, warnings
    assert all("failed with no delivery callback" in warning for warning in warnings)
    assert "[443]" in warnings[0] and "not:a:topic" in warnings[0]
