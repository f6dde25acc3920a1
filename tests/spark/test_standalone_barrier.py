"""The barrier helper when an executor dies, on the Spark standalone cluster (driver in
this process, executors under two workers). Acknowledged ids are counted against the ids
in the written output.

* With a ShuffleMapStage after it (``repartition``), Spark runs the barrier stage again as
  a whole: the new attempt reads from the planned offsets in a group of its own, and the
  output holds every id once.
* Writing directly, the barrier stage is a ResultStage, which Spark cannot retry: the job
  fails visibly and writes nothing; run again with ``resume=written_positions(output)``,
  it continues where the written output ends, and the output holds every id once.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_standalone import check_exactly_once, ends_now, produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_BATCH_S = 0.3  # each yielded record batch waits, so that a kill lands mid-read
HANDED_BEFORE_KILL = 3  # batches each barrier task hands Spark before the kill


def _slowed_and_timed(fn: Any, reading: Path) -> Any:
    """``fn`` yielding slowly, each row stamped with the time it was handed to Spark. Each
    task leaves a file named by its process in ``reading`` once it has handed a few batches,
    so the test knows, without the listener bus's lag, that the tasks are mid-read."""
    reading_dir = str(reading)

    def run(batches: Any) -> Any:
        import os
        import time as clock

        import pyarrow as pa

        for handed, rows in enumerate(fn(batches), start=1):
            clock.sleep(PER_BATCH_S)
            stamp = pa.repeat(pa.scalar(clock.time(), pa.float64()), rows.num_rows)
            yield pa.RecordBatch.from_arrays(
                [*rows.columns, stamp], names=[*rows.schema.names, "handed_at"]
            )
            if handed == HANDED_BEFORE_KILL:
                os.makedirs(reading_dir, exist_ok=True)
                with open(os.path.join(reading_dir, str(os.getpid())), "w"):
                    pass

    return run


def _run_killing_an_executor(
    spark: Any, standalone: Any, job: Any, reading: Path
) -> tuple[float, Any]:
    """Runs ``job`` on a thread and SIGKILLs one executor once both barrier tasks have
    handed Spark a few batches (each leaves a file in ``reading``; the status tracker lags
    too much under load to time this). Returns the kill time and the job's error, if any."""
    app = spark.sparkContext.applicationId
    assert len(standalone.wait_executors(app, 2)) == 2
    failure: list[BaseException] = []

    def run() -> None:
        try:
            job()
        except BaseException as error:  # examined by the test
            failure.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    killed_at = None
    deadline = time.monotonic() + 120
    while killed_at is None and worker.is_alive() and time.monotonic() < deadline:
        if reading.is_dir() and len(list(reading.iterdir())) >= 2:
            standalone.kill_executor(app)
            killed_at = time.time()
        time.sleep(0.05)
    worker.join(timeout=600)
    assert killed_at is not None, "the two barrier tasks were never seen reading together"
    assert not worker.is_alive(), "the job did not end"
    assert len(standalone.wait_executors(app, 2)) == 2  # replaced, for the next test
    return killed_at, failure[0] if failure else None


def _barrier(master: str, topic: str, start: dict[str, int], resume: Any = None) -> Any:
    from tubemq.spark import consume_in_barrier

    return consume_in_barrier(
        master,
        [topic],
        starting_offsets=start,
        resume=resume,
        idle_timeout_s=5.0,
        deadline_s=240.0,
        batch_rows=200,
        linger_s=0.2,
        config={"heartbeat_period_ms": 1000},
    )


def test_a_killed_executor_retries_the_barrier_stage_and_loses_nothing(
    cluster_spark, standalone, master, spark_topics, tmp_path: Path
):
    topic, mark = spark_topics[4], f"sa-retry-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    acked = produce(master, topic, mark, 8000)
    fn, schema = _barrier(master, topic, start)
    out = tmp_path / "out"
    frame = (
        cluster_spark.range(0, 2, 1, numPartitions=2)
        .mapInArrow(
            _slowed_and_timed(fn, tmp_path / "reading"),
            schema + ", handed_at double",
            barrier=True,
        )
        .repartition(2)  # a ShuffleMapStage: Spark retries it whole
    )
    killed_at, error = _run_killing_an_executor(
        cluster_spark, standalone, lambda: frame.write.parquet(str(out)), tmp_path / "reading"
    )
    assert error is None, error
    rows = cluster_spark.read.parquet(str(out)).collect()
    check_exactly_once(acked, rows, mark)
    # Only the retried attempt's rows were kept: its first rows came after the kill.
    first = min(r.handed_at for r in rows)
    print(f"kill to the retried tasks' first rows: {first - killed_at:.1f} s")
    assert first > killed_at


def test_an_aborted_barrier_result_stage_is_continued_by_a_rerun(
    cluster_spark, standalone, master, spark_topics, tmp_path: Path
):
    from tubemq.spark import written_positions

    topic, mark = spark_topics[4], f"sa-rerun-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    out = tmp_path / "out"

    def run(resume: Any, slow: bool) -> None:
        fn, schema = _barrier(master, topic, start, resume)
        if slow:
            fn, schema = _slowed_and_timed(fn, tmp_path / "reading"), schema + ", handed_at double"
        frame = cluster_spark.range(0, 2, 1, numPartitions=2).mapInArrow(fn, schema, barrier=True)
        frame.select("value", "message_id", "partition", "next_offset").write.mode(
            "append"
        ).parquet(str(out))

    acked = produce(master, topic, mark, 3000)
    run(resume=None, slow=False)  # a first run that finishes
    more = produce(master, topic, f"{mark}-b", 8000)
    _, error = _run_killing_an_executor(
        cluster_spark,
        standalone,
        lambda: run(resume=written_positions(cluster_spark.read.parquet(str(out))), slow=True),
        tmp_path / "reading",
    )
    assert error is not None and "barrier" in str(error).lower(), error  # aborted
    acked.update(more)
    began = time.monotonic()
    run(resume=written_positions(cluster_spark.read.parquet(str(out))), slow=False)
    print(f"rerun after the abort: {time.monotonic() - began:.1f} s")
    rows = cluster_spark.read.parquet(str(out)).collect()
    check_exactly_once(acked, rows, mark)
