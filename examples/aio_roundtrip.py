"""asyncio: send a hundred messages concurrently, then iterate them back.

python examples/aio_roundtrip.py --master 127.0.0.1:8715 --topic demo
"""

from __future__ import annotations

import argparse
import asyncio
import uuid

import tubemq.aio


async def roundtrip(master: str, topic: str) -> None:
    run = uuid.uuid4().hex[:8]
    async with tubemq.aio.Producer(master=master) as producer:
        await producer.publish(topic)
        results = await asyncio.gather(
            *(producer.send(topic, f"{run} {i}".encode()) for i in range(100))
        )
    sent = {result.message_id for result in results}
    print(f"sent {len(sent)} messages")
    received: set[int] = set()
    async with tubemq.aio.Consumer(
        master=master, group=f"aio-{run}", topics=[topic], consume_from="earliest"
    ) as consumer:
        async for message in consumer:
            if bytes(message).startswith(run.encode()):
                received.add(message.message_id)
            if received == sent:
                break
    print(f"received all {len(received)} back")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", required=True)
    parser.add_argument("--topic", required=True)
    args = parser.parse_args()
    asyncio.run(asyncio.wait_for(roundtrip(args.master, args.topic), timeout=120))


if __name__ == "__main__":
    main()
