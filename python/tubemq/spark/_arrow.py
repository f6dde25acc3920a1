"""The source's rows: their schema, and fetched batches as Arrow record batches.

A task hands Spark ``pyarrow.RecordBatch`` es rather than one tuple per message, which
spares Spark's per-row conversion. ``record_batch`` builds one from a fetched batch's
Arrow buffers (``Batch.arrow_columns()``, made in C++), with no Python object per
message; each value is copied once, from the fetched bytes into the binary column.
``BatchBuilder`` gathers ``Message`` objects one by one: the former path, kept as the
reference the tests and ``bench/spark_source_rate.py`` compare ``record_batch`` with.

Arrow and Spark strings are UTF-8, but a message's msgType and attributes are whatever
bytes its producer wrote. Both paths show bytes that are not UTF-8 as U+FFFD, one per
maximal subpart (what ``bytes.decode("utf-8", "replace")`` shows), and keep one entry per
attribute key as shown (the last). The value column is binary and exact;
``Message.raw_attrs`` has the exact attribute bytes (docs/spark.md).
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Collection, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tubemq.inlong import PackDecodeError, consumed_records

_logger = logging.getLogger("tubemq.spark")

# The columns, in order, of what spark.read.format("tubemq") returns.
SCHEMA_DDL = (
    "value binary, topic string, partition string, batch_offset bigint, message_id bigint, "
    "msg_type string, msg_time string, attrs map<string,string>, timestamp timestamp"
)

_ARROW_SCHEMA = pa.schema(
    [
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.string()),
        ("batch_offset", pa.int64()),
        ("message_id", pa.int64()),
        ("msg_type", pa.string()),
        ("msg_time", pa.string()),
        ("attrs", pa.map_(pa.string(), pa.string())),
        ("timestamp", pa.timestamp("us", tz="UTC")),
    ]
)


@functools.lru_cache(maxsize=4096)
def msg_time_micros(msg_time: str | None) -> int | None:
    """``yyyyMMddHHmm`` (the producer's local time, as TubeMQ writes it) as epoch µs."""
    if not msg_time:
        return None
    try:
        parsed = datetime.datetime.strptime(msg_time, "%Y%m%d%H%M")
    except ValueError:
        return None
    return int(parsed.timestamp()) * 1_000_000


def _readable(text: str) -> str:
    """A ``Message`` text field (surrogateescape form) as valid UTF-8 text: bad bytes
    become U+FFFD, as in the columns ``record_batch`` gets from C++."""
    if text.isascii():  # O(1): most text is left alone
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class BatchBuilder:
    """Collects messages column by column; ``take()`` returns them as one record batch."""

    def __init__(self) -> None:
        self._columns: list[list[Any]] = [[] for _ in _ARROW_SCHEMA]

    def __len__(self) -> int:
        return len(self._columns[0])

    def add(self, message: Any, batch_offset: int) -> None:
        value, topic, partition, offset, message_id, msg_type, msg_time, attrs, stamp = (
            self._columns
        )
        value.append(bytes(message))
        topic.append(message.topic)
        partition.append(message.partition_key)
        offset.append(batch_offset)
        message_id.append(message.message_id)
        kind = message.msg_type
        msg_type.append(None if kind is None else _readable(kind))
        text = message.msg_time
        msg_time.append(text)
        pairs = message.attrs
        if not all(key.isascii() and item.isascii() for key, item in pairs.items()):
            shown: dict[str, str] = {}
            for key, item in pairs.items():
                # Two bad keys may read the same: the later one stays, in its place.
                readable_key = _readable(key)
                shown.pop(readable_key, None)
                shown[readable_key] = _readable(item)
            pairs = shown
        attrs.append(list(pairs.items()))
        stamp.append(msg_time_micros(text))

    def take(self) -> pa.RecordBatch:
        arrays = [
            pa.array(column, type=field.type) for column, field in zip(self._columns, _ARROW_SCHEMA)
        ]
        self._columns = [[] for _ in _ARROW_SCHEMA]
        return pa.RecordBatch.from_arrays(arrays, schema=_ARROW_SCHEMA)


def _string_array(arrow_type: pa.DataType, column: tuple[Any, ...]) -> pa.Array:
    offsets, data, validity, nulls = column
    count = len(offsets) // 4 - 1
    buffers = [None if validity is None else pa.py_buffer(validity)]
    buffers += [pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(arrow_type, count, buffers, null_count=nulls)


def _timestamps(msg_time: pa.Array) -> pa.Array:
    """``msg_time_micros`` of every entry, computed once per distinct value."""
    distinct = pc.unique(msg_time)
    micros = pa.array(
        [msg_time_micros(text) for text in distinct.to_pylist()], _ARROW_SCHEMA.field(8).type
    )
    return micros.take(pc.index_in(msg_time, value_set=distinct))


def record_batch(
    batch: Any, kept: Collection[str] | None = None, skip_ids: Collection[int] | None = None
) -> pa.RecordBatch:
    """A fetched ``tubemq._core.Batch`` as rows of the source's schema: only messages of
    the msgTypes ``kept`` (all when None), without the message ids in ``skip_ids``."""
    count, values, ids, types, times, (attr_offsets, keys, items) = batch.arrow_columns()
    msg_type = _string_array(pa.string(), types)
    msg_time = _string_array(pa.string(), times)
    attrs = pa.MapArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), count + 1, [None, pa.py_buffer(attr_offsets)]),
        _string_array(pa.string(), keys),
        _string_array(pa.string(), items),
        type=_ARROW_SCHEMA.field(7).type,
    )
    message_id = pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(ids)])
    columns = [
        _string_array(pa.binary(), values),
        pa.repeat(pa.scalar(batch.topic, pa.string()), count),
        pa.repeat(pa.scalar(batch.partition_key, pa.string()), count),
        pa.repeat(pa.scalar(batch.offset, pa.int64()), count),
        message_id,
        msg_type,
        msg_time,
        attrs,
        _timestamps(msg_time),
    ]
    rows = pa.RecordBatch.from_arrays(columns, schema=_ARROW_SCHEMA)
    mask = None
    if kept is not None:
        wanted = pa.array(sorted(kept), pa.string())
        mask = pc.fill_null(pc.is_in(msg_type, value_set=wanted), False)
    if skip_ids:
        skipped = pa.array(sorted(skip_ids), pa.int64())
        outside = pc.invert(pc.is_in(message_id, value_set=skipped))
        mask = outside if mask is None else pc.and_(mask, outside)
    return rows if mask is None else rows.filter(mask)


