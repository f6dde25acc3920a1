"""InLongMsg packs through a real topic: a pack sent as a message is decoded straight from
the consumed message (its bodies are views into it)."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq
from tubemq import inlong

pytestmark = pytest.mark.integration


def test_a_consumed_pack_decodes_from_the_message(master, topics):
    topic, mark = topics[6], f"inlong-{uuid.uuid4().hex[:8]}"
    records = [(f"{mark}-{i}".encode(), {"seq": str(i)}) for i in range(50)]
    pack = inlong.encode(records, attrs={"streamId": "s1", "mark": mark}, version=3, compress=True)
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        producer.send(topic, pack, msg_type="s1")
        producer.send(topic, b"plain payload " + mark.encode())
    found = []
    group = f"inl_{uuid.uuid4().hex[:8]}"
    with tubemq.Consumer(
        master=master, group=group, topics=[topic], consume_from="earliest"
    ) as consumer:
        deadline = time.monotonic() + 60
        while not found and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                if not inlong.is_inlong_msg(message):
                    continue
                decoded = inlong.decode(message)
                if decoded and decoded[0].attrs.get("mark") == mark:
                    found = [(bytes(r.body), r.attrs["seq"]) for r in decoded]
    assert found == [(body, attrs["seq"]) for body, attrs in records]


def test_v0_packs_are_read():
    # Version 0: version 1 without the create time; only old senders write it.
    v1 = inlong.encode([b"old"], attrs="a=1", create_time_ms=5)
    v0 = b"\x0f\x00" + v1[10:-2] + b"\x0f\x00"
    pack = inlong.decode_pack(v0)
    assert (pack.version, pack.create_time_ms) == (0, None)
    assert [(bytes(r.body), r.attrs) for r in pack.records] == [(b"old", {"a": "1"})]
