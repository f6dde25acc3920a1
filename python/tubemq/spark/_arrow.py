"""The source's rows: their schema, and messages gathered into Arrow record batches.

A task hands Spark ``pyarrow.RecordBatch`` es rather than one tuple per message, which
spares Spark's per-row conversion; each value is copied once, from the fetched buffer
into the batch's binary column.
"""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa

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


def msg_time_micros(msg_time: str | None) -> int | None:
    """``yyyyMMddHHmm`` (the producer's local time, as TubeMQ writes it) as epoch µs."""
    if not msg_time:
        return None
    try:
        parsed = datetime.datetime.strptime(msg_time, "%Y%m%d%H%M")
    except ValueError:
        return None
    return int(parsed.timestamp()) * 1_000_000


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
        msg_type.append(message.msg_type)
        text = message.msg_time
        msg_time.append(text)
        attrs.append(list(message.attrs.items()))
        stamp.append(msg_time_micros(text))

    def take(self) -> pa.RecordBatch:
        arrays = [
            pa.array(column, type=field.type) for column, field in zip(self._columns, _ARROW_SCHEMA)
        ]
        self._columns = [[] for _ in _ARROW_SCHEMA]
        return pa.RecordBatch.from_arrays(arrays, schema=_ARROW_SCHEMA)
