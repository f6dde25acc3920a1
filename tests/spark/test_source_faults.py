"""The tubemq source when things go wrong: a partition another reader of the group holds,
a partition that holds less than a query has already read, and a start offset the
broker's retention has deleted (failOnDataLoss)."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

import tubemq
from tubemq.cluster import LocalCluster
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def spans_now(master: str, topic: str) -> dict[str, tuple[int, int]]:
    """Partition key -> (first, end) index offset the broker holds now."""
    options = source_options({"master": master, "topic": topic}, streaming=False)
    return {key: (span.low, span.high) for key, span in query_ranges(options).items()}


def ends_now(master: str, topic: str) -> dict[str, int]:
    return {key: high for key, (_, high) in spans_now(master, topic).items()}


def produce(master: str, topic: str, mark: str, count: int) -> set[bytes]:
    values = [f"{mark}-{index}".encode() for index in range(count)]
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in values]
        producer.flush(timeout=60)
    assert all(future.exception() is None for future in futures)
    return set(values)


def read(spark, master: str, topic: str, **options: str):
    reader = spark.read.format("tubemq").option("master", master).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def marked(rows, mark: str) -> list[bytes]:
    return [bytes(r.value) for r in rows if bytes(r.value).startswith(mark.encode())]


def test_a_task_whose_partition_another_reader_holds_backs_off_and_reads_it(
    spark, master, spark_topics
):
    from pyspark.errors import PySparkException

    topic, mark = spark_topics[1], f"held-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    sent = produce(master, topic, mark, 200)
    end = ends_now(master, topic)
    held = sorted(start)[0]
    ranges = {"startingOffsets": json.dumps(start), "endingOffsets": json.dumps(end)}

    # Held for longer than the task retries: the task fails, naming the refusal.
    group = f"held_{uuid.uuid4().hex[:8]}"
    with tubemq.AssignedConsumer(master=master, group=group, topics=[topic]) as holder:
        holder.assign({held: None})
        short = {"group": group, "partitionOccupiedRetryMs": "1000", **ranges}
        with pytest.raises(PySparkException, match="PartitionOccupiedError"):
            read(spark, master, topic, **short).count()

    # Held for 4 s (as by a killed attempt of the same task): the task waits and reads.
    group = f"held_{uuid.uuid4().hex[:8]}"
    with tubemq.AssignedConsumer(master=master, group=group, topics=[topic]) as holder:
        holder.assign({held: None})
        release = threading.Timer(4.0, holder.unassign, args=([held],), kwargs={"commit": False})
        release.start()
        began = time.monotonic()
        try:
            rows = read(spark, master, topic, group=group, **ranges).collect()
        finally:
            release.join()
        took = time.monotonic() - began
    values = marked(rows, mark)
    assert sorted(values) == sorted(sent)  # every message once, the held partition's too
    assert any(r.partition == held for r in rows if bytes(r.value).startswith(mark.encode()))
    assert took >= 4.0, took  # it did wait for the holder


def _stream(spark, master: str, topic: str, name: str, checkpoint: str, **options: str):
    reader = spark.readStream.format("tubemq").option("master", master).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load()
        .select("value", "partition")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


def _fail_then_go_on(spark, master: str, topic: str, starting: str, tmp_path) -> tuple[str, list]:
    """Streams ``topic`` from ``starting`` twice, each query from a checkpoint of its own:
    with failOnDataLoss, which must fail (its error text is returned), then with
    failOnDataLoss=false, which must finish (the rows it delivered are returned)."""
    from pyspark.errors import StreamingQueryException

    query = _stream(
        spark,
        master,
        topic,
        f"loss_{uuid.uuid4().hex[:8]}",
        str(tmp_path / "fail"),
        startingOffsets=starting,
    )
    with pytest.raises(StreamingQueryException, match="failOnDataLoss=false") as caught:
        query.awaitTermination(120)
    name = f"loss_{uuid.uuid4().hex[:8]}"
    query = _stream(
        spark,
        master,
        topic,
        name,
        str(tmp_path / "go-on"),
        startingOffsets=starting,
        failOnDataLoss="false",
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    return str(caught.value), spark.sql(f"SELECT value, partition FROM {name}").collect()


def test_a_partition_behind_the_queries_offset_fails_or_is_read_again(
    spark, master, spark_topics, tmp_path
):

    topic, mark = spark_topics[1], f"lost-{uuid.uuid4().hex[:8]}"
    old = produce(master, topic, f"old-{mark}", 40)
    start = ends_now(master, topic)
    sent = produce(master, topic, mark, 200)
    # A start past what the broker holds stands for a checkpoint written before the topic
    # was re-created: the messages between the broker's end and it are gone.
    lost = sorted(start)[1]
    beyond = {**start, lost: start[lost] + 28 * 1_000_000}

    error, rows = _fail_then_go_on(spark, master, topic, json.dumps(beyond), tmp_path)
    assert lost in error and "DataLossError" in error
    assert sorted(marked(rows, mark)) == sorted(sent)  # every new message once
    # The reset partition was read again from its first message: older ones too, and
    # only from it.
    again = [r for r in rows if bytes(r.value) in old]
    assert again and {r.partition for r in again} == {lost}


# Retention on a real broker: segments roll every 64 KiB of data (100 index entries), the
# topic keeps them 1 s, and the broker's clear-up pass (every 60 s, its floor) deletes the
# expired ones; in our runs that took from 40 s to 3 minutes after they were written.
RETAINED = "retained"
RETENTION_WAIT_S = 330


@pytest.fixture(scope="module")
def short_retention(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("retention-cluster"))
    cluster.up(
        topics=[RETAINED],
        partitions=1,
        broker_settings={
            "maxSegmentSize": str(64 * 1024),
            "maxIndexSegmentSize": str(100 * 28),
            "logClearupDurationMs": "60000",
        },
        topic_settings={"deletePolicy": "delete,1s"},
    )
    try:
        yield cluster
    finally:
        cluster.down()


def test_a_start_offset_deleted_by_retention_fails_or_is_skipped(spark, short_retention, tmp_path):
    from pyspark.errors import PySparkException

    master, mark = short_retention.master_address, f"kept-{uuid.uuid4().hex[:8]}"
    produce(master, RETAINED, "early", 100)
    start = ends_now(master, RETAINED)
    (key,) = start
    produce(master, RETAINED, "old-" + "x" * 500, 500)  # rolls a segment every 100
    deadline = time.monotonic() + RETENTION_WAIT_S
    while spans_now(master, RETAINED)[key][0] <= start[key]:
        assert time.monotonic() < deadline, "the broker's retention deleted nothing"
        time.sleep(5)
    kept = produce(master, RETAINED, mark, 50)
    first, end = spans_now(master, RETAINED)[key]
    assert first > start[key] > 0
    planned = {"startingOffsets": json.dumps(start), "endingOffsets": json.dumps({key: end})}

    # Batch: the planned start lies in a deleted segment.
    with pytest.raises(PySparkException, match="failOnDataLoss=false") as caught:
        read(spark, master, RETAINED, **planned).collect()
    assert "DataLossError" in str(caught.value) and "were deleted" in str(caught.value)
    rows = read(spark, master, RETAINED, failOnDataLoss="false", **planned).collect()
    # Everything the broker still holds from its first offset on, each once.
    assert len(rows) == (end - first) // 28
    assert sorted(marked(rows, mark)) == sorted(kept)
    assert min(r.batch_offset for r in rows) >= first

    # Streaming from a checkpoint-like start inside the deleted range: the same.
    error, streamed = _fail_then_go_on(spark, master, RETAINED, json.dumps(start), tmp_path)
    assert "were deleted" in error
    assert len(streamed) == (end - first) // 28
    assert sorted(marked(streamed, mark)) == sorted(kept)
