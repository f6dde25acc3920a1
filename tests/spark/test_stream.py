"""The tubemq source in Structured Streaming: read limits, new data, and a query killed
hard and restarted from its checkpoint without losing or repeating a message."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import stream_job  # pytest puts this folder on sys.path

import tubemq
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def ends_now(master: str, topic: str) -> dict[str, int]:
    options = source_options({"master": master, "topic": topic}, streaming=False)
    return {key: span.high for key, span in query_ranges(options).items()}


def produce(master: str, topic: str, mark: str, count: int) -> set[bytes]:
    values = [f"{mark}-{index}".encode() for index in range(count)]
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in values]
        producer.flush(timeout=60)
    assert all(future.exception() is None for future in futures)
    return set(values)


def stream(spark, master: str, topic: str, **options: str):
    reader = spark.readStream.format("tubemq").option("master", master).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_max_messages_per_trigger_cuts_micro_batches(spark, master, spark_topics, tmp_path):
    topic, mark = spark_topics[5], f"limit-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    sent = produce(master, topic, mark, 600)
    query = (
        stream(spark, master, topic, startingOffsets=json.dumps(start), maxMessagesPerTrigger="150")
        .select("value", "message_id")
        .writeStream.format("memory")
        .queryName(f"limit_{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    assert query.exception() is None
    rows = spark.sql(f"SELECT value, message_id FROM {query.name}").collect()
    values = [bytes(r.value) for r in rows if bytes(r.value).startswith(mark.encode())]
    assert sorted(values) == sorted(sent)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert max(sizes) <= 150 and len(sizes) >= 4, sizes


def test_a_running_query_picks_up_new_messages(spark, master, spark_topics, tmp_path):
    topic, mark = spark_topics[5], f"live-{uuid.uuid4().hex[:8]}"
    name = f"live_{uuid.uuid4().hex[:8]}"
    query = (
        stream(spark, master, topic)  # startingOffsets: latest
        .select("value")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        while query.lastProgress is None:
            assert time.monotonic() < deadline and query.exception() is None
            time.sleep(0.5)
        sent = produce(master, topic, mark, 100)
        got: set[bytes] = set()
        while got != sent and time.monotonic() < deadline:
            time.sleep(1)
            got = {
                bytes(r.value)
                for r in spark.sql(f"SELECT value FROM {name}").collect()
                if bytes(r.value).startswith(mark.encode())
            }
        assert got == sent
    finally:
        query.stop()


def test_a_killed_query_restarts_from_its_checkpoint_exactly_once(
    spark, master, spark_topics, tmp_path
):
    topic, mark = spark_topics[4], f"restart-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    sent = produce(master, topic, mark, 3000)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    job = stream_job.launch(master, topic, start, checkpoint, output)
    killed_after = stream_job.kill_after_commits(job, checkpoint)
    assert killed_after < 8  # 3000 messages take at least 8 batches of 400

    rows = stream_job.finish_from_checkpoint(spark, master, topic, checkpoint, output)
    values = [bytes(r.value) for r in rows if bytes(r.value).startswith(mark.encode())]
    assert len(values) == len(sent)  # nothing twice
    assert set(values) == sent  # nothing lost
    assert len({r.message_id for r in rows}) == len(rows)


def test_a_running_query_reads_a_partition_added_to_its_topic(
    spark, master, cluster, spark_topics, tmp_path
):
    topic, mark = spark_topics[6], f"grow-{uuid.uuid4().hex[:8]}"
    before = cluster.partition_count(topic)
    assert before >= 1
    name = f"grow_{uuid.uuid4().hex[:8]}"
    query = (
        stream(spark, master, topic)  # startingOffsets: latest, of the partitions there now
        .select("value", "partition")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        deadline = time.monotonic() + 60
        while query.lastProgress is None:
            assert time.monotonic() < deadline and query.exception() is None
            time.sleep(0.5)
        cluster.grow_topic(topic, before + 1)  # the master takes ~40 s
        added = f"1:{topic}:{before}"
        sent: dict[bytes, str] = {}
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            deadline = time.monotonic() + 30
            while added not in sent.values():  # until the producer knows the new one
                assert time.monotonic() < deadline, "no message went to the new partition"
                for index in range(len(sent), len(sent) + 50):
                    value = f"{mark}-{index}".encode()
                    sent[value] = producer.send(topic, value).partition_key
        got: dict[bytes, str] = {}
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            assert query.exception() is None
            time.sleep(1)
            rows = spark.sql(f"SELECT value, partition FROM {name}").collect()
            got = {bytes(r.value): r.partition for r in rows if bytes(r.value) in sent}
        assert got == sent  # every message, with its partition, the new one's too
        assert len([r for r in rows if bytes(r.value) in sent]) == len(sent)  # each once
    finally:
        query.stop()
