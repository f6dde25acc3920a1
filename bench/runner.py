"""``python -m bench``: our Python client, our C++ core and the Java client (as it comes
and tuned), side by side.

One invocation starts (or reuses) a local cluster, writes a backlog per value size (2
attributes per message) and starts one long-lived driver process per client. Each
process first runs one window cold (its figure is reported apart), then an untimed
warm-up of every workload (JIT, class loading, connection pools), then the measured
rounds: in each round every workload runs once per client, and the order of the
clients rotates from round to round and from workload to workload, so that no client
always follows the same one. A window runs for a fixed time or a fixed number of
messages, whichever comes first. The machine is shared, so the report gives medians
with their spread and ratios paired within each round.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import drivers, report
from tubemq.cluster import LocalCluster

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SIZES = (100, 1024, 10240)
PRODUCE_TOPIC = "bench_produce"
LATENCY_TOPIC = "bench_latency"
IDLE_TOPIC = "bench_idle"  # written by nobody: an idle consumer waits on it
LATENCY_RATES = (1000.0, 10000.0)
# latency: every client with its defaults (Java tuned: its latency settings);
# latency-tuned: ours with this ceiling on the rest after "nothing new" (py_worker.py).
TUNED_NOT_FOUND_WAIT_MS = 10
ATTRS_SIZE = 1024  # the size whose backlog is also read with its attributes
# produce-runs (issue 25): a new user's producer, 10 runs of send_async + flush in one
# new process per client; run 10 must match run 2 (no slow state), RSS flat.
SUCCESSIVE_RUNS = 10
RUN_MESSAGES = 200_000
LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders><Console name="stderr" target="SYSTEM_ERR">
    <PatternLayout pattern="%d %p %c{1} - %m%n"/></Console></Appenders>
  <Loggers><Root level="warn"><AppenderRef ref="stderr"/></Root></Loggers>
</Configuration>
"""


@dataclass(frozen=True)
class Settings:
    """How long things run; ``--quick`` shrinks everything for a smoke run."""

    window_s: float  # a measured window ends after this ...
    window_max: int  # ... or after this many messages
    warmup_s: float  # untimed, per client, in its own process
    warmup_window_s: float
    latency_s: float  # a latency window: its rate for this long
    idle_s: float  # an idle window: one consumer waiting on an empty topic
    backlog: dict[int, int]  # messages per value size, read by every consume window


FULL = Settings(
    window_s=5.0,
    window_max=1_000_000,
    warmup_s=10.0,
    warmup_window_s=2.0,
    latency_s=10.0,
    idle_s=60.0,
    # A consume window reads up to window_max, or for window_s: the backlog holds the
    # larger of the two at the fastest client's rate (~2 GB in all, written once).
    backlog={100: 2_000_000, 1024: 1_000_000, 10240: 150_000},
)
QUICK = Settings(
    window_s=1.0,
    window_max=1_000_000,
    warmup_s=2.0,
    warmup_window_s=0.5,
    latency_s=2.0,
    idle_s=3.0,
    backlog={100: 400_000, 1024: 200_000, 10240: 40_000},
)


def backlog_topic(size: int) -> str:
    return f"bench_backlog_{size}"


TOPICS = [PRODUCE_TOPIC, LATENCY_TOPIC, IDLE_TOPIC, *(backlog_topic(size) for size in SIZES)]


@dataclass(frozen=True)
class Workload:
    mode: str  # produce-*, consume, consume-attrs, consume-batch, latency*, idle
    size: int
    rate: float = 0.0  # latency: messages per second

    def runs_on(self, client: str) -> bool:
        if self.mode in drivers.PYTHON_ONLY:
            return client == "python"
        return not (client.startswith("java") and self.mode in drivers.NOT_JAVA)

    @property
    def name(self) -> str:
        if self.mode == "idle":
            return "idle"
        rate = f" @{self.rate:,.0f}/s" if self.rate else ""
        return f"{self.mode} {report.size_label(self.size)}{rate}"

    @property
    def topic(self) -> str:
        if self.mode.startswith("consume"):
            return backlog_topic(self.size)
        if self.mode == "idle":
            return IDLE_TOPIC
        return LATENCY_TOPIC if self.mode.startswith("latency") else PRODUCE_TOPIC


