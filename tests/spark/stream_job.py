"""A streaming query run in a process of its own, so that a test can kill its driver hard.

    python stream_job.py MASTER TOPIC STARTING_OFFSETS CHECKPOINT OUTPUT MAX_PER_TRIGGER
        [--spark-master URL] [--conf KEY=VALUE ...]

Reads TOPIC with the tubemq source and appends value, partition and message_id to
Parquet at OUTPUT, one micro-batch per second, until it is killed. Spark runs in
``local[2]`` unless ``--spark-master`` names a cluster (the executors are then processes
of that cluster's workers; ``--conf`` adds settings such as ``spark.pyspark.python``).

The tests that kill a driver share the rest of the story too, so it lives here: start
this job (``launch``), wait for its first committed micro-batches and SIGKILL it
(``kill_after_commits``), then finish the same query from its checkpoint in the test's
own session (``finish_from_checkpoint``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

PER_TRIGGER = 400


def committed_batches(checkpoint: Path) -> int:
    """Micro-batches the query's checkpoint records as committed."""
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.exists() else 0


def launch(
    master: str,
    topic: str,
    starting: dict[str, int],
    checkpoint: Path,
    output: Path,
    *,
    spark_master: str | None = None,
    conf: Iterable[str] = (),
    log: BinaryIO | None = None,
) -> subprocess.Popen[bytes]:
    """This job in a session of its own (its JVM and Python workers share its process
    group), writing to ``log`` or nowhere."""
    command = [
        sys.executable,
        str(Path(__file__)),
        master,
        topic,
        json.dumps(starting),
        str(checkpoint),
        str(output),
        str(PER_TRIGGER),
    ]
    if spark_master is not None:
        command.append(f"--spark-master={spark_master}")
    command += [f"--conf={setting}" for setting in conf]
    return subprocess.Popen(
        command,
        stdout=log if log is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_after_commits(
    job: subprocess.Popen[bytes],
    checkpoint: Path,
    batches: int = 2,
    timeout: float = 240,
    log: Path | None = None,
    before_kill: Callable[[], None] | None = None,
) -> int:
    """Waits until the job has committed ``batches`` micro-batches, runs ``before_kill``
    (a test's look at the live job), SIGKILLs the job (its Python process, its JVM and
    that JVM's Python workers at once: no shutdown hook runs), and returns how many
    micro-batches it had committed by then."""
    try:
        deadline = time.monotonic() + timeout
        while committed_batches(checkpoint) < batches:
            ended = "" if log is None else log.read_text()[-3000:]
            assert job.poll() is None, f"the streaming job ended by itself\n{ended}"
            assert time.monotonic() < deadline, "the streaming job made no progress"
            time.sleep(0.2)
        if before_kill is not None:
            before_kill()
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
    return committed_batches(checkpoint)


def finish_from_checkpoint(
    spark: Any, master: str, topic: str, checkpoint: Path, output: Path
) -> list[Any]:
    """Runs the job's query again from its checkpoint until the backlog is read
    (``availableNow``); returns every row of the Parquet output."""
    query = (
        spark.readStream.format("tubemq")
        .option("master", master)
        .option("topic", topic)
        .option("maxMessagesPerTrigger", str(PER_TRIGGER))
        .load()
        .select("value", "partition", "message_id")
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    assert query.exception() is None
    return list(spark.read.parquet(str(output)).collect())


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("master", "topic", "starting", "checkpoint", "output", "per_trigger"):
        parser.add_argument(name)
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.simplefilter("ignore", FutureWarning)
    from pyspark.sql import SparkSession

    import tubemq.spark

    builder = (
        SparkSession.builder.master(args.spark_master)
        .appName("tubemq-stream-job")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
    )
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(spark)
    if not args.spark_master.startswith("local"):
        from standalone import wait_for_executors

        wait_for_executors(spark, int(spark.conf.get("spark.cores.max", "2")))
    query = (
        spark.readStream.format("tubemq")
        .option("master", args.master)
        .option("topic", args.topic)
        .option("startingOffsets", args.starting)
        .option("maxMessagesPerTrigger", args.per_trigger)
        .load()
        .select("value", "partition", "message_id")
        .writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    print(f"started {spark.sparkContext.applicationId}", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
