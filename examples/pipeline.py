"""The main job: start a local TubeMQ cluster, run a pipeline through it, stop the cluster.

Today the pipeline goes as far as the client does: a producer registers to the master,
declares the topic, sends a handful of events synchronously and a batch asynchronously,
reports where the broker stored them, then consumes everything back as a group member and
checks that every message arrived. Later work turns this into a PySpark job.

    python examples/pipeline.py [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import tubemq
from tubemq.cluster import LocalCluster

TOPIC = "pipeline_events"


def run_pipeline(master: str) -> None:
    with tubemq.Producer(master=master) as producer:
        print(f"producer {producer.client_id} registered to {master}")
        producer.publish(TOPIC)
        for partition in producer.partitions(TOPIC):
            print(f"  writable: {partition.key} at {partition.broker_address}")
        for index in range(5):
            result = producer.send(
                TOPIC, f"event {index}".encode(), msg_type="demo", attrs={"source": "pipeline"}
            )
            print(
                f"  stored event {index} as message {result.message_id} in "
                f"{result.partition_key} at offset {result.append_offset}"
            )
        futures = [producer.send_async(TOPIC, f"bulk {i}".encode()) for i in range(1000)]
        producer.flush(timeout=60)
        stored = sum(1 for future in futures if future.exception() is None)
        print(f"  stored {stored} of {len(futures)} bulk events asynchronously")
        if stored != len(futures):
            raise SystemExit("some events were not stored")
    expected = {f"event {i}".encode() for i in range(5)} | {
        f"bulk {i}".encode() for i in range(1000)
    }
    with tubemq.Consumer(
        master=master, group="pipeline_readers", topics=[TOPIC], consume_from="earliest"
    ) as consumer:
        received: set[bytes] = set()
        deadline = time.monotonic() + 60
        while received != expected and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=1.0):
                received.add(bytes(message))
        print(f"consumed {len(received & expected)} of {len(expected)} events back")
        if received != expected:
            raise SystemExit("some events were not consumed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="cluster working directory (default: temp)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tubemq-pipeline-"))
    cluster = LocalCluster(workdir)
    started = time.monotonic()
    cluster.up(topics=[TOPIC], partitions=4)
    print(f"cluster up in {time.monotonic() - started:.1f} s: master={cluster.master_address}")
    try:
        run_pipeline(cluster.master_address)
    finally:
        if not args.keep:
            cluster.down()
            print("cluster stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
