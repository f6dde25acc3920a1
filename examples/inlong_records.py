"""Send InLongMsg packs (as InLong's DataProxy writes them) and read their records back
with a consumer made with ``decode="inlongmsg"``.

python examples/inlong_records.py --master 127.0.0.1:8715 --topic demo
"""

from __future__ import annotations

import argparse
import time
import uuid

import tubemq
from tubemq import inlong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", required=True)
    parser.add_argument("--topic", required=True)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]

    with tubemq.Producer(master=args.master) as producer:
        producer.publish(args.topic)
        producer.send(args.topic, f"{run} not a pack".encode(), key=run)
        for version in (1, 4):
            records = [(f"{run} record {i}".encode(), {"seq": str(i)}) for i in range(3)]
            pack = inlong.encode(records, attrs={"run": run}, version=version, compress=True)
            producer.send(args.topic, pack, key=run)

    with tubemq.Consumer(
        master=args.master,
        group=f"inlong-{run}",
        topics=[args.topic],
        consume_from="earliest",
        decode="inlongmsg",
        auto_commit=False,
    ) as consumer:
        seen, deadline = 0, time.monotonic() + 60
        while seen < 6:
            if time.monotonic() > deadline:
                raise SystemExit("not all records within 60 s")
            try:
                record = consumer.poll(timeout=1.0)
            except inlong.PackDecodeError as error:  # raised once; the consumer goes on
                print(f"not a pack: {error.partition_key} message {error.message_id}")
                consumer.commit(error.consumed_message)  # dealt with: set aside, say
                continue
            if record is None:
                continue
            if record.attrs.get("run") == run:
                seen += 1
                print(
                    f"record {record.position + 1}/{record.count} of message "
                    f"{record.message_id}: {bytes(record.body).decode()!r} "
                    f"seq={record.attrs['seq']}"
                )
            consumer.commit(record)  # the pack's last record commits the message


if __name__ == "__main__":
    main()
