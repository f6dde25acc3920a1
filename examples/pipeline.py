"""The main job: page views through TubeMQ into a Structured Streaming query and out again.

1. A local TubeMQ cluster starts (unless ``TUBEMQ_MASTER`` names a running one, whose
   topics ``pipeline_events`` and ``pipeline_windows`` must exist).
2. A Structured Streaming query reads ``pipeline_events`` with the ``tubemq`` source and
   computes per-minute figures of page views (views, distinct users, mean and p95 latency,
   server errors), finalised by an event-time watermark.
3. A producer writes synthetic page views (user, page, latency_ms, status) as JSON into
   ``pipeline_events`` while the query runs; the last event moves the watermark past the
   last minute.
4. Each finished window goes to ``pipeline_windows`` through the ``tubemq`` sink and to
   Parquet. Progress is printed while it runs; at the end a summary: rows in and out,
   the per-window figures, the wall time, and how fast the source delivered rows to Spark
   next to the raw Python consumer reading the same messages in the same run.

    python examples/pipeline.py [--master URL] [--events N] [--workdir DIR] [--output DIR]
        [--keep]

Spark runs in ``local[2]`` unless ``--master`` names a cluster (``spark://host:7077``,
``yarn``, ...). Under ``spark-submit`` the master is spark-submit's own ``--master``; the
script's options follow the script's path (docs/spark.md has the whole command). On a
cluster, ``--output`` (Parquet and checkpoint) must be storage every node sees, and every
node needs tubemq installed for the Python that ``spark.pyspark.python`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EVENTS_TOPIC = "pipeline_events"
WINDOWS_TOPIC = "pipeline_windows"
WINDOW = "1 minute"
SPAN_S = 300  # event time covered by the page views: five one-minute windows
PAGES = ["/", "/search", "/product", "/cart", "/checkout", "/account", "/help"]


def page_views(count: int, start_ms: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """``count`` synthetic page views spread evenly over SPAN_S seconds of event time."""
    rng = random.Random(seed)
    step_ms = SPAN_S * 1000 / count
    for index in range(count):
        page = rng.choice(PAGES)
        slow = page == "/checkout"
        latency = int(rng.lognormvariate(4.2 if not slow else 5.0, 0.5))
        status = 500 if rng.random() < (0.03 if slow else 0.005) else 200
        yield {
            "kind": "view",
            "user": f"user-{rng.randrange(2000):04d}",
            "page": page,
            "latency_ms": latency,
            "status": status,
            "ts": start_ms + int(index * step_ms),
        }


class PageViewProducer(threading.Thread):
    """Writes the page views, then one more whose late time closes the last window."""

    def __init__(self, master: str, count: int, start_ms: int, rate: int) -> None:
        super().__init__(name="page-view-producer", daemon=True)
        self.master, self.count, self.start_ms, self.rate = master, count, start_ms, rate
        self.sent = 0
        self.failed = 0
        self.error: BaseException | None = None
        self.elapsed = 0.0

    def run(self) -> None:
        import tubemq

        began = time.monotonic()
        try:
            with tubemq.Producer(master=self.master) as producer:
                producer.publish(EVENTS_TOPIC)
                futures = []
                for index, view in enumerate(page_views(self.count, self.start_ms)):
                    futures.append(
                        producer.send_async(
                            EVENTS_TOPIC, json.dumps(view).encode(), key=view["user"]
                        )
                    )
                    if index % 1000 == 999:
                        self.sent = index + 1
                        ahead = self.sent / self.rate - (time.monotonic() - began)
                        if ahead > 0:
                            time.sleep(ahead)
                # A last view two minutes after the others: the watermark passes every
                # window before it, and its own window stays open (never emitted).
                end = {**view, "kind": "end", "ts": self.start_ms + (SPAN_S + 120) * 1000}
                futures.append(producer.send_async(EVENTS_TOPIC, json.dumps(end).encode()))
                producer.flush(timeout=120)
                self.failed = sum(1 for future in futures if future.exception() is not None)
                self.sent = len(futures) - self.failed
        except BaseException as error:  # reported by the main thread
            self.error = error
        self.elapsed = time.monotonic() - began


def under_spark_submit() -> bool:
    # spark-submit starts the Python driver with the address of the JVM it launched.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start_spark(master: str | None) -> SparkSession:
    # Executors run what spark.pyspark.python / PYSPARK_PYTHON name (a spark-submit
    # setting wins); by default the interpreter running this script, which has tubemq.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    warnings.simplefilter("ignore", FutureWarning)  # PySpark about the installed pandas
    from pyspark.sql import SparkSession

    import tubemq.spark

    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    spark = (
        builder.appName("tubemq-pipeline")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(spark)
    return spark


class Progress:
    """Every micro-batch's progress, printed as it comes (a StreamingQueryListener)."""

    def __init__(self, producer_sent: Callable[[], int]) -> None:
        self.batches: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.producer_sent = producer_sent
        self.windows_out: Callable[[], int] = lambda: 0

    def listener(self) -> Any:
        from pyspark.sql.streaming.listener import StreamingQueryListener

        outer = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                progress = event.progress
                with outer.lock:
                    outer.batches[progress.batchId] = progress
                    rows_in = sum(p.numInputRows for p in outer.batches.values())
                if progress.numInputRows or progress.batchId == 0:
                    print(
                        f"  batch {progress.batchId}: produced {outer.producer_sent()}, "
                        f"read {rows_in}, {progress.numInputRows} rows in "
                        f"{progress.durationMs.get('triggerExecution', 0)} ms, "
                        f"windows out {outer.windows_out()}",
                        flush=True,
                    )

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        return Listener()

    def rows_in(self) -> int:
        with self.lock:
            return sum(p.numInputRows for p in self.batches.values())


