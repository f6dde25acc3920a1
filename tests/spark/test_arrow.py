"""Fetched batches as Arrow rows: the columnar path (Batch.arrow_columns, built in C++)
gives exactly the rows the per-message path gives, nulls, attrs and filters included."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq
from tubemq.spark._arrow import BatchBuilder, concat, record_batch

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
