"""The tubemq Spark source against the raw client, side by side, at equal concurrency.

    python bench/spark_source.py [--workdir DIR] [--messages 1000000] [--rounds 3]
                                 [--masters local,standalone]

A backlog of ``--messages`` 1 KiB messages is produced once into a topic of
``--partitions`` partitions (2 by default: what ``local[2]`` and the two 1-core workers of
the standalone cluster read in parallel). Both sides read exactly that backlog:

* raw: one ``AssignedConsumer`` per partition, each on its own thread (``poll_batch()``
  releases the GIL), assigned at the partition's first offset and reading batch by batch
  (``commit(batch)``) until the partition's committed offset reaches the backlog's end;
  the consumers are made once and reused, as an application keeps its clients;
* source: ``spark.read.format("tubemq")`` over the same offsets, ``count()`` (every
  batch crosses to the JVM: a Python data source prunes no column).

Per Spark master: the first read of each side is its cold figure (the raw client's
includes making its consumers, the source's is the session's first query); then each
side is warmed up in-process for ``--warmup`` seconds, and ``--rounds`` timed rounds run
both sides, alternating which goes first. Printed: per round raw msg/s, source rows/s and
their ratio, then the median ratio with its spread.

``standalone`` starts a Spark standalone master and two 1-core workers on loopback
(tests/spark/standalone.py); the driver stays in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tubemq
from tubemq.cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from consumer_throughput import produce_backlog

TOPIC = "bench_spark"
VALUE = b"s" * 1024
HERE = Path(__file__).resolve().parent


def open_cluster(workdir: Path | None, partitions: int) -> tuple[LocalCluster, bool]:
    if workdir is not None:
        cluster = LocalCluster.load(workdir)
        if not cluster.is_running():
            raise SystemExit(f"the cluster in {workdir} is not running")
        cluster.add_topics([TOPIC])
        return cluster, False
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="tubemq-bench-spark-")))
    cluster.up(topics=[TOPIC], partitions=partitions)
    return cluster, True


def backlog_range(master: str) -> tuple[dict[str, int], dict[str, int]]:
    """Per partition of the topic: its first and its end offset (the broker's max)."""
    from tubemq.spark._offsets import query_ranges
    from tubemq.spark._options import source_options

    options = source_options({"master": master, "topic": TOPIC}, streaming=False)
    spans = query_ranges(options)
    return {k: s.low for k, s in spans.items()}, {k: s.high for k, s in spans.items()}


def fill(master: str, messages: int) -> tuple[dict[str, int], dict[str, int]]:
    starts, ends = backlog_range(master)
    from tubemq.spark._offsets import ENTRY

    held = max((ends[k] - starts[k]) // ENTRY for k in ends) if ends else 0
    if held < messages:
        print(f"producing {messages} messages of 1 KiB ...", flush=True)
        produce_backlog(master, messages, TOPIC, VALUE)
        starts, ends = backlog_range(master)
    # The last `messages` index entries of the store: partitions share the index.
    low = max(ends.values()) - ENTRY * messages
    return {k: max(v, low) for k, v in starts.items()}, ends


class Raw:
    """One AssignedConsumer per partition, on a thread each; kept across reads."""

    def __init__(self, master: str, starts: dict[str, int], ends: dict[str, int]) -> None:
        self.master, self.starts, self.ends = master, starts, ends
        self.consumers: dict[str, Any] = {}

    def _consumer(self, key: str) -> Any:
        if key not in self.consumers:
            self.consumers[key] = tubemq.AssignedConsumer(
                master=self.master,
                group=f"bench-raw-{uuid.uuid4().hex[:8]}",
                topics=[TOPIC],
                auto_commit=False,
            )
        return self.consumers[key]

    def _read(self, key: str, counts: dict[str, int]) -> None:
        consumer = self._consumer(key)
        consumer.assign({key: self.starts[key]})
        end, received = self.ends[key], 0
        while True:
            batch = consumer.poll_batch(0.5)
            if batch is not None:
                received += len(batch)
                consumer.commit(batch)
            if consumer.offsets()[key]["offset"] >= end:
                break
        counts[key] = received

    def read(self) -> int:
        counts: dict[str, int] = {}
        threads = [
            threading.Thread(target=self._read, args=(key, counts)) for key in sorted(self.ends)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if len(counts) != len(self.ends):
            raise RuntimeError("a raw reader failed")
        return sum(counts.values())

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()


class Source:
    """A SparkSession on one master and the source's query over the backlog."""

    def __init__(self, master: str, spark_master: str, starts: dict[str, int],
                 ends: dict[str, int], standalone_root: Path | None) -> None:  # fmt: skip
        os.environ["PYSPARK_PYTHON"] = sys.executable
        warnings.simplefilter("ignore", FutureWarning)
        from pyspark.sql import SparkSession

        import tubemq.spark

        self.standalone = None
        conf: dict[str, str] = {"spark.master": "local[2]"}
        if spark_master == "standalone":
            sys.path.insert(0, str(HERE.parent / "tests" / "spark"))
            from standalone import StandaloneCluster, cluster_conf

            assert standalone_root is not None
            self.standalone = StandaloneCluster(standalone_root).start()
            conf = cluster_conf(self.standalone.master_url)
        builder = (
            SparkSession.builder.appName("tubemq-bench-spark-source")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "1g")
        )
        for key, value in conf.items():
            builder = builder.config(key, value)
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        tubemq.spark.register(self.spark)
        self.master, self.starts, self.ends = master, starts, ends

    def read(self) -> int:
        frame = (
            self.spark.read.format("tubemq")
            .option("master", self.master)
            .option("topic", TOPIC)
            .option("startingOffsets", json.dumps(self.starts))
            .option("endingOffsets", json.dumps(self.ends))
            .load()
        )
        return int(frame.count())

    def close(self) -> None:
        self.spark.stop()
        if self.standalone is not None:
            self.standalone.stop()


def timed(read: Callable[[], int]) -> tuple[int, float]:
    began = time.perf_counter()
    rows = read()
    return rows, rows / (time.perf_counter() - began)


def warm_up(read: Callable[[], int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        read()


def run_master(args: argparse.Namespace, master: str, spark_master: str,
               starts: dict[str, int], ends: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="bench-spark-standalone-"))
    raw = Raw(master, starts, ends)
    source = Source(master, spark_master, starts, ends, root)
    label = "local[2]" if spark_master == "local" else "standalone"
    try:
        raw_rows, raw_cold = timed(raw.read)
        src_rows, src_cold = timed(source.read)
        if raw_rows != src_rows:
            raise RuntimeError(f"raw read {raw_rows} messages, the source {src_rows} rows")
        print(
            f"{label:>10} cold    raw {raw_cold:>9,.0f} msg/s  source {src_cold:>9,.0f} "
            f"rows/s  ratio {src_cold / raw_cold:.2f}  ({raw_rows} rows)",
            flush=True,
        )
        warm_up(raw.read, args.warmup)
        warm_up(source.read, args.warmup)
        rounds = []
        for index in range(args.rounds):
            sides = [("raw", raw.read), ("source", source.read)]
            if index % 2:
                sides.reverse()
            got = {}
            for name, read in sides:
                rows, rate = timed(read)
                if rows != raw_rows:
                    raise RuntimeError(f"{name} read {rows} rows, expected {raw_rows}")
                got[name] = rate
            ratio = got["source"] / got["raw"]
            rounds.append({"raw": got["raw"], "source": got["source"], "ratio": ratio})
            print(
                f"{label:>10} round {index + 1} raw {got['raw']:>9,.0f} msg/s  source "
                f"{got['source']:>9,.0f} rows/s  ratio {ratio:.2f}",
                flush=True,
            )
        return {"master": label, "rows": raw_rows, "cold": {"raw": raw_cold, "source": src_cold},
                "rounds": rounds}  # fmt: skip
    finally:
        raw.close()
        source.close()


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| Spark master | rows | cold raw msg/s | cold source rows/s | cold ratio | warm raw "
        "msg/s (median) | warm source rows/s (median) | warm ratio median (min-max) | rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for result in results:
        cold, rounds = result["cold"], result["rounds"]
        ratios = [r["ratio"] for r in rounds]
        lines.append(
            f"| {result['master']} | {result['rows']:,} | {cold['raw']:,.0f} | "
            f"{cold['source']:,.0f} | {cold['source'] / cold['raw']:.2f} | "
            f"{statistics.median(r['raw'] for r in rounds):,.0f} | "
            f"{statistics.median(r['source'] for r in rounds):,.0f} | "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | "
            f"{len(rounds)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="use the running cluster of this workdir")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2, help="of a cluster started here")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds per side")
    parser.add_argument("--masters", default="local,standalone")
    args = parser.parse_args()
    cluster, started = open_cluster(args.workdir, args.partitions)
    try:
        master = cluster.master_address
        starts, ends = fill(master, args.messages)
        print(
            f"cluster {master}: {len(ends)} partitions of {TOPIC}; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
            flush=True,
        )
        results = [
            run_master(args, master, spark_master, starts, ends)
            for spark_master in args.masters.split(",")
        ]
        print()
        print(table(results))
    finally:
        if started:
            cluster.down()


if __name__ == "__main__":
    main()
