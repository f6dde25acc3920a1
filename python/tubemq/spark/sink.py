"""The ``tubemq`` sink: ``df.write.format("tubemq")`` and ``df.writeStream.format("tubemq")``.

Each row becomes one message. Columns (anything else is refused when the query starts):

========== ================================ ===============================================
column     type                             meaning
========== ================================ ===============================================
value      binary or string (required)      the message body; strings are sent as UTF-8
topic      string                           the topic; null or absent: the ``topic`` option
key        string                           partition key: rows with one key go to one
                                            partition (the producer hashes it)
partition  string or int                    the partition to send the row to: its key
                                            ``brokerId:topic:partitionId`` or its id; null:
                                            routed as usual. Not with a non-null ``key``
attrs      map<string,string>               message attributes
msg_type   string                           the msgType consumers can filter on
msg_time   timestamp or string              the message time (``yyyyMMddHHmm`` if string)
========== ================================ ===============================================

Each task sends its rows asynchronously through its process's cached producer, flushes,
and returns its commit message only when the broker has confirmed every send; any failed
send fails the task. A retried task or a re-run micro-batch sends its rows again, so the
sink is at-least-once: a consumer may see a row twice, never lose one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    Row,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from tubemq.errors import ConfigError, TimeoutError
from tubemq.spark import _clients
from tubemq.spark._options import SinkOptions

_logger = logging.getLogger("tubemq.spark")

_STRING_MAP = MapType(StringType(), StringType())
_COLUMNS: dict[str, tuple[tuple[DataType, ...], str]] = {
    "value": ((BinaryType(), StringType()), "binary or string"),
    "topic": ((StringType(),), "string"),
    "key": ((StringType(),), "string"),
    "partition": ((StringType(), IntegerType(), LongType()), "string or int"),
    "attrs": ((_STRING_MAP, MapType(StringType(), StringType(), False)), "map<string,string>"),
    "msg_type": ((StringType(),), "string"),
    "msg_time": ((TimestampType(), TimestampNTZType(), StringType()), "timestamp or string"),
}


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task sent: row count and the topics it wrote to."""

    rows: int
    topics: tuple[str, ...]


def check_schema(schema: StructType, options: SinkOptions) -> tuple[str, ...]:
    """The columns to use, in schema order; raises ConfigError for a schema the sink refuses."""
    names = [field.name for field in schema.fields]
    if "value" not in names:
        raise ConfigError(
            f"the tubemq sink needs a 'value' column (binary or string); the DataFrame has {names}",
            key="value",
        )
    for field in schema.fields:
        if field.name not in _COLUMNS:
            raise ConfigError(
                f"the tubemq sink does not know the column {field.name!r}; it takes "
                f"{', '.join(_COLUMNS)} (select or drop other columns first, e.g. "
                "to_json(struct(...)) AS value)",
                key=field.name,
            )
        allowed, description = _COLUMNS[field.name]
        if field.dataType not in allowed:
            raise ConfigError(
                f"the tubemq sink's column {field.name!r} must be {description}, "
                f"got {field.dataType.simpleString()}",
                key=field.name,
            )
    if "topic" not in names and options.topic is None:
        raise ConfigError(
            "the tubemq sink needs the option 'topic' or a 'topic' column", key="topic"
        )
    return tuple(names)


class _Failures:
    """The first failed send of a task, recorded from the producer's delivery thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: BaseException | None = None
        self.count = 0

    def __call__(self, error: BaseException | None, result: Any) -> None:
        if error is None:
            return
        with self._lock:
            self.count += 1
            if self.first is None:
                self.first = error


def write_rows(
    options: SinkOptions, columns: tuple[str, ...], rows: Iterator[Row]
) -> SinkCommitMessage:
    """Sends ``rows`` and waits for every confirmation (runs inside a Spark task)."""
    producer = _clients.producer(options.producer_config())
    published = set(producer.published_topics())
    index = {name: position for position, name in enumerate(columns)}
    value_at = index["value"]
    topic_at = index.get("topic")
    key_at = index.get("key")
    partition_at = index.get("partition")
    attrs_at = index.get("attrs")
    type_at = index.get("msg_type")
    time_at = index.get("msg_time")
    failures = _Failures()
    count = 0
    topics: set[str] = set()
    try:
        for row in rows:
            value = row[value_at]
            if value is None:
                raise ValueError(f"the tubemq sink got a null 'value' in row {count}")
            if isinstance(value, str):
                value = value.encode()
            topic = (row[topic_at] if topic_at is not None else None) or options.topic
            if topic is None:
                raise ValueError(
                    f"row {count} has a null 'topic' and the sink has no 'topic' option"
                )
            if topic not in published:
                producer.publish(topic)
                published.add(topic)
            topics.add(topic)
            attrs = row[attrs_at] if attrs_at is not None else None
            msg_time = row[time_at] if time_at is not None else None
            producer.send_async(
                topic,
                value,
                key=row[key_at] if key_at is not None else None,
                attrs={k: v for k, v in attrs.items() if v is not None} if attrs else None,
                msg_type=row[type_at] if type_at is not None else None,
                msg_time=msg_time,
                callback=failures,
                partition=row[partition_at] if partition_at is not None else None,
            )
            count += 1
            if failures.first is not None:
                break
    finally:
        # Whatever happened, leave no send of this task in flight for the next one.
        pending = producer.flush(timeout=options.flush_timeout_s)
    if failures.first is not None:
        raise RuntimeError(
            f"{failures.count} of {count} sends failed; the first: {failures.first}"
        ) from failures.first
    if pending:
        raise TimeoutError(
            1000,
            f"{pending} of {count} sends were not confirmed within {options.flush_timeout_s} s",
        )
    return SinkCommitMessage(rows=count, topics=tuple(sorted(topics)))


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.rows for m in messages if isinstance(m, SinkCommitMessage))


class TubeMQWriter(DataSourceWriter):
    """Batch writes: ``df.write.format("tubemq")``."""

    def __init__(self, options: SinkOptions, columns: tuple[str, ...]) -> None:
        self._options = options
        self._columns = columns

    def write(self, iterator: Iterator[Row]) -> SinkCommitMessage:
        return write_rows(self._options, self._columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _logger.info("tubemq sink: %d rows written", _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _logger.warning(
            "tubemq sink: write aborted after %d rows were sent (they stay sent)",
            _total(messages),
        )


class TubeMQStreamWriter(DataSourceStreamWriter):
    """Streaming writes: ``df.writeStream.format("tubemq")``."""

    def __init__(self, options: SinkOptions, columns: tuple[str, ...]) -> None:
        self._options = options
        self._columns = columns

    def write(self, iterator: Iterator[Row]) -> SinkCommitMessage:
        return write_rows(self._options, self._columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _logger.info("tubemq sink: batch %d, %d rows written", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _logger.warning(
            "tubemq sink: batch %d aborted after %d rows were sent (they stay sent)",
            batchId,
            _total(messages),
        )
