"""Fetched batches as Arrow rows: the columnar path (Batch.arrow_columns, built in C++)
gives exactly the rows the per-message path gives, nulls, attrs and filters included."""

from __future__ import annotations

import json
import time
import uuid

import pytest

import tubemq
from raw_frames import send_message
from tubemq.spark._arrow import BatchBuilder, concat, record_batch
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options

pytestmark = [pytest.mark.integration]


def test_record_batch_equals_the_rows_built_message_by_message(master, spark_topics):
    topic, mark = spark_topics[2], f"arrow-{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for index in range(80):
            extra: dict = {}
            if index % 3:
                extra["msg_type"] = f"t{index % 2}"
            if index % 4:
                extra["msg_time"] = f"20250102153{index % 10}"
            if index % 5:
                extra["attrs"] = {"n": str(index), "k": "v"}
            producer.send(topic, f"{mark}-{index}".encode() + b"\x00\xff", **extra)
    group = f"arrow_{uuid.uuid4().hex[:8]}"
    per_message, columnar, kept, skipping = [], [], [], []
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False
    ) as consumer:
        keys = [meta.key for meta in consumer.partitions(refresh=True) if meta.subscribable]
        consumer.assign(dict.fromkeys(keys, 0))
        deadline = time.monotonic() + 30
        while set(consumer.offsets()) != set(keys):  # the broker reports their ends
            assert time.monotonic() < deadline
            consumer.poll_batch(0.2)
        ends = consumer.offsets()
        consumer.assign({key: max(0, ends[key]["max_offset"] - 28 * 80) for key in keys})
        deadline = time.monotonic() + 30
        while sum(b.num_rows for b in columnar) < 80 and time.monotonic() < deadline:
            batch = consumer.poll_batch(0.5)
            if batch is None:
                continue
            builder = BatchBuilder()
            for message in batch.messages():
                builder.add(message, message.batch_offset)
            per_message.append(builder.take())
            columnar.append(record_batch(batch))
            kept.append(record_batch(batch, kept={"t1"}))
            first_id = batch.messages()[0].message_id
            skipping.append(record_batch(batch, skip_ids={first_id}))
            consumer.commit(batch)
    expected = concat(per_message).to_pylist()
    assert len(expected) == 80 and sum(r["value"].startswith(mark.encode()) for r in expected) == 80
    assert concat(columnar).to_pylist() == expected
    assert {r["msg_type"] for r in expected} == {None, "t0", "t1"}
    assert any(r["attrs"] == [] and r["msg_time"] is None for r in expected)
    assert concat(kept).to_pylist() == [r for r in expected if r["msg_type"] == "t1"]
    assert concat(skipping).num_rows == 80 - len(per_message)


# Attributes as foreign producers write them (tests/raw_frames.py puts them on the wire):
# GBK text, bytes that are no text, and two bad keys that both read as U+FFFD.
FOREIGN = [
    (b"$msgType$=" + "订单".encode("gbk") + b",city=" + "北京".encode("gbk"), "订单".encode("gbk")),
    (b"$msgType$=\xff\xfet,\xb0k=v\xe2\x82,ok=fine", b"\xff\xfet"),
    (b"\xb0=first,\xff=second,n=1", None),
]


def readable(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def foreign(master, spark_topics, cluster):
    """FOREIGN sent to partition 0 of a topic: (topic, mark, offsets before them)."""
    topic, mark = spark_topics[3], f"foreign-{uuid.uuid4().hex[:8]}"
    options = source_options({"master": master, "topic": topic}, streaming=False)
    start = {key: span.high for key, span in query_ranges(options).items()}
    for index, (attribute, msg_type) in enumerate(FOREIGN):
        body = f"{mark}-{index}".encode()
        reply = send_message(cluster.broker_address, topic, 0, body, attribute, msg_type)
        assert reply[2] == [200], reply
    return topic, mark, start


def expected_row(index: int) -> tuple[str | None, dict[str, str]]:
    """msg_type and attrs of FOREIGN[index] as the string columns show them."""
    attribute, msg_type = FOREIGN[index]
    attrs: dict[str, str] = {}
    for item in attribute.split(b","):
        key, value = item.split(b"=")
        if key != b"$msgType$":
            attrs.pop(readable(key), None)
            attrs[readable(key)] = readable(value)
    return (None if msg_type is None else readable(msg_type)), attrs


def test_foreign_attribute_bytes_give_valid_utf8_rows(master, foreign):
    topic, mark, start = foreign
    key = f"1:{topic}:0"
    rows, reference = [], []
    with tubemq.AssignedConsumer(
        master=master, group=f"arrow_{uuid.uuid4().hex[:8]}", topics=[topic], auto_commit=False
    ) as consumer:
        consumer.assign({key: start[key]})
        deadline = time.monotonic() + 30
        while len(rows) < len(FOREIGN) and time.monotonic() < deadline:
            batch = consumer.poll_batch(0.5)
            if batch is None:
                continue
            columnar = record_batch(batch)
            columnar.validate(full=True)  # checks that every string is UTF-8
            builder = BatchBuilder()
            for message in batch.messages():
                builder.add(message, message.batch_offset)
            reference += builder.take().to_pylist()
            rows += [r for r in columnar.to_pylist() if r["value"].startswith(mark.encode())]
            consumer.commit(batch)
    assert [r["value"] for r in rows] == [f"{mark}-{i}".encode() for i in range(len(FOREIGN))]
    assert rows == [r for r in reference if r["value"].startswith(mark.encode())]
    for index, row in enumerate(rows):
        msg_type, attrs = expected_row(index)
        assert row["msg_type"] == msg_type
        assert dict(row["attrs"]) == attrs and len(row["attrs"]) == len(attrs)
    assert dict(rows[2]["attrs"]) == {"\ufffd": "second", "n": "1"}


def test_a_msg_type_filter_matches_the_text_as_shown(master, foreign):
    topic, mark, start = foreign
    key = f"1:{topic}:0"
    kept = []
    with tubemq.AssignedConsumer(
        master=master, group=f"arrow_{uuid.uuid4().hex[:8]}", topics=[topic], auto_commit=False
    ) as consumer:
        consumer.assign({key: start[key]})
        deadline = time.monotonic() + 30
        seen = 0
        while seen < len(FOREIGN) and time.monotonic() < deadline:
            batch = consumer.poll_batch(0.5)
            if batch is None:
                continue
            seen += sum(bytes(m).startswith(mark.encode()) for m in batch.messages())
            chunk = record_batch(batch, kept={"\ufffd\ufffdt"})
            kept += [r["value"] for r in chunk.to_pylist() if r["value"].startswith(mark.encode())]
            consumer.commit(batch)
    assert kept == [f"{mark}-1".encode()]


@pytest.mark.slow
def test_spark_reads_foreign_attribute_bytes_as_valid_rows(spark, master, foreign):
    topic, mark, start = foreign
    frame = (
        spark.read.format("tubemq")
        .option("master", master)
        .option("topic", topic)
        .option("startingOffsets", json.dumps(start))
        .load()
    )
    rows = sorted(
        (r for r in frame.collect() if r.value.startswith(mark.encode())), key=lambda r: r.value
    )
    assert len(rows) == len(FOREIGN)
    for index, row in enumerate(rows):
        msg_type, attrs = expected_row(index)
        assert (row.msg_type, row.attrs) == (msg_type, attrs)
