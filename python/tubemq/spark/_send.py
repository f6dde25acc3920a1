"""Rows of a DataFrame sent as messages, in a Spark task: what the ``tubemq`` sink and
``send_dataframe`` share. It needs no data source API, so it works on PySpark 3.5 too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

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
from tubemq.spark._options import SinkOptions, sink_options

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
) -> tuple[int, tuple[str, ...]]:
    """Sends ``rows`` and waits for every confirmation (runs inside a Spark task);
    returns how many rows it sent and to which topics."""
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
            producer.produce(  # the callback is all the sink needs: no handle per row
                topic,
                value,
                key=row[key_at] if key_at is not None else None,
                partition=row[partition_at] if partition_at is not None else None,
                attrs={k: v for k, v in attrs.items() if v is not None} if attrs else None,
                msg_type=row[type_at] if type_at is not None else None,
                msg_time=msg_time,
                on_delivery=failures,
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
    return count, tuple(sorted(topics))


def send_dataframe(
    frame: Any,
    master: str,
    topic: str | None = None,
    *,
    options: Mapping[str, str] | None = None,
) -> int:
    """Sends every row of ``frame`` as a message; returns the number of rows sent.

    The same columns and options as the sink (``value``, optional ``topic``, ``key``,
    ``attrs``, ``msg_type``, ``msg_time``; ``flushTimeoutMs``, ``tubemq.<producer key>``),
    run as a plain Spark job (``mapPartitions``) instead of a data source write, so it
    needs no Python data source API: this is how to write to TubeMQ on PySpark 3.5.
    Each task returns only once the broker confirmed each of its sends; a failed send
    fails the task, and a retried task sends its rows again (at least once).
    """
    settings = {**(options or {}), "master": master}
    if topic is not None:
        settings["topic"] = topic
    checked = sink_options(settings)
    columns = check_schema(frame.schema, checked)

    def send_partition(rows: Iterator[Row]) -> Iterator[int]:
        yield write_rows(checked, columns, rows)[0]

    return int(sum(frame.rdd.mapPartitions(send_partition).collect()))