def concat(batches: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
    """One record batch of several (of the source's schema)."""
    return batches[0] if len(batches) == 1 else pa.concat_batches(list(batches))


# The columns with option("decode", "inlongmsg"): one row per record of a pack.
DECODED_SCHEMA_DDL = (
    "value binary, attrs map<string,string>, create_time timestamp, record_index int, "
    "record_count int, topic string, partition string, batch_offset bigint, "
    "message_id bigint, msg_type string, msg_time string"
)

_DECODED_SCHEMA = pa.schema(
    [
        *(_ARROW_SCHEMA.field(name) for name in ("value", "attrs")),
        ("create_time", _ARROW_SCHEMA.field("timestamp").type),
        ("record_index", pa.int32()),
        ("record_count", pa.int32()),
        *(
            _ARROW_SCHEMA.field(name)
            for name in ("topic", "partition", "batch_offset", "message_id", "msg_type", "msg_time")
        ),
    ]
)


def decoded_batch(
    batch: Any,
    kept: Collection[str] | None = None,
    skip_ids: Collection[int] | None = None,
    skip_bad_packs: bool = False,
) -> pa.RecordBatch:
    """The records of the InLongMsg packs in a fetched batch, one row each, of the
    messages ``record_batch`` would keep. A message that is not a valid pack raises
    :class:`tubemq.inlong.PackDecodeError`, or is logged and left out with
    ``skip_bad_packs``."""
    columns: list[list[Any]] = [[] for _ in _DECODED_SCHEMA]
    value, attrs, create_time, index, count, topic, partition, offset, ids, types, times = columns
    for message in batch.messages():
        if kept is not None and message.msg_type not in kept:
            continue
        if skip_ids and message.message_id in skip_ids:
            continue
        try:
            records = consumed_records(message)
        except PackDecodeError as error:
            if not skip_bad_packs:
                raise
            _logger.warning("tubemq source: leaving out (decodeErrors=skip) %s", error)
            continue
        kind, text = message.msg_type, message.msg_time
        for record in records:
            value.append(bytes(record.body))
            attrs.append(list(record.attrs.items()))
            stamp = record.create_time_ms
            create_time.append(None if stamp is None else stamp * 1000)
            index.append(record.position)
            count.append(record.count)
            topic.append(message.topic)
            partition.append(message.partition_key)
            offset.append(message.batch_offset)
            ids.append(message.message_id)
            types.append(None if kind is None else _readable(kind))
            times.append(text)
    arrays = [pa.array(column, type=f.type) for column, f in zip(columns, _DECODED_SCHEMA)]
    return pa.RecordBatch.from_arrays(arrays, schema=_DECODED_SCHEMA)
