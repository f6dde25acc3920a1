"""Produce a few messages and read them back as a member of a consumer group.

python examples/quickstart.py --master 127.0.0.1:8715 --topic demo
"""

from __future__ import annotations

import argparse
import uuid

import tubemq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", required=True)
    parser.add_argument("--topic", required=True)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]

    with tubemq.Producer(master=args.master) as producer:
        producer.publish(args.topic)
        for index in range(5):
            result = producer.send(
                args.topic, f"{run} hello {index}".encode(), attrs={"index": str(index)}
            )
            print(f"sent {result.message_id} to {result.partition_key}")

    with tubemq.Consumer(
        master=args.master, group=f"quickstart-{run}", topics=[args.topic], consume_from="earliest"
    ) as consumer:
        seen = 0
        while seen < 5:
            message = consumer.poll(timeout=60)
            if message is None:
                raise SystemExit("no message within 60 s")
            if bytes(message).startswith(run.encode()):
                seen += 1
                print(f"got {bytes(message).decode()!r} attrs={message.attrs}")


if __name__ == "__main__":
    main()
