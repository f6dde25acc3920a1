"""``python -m bench``: our Python client, our C++ core and the Java client, side by side.

One invocation starts (or reuses) a local cluster, fills a backlog per value size, and
then runs every workload through the three clients interleaved - for each round, for
each workload: Python, C++, Java - a warm-up round first, then the measured rounds.
Each run is a process of its own, so its CPU time and peak RSS are its own. The
machine is shared, so only medians and ratios within one run mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import drivers, report
from tubemq.cluster import LocalCluster

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SIZES = (100, 1024, 10240)
PRODUCE_TOPIC = "bench_produce"
LATENCY_TOPIC = "bench_latency"
LATENCY_RATE = 1000.0
# Latency runs poll a partition with no new data again after this rest (the default of
# 400 ms is a throughput setting: it alone would put p50 in the hundreds of ms).
LATENCY_NOT_FOUND_WAIT_MS = 5
LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders><Console name="stderr" target="SYSTEM_ERR">
    <PatternLayout pattern="%d %p %c{1} - %m%n"/></Console></Appenders>
  <Loggers><Root level="warn"><AppenderRef ref="stderr"/></Root></Loggers>
</Configuration>
"""


def backlog_topic(size: int) -> str:
    return f"bench_backlog_{size}"


TOPICS = [PRODUCE_TOPIC, LATENCY_TOPIC, *(backlog_topic(size) for size in SIZES)]


@dataclass(frozen=True)
class Workload:
    mode: str  # produce-sync, produce-async, consume, latency
    size: int
    count: int
    clients: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.mode} {report.size_label(self.size)}"


