"""What a received Message carries (docs/consumers.md, "Message fields"), against the
real cluster.

Attributes and msgType that are not UTF-8, as producers in C++, Go or old Java write them
(GBK text, or bytes that are no text), are sent straight to the broker by the raw frame
writer of tests/raw_frames.py and read with tubemq.Consumer: no exception, text fields in
their surrogateescape form, raw accessors with the exact bytes, and the messages after
them still arrive. ``value`` is a read-only view of the fetched bytes; ``repr`` is short."""

from __future__ import annotations

import contextlib
import gc
import time
import uuid
from collections.abc import Iterator

import pytest

import tubemq
from raw_frames import send_message

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}


def gbk(text: str) -> bytes:
    return text.encode("gbk")


# label -> (attribute as written, msgType request field, expected raw msgType, raw attrs)
FOREIGN = {
    "gbk": (
        b"$msgType$="
        + gbk("订单")
        + b",$msgTime$=202501011230,"
        + gbk("城市")
        + b"="
        + gbk("北京")
        + b",plain=ascii",
        gbk("订单"),
        {gbk("城市"): gbk("北京"), b"plain": b"ascii"},
    ),
    "broken": (
        # a stray byte, a cut sequence, an invalid one, in keys, values and msgType
        b"$msgType$=\xff\xfetype,\xb0key=v\xe2\x82,k=\xc3(,ok=fine",
        b"\xff\xfetype",
        {b"\xb0key": b"v\xe2\x82", b"k": b"\xc3(", b"ok": b"fine"},
    ),
}


def escaped(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@contextlib.contextmanager
def new_reader(master: str, topic: str, partitions: int = 4) -> Iterator[tubemq.Consumer]:
    """A consumer of a new group that holds every partition of ``topic`` and has read
    nothing: whatever is sent from now on comes to it."""
    with tubemq.Consumer(
        master=master,
        group=f"g_{uuid.uuid4().hex[:8]}",
        topics=[topic],
        consume_from="latest",
        **FAST,
    ) as consumer:
        deadline = time.monotonic() + 40
        while len(consumer.assignment()) < partitions:
            assert time.monotonic() < deadline, consumer.assignment()
            assert consumer.poll(0.2) is None  # a new "latest" group has nothing yet
        yield consumer


def test_foreign_attribute_bytes_are_read_losslessly_and_sent_on_unchanged(master, topics, cluster):
    topic, marker = topics[6], f"foreign-{uuid.uuid4().hex[:8]}"
    with new_reader(master, topic) as consumer:
        for label, (attribute, msg_type, _) in FOREIGN.items():
            reply = send_message(
                cluster.broker_address,
                topic,
                0,
                f"{marker}-{label}".encode(),
                attribute=attribute,
                msg_type=msg_type,
            )
            assert reply[2] == [200], reply  # errCode
        # What a Python producer sends next, to the same topic, must still arrive.
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            producer.send(topic, f"{marker}-after".encode(), attrs={"k": "v"}, msg_type="t")

        got: dict[str, tubemq.Message] = {}
        deadline = time.monotonic() + 45
        while len(got) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)  # the loop must never raise
            if message is not None and bytes(message).startswith(marker.encode()):
                got[bytes(message).decode().rsplit("-", 1)[1]] = message
        assert sorted(got) == ["after", "broken", "gbk"]

        for label, (_, msg_type, raw_attrs) in FOREIGN.items():
            message = got[label]
            assert message.raw_msg_type == msg_type
            assert message.raw_attrs == raw_attrs
            assert message.msg_type == escaped(msg_type)
            assert message.attrs == {escaped(k): escaped(v) for k, v in raw_attrs.items()}
            # The text form gives the bytes back.
            assert {k.encode("utf-8", "surrogateescape") for k in message.attrs} == set(raw_attrs)
            assert message.msg_type.encode("utf-8", "surrogateescape") == msg_type
            assert repr(message).startswith(f"Message(topic='{topic}', partition_key='1:{topic}:0'")
            assert message.value == f"{marker}-{label}".encode()
        assert got["gbk"].msg_time == "202501011230"
        assert got["broken"].msg_time is None

        after = got["after"]
        assert (after.msg_type, after.attrs, after.raw_attrs) == ("t", {"k": "v"}, {b"k": b"v"})
        assert after.raw_msg_type == b"t"

        # Forwarded as a user of any client would (attrs and msg_type as they came), the
        # messages go out with the very bytes they came with.
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            for label in FOREIGN:
                message = got[label]
                producer.send(
                    topic, f"{marker}-again{label}".encode(), attrs=message.attrs,
                    msg_type=message.msg_type, msg_time=message.msg_time,
                )  # fmt: skip
        again: dict[str, tubemq.Message] = {}
        deadline = time.monotonic() + 45
        while len(again) < len(FOREIGN) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and bytes(message).startswith(f"{marker}-again".encode()):
                again[bytes(message).decode().rsplit("-again", 1)[1]] = message
        assert sorted(again) == sorted(FOREIGN)
        for label, (_, msg_type, raw_attrs) in FOREIGN.items():
            assert again[label].raw_msg_type == msg_type
            assert again[label].raw_attrs == raw_attrs
            assert again[label].msg_time == got[label].msg_time