def plan(sizes: tuple[int, ...], modes: set[str]) -> list[Workload]:
    """The workloads of the measured rounds (produce-runs has a phase of its own)."""
    workloads = []
    for size in sizes:
        for mode in ("produce-sync", "produce-async", "consume", "consume-batch"):
            workloads.append(Workload(mode, size))
        if size == ATTRS_SIZE:
            workloads += [Workload("consume-attrs", size), Workload("slow-callback", size)]
    if ATTRS_SIZE in sizes:  # latency: 1 KiB at fixed rates
        for mode in ("latency", "latency-tuned"):
            workloads += [Workload(mode, ATTRS_SIZE, rate) for rate in LATENCY_RATES]
    workloads.append(Workload("idle", ATTRS_SIZE))
    return [w for w in workloads if w.mode in modes]


def run_window(
    driver: drivers.Driver, workload: Workload, settings: Settings, seconds: float,
    broker_pid: int,
) -> dict[str, Any]:  # fmt: skip
    """One window of ``workload``; the answer plus the broker's CPU over it."""
    if workload.mode.startswith("latency") or workload.mode == "slow-callback":
        seconds, max_count = max(seconds, settings.latency_s), 0
    elif workload.mode == "idle":
        seconds, max_count = max(seconds, settings.idle_s), 0
    elif workload.mode.startswith("consume"):
        max_count = min(settings.window_max, settings.backlog[workload.size])
    else:
        max_count = settings.window_max
    broker_before = drivers.process_cpu_seconds(broker_pid) if broker_pid else 0.0
    try:
        record = driver.window(
            workload.mode, workload.size, workload.topic, seconds, max_count, rate=workload.rate
        )
    except RuntimeError as error:
        raise RuntimeError(
            f"{workload.name} via {driver.client}: {error}\n{driver.stderr_tail()}"
        ) from error
    if broker_pid:
        # Includes a consumer's group join, which is outside the client's window; the
        # broker does little else then, so it is a small overstatement at most.
        record["broker_cpu_s"] = drivers.process_cpu_seconds(broker_pid) - broker_before
    record.update(workload=workload.name, size=workload.size, client=driver.client)
    return record


def fill_backlogs(master: str, settings: Settings, sizes: tuple[int, ...], timeout: float):
    """Writes each size's backlog, 2 attributes per message, with a C++ driver of its
    own (so that the measured C++ process starts as cold as the others)."""
    # Gigabytes on a busy machine can take longer than one window may.
    writer = drivers.Driver("cpp", master, None, max(timeout, 1800.0))
    try:
        for size in sizes:
            count = settings.backlog[size]
            writer.window("produce-async", size, backlog_topic(size), 1e6, count, attrs=True)
            print(f"backlog {backlog_topic(size)}: {count:,} messages written", flush=True)
    finally:
        writer.close()


def broker_pid(cluster: LocalCluster) -> int:
    """The broker JVM's pid (0 when it does not run: its CPU is then not reported)."""
    return cluster.node_pid("broker-1")


def open_cluster(cluster_dir: Path | None) -> tuple[LocalCluster, bool]:
    """The cluster to use and whether this run started it (and so stops it)."""
    if cluster_dir is not None:
        cluster = LocalCluster.load(cluster_dir)
        if not cluster.is_running():
            raise SystemExit(f"the cluster in {cluster_dir} is not running")
        cluster.add_topics(TOPICS)  # about 35 s when any is missing
        return cluster, False
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="tubemq-bench-")))
    # The servers as in production. Full JIT: a C1-only broker (the tests' quick-starting
    # JVM) caps every client at about half the rate, and the bench would compare nothing.
    # The broker's memory store (the server's default; test clusters write straight to
    # the files): without it a fetch reads the file store, whose readable end trails the
    # last write by about a millisecond of messages, and every client's end-to-end
    # latency at 10 000 msg/s was about three times production's (2.4 against 0.9 ms).
    cluster.up(
        topics=TOPICS, partitions=4, full_jit=True, broker_settings=PRODUCTION_BROKER_SETTINGS
    )
    return cluster, True