class WindowSink:
    """``foreachBatch``: each finished window to the windows topic and to Parquet."""

    def __init__(self, master: str, parquet: str, run_id: str) -> None:
        self.master, self.parquet, self.run_id = master, parquet, run_id
        self.windows: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        frame = frame.withColumn("run", F.lit(self.run_id)).persist()
        try:
            rows = frame.collect()
            if not rows:
                return
            out = frame.select(
                F.to_json(F.struct(*[F.col(c) for c in frame.columns])).alias("value"),
                F.date_format("window_start", "yyyy-MM-dd HH:mm").alias("key"),
                F.lit("window").alias("msg_type"),
            )
            out.write.format("tubemq").option("master", self.master).option(
                "topic", WINDOWS_TOPIC
            ).mode("append").save()
            frame.write.mode("append").parquet(self.parquet)
            with self.lock:
                self.windows.extend(row.asDict() for row in rows)
        finally:
            frame.unpersist()


def windowed(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    view = "kind string, user string, page string, latency_ms int, status int, ts long"
    parsed = events.select(F.from_json(F.col("value").cast("string"), view).alias("v")).select(
        "v.*"
    )
    return (
        parsed.withColumn("event_time", F.timestamp_millis("ts"))
        .withWatermark("event_time", "10 seconds")
        .groupBy(F.window("event_time", WINDOW))
        .agg(
            F.count("*").alias("views"),
            F.approx_count_distinct("user").alias("users"),
            F.round(F.avg("latency_ms"), 1).alias("mean_latency_ms"),
            F.percentile_approx("latency_ms", 0.95).alias("p95_latency_ms"),
            F.sum(F.when(F.col("status") >= 500, 1).otherwise(0)).alias("errors"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "views",
            "users",
            "mean_latency_ms",
            "p95_latency_ms",
            "errors",
        )
    )


def raw_consumer_rate(master: str, starts: dict[str, int], expected: int) -> tuple[int, float]:
    """The plain Python client reading the same messages: (messages, seconds)."""
    import tubemq

    config = {
        "master": master,
        "group": f"pipeline-raw-{uuid.uuid4().hex[:8]}",
        "topics": [EVENTS_TOPIC],
        "auto_commit": True,
    }
    count = 0
    with tubemq.AssignedConsumer(config) as consumer:
        began = time.monotonic()
        consumer.assign(starts)
        deadline = began + 300
        while count < expected and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=0.5):
                bytes(message)  # what the source does with every value
                count += 1
        return count, time.monotonic() - began


def run(
    master: str, events: int, rate: int, output: str, spark_master: str | None = "local[2]"
) -> int:
    began = time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    spark = start_spark(spark_master)
    where = spark.sparkContext.master
    print(f"spark {spark.version} up in {time.monotonic() - began:.1f} s ({where})")
    parquet = f"{output.rstrip('/')}/windows.parquet"
    sink = WindowSink(master, parquet, run_id)
    producer: PageViewProducer | None = None
    progress = Progress(lambda: producer.sent if producer else 0)
    progress.windows_out = lambda: len(sink.windows)
    spark.streams.addListener(progress.listener())
    source = (
        spark.readStream.format("tubemq")
        .option("master", master)
        .option("topic", EVENTS_TOPIC)
        .option("startingOffsets", "latest")
        .option("maxMessagesPerTrigger", "20000")
        .load()
    )
    query = (
        windowed(source)
        .writeStream.outputMode("append")
        .foreachBatch(sink)
        .option("checkpointLocation", f"{output.rstrip('/')}/checkpoint")
        .trigger(processingTime="2 seconds")
        .start()
    )
    try:
        # The first micro-batch fixes where the query starts ("latest" when it started).
        while 0 not in progress.batches:
            if query.exception() is not None:
                raise SystemExit(f"query failed: {query.exception()}")
            time.sleep(0.2)
        starts = json.loads(progress.batches[0].sources[0].endOffset)
        start_ms = (int(time.time()) // 60 - 10) * 60_000
        producer = PageViewProducer(master, events, start_ms, rate)
        producer.start()
        print(f"producing {events} page views at up to {rate}/s into {EVENTS_TOPIC}")
        streaming_began = time.monotonic()
        deadline = streaming_began + 900
        while True:
            time.sleep(0.5)
            if query.exception() is not None:
                raise SystemExit(f"query failed: {query.exception()}")
            if producer.error is not None:
                raise SystemExit(f"producer failed: {producer.error}")
            with sink.lock:
                done_views = sum(w["views"] for w in sink.windows)
            if done_views >= events and not producer.is_alive():
                break
            if time.monotonic() > deadline:
                raise SystemExit("the pipeline did not finish within 15 minutes")
        streaming_s = time.monotonic() - streaming_began
    finally:
        query.stop()

    batches = [progress.batches[b] for b in sorted(progress.batches)]
    rows_in = sum(p.numInputRows for p in batches)
    busy_ms = sum(p.durationMs.get("triggerExecution", 0) for p in batches if p.numInputRows)
    ends = json.loads(batches[-1].sources[0].endOffset)

    # The windows topic, read back with the source, and the Parquet files.
    from pyspark.sql import functions as F

    back = (
        spark.read.format("tubemq")
        .option("master", master)
        .option("topic", WINDOWS_TOPIC)
        .load()
        .where(F.col("value").cast("string").contains(run_id))
        .count()
    )
    in_parquet = spark.read.parquet(parquet).count()

    # The source alone: a batch scan of the same range into Spark's no-op sink.
    scan_began = time.monotonic()
    (
        spark.read.format("tubemq")
        .option("master", master)
        .option("topic", EVENTS_TOPIC)
        .option("startingOffsets", json.dumps(starts))
        .option("endingOffsets", json.dumps(ends))
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    scan_s = time.monotonic() - scan_began
    raw_count, raw_s = raw_consumer_rate(master, starts, rows_in)
    spark.stop()

    windows = sorted(sink.windows, key=lambda w: w["window_start"])
    print("\nsummary")
    print(f"  rows in     {rows_in} ({producer.sent} produced: {events} page views + end marker)")
    print(
        f"  rows out    {len(windows)} windows -> {WINDOWS_TOPIC} (read back: {back}), "
        f"Parquet: {in_parquet} rows in {parquet}"
    )
    print("  window (UTC)        views  users  mean ms  p95 ms  errors")
    for w in windows:
        print(
            f"  {w['window_start']:%Y-%m-%d %H:%M}  {w['views']:6d}  {w['users']:5d}  "
            f"{w['mean_latency_ms']:7.1f}  {w['p95_latency_ms']:6d}  {w['errors']:6d}"
        )
    print(
        f"  streaming   {rows_in} rows in {streaming_s:.1f} s while producing "
        f"({rows_in / max(busy_ms / 1000, 1e-9):.0f} rows/s of busy trigger time)"
    )
    print(
        f"  source scan {rows_in} rows in {scan_s:.1f} s = {rows_in / scan_s:.0f} rows/s "
        "(batch read into Spark's noop sink)"
    )
    print(
        f"  raw client  {raw_count} messages in {raw_s:.1f} s = {raw_count / raw_s:.0f} msg/s "
        "(AssignedConsumer in this process)"
    )
    print(f"  wall time   {time.monotonic() - began:.1f} s (Spark and pipeline, cluster aside)")

    ok = (
        rows_in == producer.sent
        and sum(w["views"] for w in windows) == events
        and back == len(windows) == in_parquet
        and producer.failed == 0
    )
    print("  result      " + ("OK: every page view counted once" if ok else "MISMATCH"))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--master",
        help="Spark master URL (default local[2]; under spark-submit, spark-submit's --master)",
    )
    parser.add_argument("--events", type=int, default=60_000, help="page views to produce")
    parser.add_argument("--rate", type=int, default=15_000, help="page views per second")
    parser.add_argument("--workdir", type=Path, help="cluster working directory (default: temp)")
    parser.add_argument(
        "--output",
        help="directory or URI for Parquet and checkpoint, seen by every node (default: temp)",
    )
    parser.add_argument("--keep", action="store_true", help="leave cluster and output in place")
    args = parser.parse_args()

    began = time.monotonic()
    output = args.output or tempfile.mkdtemp(prefix="tubemq-pipeline-out-")
    spark_master = args.master or (None if under_spark_submit() else "local[2]")
    cluster = None
    master = os.environ.get("TUBEMQ_MASTER")
    try:
        if master:
            print(f"using the cluster at TUBEMQ_MASTER={master}")
        else:
            from tubemq.cluster import LocalCluster

            workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tubemq-pipeline-"))
            cluster = LocalCluster(workdir)
            print(f"starting a local TubeMQ cluster in {workdir} (about 40 s)")
            cluster.up(topics=[EVENTS_TOPIC, WINDOWS_TOPIC], partitions=4)
            master = cluster.master_address
            print(f"cluster up in {time.monotonic() - began:.1f} s: master={master}")
        status = run(master, args.events, args.rate, output, spark_master)
    finally:
        if cluster is not None and not args.keep:
            cluster.down()
            print("cluster stopped")
            if args.workdir is None:
                shutil.rmtree(cluster.workdir, ignore_errors=True)
        if args.output is None and not args.keep:
            shutil.rmtree(output, ignore_errors=True)
    print(f"total wall time {time.monotonic() - began:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