def test_value_is_bytes_the_buffer_a_view_without_a_copy_and_repr_is_short(master, topics):
    pa = pytest.importorskip("pyarrow")
    topic, marker = topics[6], f"value-{uuid.uuid4().hex[:8]}"
    long_value = f"{marker}-long-".encode() + bytes(range(256)) * 4
    with new_reader(master, topic) as consumer:
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            producer.send(topic, long_value)
            producer.send(topic, f"{marker}-s".encode())
        views: dict[bytes, memoryview] = {}
        deadline = time.monotonic() + 45
        while len(views) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or not bytes(message).startswith(marker.encode()):
                continue
            # value is bytes, as in every other client: what code written for them does works.
            value = message.value
            assert type(value) is bytes and value.startswith(marker.encode())
            assert value.decode("latin-1").encode("latin-1") == value == bytes(message)
            # memoryview(message) is the fetched bytes themselves: no copy is made.
            view = memoryview(message)
            assert view.readonly and view.format == "B" and view.obj is message
            assert len(view) == len(message) and view.tobytes() == value
            assert pa.py_buffer(view).address == pa.py_buffer(memoryview(message)).address
            assert pa.py_buffer(view).address != pa.py_buffer(value).address
            with pytest.raises(TypeError):
                view[0] = 0
            # Indexed and sliced as bytes is: an int per byte, bytes per slice, the same
            # errors for an index out of range or of the wrong type.
            assert [message[i] for i in range(len(message))] == list(value)
            assert message[-1] == value[-1]
            for cut in [slice(None), slice(3, 9), slice(-5, None), slice(None, None, -2),
                        slice(1, 200, 7), slice(50, 2)]:  # fmt: skip
                assert message[cut] == value[cut]
            with pytest.raises(IndexError, match="out of range"):
                message[len(message)]
            with pytest.raises(IndexError, match="out of range"):
                message[-len(message) - 1]
            with pytest.raises(TypeError, match=r"integers or slices .*not str.*attrs"):
                message["region"]  # type: ignore[call-overload]
            with pytest.raises(TypeError):
                message[0] = 1  # type: ignore[index]
            text = repr(message)
            assert text.startswith(
                f"Message(topic='{topic}', partition_key='{message.partition_key}', "
                f"message_id={message.message_id}, value="
            )
            if len(message) > 20:
                assert text.endswith(f"value={bytes(message)[:20]!r}... ({len(message)} bytes))")
            else:
                assert text.endswith(f"value={bytes(message)!r} ({len(message)} bytes))")
            # What another client's message has, asked of this one: error() is Kafka's
            # loop's first question (always None here), other names say what to use.
            assert message.error() is None
            for name, instead in [
                ("offset", "message_id"),
                ("partition", "partition_key"),
                ("headers", "attrs"),
                ("timestamp", "msg_time"),
                ("key", "no key"),
            ]:
                with pytest.raises(AttributeError, match=f"'{name}': .*{instead}"):
                    getattr(message, name)
            assert not hasattr(message, "offset") and getattr(message, "key", None) is None
            with pytest.raises(AttributeError, match=r"'nonesuch'$"):
                message.nonesuch  # noqa: B018 - any other name: the usual error
            views[bytes(message)] = view
            del message, view
        # The views outlive their messages (and the consumer's hold on their batches).
        for _ in range(3):
            consumer.poll(0.2)
        gc.collect()
    assert {view.tobytes() for view in views.values()} == {long_value, f"{marker}-s".encode()}


def test_messages_a_loop_keeps_stay_as_they_were_handed_out(master, topics):
    """The cursor reuses a Message its caller dropped for the next one; a message the
    caller keeps, in any way (a name, a list, a view of its bytes), is never touched: it
    still shows the value, id and index it was handed out with."""
    topic, marker = topics[1], uuid.uuid4().hex[:8]
    with new_reader(master, topic) as consumer:
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            for i in range(600):
                producer.send_async(topic, f"{marker}-{i}".encode())
            producer.flush()
        kept: list[tuple[tubemq.Message, bytes, int, int]] = []
        views: list[tuple[memoryview, bytes]] = []
        seen: set[bytes] = set()
        messages = iter(consumer)
        deadline = time.monotonic() + 45
        while len(seen) < 600:
            assert time.monotonic() < deadline, len(seen)
            # Both hand-outs: the iterator, and poll() (a name the loop rebinds).
            message = next(messages) if len(seen) % 2 else consumer.poll(1.0)
            if message is None or not bytes(message).startswith(marker.encode()):
                continue
            value = bytes(message)
            seen.add(value)
            if len(seen) % 3 == 0:
                kept.append((message, value, message.message_id, message.index))
            elif len(seen) % 3 == 1:
                views.append((memoryview(message), value))
        assert len(kept) == 200 and len(views) == 200
        for message, value, message_id, index in kept:
            assert (bytes(message), message.message_id, message.index) == (value, message_id, index)
        assert all(view.tobytes() == value for view, value in views)
        assert len({id(message) for message, *_ in kept}) == len(kept)
