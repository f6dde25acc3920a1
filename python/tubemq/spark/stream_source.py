"""Streaming reads: ``spark.readStream.format("tubemq")``.

Offsets are ``{partition key: index offset}`` dicts, and the checkpoint is their only
record: the source commits nothing to TubeMQ. ``initialOffset`` resolves
``startingOffsets`` (default ``latest``); ``latestOffset`` asks the brokers for every
partition's end, adds partitions that appeared since (read from their first message),
and cuts the step to ``maxMessagesPerTrigger`` messages. A micro-batch reads exactly the
ranges between its two offsets, so a query restarted from its checkpoint re-reads an
unfinished batch message for message and goes on without a gap.

PySpark 4.2 and later pass the previous end and a read limit to ``latestOffset``; older
4.x versions call it without arguments, and the reader then counts from the end it
returned last (after a restart from a checkpoint that end is unknown until the first
batch has been planned, so the first step after such a restart is not cut).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from tubemq.spark import _clients
from tubemq.spark._offsets import (
    ENTRY,
    ReadRange,
    cap_messages,
    plan,
    query_ranges,
    resolve,
    store_of,
)
from tubemq.spark._options import SourceOptions
from tubemq.spark._reader import DataLossError, read_range

try:  # PySpark 4.2+: read limits and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - PySpark 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]

_logger = logging.getLogger("tubemq.spark")


class TubeMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._position: dict[str, int] | None = None  # the end Spark was last given
        self._target: dict[str, int] | None = None  # Trigger.AvailableNow's end
        self._latest: dict[str, int] | None = None  # the brokers' ends, last asked

    def initialOffset(self) -> dict[str, Any]:
        ranges = query_ranges(self._options)
        start = resolve(self._options.starting, ranges, "startingOffsets")
        self._position = dict(start)
        return start

    def getDefaultReadLimit(self) -> Any:
        if self._options.max_messages_per_trigger and ReadMaxRows is not None:
            return ReadMaxRows(self._options.max_messages_per_trigger)
        if ReadAllAvailable is not None:
            return ReadAllAvailable()
        return super().getDefaultReadLimit()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {key: span.high for key, span in query_ranges(self._options).items()}

    def latestOffset(
        self, start: dict[str, Any] | None = None, read_limit: Any = None
    ) -> dict[str, Any]:
        base = start if start is not None else self._position
        highs = {key: span.high for key, span in query_ranges(self._options).items()}
        self._latest = dict(highs)
        if self._target is not None:
            highs = {
                key: min(high, self._target[key])
                for key, high in highs.items()
                if key in self._target
            }
        if base is None:
            _logger.warning(
                "tubemq source: latestOffset without a start (PySpark < 4.2 after a "
                "restart); this step is not cut to maxMessagesPerTrigger"
            )
            end = dict(highs)
        else:
            end = _advance(base, highs)
            for key, high in self._reset_partitions(base, highs).items():
                end[key] = high  # below the start: plan() reads it again from its first message
            max_messages = self._max_messages(read_limit)
            if max_messages is not None:
                end = cap_messages(base, end, max_messages)
            min_messages = getattr(read_limit, "min_rows", None)
            if min_messages and _messages_between(base, end) < min_messages:
                end = dict(base)
        self._position = end
        return end

    def _reset_partitions(
        self, base: Mapping[str, int], highs: Mapping[str, int]
    ) -> dict[str, int]:
        """Partitions whose broker holds less than the query has already read (the
        topic was re-created, or its store replaced): the messages between their new
        end and ``base`` are gone. Raises :class:`DataLossError` with
        ``failOnDataLoss``; otherwise returns them with their new ends, to be read
        again from their first message."""
        reset = {key: high for key, high in highs.items() if key in base and high < int(base[key])}
        if not reset:
            return {}
        described = ", ".join(
            f"{key} ends at {high}, before offset {int(base[key])}"
            for key, high in sorted(reset.items())
        )
        text = (
            f"tubemq source: {described}, where the query has already read to; the broker "
            "lost those messages (topic re-created or store replaced)"
        )
        if self._options.fail_on_data_loss:
            raise DataLossError(
                text + "; set failOnDataLoss=false to read such partitions again from "
                "their first message"
            )
        _logger.warning("%s; reading them again from their first message", text)
        return reset

    def _max_messages(self, read_limit: Any) -> int | None:
        if read_limit is None:  # PySpark < 4.2: the option is all there is
            return self._options.max_messages_per_trigger
        return getattr(read_limit, "max_rows", None)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if self._position is None:
            self._position = dict(end)
        return plan(start, end, self._options.group, self._options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ReadRange):
            return iter(())
        return read_range(partition, self._options)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # nothing to commit in TubeMQ: the checkpoint is the record

    def stop(self) -> None:
        _clients.close_for("assigned", self._options.consumer_config(self._options.planner_group()))


def _advance(base: Mapping[str, int], highs: Mapping[str, int]) -> dict[str, int]:
    """The next end: each known partition at its high (never behind ``base``), new ones
    with data included from their first message."""
    end = dict(base)
    for key, high in highs.items():
        if key in base:
            end[key] = max(int(base[key]), high)
        elif high > 0:
            end[key] = high
    return end


def _messages_between(start: Mapping[str, int], end: Mapping[str, int]) -> int:
    """At most how many messages lie between two offset maps (per store, whose
    partitions share one index)."""
    spans: dict[tuple[str, str, int], tuple[int, int]] = {}
    for key, value in end.items():
        begin = start.get(key, 0)
        if value <= begin:
            continue
        low, high = spans.get(store_of(key), (begin, value))
        spans[store_of(key)] = (min(low, begin), max(high, value))
    return sum((high - low) // ENTRY for low, high in spans.values())
