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


def _produce(master: str, topic: str, mark: str, count: int, first: int = 0) -> set[bytes]:
    """Sends ``count`` marked messages and returns those the broker acknowledged."""
    values = [f"{mark}-{index}".encode() for index in range(first, first + count)]
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in values]
        producer.flush(timeout=60)
    return {value for value, future in zip(values, futures) if future.exception() is None}


def _failing_once(fn, marker_file):
    """``fn``, except that task 0 of the first attempt fails after handing Spark one
    record batch (the way a killed executor ends an attempt mid-read)."""

    def run(batches):
        from pyspark import BarrierTaskContext

        first_attempt = not marker_file.exists()
        context = BarrierTaskContext.get()
        context.barrier()  # every task checked the marker before task 0 writes it
        handed = 0
        for rows in fn(batches):
            yield rows
            handed += 1
            if first_attempt and context.partitionId() == 0 and handed == 1:
                marker_file.write_text("failed once")
                raise RuntimeError("the first attempt of task 0 dies mid-read")

    return run


def _read_ids(spark, path, mark: str) -> list[bytes]:
    rows = spark.read.parquet(str(path)).select("value").collect()
    return [bytes(r.value) for r in rows if bytes(r.value).startswith(mark.encode())]


def _barrier_read(master: str, topic: str, **kwargs):
    return consume_in_barrier(
        master,
        [topic],
        idle_timeout_s=4.0,
        deadline_s=90.0,
        batch_rows=200,
        config={"heartbeat_period_ms": 1000},
        **kwargs,
    )


def test_a_retried_barrier_stage_starts_again_from_the_planned_offsets(
    spark, master, spark_topics, tmp_path
):
    # A ShuffleMapStage after the barrier stage: Spark retries the barrier stage as a
    # whole and discards what the failed attempt wrote to the shuffle. The retry must
    # read everything again, not resume at what the failed attempt committed.
    topic, mark = spark_topics[0], f"retry-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    sent = _produce(master, topic, mark, 3000)
    fn, schema = _barrier_read(master, topic, starting_offsets=start)
    out = tmp_path / "out"
    (
        spark.range(0, 2, 1, numPartitions=2)
        .mapInArrow(_failing_once(fn, tmp_path / "failed"), schema, barrier=True)
        .repartition(2)
        .write.parquet(str(out))
    )
    assert (tmp_path / "failed").exists(), "the first attempt did not fail"
    ids = _read_ids(spark, out, mark)
    assert set(ids) == sent, f"{len(sent - set(ids))} acknowledged messages missing"
    assert len(ids) == len(sent), "a message written twice"


def test_a_rerun_continues_where_the_written_output_ends(spark, master, spark_topics, tmp_path):
    # Run 1 writes; run 2's barrier ResultStage aborts (Spark cannot retry those) and
    # writes nothing; run 3 resumes from the output's positions. Every acknowledged
    # message is in the output once.
    from tubemq.spark import written_positions

    topic, mark = spark_topics[0], f"rerun-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    out = tmp_path / "out"

    def run(resume, wrap=None):
        fn, schema = _barrier_read(master, topic, starting_offsets=start, resume=resume)
        frame = spark.range(0, 2, 1, numPartitions=2).mapInArrow(
            wrap(fn) if wrap else fn, schema, barrier=True
        )
        frame.write.mode("append").parquet(str(out))

    sent = _produce(master, topic, mark, 1500)
    run(resume=None)
    assert set(_read_ids(spark, out, mark)) == sent
    positions = written_positions(spark.read.parquet(str(out)))
    assert set(positions) == set(start)

    sent |= _produce(master, topic, mark, 1500, first=1500)
    with pytest.raises(Exception, match="barrier"):
        run(resume=positions, wrap=lambda fn: _failing_once(fn, tmp_path / "failed"))

    sent |= _produce(master, topic, mark, 1500, first=3000)
    run(resume=written_positions(spark.read.parquet(str(out))))
    ids = _read_ids(spark, out, mark)
    assert set(ids) == sent, f"{len(sent - set(ids))} acknowledged messages missing"
    assert len(ids) == len(sent), "a message written twice"


def test_resume_must_name_partitions_of_the_topics(master, spark_topics):
    with pytest.raises(tubemq.ConfigError, match="resume"):
        consume_in_barrier(master, [spark_topics[0]], resume={"1:other:0": 5})
    with pytest.raises(tubemq.ConfigError, match="resume"):
        consume_in_barrier(master, [spark_topics[0]], resume={f"1:{spark_topics[0]}:0": -1})
