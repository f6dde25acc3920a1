"""``Batch.values()`` against the real cluster: a fetched batch's values as one buffer
plus int64 offsets (docs/consumers.md, "Whole batches"), equal to the values of its
messages, for values no producer of ours writes (empty) and bytes that are no text."""

from __future__ import annotations

import gc
import time
import uuid

import pytest

import tubemq
from raw_frames import send_message

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}


def joined(consumer: tubemq.Consumer, partitions: int = 4) -> None:
    deadline = time.monotonic() + 40
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, consumer.assignment()
        assert consumer.poll_batch(0.2) is None  # a new "latest" group has nothing yet


@pytest.fixture
def batches(master, topics, cluster):
    """The batches holding our messages (a tag attribute marks them), and their values as
    sent: plain text, an empty value (our producer refuses to send one, a foreign one
    does not), bytes that are no UTF-8 and a NUL, one larger value."""
    topic, tag = topics[6], uuid.uuid4().hex[:10]
    sent = [b"first", b"", "zürich 北京".encode() + b"\xff\x00\xfe", b"x" * 5000, b"last"]
    with tubemq.Consumer(
        master=master,
        group=f"g_values_{tag}",
        topics=[topic],
        consume_from="latest",
        auto_commit=False,
        **FAST,
    ) as consumer:
        joined(consumer)
        for body in sent:
            send_message(cluster.broker_address, topic, 0, body, attribute=f"tag={tag}".encode())
        got: list[tubemq.Batch] = []
        ours = 0
        deadline = time.monotonic() + 30
        while ours < len(sent) and time.monotonic() < deadline:
            batch = consumer.poll_batch(0.5)
            if batch is None:
                continue
            consumer.commit(batch)
            tagged = sum(m.raw_attrs.get(b"tag") == tag.encode() for m in batch.messages())
            if tagged:
                got.append(batch)
                ours += tagged
        assert ours == len(sent)
    yield got, sent, tag


def _split(data: memoryview, offsets: memoryview) -> list[bytes]:
    return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]


def test_values_are_the_messages_values_in_one_buffer(batches):
    got, sent, tag = batches
    ours = []
    for batch in got:
        data, offsets = batch.values()
        assert data.readonly and offsets.readonly
        assert offsets.format == "q" and offsets.itemsize == 8
        assert len(offsets) == len(batch) + 1 and offsets[0] == 0 and offsets[-1] == len(data)
        values = _split(data, offsets)
        assert values == [bytes(m) for m in batch.messages()]
        ours += [v for v, m in zip(values, batch.messages()) if m.raw_attrs[b"tag"] == tag.encode()]
    assert ours == sent  # the empty value and the bytes that are no text included


def test_values_outlive_their_batch(batches):
    got, _, _ = batches
    batch = got[0]
    expected = [bytes(m) for m in batch.messages()]
    data, offsets = batch.values()
    got.clear()
    del batch
    gc.collect()
    filler = [bytes(len(data)) for _ in range(64)]  # reuse of freed memory would show
    assert _split(data, offsets) == expected
    del filler


def test_values_make_numpy_and_arrow_arrays_without_a_copy(batches):
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    got, _, _ = batches
    for batch in got:
        data, offsets = batch.values()
        ends = np.frombuffer(offsets, dtype=np.int64)
        assert ends.tolist() == offsets.tolist()
        array = pa.Array.from_buffers(
            pa.large_binary(), len(batch), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        array.validate(full=True)
        assert array.to_pylist() == [bytes(m) for m in batch.messages()]
        # No copy: Arrow's value buffer is the memory of `data`.
        assert array.buffers()[2].address == np.frombuffer(data, dtype=np.uint8).ctypes.data


def test_values_are_the_fetched_bytes_themselves(batches):
    # A fetch leaves the values one after another in the reply's buffer, so values()
    # copies nothing: message i's bytes are data[offsets[i]:...] in the same memory.
    np = pytest.importorskip("numpy")
    got, _, _ = batches

    def address(buffer: object) -> int:
        return int(np.frombuffer(buffer, dtype=np.uint8).ctypes.data)

    for batch in got:
        data, offsets = batch.values()
        for index, message in enumerate(batch.messages()):
            if len(message):
                assert address(memoryview(message)) == address(data) + offsets[index]