def plan(quick: bool, sizes: tuple[int, ...]) -> list[Workload]:
    """The workloads; counts are chosen so each run takes seconds, not minutes."""
    scale = 5 if quick else 1
    many = {100: 100_000, 1024: 50_000, 10240: 10_000}
    workloads = []
    for size in sizes:
        workloads.append(Workload("produce-sync", size, 2_500 // scale, drivers.CLIENTS))
        workloads.append(Workload("produce-async", size, many[size] // scale, drivers.CLIENTS))
        workloads.append(Workload("consume", size, many[size] // scale, drivers.CLIENTS))
    # Latency: 1 KiB at a fixed rate, produced and consumed in one process per client.
    workloads.append(Workload("latency", 1024, int(LATENCY_RATE * (2 if quick else 5)),
                              drivers.CLIENTS))  # fmt: skip
    return workloads


def run_one(
    client: str, workload: Workload, master: str, log_config: Path, timeout: float
) -> dict[str, Any]:
    """Runs one workload in a child process; its JSON line plus the child's rusage."""
    topic = {
        "consume": backlog_topic(workload.size),
        "latency": LATENCY_TOPIC,
    }.get(workload.mode, PRODUCE_TOPIC)
    args = [
        "--master", master, "--topic", topic, "--mode", workload.mode,
        "--size", str(workload.size), "--count", str(workload.count),
        "--group", f"bench_{client}_{uuid.uuid4().hex[:8]}",
        "--rate", str(LATENCY_RATE),
    ]  # fmt: skip
    if workload.mode == "latency":
        args += ["--not-found-wait-ms", str(LATENCY_NOT_FOUND_WAIT_MS)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(
            drivers.command(client, args, log_config),
            stdout=out,
            stderr=err,
            cwd=drivers.ROOT,
        )
        # wait4 reaps the child and returns the rusage of that child alone.
        status, usage = _wait4(child, timeout)
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    record: dict[str, Any] | None = None
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            record = json.loads(line)
            break
    if status != 0 or record is None:
        raise RuntimeError(
            f"{client} {workload.name} failed (status {status}):\n{stdout[-1500:]}\n"
            f"{stderr[-1500:]}"
        )
    record.update(
        workload=workload.name,
        size=workload.size,
        process_cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
        peak_rss_mib=round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        process_wall_s=round(wall, 3),
    )
    return record


def _wait4(child: subprocess.Popen, timeout: float) -> tuple[int, Any]:
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid == child.pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage
        if time.monotonic() > deadline:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = -9
            return -9, usage
        time.sleep(0.02)


def fill_backlogs(master: str, sizes: tuple[int, ...], counts: dict[int, int]) -> None:
    """A backlog per size, written by our C++ driver before anything is measured. Each
    consume run reads the first ``count`` messages with a new group, so older messages
    of earlier runs only lengthen the backlog."""
    for size in sizes:
        subprocess.run(
            [
                str(drivers.NATIVE_BENCH), "--master", master, "--topic", backlog_topic(size),
                "--mode", "produce-async", "--size", str(size), "--count", str(counts[size]),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip


def open_cluster(cluster_dir: Path | None) -> tuple[LocalCluster, bool]:
    """The cluster to use and whether this run started it (and so stops it)."""
    if cluster_dir is not None:
        cluster = LocalCluster.load(cluster_dir)
        if not cluster.is_running():
            raise SystemExit(f"the cluster in {cluster_dir} is not running")
        cluster.add_topics(TOPICS)  # about 35 s when any is missing
        return cluster, False
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="tubemq-bench-")))
    cluster.up(topics=TOPICS, partitions=4)
    return cluster, True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cluster-dir",
        type=Path,
        default=os.environ.get("TUBEMQ_BENCH_CLUSTER_DIR") or None,
        help="use the running cluster of this workdir (default: start one; env "
        "TUBEMQ_BENCH_CLUSTER_DIR)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="a fifth of the messages per run")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="value sizes in bytes (100,1024,10240)"
    )
    parser.add_argument("--clients", default=",".join(drivers.CLIENTS))
    parser.add_argument("--modes", default="produce-sync,produce-async,consume,latency")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR)
    parser.add_argument("--timeout", type=float, default=300.0, help="per run, seconds")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    args = parser.parse_args(argv)
    sizes = tuple(int(size) for size in args.sizes.split(","))
    if not set(sizes) <= set(SIZES):
        parser.error(f"--sizes must be among {SIZES}")
    clients, modes = set(args.clients.split(",")), set(args.modes.split(","))
    workloads = [
        Workload(w.mode, w.size, w.count, tuple(c for c in w.clients if c in clients))
        for w in plan(args.quick, sizes)
        if w.mode in modes
    ]
    workloads = [w for w in workloads if w.clients and (w.mode != "latency" or 1024 in sizes)]
    if args.dry_run:
        for workload in workloads:
            print(f"{workload.name}: {workload.count} messages via {', '.join(workload.clients)}")
        return 0

    print("building the C++ driver and the Java program ...", flush=True)
    drivers.build_native()
    if "java" in clients:
        drivers.build_java()
    cluster, started_here = open_cluster(args.cluster_dir)
    print(f"cluster: {cluster.master_address} ({'started' if started_here else 'reused'})")
    try:
        with tempfile.TemporaryDirectory(prefix="tubemq-bench-") as scratch:
            log_config = Path(scratch) / "log4j2.xml"
            log_config.write_text(LOG4J2)
            consume = {w.size: w.count for w in workloads if w.mode == "consume"}
            fill_backlogs(cluster.master_address, tuple(consume), consume)
            runs = []
            for round_index in range(args.rounds + 1):
                label = "warm-up" if round_index == 0 else f"round {round_index}"
                for workload in workloads:
                    for client in workload.clients:
                        record = run_one(
                            client, workload, cluster.master_address, log_config, args.timeout
                        )
                        record["round"] = round_index
                        runs.append(record)
                        print(f"{label:>8} {report.one_line(record)}", flush=True)
    finally:
        if started_here:
            cluster.down()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    meta = {
        "started": stamp,
        "quick": args.quick,
        "rounds": args.rounds,
        "cluster": "started by the runner" if started_here else f"reused: {args.cluster_dir}",
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": sys.version.split()[0],
        "latency": {"rate": LATENCY_RATE, "msg_not_found_wait_ms": LATENCY_NOT_FOUND_WAIT_MS},
    }
    paths = report.write(args.output, stamp, meta, runs)
    print(paths["markdown"].read_text())
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0
