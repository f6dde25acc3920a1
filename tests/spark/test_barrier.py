"""consume_in_barrier: every task of a barrier stage is a bound-consume member; together
they read a 4-partition topic, each message once when nothing fails."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options
from tubemq.spark.barrier import consume_in_barrier, share_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def ends_now(master: str, topic: str) -> dict[str, int]:
    options = source_options({"master": master, "topic": topic}, streaming=False)
    return {key: span.high for key, span in query_ranges(options).items()}


def test_share_of_splits_keys_evenly_and_completely():
    keys = [f"1:t:{p}" for p in (3, 0, 2, 1)]
    shares = [share_of(keys, 2, task) for task in range(2)]
    assert shares == [["1:t:0", "1:t:2"], ["1:t:1", "1:t:3"]]
    assert sorted(k for t in range(3) for k in share_of(keys, 3, t)) == sorted(keys)


def test_bad_arguments_are_refused_before_spark_runs(master, spark_topics):
    with pytest.raises(tubemq.ConfigError, match="session_key"):
        consume_in_barrier(master, [spark_topics[0]], config={"session_key": "x"})
    with pytest.raises(tubemq.ConfigError, match="max_messages"):
        consume_in_barrier(master, [spark_topics[0]], max_messages=0)


def test_two_barrier_tasks_read_every_message_exactly_once(spark, master, spark_topics):
    from pyspark.sql import functions as F

    topic, mark = spark_topics[0], f"barrier-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    assert len(start) == 4
    sent = [f"{mark}-{index}".encode() for index in range(2000)]
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in sent]
        producer.flush(timeout=60)
    assert all(future.exception() is None for future in futures)

    fn, schema = consume_in_barrier(
        master,
        [topic],
        starting_offsets=start,
        idle_timeout_s=4.0,
        deadline_s=90.0,
        batch_rows=500,
        config={"heartbeat_period_ms": 1000},
    )
    began = time.monotonic()
    rows = (
        spark.range(0, 2, 1, numPartitions=2)
        .mapInArrow(fn, schema, barrier=True)
        .select("value", "partition", "message_id", F.spark_partition_id().alias("task"))
        .collect()
    )
    took = time.monotonic() - began
    marked = [r for r in rows if bytes(r.value).startswith(mark.encode())]
    values = [bytes(r.value) for r in marked]
    assert set(values) == set(sent)  # every message arrived
    assert len(values) == len(sent)  # none twice
    assert len({r.message_id for r in marked}) == len(sent)
    # Both tasks read, each its own two partitions.
    by_task: dict[int, set[str]] = {}
    for row in marked:
        by_task.setdefault(row.task, set()).add(row.partition)
    assert sorted(by_task) == [0, 1], by_task
    assert sorted(k for keys in by_task.values() for k in keys) == sorted(start)
    assert all(len(partitions) == 2 for partitions in by_task.values()), by_task
    assert took < 90, took  # the idle timeout, not the deadline, ended the tasks

    # Again in a new group, each task stopping after 300 messages: a fetch is yielded
    # whole, and one partition holds about 500 of them, so a task yields 300 to 799.
    fn, schema = consume_in_barrier(
        master, [topic], starting_offsets=start, max_messages=300, deadline_s=90.0
    )
    rows = (
        spark.range(0, 2, 1, numPartitions=2)
        .mapInArrow(fn, schema, barrier=True)
        .select("value", F.spark_partition_id().alias("task"))
        .collect()
    )
    values = [bytes(r.value) for r in rows if bytes(r.value).startswith(mark.encode())]
    assert len(set(values)) == len(values) and set(values) <= set(sent)
    per_task = [sum(1 for r in rows if r.task == task) for task in (0, 1)]
    assert all(300 <= count < 800 for count in per_task), per_task
