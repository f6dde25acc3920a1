"""Consumers with ``decode="inlongmsg"`` on the real cluster: they hand out the records of
InLongMsg packs, a message that is not a pack raises PackDecodeError once (or is passed
over), and committing records never settles a pack before its last record was handed out.

Every test sends its packs with one key, so that they land in one partition in order.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import tubemq
import tubemq.aio
from tubemq import inlong

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def reader(master: str, topic: str, **extra) -> dict:
    """The configuration of a decoding member of a new group reading from the start."""
    return {
        "master": master,
        "group": unique("g"),
        "topics": [topic],
        "consume_from": "earliest",
        "decode": "inlongmsg",
        **FAST,
        **extra,
    }


def send(master: str, topic: str, payloads: list[bytes], key: str) -> None:
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for payload in payloads:
            producer.send(topic, payload, key=key, msg_type="inl", msg_time="202501021530")


def pack(mark: str, name: str, count: int, **options) -> bytes:
    records = [(f"{mark}-{name}-{i}".encode(), {"seq": str(i)}) for i in range(count)]
    return inlong.encode(records, attrs={"mark": mark, "pack": name}, **options)


def mine(item: object, mark: str) -> bool:
    return isinstance(item, inlong.ConsumedRecord) and item.attrs.get("mark") == mark


def bad_payload(mark: str) -> bytes:
    # InLongMsg's frame (0F 01 ... 0F 01) around bytes that are no v1 pack.
    return b"\x0f\x01" + f"not a pack {mark}".encode() + b"\x0f\x01"


def test_records_errors_and_provenance(master, topics):
    topic, mark = topics[5], unique("rec")
    payloads = [
        pack(mark, "a", 3, version=1, compress=True, create_time_ms=1_700_000_000_123),
        bad_payload(mark),
        pack(mark, "b", 2, version=4),
        pack(mark, "c", 4, version=3),
    ]
    send(master, topic, payloads, key=mark)
    records: list[inlong.ConsumedRecord] = []
    errors: list[inlong.PackDecodeError] = []
    with tubemq.Consumer(reader(master, topic)) as consumer:
        deadline = time.monotonic() + 90
        while len(records) < 9 and time.monotonic() < deadline:
            try:
                item = consumer.poll(0.5)
            except inlong.PackDecodeError as error:
                if mark.encode() in bytes(error.consumed_message):
                    errors.append(error)
                continue
            if mine(item, mark):
                assert isinstance(item, inlong.ConsumedRecord)
                records.append(item)
        assert consumer.metrics()["decode_errors"] >= 1
    names = [(r.attrs["pack"], r.attrs["seq"], r.position, r.count) for r in records]
    assert names == [
        ("a", "0", 0, 3),
        ("a", "1", 1, 3),
        ("a", "2", 2, 3),
        ("b", "0", 0, 2),
        ("b", "1", 1, 2),
        ("c", "0", 0, 4),
        ("c", "1", 1, 4),
        ("c", "2", 2, 4),
        ("c", "3", 3, 4),
    ]
    assert [bytes(r.body) for r in records[:2]] == [f"{mark}-a-0".encode(), f"{mark}-a-1".encode()]
    assert all(type(r.body) is bytes for r in records)
    first = records[0]
    assert first.create_time_ms == 1_700_000_000_123
    assert first.create_time is not None and first.create_time.year == 2023
    assert first.topic == topic and first.message.msg_type == "inl"
    # Read as a poll loop written for plain messages reads them:
    assert first.value == first.body and first.value.decode() == f"{mark}-a-0"
    assert first.msg_type == "inl"
    assert first.msg_time == "202501021530"
    assert [r.last for r in records[:3]] == [False, False, True]
    # One partition, so one key for all; the three records of a pack share its message.
    assert len({r.partition_key for r in records}) == 1
    assert len({r.message_id for r in records[:3]}) == 1
    assert records[3].attrs["dt"]  # v4 adds the data time to every record's attributes
    [error] = errors  # raised once; the packs after it were handed out
    assert isinstance(error, inlong.InLongMsgError) and isinstance(error, tubemq.TubeMQError)
    assert error.partition_key == first.partition_key and error.topic == topic
    assert error.message_id not in {r.message_id for r in records}
    assert error.batch_offset >= 0 and error.index >= 0 and error.kind
    assert first.partition_key in str(error) and str(error.message_id) in str(error)


def test_consume_returns_the_records_before_a_bad_pack_then_raises(master, topics):
    topic, mark = topics[5], unique("batch")
    send(master, topic, [pack(mark, "a", 2), bad_payload(mark), pack(mark, "b", 2)], mark)
    got: list[str] = []
    errors = 0
    with tubemq.Consumer(reader(master, topic)) as consumer:
        deadline = time.monotonic() + 90
        while len(got) < 4 and time.monotonic() < deadline:
            try:
                batch = consumer.consume(100, 0.5)
            except inlong.PackDecodeError as error:
                errors += mark.encode() in bytes(error.consumed_message)
                continue
            got += [f"{r.attrs['pack']}{r.attrs['seq']}" for r in batch if mine(r, mark)]
    # Nothing handed out is lost to the error: a0 a1 come back before it is raised.
    assert (got, errors) == (["a0", "a1", "b0", "b1"], 1)


def test_skip_passes_bad_packs_over(master, topics):
    topic, mark = topics[5], unique("skip")
    send(master, topic, [bad_payload(mark), b"plain " + mark.encode(), pack(mark, "a", 2)], mark)
    seen: list[bytes] = []
    with tubemq.Consumer(reader(master, topic, decode_errors="skip")) as consumer:
        deadline = time.monotonic() + 90
        while len(seen) < 2 and time.monotonic() < deadline:
            seen += [bytes(r.body) for r in consumer.consume(100, 0.5) if mine(r, mark)]
        assert consumer.metrics()["decode_errors"] >= 2  # ours; others' plain messages too
    assert seen == [f"{mark}-a-0".encode(), f"{mark}-a-1".encode()]


def member(master: str, topic: str, group: str) -> tubemq.Consumer[inlong.ConsumedRecord]:
    """A member of ``group`` that commits only what the test says (the topic's other
    messages are passed over: other tests write plain ones)."""
    return tubemq.Consumer(
        reader(master, topic, group=group, decode_errors="skip", auto_commit=False),
        decode="inlongmsg",
    )


def take(consumer: tubemq.Consumer[inlong.ConsumedRecord], mark: str, count: int, wait_s: float):
    """The next ``count`` records of our mark. The topic's other messages are committed
    whenever a poll comes back empty (commit() of everything handed out whole), so that
    they never hold a partition; our packs are handed out in a row and are not caught
    by it half-way."""
    got: list[inlong.ConsumedRecord] = []
    deadline = time.monotonic() + wait_s
    while len(got) < count and time.monotonic() < deadline:
        item = consumer.poll(0.5)
        if item is None:
            consumer.commit()
        elif mine(item, mark):
            got.append(item)
    return got


def test_committing_an_earlier_record_keeps_its_pack(master, topics):
    topic, mark, group = topics[5], unique("keep"), unique("g")
    send(master, topic, [pack(mark, "a", 3), pack(mark, "b", 2)], mark)
    with member(master, topic, group) as first:
        got = take(first, mark, 2, 90)
        assert [r.attrs["seq"] for r in got] == ["0", "1"]
        first.commit(got[1])  # not the pack's last record: the pack stays unsettled
    with member(master, topic, group) as second:
        again = take(second, mark, 5, 90)
        # Nothing lost: the pack comes again whole, then the next one.
        assert [(r.attrs["pack"], r.attrs["seq"]) for r in again] == [
            ("a", "0"),
            ("a", "1"),
            ("a", "2"),
            ("b", "0"),
            ("b", "1"),
        ]
        second.commit(again[-1])  # the last record of the last pack: both are settled
        assert second.offsets()[again[-1].partition_key]["lag"] >= 0
    with member(master, topic, group) as third:
        assert take(third, mark, 1, 12) == []


def test_commit_without_argument_leaves_a_pack_in_hand(master, topics):
    topic, mark, group = topics[5], unique("hand"), unique("g")
    send(master, topic, [pack(mark, "a", 3)], mark)
    with member(master, topic, group) as first:
        got = take(first, mark, 1, 90)
        assert len(got) == 1
        first.commit()  # the pack's other records were not handed out: not committed
    with member(master, topic, group) as second:
        got = take(second, mark, 3, 90)
        assert [r.attrs["seq"] for r in got] == ["0", "1", "2"]
        second.commit()
    with member(master, topic, group) as third:
        assert take(third, mark, 1, 12) == []


def test_nack_of_a_record_delivers_its_pack_again(master, topics):
    topic, mark = topics[5], unique("nack")
    send(master, topic, [pack(mark, "a", 3)], mark)
    with member(master, topic, unique("g")) as consumer:
        got = take(consumer, mark, 2, 90)
        consumer.nack(got[1])  # the record not handed out yet is dropped with the batch
        again = take(consumer, mark, 3, 90)
        assert [r.attrs["seq"] for r in got + again] == ["0", "1", "0", "1", "2"]
        consumer.commit(again[-1])


def test_asyncio_consumer_hands_out_records(master, topics):
    topic, mark = topics[5], unique("aio")
    send(master, topic, [pack(mark, "a", 3, version=2)], mark)

    async def run() -> list[bytes]:
        bodies: list[bytes] = []
        async with tubemq.aio.Consumer(reader(master, topic, decode_errors="skip")) as consumer:
            deadline = time.monotonic() + 90
            while len(bodies) < 3 and time.monotonic() < deadline:
                record = await consumer.poll(0.5)
                if record is not None and mine(record, mark):
                    bodies.append(bytes(record.body))
                    await consumer.commit(record)
        return bodies

    assert asyncio.run(run()) == [f"{mark}-a-{i}".encode() for i in range(3)]


def test_assigned_consumer_hands_out_records(master, topics):
    topic, mark = topics[5], unique("asg")
    send(master, topic, [pack(mark, "a", 2, version=4, compress=True)], mark)
    bodies: list[bytes] = []
    with tubemq.AssignedConsumer(
        master=master, group=unique("g"), topics=[topic], decode="inlongmsg", **FAST
    ) as consumer:
        consumer.assign({meta.key: 0 for meta in consumer.partitions()})
        deadline = time.monotonic() + 90
        while len(bodies) < 2 and time.monotonic() < deadline:
            try:
                record = consumer.poll(0.5)
            except inlong.PackDecodeError:
                continue  # other tests' bad packs
            if record is not None and mine(record, mark):
                bodies.append(bytes(record.body))
    assert bodies == [f"{mark}-a-0".encode(), f"{mark}-a-1".encode()]
