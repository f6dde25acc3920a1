"""The source, the sink and the barrier helper on a Spark standalone cluster: the driver in
one process, two executors (one core each) in processes of their own under two workers,
as on a real cluster. Every check counts the message ids the broker acknowledged to our
producer against the ids in Spark's output: each must be there, once.

Failures: an executor JVM SIGKILLed while its task reads (Spark retries the task on the
other executor; the reader waits until the dead reader's partition is free), and a
streaming driver SIGKILLed and its query restarted from the checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import stream_job
from standalone import cluster_conf, descendants

import tubemq
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def ends_now(master: str, topic: str) -> dict[str, int]:
    options = source_options({"master": master, "topic": topic}, streaming=False)
    return {key: span.high for key, span in query_ranges(options).items()}


def produce(master: str, topic: str, mark: str, count: int) -> dict[int, bytes]:
    """Sends ``count`` marked messages; returns {message id: value} of those the broker
    acknowledged (all of them, or the test fails here)."""
    values = [f"{mark}-{index}".encode() for index in range(count)]
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in values]
        producer.flush(timeout=60)
    acked = {f.result().message_id: v for f, v in zip(futures, values) if f.exception() is None}
    assert len(acked) == count
    return acked


def check_exactly_once(acked: dict[int, bytes], rows: list[Any], mark: str) -> None:
    """``rows`` (with message_id and value) hold every acknowledged id once."""
    mine = [r for r in rows if bytes(r.value).startswith(mark.encode())]
    counts = Counter(r.message_id for r in mine)
    missing = set(acked) - set(counts)
    twice = {i: n for i, n in counts.items() if n > 1}
    print(
        f"acknowledged {len(acked)}, output {len(mine)}, missing {len(missing)}, twice {len(twice)}"
    )
    assert not missing, f"{len(missing)} acknowledged ids missing"
    assert not twice, f"{len(twice)} ids more than once"
    assert set(counts) == set(acked)
    assert all(acked[r.message_id] == bytes(r.value) for r in mine)


def read(spark: Any, master: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("tubemq").option("master", master).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_executors_are_processes_of_the_workers_and_import_tubemq(cluster_spark, standalone):
    context = cluster_spark.sparkContext

    def where(_: Any) -> list[tuple[int, str, str]]:
        import tubemq as imported  # on the executor, from the interpreter the app names

        return [(os.getpid(), imported.__file__, sys.executable)]

    seen = context.parallelize(range(4), 4).mapPartitions(where).collect()
    below_workers = set(descendants(standalone.daemon_pids()))
    assert {pid for pid, _, _ in seen} <= below_workers  # not this process, not its JVM
    assert os.getpid() not in {pid for pid, _, _ in seen}
    assert {exe for _, _, exe in seen} == {sys.executable}
    assert all(path.startswith(sys.prefix) for _, path, _ in seen)
    assert len(standalone.executor_pids(context.applicationId)) == 2


def test_batch_read_returns_every_acknowledged_id_once(cluster_spark, master, spark_topics):
    topic, mark = spark_topics[2], f"sa-read-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    acked = produce(master, topic, mark, 4000)
    frame = read(cluster_spark, master, topic, startingOffsets=json.dumps(start), minPartitions="6")
    rows = frame.select("value", "message_id").collect()
    check_exactly_once(acked, rows, mark)


def test_sink_writes_each_row_once_and_the_source_reads_it_back(
    cluster_spark, master, spark_topics
):
    from pyspark.sql import functions as F

    topic, mark = spark_topics[3], f"sa-sink-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    frame = cluster_spark.range(0, 3000, 1, numPartitions=4).select(
        F.concat(F.lit(mark + "-"), F.col("id").cast("string")).alias("value"),
        (F.col("id") % 7).cast("string").alias("key"),
    )
    frame.write.format("tubemq").option("master", master).option("topic", topic).mode(
        "append"
    ).save()
    rows = read(cluster_spark, master, topic, startingOffsets=json.dumps(start)).collect()
    values = [bytes(r.value).decode() for r in rows if bytes(r.value).startswith(mark.encode())]
    print(f"rows written 3000, read back {len(values)}, distinct {len(set(values))}")
    assert sorted(values) == sorted(f"{mark}-{i}" for i in range(3000))


def test_two_barrier_tasks_on_two_executors_read_every_id_once(
    cluster_spark, standalone, master, spark_topics
):
    from pyspark.sql import functions as F

    from tubemq.spark import consume_in_barrier

    topic, mark = spark_topics[2], f"sa-barrier-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    acked = produce(master, topic, mark, 2000)
    fn, schema = consume_in_barrier(
        master,
        [topic],
        starting_offsets=start,
        idle_timeout_s=4.0,
        deadline_s=90.0,
        config={"heartbeat_period_ms": 1000},
    )

    def pid(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            yield batch.append_column("pid", pa.array([os.getpid()] * batch.num_rows, pa.int64()))

    rows = (
        cluster_spark.range(0, 2, 1, numPartitions=2)
        .mapInArrow(fn, schema, barrier=True)
        .select("value", "message_id", F.spark_partition_id().alias("task"))
        .mapInArrow(pid, "value binary, message_id long, task int, pid long")
        .collect()
    )
    check_exactly_once(acked, rows, mark)
    assert {r.task for r in rows if bytes(r.value).startswith(mark.encode())} == {0, 1}
    # Two tasks at once on two 1-core executors: two Python workers on two executors.
    workers = {r.pid for r in rows}
    executors = standalone.executor_pids(cluster_spark.sparkContext.applicationId)
    owners = {e: set(descendants([e])) for e in executors}
    assert len({e for e, below in owners.items() if below & workers}) == 2


def test_an_executor_killed_while_reading_is_replaced_and_the_parquet_output_is_exact(
    cluster_spark, standalone, master, spark_topics, tmp_path
):
    topic, mark = spark_topics[3], f"sa-kill-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    acked = produce(master, topic, mark, 4000)
    context = cluster_spark.sparkContext
    app = context.applicationId
    assert len(standalone.wait_executors(app, 2)) == 2
    output = tmp_path / "out"

    def slowly(batches: Any) -> Any:
        # Each task takes seconds, so the kill lands while tasks run.
        import time as clock

        for batch in batches:
            clock.sleep(0.5)
            yield batch
        clock.sleep(3)

    frame = read(
        cluster_spark,
        master,
        topic,
        startingOffsets=json.dumps(start),
        minPartitions="4",
        # The killed reader's partition stays taken until its client expires.
        partitionOccupiedRetryMs="150000",
    ).select("value", "message_id", "partition")
    slow = frame.mapInArrow(slowly, frame.schema)
    failure: list[BaseException] = []

    def write() -> None:
        try:
            slow.write.mode("overwrite").parquet(str(output))
        except BaseException as error:  # reported by the test thread
            failure.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    tracker = context.statusTracker()
    stages: set[int] = set()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and writer.is_alive() and time.monotonic() < deadline:
        for stage in tracker.getActiveStageIds():
            stages.add(stage)
            info = tracker.getStageInfo(stage)
            if info is not None and info.numActiveTasks >= 2:
                time.sleep(1.0)  # both tasks into their reads
                killed = standalone.kill_executor(app)
                break
        time.sleep(0.2)
    writer.join(timeout=400)
    assert killed is not None, "no moment with two running tasks to kill one in"
    assert not writer.is_alive(), "the write did not finish"
    assert not failure, failure
    failed = sum(tracker.getStageInfo(s).numFailedTasks for s in stages)
    assert failed >= 1  # the killed executor's task failed and was run again
    assert killed not in standalone.executor_pids(app)
    rows = cluster_spark.read.parquet(str(output)).collect()
    check_exactly_once(acked, rows, mark)
    # The master gave the application a new executor in place of the dead one.
    assert len(standalone.wait_executors(app, 2)) == 2


def test_a_killed_streaming_driver_restarts_from_its_checkpoint_exactly_once(
    spark_sessions, standalone, master, spark_topics, tmp_path
):
    topic, mark = spark_topics[2], f"sa-driver-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    acked = produce(master, topic, mark, 3000)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    # The cluster's two cores go to the child driver's application.
    spark_sessions.release()
    conf = [f"{key}={value}" for key, value in cluster_conf(standalone.master_url).items()]
    log = tmp_path / "driver.log"
    with open(log, "wb") as sink:
        job = stream_job.launch(
            master,
            topic,
            start,
            checkpoint,
            output,
            spark_master=standalone.master_url,
            conf=conf,
            log=sink,
        )
    app: list[str] = []

    def its_executors_run_under_the_workers() -> None:
        started = [line for line in log.read_text().splitlines() if line.startswith("started")]
        app.append(started[0].split()[1])
        assert standalone.executor_pids(app[0])

    killed_after = stream_job.kill_after_commits(
        job, checkpoint, log=log, before_kill=its_executors_run_under_the_workers
    )
    assert killed_after < 8  # 3000 messages take at least 8 batches of 400
    # The master notices the lost driver and the workers stop its executors.
    deadline = time.monotonic() + 60
    while standalone.executor_pids(app[0]):
        assert time.monotonic() < deadline, "the dead driver's executors linger"
        time.sleep(0.5)

    spark = spark_sessions.cluster()
    rows = stream_job.finish_from_checkpoint(spark, master, topic, checkpoint, output)
    print(f"killed after {killed_after} committed batches")
    check_exactly_once(acked, rows, mark)


def test_the_main_job_runs_under_spark_submit_on_the_cluster(
    spark_sessions, standalone, master, tmp_path
):
    """docs/spark.md's spark-submit command for examples/pipeline.py, against the
    standalone master and an existing TubeMQ cluster: the job counts every event once."""
    spark_sessions.release()  # the cluster's two cores go to the submitted application
    submit = Path(sys.executable).with_name("spark-submit")  # pip's pyspark installs it
    env = dict(os.environ, TUBEMQ_MASTER=master, SPARK_LOCAL_IP="127.0.0.1")
    env["PATH"] = f"{submit.parent}{os.pathsep}{env.get('PATH', '')}"
    conf = {
        **cluster_conf(standalone.master_url),
        "spark.pyspark.driver.python": sys.executable,
    }
    conf.pop("spark.master")
    job = subprocess.run(
        [
            str(submit),
            "--master",
            standalone.master_url,
            *(item for key, value in conf.items() for item in ("--conf", f"{key}={value}")),
            str(Path(__file__).parents[2] / "examples" / "pipeline.py"),
            "--events",
            "6000",
            "--rate",
            "3000",
            "--output",
            str(tmp_path / "pipeline"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(job.stdout[-2000:])
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "spark 4" in job.stdout and standalone.master_url in job.stdout
    assert "OK: every page view counted once" in job.stdout
    assert list((tmp_path / "pipeline").glob("windows.parquet/*.parquet"))
