"""Consumer throughput and CPU cost, ours against the official Java tool, in one run.

A backlog of 1 KiB messages is produced once; then, alternately, our Python consumer
(iterating messages, auto-commit) and the Java CliConsumer (pull mode, from the first
offset) read the whole backlog, each round with a fresh group. Reported: messages/s and
CPU seconds per million messages (our process; the Java child process), and the ratios.

    python bench/consumer_throughput.py [--workdir DIR] [--messages N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import tubemq
from tubemq.cluster import LocalCluster, maven

TOPIC = "bench_consume"
VALUE = b"v" * 1024


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def produce_backlog(master: str, messages: int, topic: str = TOPIC, value: bytes = VALUE) -> None:
    with tubemq.Producer(master=master, max_in_flight=20000) as producer:
        producer.publish(topic)
        for _ in range(messages):
            producer.send_async(topic, value)
        if producer.flush(timeout=600) != 0 or producer.counters()["sent_failed"]:
            raise RuntimeError("the backlog could not be produced")


def ours(master: str, messages: int) -> tuple[float, float]:
    group = f"bench_py_{uuid.uuid4().hex[:8]}"
    with tubemq.Consumer(
        master=master,
        group=group,
        topics=[TOPIC],
        consume_from="earliest",
        heartbeat_period_ms=1000,
    ) as consumer:
        first = None
        while first is None:  # joining the group is not part of the measure
            first = consumer.poll(1.0)
        started, cpu_before = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
        count, total = 1, len(first)
        while count < messages:
            message = consumer.poll(5.0)
            if message is None:
                raise RuntimeError(f"backlog ended after {count} of {messages} messages")
            count += 1
            total += len(message)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu_before
    return count / elapsed, cpu / count * 1e6


def java(master: str, messages: int, log_config: Path) -> tuple[float, float]:
    classpath = os.pathsep.join(str(jar) for jar in maven.server_classpath())
    group = f"bench_java_{uuid.uuid4().hex[:8]}"
    cpu_before = cpu_seconds(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            classpath,
            f"-Dlog4j.configurationFile={log_config}",
            "org.apache.inlong.tubemq.server.tools.cli.CliConsumer",
            "--master-servers",
            master,
            "--topicName",
            TOPIC,
            "--groupName",
            group,
            "--messages",
            str(messages),
            "--consume-position",
            "-1",
            "--output-interval",
            "5000",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - cpu_before
    finished = re.findall(
        r"Finished, cost time: (\d+) ?ms, required count VS \w+ count = "
        r"(\d+) : (\d+)",
        done.stdout,
    )
    if not finished:
        raise RuntimeError(f"CliConsumer printed no result:\n{done.stdout[-3000:]}")
    cost_ms, _, received = map(int, finished[-1])
    return received / (cost_ms / 1000), cpu / received * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tubemq-bench-"))
    cluster = LocalCluster(workdir)
    cluster.up(topics=[TOPIC], partitions=4)
    try:
        produce_backlog(cluster.master_address, args.messages)
        results: dict[str, list[tuple[float, float]]] = {
            "tubemq (python)": [],
            "java CliConsumer": [],
        }
        for round_index in range(args.rounds):
            results["tubemq (python)"].append(ours(cluster.master_address, args.messages))
            results["java CliConsumer"].append(
                java(cluster.master_address, args.messages, workdir / "log4j2.xml")
            )
            print(
                f"round {round_index + 1}: "
                + ", ".join(
                    f"{name} {values[-1][0]:,.0f} msg/s, {values[-1][1]:.2f} CPU s/M"
                    for name, values in results.items()
                )
            )
        medians = {
            name: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
            for name, values in results.items()
        }
        for name, (rate, cpu) in medians.items():
            print(f"median {name}: {rate:,.0f} msg/s, {cpu:.2f} CPU seconds per million")
        ours_rate, ours_cpu = medians["tubemq (python)"]
        java_rate, java_cpu = medians["java CliConsumer"]
        print(
            f"ratio tubemq / java: throughput {ours_rate / java_rate:.2f}, "
            f"CPU per message {ours_cpu / java_cpu:.2f}"
        )
    finally:
        if args.workdir is None:
            cluster.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