# broker.ini keys the bench's own cluster sets as a production broker has them.
PRODUCTION_BROKER_SETTINGS = {"enableMemStore": "true"}


def broker_memory_store(cluster: LocalCluster) -> bool:
    """Whether the cluster's broker keeps recent messages in its memory store."""
    ini = cluster.workdir / "broker.ini"
    line = "enableMemStore=" + PRODUCTION_BROKER_SETTINGS["enableMemStore"]
    return ini.exists() and line in ini.read_text().split()


def rotated(clients: list[str], shift: int) -> list[str]:
    shift %= len(clients)
    return clients[shift:] + clients[:shift]


def measure(
    master: str, clients: list[str], workloads: list[Workload], settings: Settings,
    rounds: int, log_config: Path, timeout: float, broker: int,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:  # fmt: skip
    """Cold windows, warm-ups and the measured rounds; returns (windows, start-ups)."""
    runs: list[dict[str, Any]] = []
    startups: dict[str, dict[str, Any]] = {}
    live: dict[str, drivers.Driver] = {}
    try:
        for client in clients:
            # One at a time, so that no start-up competes with another for the CPUs.
            driver = live[client] = drivers.Driver(client, master, log_config, timeout)
            startups[client] = driver.startup
            own = [w for w in workloads if w.runs_on(client)]
            if not own:
                continue
            cold = next((w for w in own if w.mode == "produce-async"), own[0])
            record = run_window(driver, cold, settings, settings.window_s, broker)
            record.update(phase="cold", round=0)
            runs.append(record)
            print(f"{'cold':>9} {report.one_line(record)}", flush=True)
        for client in clients:
            started = time.monotonic()
            while True:  # every workload at least once, then again until warmup_s
                for workload in workloads:
                    if workload.runs_on(client):
                        run_window(live[client], workload, settings, settings.warmup_window_s, 0)
                if time.monotonic() - started >= settings.warmup_s:
                    break
            print(f"{'warm-up':>9} {client}: {time.monotonic() - started:.0f} s", flush=True)
        for round_index in range(1, rounds + 1):
            for index, workload in enumerate(workloads):
                for client in rotated(clients, round_index + index):
                    if not workload.runs_on(client):
                        continue
                    record = run_window(live[client], workload, settings, settings.window_s,
                                        broker)  # fmt: skip
                    record.update(phase="measured", round=round_index)
                    runs.append(record)
                    print(f"{'round ' + str(round_index):>9} {report.one_line(record)}",
                          flush=True)  # fmt: skip
    finally:
        for driver in live.values():
            driver.close()
    return runs, startups


def successive_runs(
    master: str, clients: list[str], settings: Settings, log_config: Path, timeout: float,
    broker: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """produce-runs: for each client a new process (a new user's, nothing warm), one
    producer, SUCCESSIVE_RUNS windows of send_async + flush of 1 KiB, each of
    settings.window_max messages however long they take."""
    runs: list[dict[str, Any]] = []
    workload = Workload("produce-async", ATTRS_SIZE)
    for client in clients:
        driver = drivers.Driver(client, master, log_config, timeout)
        try:
            for index in range(1, SUCCESSIVE_RUNS + 1):
                record = run_window(driver, workload, settings, timeout, broker)
                record.update(phase="runs", round=index, workload="produce-runs 1 KiB")
                runs.append(record)
                print(f"{'run ' + str(index):>9} {report.one_line(record)}", flush=True)
        finally:
            driver.close()
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cluster-dir",
        type=Path,
        default=os.environ.get("TUBEMQ_BENCH_CLUSTER_DIR") or None,
        help="use the running cluster of this workdir (default: start one; env "
        "TUBEMQ_BENCH_CLUSTER_DIR)",
    )
    parser.add_argument("--rounds", type=int, help="measured rounds (default 5; 2 with --quick)")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 1 s windows, 2 s warm-up, small backlog"
    )
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="value sizes in bytes (100,1024,10240)"
    )
    parser.add_argument("--clients", default=",".join(drivers.CLIENTS))
    parser.add_argument(
        "--modes",
        default="produce-sync,produce-async,consume,consume-attrs,consume-batch,latency,"
        "latency-tuned,idle,slow-callback,produce-runs",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="where the results go (default bench/results; with --quick bench/results/quick, "
        "which git ignores: smoke figures are not results)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="per window, seconds")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    rounds = args.rounds or (2 if args.quick else 5)
    sizes = tuple(int(size) for size in args.sizes.split(","))
    if not set(sizes) <= set(SIZES):
        parser.error(f"--sizes must be among {SIZES}")
    clients = [c for c in drivers.CLIENTS if c in args.clients.split(",")]
    modes = set(args.modes.split(","))
    workloads = plan(sizes, modes)
    runs_wanted = "produce-runs" in modes and ATTRS_SIZE in sizes
    if not clients or not (workloads or runs_wanted):
        parser.error("nothing to run")
    if args.dry_run:
        print(f"clients (rotating): {', '.join(clients)}; {rounds} rounds; {settings}")
        for workload in workloads:
            print(f"{workload.name} on {workload.topic}")
        if runs_wanted:
            print(f"produce-runs: {SUCCESSIVE_RUNS} x {RUN_MESSAGES:,} in a new process each")
        return 0

    print("building the C++ driver and the Java program ...", flush=True)
    drivers.build_native()
    if any(c.startswith("java") for c in clients):
        drivers.build_java()
    cluster, started_here = open_cluster(args.cluster_dir)
    print(f"cluster: {cluster.master_address} ({'started' if started_here else 'reused'})")
    memory_store = broker_memory_store(cluster)  # read before the workdir goes
    try:
        with tempfile.TemporaryDirectory(prefix="tubemq-bench-") as scratch:
            log_config = Path(scratch) / "log4j2.xml"
            log_config.write_text(LOG4J2)
            consumed = tuple(dict.fromkeys(w.size for w in workloads if "consume" in w.mode))
            fill_backlogs(cluster.master_address, settings, consumed, args.timeout)
            runs, startups = measure(
                cluster.master_address, clients, workloads, settings, rounds, log_config,
                args.timeout, broker_pid(cluster),
            ) if workloads else ([], {})  # fmt: skip
            if runs_wanted:
                # A tenth of the messages in a smoke run.
                messages = RUN_MESSAGES // 10 if args.quick else RUN_MESSAGES
                runs += successive_runs(
                    cluster.master_address, clients, replace(settings, window_max=messages),
                    log_config, args.timeout, broker_pid(cluster),
                )  # fmt: skip
    finally:
        if started_here:
            cluster.down()
            # Its backlogs are gigabytes in a full run: nothing else reads them.
            shutil.rmtree(cluster.workdir, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    meta = {
        "started": stamp,
        "command": "python -m bench"
        + (" --quick" if args.quick else "")
        + (f" --rounds {args.rounds}" if args.rounds else "")
        + (f" --sizes {args.sizes}" if args.sizes != ",".join(map(str, SIZES)) else "")
        + (f" --clients {args.clients}" if args.clients != parser.get_default("clients") else "")
        + (f" --modes {args.modes}" if args.modes != parser.get_default("modes") else ""),
        "quick": args.quick,
        "rounds": rounds,
        "settings": settings.__dict__,
        "cluster": "started by the runner" if started_here else f"reused: {args.cluster_dir}",
        "server_jit": "full (C1+C2)" if cluster.full_jit else "C1 only",
        "broker_memory_store": memory_store,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": sys.version.split()[0],
        "latency": {"rates": LATENCY_RATES, "tuned_msg_not_found_wait_ms": TUNED_NOT_FOUND_WAIT_MS},
        "produce_runs": {"runs": SUCCESSIVE_RUNS, "messages": RUN_MESSAGES},
        "java_tuned": {
            "jvm": " ".join(drivers.JAVA_TUNED_JVM),
            "client": startups.get("java-tuned", {}).get("settings"),
        },
        "startups": startups,
    }
    output = args.output or (RESULTS_DIR / "quick" if args.quick else RESULTS_DIR)
    paths = report.write(output, stamp, meta, runs)
    print(paths["markdown"].read_text())
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0
