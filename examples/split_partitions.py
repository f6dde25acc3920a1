"""Two members of a client-balanced group split a topic's partitions between them the way
the upstream Java example does; run one per node id.

    python examples/split_partitions.py --master 127.0.0.1:8715 --topic demo --group g \\
        --nodes 2 --node 0 --seconds 10
"""

from __future__ import annotations

import argparse
import time

import tubemq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--node", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()

    with tubemq.AssignedConsumer(
        master=args.master,
        group=args.group,
        topics=[args.topic],
        consume_from="earliest",
        source_count=args.nodes,
        node_id=args.node,
    ) as consumer:
        mine = consumer.my_partitions()
        consumer.assign(mine)  # each from the group's committed offset
        print(f"node {args.node} of {args.nodes} holds {mine}")
        count, deadline = 0, time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            if consumer.poll(0.5) is not None:
                count += 1
        print(f"node {args.node} read {count} messages; offsets {consumer.offsets()}")


if __name__ == "__main__":
    main()
