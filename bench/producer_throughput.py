"""Producer throughput, ours against the official Java tool, side by side in one run.

Both send the same number of 1 KiB messages to the same topic of the same local cluster:
our producer with send_async() from one Python thread (timed from the first send to
flush() returning), and the Java client through the server jar's CliProducer with
--without-delay (its own "cost time" figure). Rounds alternate so that both see the
same machine load; report the ratio, not the absolute figures, which vary with the load
of a shared machine.

    python bench/producer_throughput.py [--workdir DIR] [--messages N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import tubemq
from tubemq.cluster import LocalCluster, maven

TOPIC = "bench_topic"
VALUE = b"v" * 1024


def ours(master: str, messages: int) -> float:
    with tubemq.Producer(master=master, max_in_flight=20000) as producer:
        producer.publish(TOPIC)
        producer.send(TOPIC, VALUE)  # connect to the broker before timing
        started = time.perf_counter()
        for _ in range(messages):
            producer.send_async(TOPIC, VALUE)
        if producer.flush(timeout=600) != 0:
            raise RuntimeError("sends still pending after 600 s")
        elapsed = time.perf_counter() - started
        if producer.counters()["sent_failed"]:
            raise RuntimeError(f"failed sends: {producer.counters()}")
    return messages / elapsed


def java(master: str, messages: int, log_config: Path) -> float:
    classpath = os.pathsep.join(str(jar) for jar in maven.server_classpath())
    done = subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            classpath,
            f"-Dlog4j.configurationFile={log_config}",
            "org.apache.inlong.tubemq.server.tools.cli.CliProducer",
            "--master-servers",
            master,
            "--topicName",
            TOPIC,
            "--messages",
            str(messages),
            "--message-data-size",
            "1024",
            "--without-delay",
            "--output-interval",
            "5000",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    finished = re.findall(
        r"Finished, cost time: (\d+)ms, required count VS sent count = "
        r"(\d+) : (\d+)",
        done.stdout,
    )
    if not finished:
        raise RuntimeError(f"CliProducer printed no result:\n{done.stdout[-2000:]}")
    cost_ms, required, sent = map(int, finished[-1])
    if sent != required:
        raise RuntimeError(f"CliProducer sent {sent} of {required}")
    return sent / (cost_ms / 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--messages", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tubemq-bench-"))
    cluster = LocalCluster(workdir)
    cluster.up(topics=[TOPIC], partitions=4)
    try:
        rates: dict[str, list[float]] = {"tubemq (python, async)": [], "java CliProducer": []}
        for round_index in range(args.rounds):
            rates["tubemq (python, async)"].append(ours(cluster.master_address, args.messages))
            rates["java CliProducer"].append(
                java(cluster.master_address, args.messages, workdir / "log4j2.xml")
            )
            print(
                f"round {round_index + 1}: "
                + ", ".join(f"{name} {values[-1]:,.0f} msg/s" for name, values in rates.items())
            )
        medians = {name: statistics.median(values) for name, values in rates.items()}
        for name, value in medians.items():
            print(f"median {name}: {value:,.0f} msg/s ({value * 1024 / 2**20:.1f} MiB/s)")
        ratio = medians["tubemq (python, async)"] / medians["java CliProducer"]
        print(f"ratio tubemq / java: {ratio:.2f}")
    finally:
        if args.workdir is None:
            cluster.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
