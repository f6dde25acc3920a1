"""A streaming query run in a process of its own, so that a test can kill it hard.

    python stream_job.py MASTER TOPIC STARTING_OFFSETS CHECKPOINT OUTPUT MAX_PER_TRIGGER

Reads TOPIC with the tubemq source and appends value, partition and message_id to
Parquet at OUTPUT, one micro-batch per second, until it is killed.
"""

from __future__ import annotations

import os
import sys
import warnings


def main() -> None:
    master, topic, starting, checkpoint, output, per_trigger = sys.argv[1:7]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    warnings.simplefilter("ignore", FutureWarning)
    from pyspark.sql import SparkSession

    import tubemq.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("tubemq-stream-job")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(spark)
    query = (
        spark.readStream.format("tubemq")
        .option("master", master)
        .option("topic", topic)
        .option("startingOffsets", starting)
        .option("maxMessagesPerTrigger", per_trigger)
        .load()
        .select("value", "partition", "message_id")
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
