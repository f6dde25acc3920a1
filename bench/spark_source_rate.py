"""Rows/s of the tubemq Spark source: one task's read alone, and a Spark batch query.

    python bench/spark_source_rate.py --workdir /tmp/dev-cluster --topic spark_d --messages 100000

Reads the last ``--messages`` index entries of every partition of ``--topic`` (a topic
that already holds them, e.g. after tests/spark's 100k round trip) twice over:

* ``read_range``: the code a Spark task runs (fetch, exact range, Arrow batches), called
  in this process partition by partition, without Spark;
* ``spark``: ``spark.read.format("tubemq")...`` over the same range on ``local[2]``,
  summing a column so every batch reaches the JVM.

Prints the best of ``--repeat`` runs of each, as rows and rows/s. With ``--convert``, also
the Arrow conversion alone over the same fetched batches, message by message (the
source's former path, kept for the barrier helper) and from ``Batch.arrow_columns()``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
import warnings
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", help="host:port of the master")
    parser.add_argument("--workdir", help="working directory of a running local cluster")
    parser.add_argument("--topic", default="spark_d")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="only time read_range")
    parser.add_argument(
        "--convert",
        action="store_true",
        help="also time the Arrow conversion alone: per message vs Batch.arrow_columns",
    )
    args = parser.parse_args()
    if args.master:
        master = args.master
    elif args.workdir:
        from tubemq.cluster import LocalCluster

        master = LocalCluster.load(Path(args.workdir)).master_address
    else:
        parser.error("give --master or --workdir")

    from tubemq.spark import _clients
    from tubemq.spark._offsets import ENTRY, plan, query_ranges
    from tubemq.spark._options import source_options
    from tubemq.spark._reader import read_range

    options = source_options({"master": master, "topic": args.topic}, streaming=False)
    ends = {key: span.high for key, span in query_ranges(options).items()}
    starts = {key: max(0, high - ENTRY * args.messages) for key, high in ends.items()}

    best_direct = None
    for _ in range(args.repeat):
        ranges = plan(starts, ends, f"bench-{uuid.uuid4().hex[:8]}", 1)
        began = time.perf_counter()
        rows = sum(batch.num_rows for part in ranges for batch in read_range(part, options))
        took = time.perf_counter() - began
        if best_direct is None or took < best_direct[1]:
            best_direct = (rows, took)
    _clients.close_all()
    rows, took = best_direct
    print(f"read_range: {rows} rows in {took:.2f} s = {rows / took:,.0f} rows/s", flush=True)
    if args.convert:
        convert(master, args.topic, starts, args.repeat)
    if args.no_spark:
        return

    os.environ["PYSPARK_PYTHON"] = sys.executable
    warnings.simplefilter("ignore", FutureWarning)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import tubemq.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("tubemq-source-rate")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(spark)
    best = None
    try:
        for _ in range(args.repeat):
            frame = (
                spark.read.format("tubemq")
                .option("master", master)
                .option("topic", args.topic)
                .option("startingOffsets", json.dumps(starts))
                .option("endingOffsets", json.dumps(ends))
                .load()
            )
            began = time.perf_counter()
            row = frame.agg(F.count("*"), F.sum(F.length("value")), F.count("attrs")).first()
            took = time.perf_counter() - began
            if best is None or took < best[1]:
                best = (row[0], took)
    finally:
        spark.stop()
    rows, took = best
    print(f"spark:      {rows} rows in {took:.2f} s = {rows / took:,.0f} rows/s")


def convert(master: str, topic: str, starts: dict[str, int], repeat: int) -> None:
    """Fetches the range once, keeps the batches, and times turning them into record
    batches message by message (``BatchBuilder``) and from the native buffers
    (``record_batch``)."""
    import tubemq
    from tubemq.spark._arrow import BatchBuilder, record_batch

    batches = []
    group = f"bench-{uuid.uuid4().hex[:8]}"
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False
    ) as consumer:
        consumer.assign(starts)
        idle = time.monotonic()
        while time.monotonic() - idle < 2.0:
            batch = consumer.poll_batch(0.5)
            if batch is not None:
                batches.append(batch)
                consumer.commit(batch)
                idle = time.monotonic()
    count = sum(len(batch) for batch in batches)

    def per_message() -> int:
        rows = 0
        for batch in batches:
            builder = BatchBuilder()
            for message in batch.messages():
                builder.add(message, message.batch_offset)
            rows += builder.take().num_rows
        return rows

    def columnar() -> int:
        return sum(record_batch(batch).num_rows for batch in batches)

    for name, run in (("per message", per_message), ("arrow_columns", columnar)):
        took = min(_timed(run, count) for _ in range(repeat))
        print(f"convert {name:>13}: {count} rows in {took:.3f} s = {count / took:,.0f} rows/s")


def _timed(run, count: int) -> float:
    began = time.perf_counter()
    assert run() == count
    return time.perf_counter() - began


if __name__ == "__main__":
    main()
