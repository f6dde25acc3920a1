"""send(..., partition=...) against the real cluster: every send to a partition lands on
it (the broker's answer names it, and a consumer reads it there), through the blocking,
the future and the asyncio producer; a partition that is not writable, of a wrong type,
or given with a key raises ConfigError naming ``partition`` before anything is sent.
The Spark sink's ``partition`` column is tested in tests/spark/test_sink.py."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import tubemq
import tubemq.aio
from tubemq import _core

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def producer(master, topics):
    with tubemq.Producer(master=master) as producer:
        producer.publish(topics[3])
        yield producer


def test_every_send_lands_on_the_partition_given_by_key_or_id(producer, topics, master):
    topic = topics[3]
    partitions = producer.partitions(topic)
    assert len(partitions) >= 2
    mark = f"pin-{uuid.uuid4().hex[:8]}"
    expected: dict[bytes, str] = {}
    for round_ in range(3):
        for info in partitions:
            # What partitions() lists is taken as it is, as a Kafka user passes a
            # TopicPartition.
            for how, target in (("key", info.key), ("id", info.partition_id), ("info", info)):
                value = f"{mark}-{round_}-{how}-{info.key}".encode()
                result = producer.send(topic, value, partition=target)
                assert result.partition_key == info.key
                assert result.partition_id == info.partition_id
                expected[value] = info.key
    futures = []
    for info in partitions:
        value = f"{mark}-async-{info.key}".encode()
        futures.append((info.key, producer.send_async(topic, value, partition=info.key)))
        expected[value] = info.key
    for key, future in futures:
        assert future.result(timeout=30).partition_key == key
    # A consumer finds each message on the partition it was sent to.
    found: dict[bytes, str] = {}
    group = f"pin_{uuid.uuid4().hex[:8]}"
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="earliest"
    ) as consumer:
        deadline = time.monotonic() + 60
        while len(found) < len(expected) and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                if bytes(message).startswith(mark.encode()):
                    found[bytes(message)] = message.partition_key
    assert found == expected


def test_the_asyncio_producer_sends_to_the_partition(master, topics):
    topic = topics[3]

    async def run() -> list[tuple[str, str]]:
        async with tubemq.aio.Producer(master=master) as producer:
            await producer.publish(topic)
            pairs = []
            for info in producer.sync.partitions(topic):
                for target in (info.key, info.partition_id):
                    result = await producer.send(topic, b"aio-pinned", partition=target)
                    pairs.append((result.partition_key, info.key))
            with pytest.raises(tubemq.ConfigError) as info:
                await producer.send(topic, b"x", partition=f"999:{topic}:0")
            assert info.value.key == "partition"
            return pairs

    pairs = asyncio.run(run())
    assert pairs and all(got == wanted for got, wanted in pairs)


def _bad_cases(topic: str) -> list[tuple[dict, type, str]]:
    return [
        (dict(partition=f"999:{topic}:0"), tubemq.ConfigError, "not a writable partition"),
        (dict(partition=f"1:{topic}:4000"), tubemq.ConfigError, "not a writable partition"),
        (dict(partition="1:pool_topic_0:0"), tubemq.ConfigError, "not a writable partition"),
        (dict(partition=4000), tubemq.ConfigError, "not a writable partition"),
        (dict(partition=1.0), tubemq.ArgumentTypeError, "partition must be"),
        (dict(partition=False), tubemq.ArgumentTypeError, "partition must be"),
        (dict(partition=b"1:t:0"), tubemq.ArgumentTypeError, "decode it first"),
        (dict(partition=f"1:{topic}:0", key="k"), tubemq.ConfigError, "not both"),
        (dict(partition=0, key="k"), tubemq.ConfigError, "not both"),
    ]


def test_bad_partitions_raise_before_anything_is_sent(master, topics):
    topic = topics[7]
    with tubemq.Producer(master=master) as fresh:
        fresh.publish(topic)
        fresh.publish(topics[3])
        of_another_topic = fresh.partitions(topics[3])[0]
        connections = _core.service_state()["connections"]
        cases = [
            *_bad_cases(topic),
            (dict(partition=of_another_topic), tubemq.ConfigError, "not a writable partition"),
        ]
        for kwargs, error_class, text in cases:
            for send in (fresh.send, fresh.send_async):
                with pytest.raises(error_class) as info:
                    send(topic, b"x", **kwargs)
                assert info.value.key == "partition", kwargs
                assert "partition" in str(info.value) and text in str(info.value), info.value
        assert fresh.in_flight() == 0
        assert _core.service_state()["connections"] == connections  # no broker contacted
        assert fresh.counters()["sent_ok"] == 0
        assert fresh.counters()["sent_failed"] == 0


def test_produce_cli_sends_every_line_to_the_partition(producer, topics, master):
    import subprocess
    import sys

    topic = topics[3]
    target = producer.partitions(topic)[-1]
    mark = f"clipin-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tubemq.cli",
            "produce",
            "--master",
            master,
            "--topic",
            topic,
            "--partition",
            str(target.partition_id),
        ],
        input=f"{mark} a\n{mark} b\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = []
    with tubemq.Consumer(
        master=master, group=f"pin_{uuid.uuid4().hex[:8]}", topics=[topic], consume_from="earliest"
    ) as consumer:
        deadline = time.monotonic() + 60
        while len(found) < 2 and time.monotonic() < deadline:
            found += [
                m.partition_key
                for m in consumer.consume(1000, timeout=0.5)
                if bytes(m).startswith(mark.encode())
            ]
    assert found == [target.key, target.key]
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "tubemq.cli",
            "produce",
            "--master",
            master,
            "--topic",
            topic,
            "--partition",
            "999:nowhere:0",
        ],
        input="x\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1 and "not a writable partition" in bad.stderr
