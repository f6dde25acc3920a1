"""A streaming query run in a process of its own, so that a test can kill its driver hard.

    python stream_job.py MASTER TOPIC STARTING_OFFSETS CHECKPOINT OUTPUT MAX_PER_TRIGGER
        [--spark-master URL] [--conf KEY=VALUE ...]

Reads TOPIC with the tubemq source and appends value, partition and message_id to
Parquet at OUTPUT, one micro-batch per second, until it is killed. Spark runs in
``local[2]`` unless ``--spark-master`` names a cluster (the executors are then processes
of that cluster's workers; ``--conf`` adds settings such as ``spark.pyspark.python``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings


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
