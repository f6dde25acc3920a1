"""Offsets: what the topics hold now, where a query starts and ends, how work is cut up.

A position is a broker index offset: every message takes one 28-byte index entry, so a
partition's readable range is ``[low, high)`` and holds ``(high - low) / 28`` messages.
An offset map is a plain ``{partition key: offset}`` dict, JSON-safe, and is what
streaming checkpoints record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

try:
    from pyspark.sql.datasource import InputPartition
except ImportError:
    # PySpark 3.5 has no data source API: no ReadRange is ever handed to Spark there,
    # but the barrier helper still resolves offsets with this module.
    InputPartition = object  # type: ignore[misc,assignment]

import tubemq
from tubemq.errors import ConfigError, PartitionOccupiedError, ServerError, TubeMQError
from tubemq.spark import _clients
from tubemq.spark._options import EARLIEST, LATEST, Offsets, SourceOptions

_logger = logging.getLogger("tubemq.spark")

ENTRY = getattr(tubemq, "INDEX_ENTRY_SIZE", 28)

# Partition ids of store n start at n * 10000 (TubeMQ's META_STORE_INS_BASE).
_STORE_BASE = 10000

# How long the planner waits for the broker to report a partition's range.
_QUERY_TIMEOUT_S = 30.0

# The broker's refusal of a partition id beyond the topic's count it knows.
_NOT_YET_ON_BROKER = "Wrong partition value"


@dataclass(frozen=True)
class PartitionRange:
    """What a partition holds now: index offsets ``[low, high)``."""

    low: int
    high: int


@dataclass(frozen=True)
class ReadRange(InputPartition):
    """One Spark task's work: partition ``key`` from ``start`` to ``end`` (exclusive).

    ``group`` is the consumer group the task reads in: pieces of one partition read in
    parallel need groups of their own, since a group holds a partition once.
    """

    key: str
    topic: str
    start: int
    end: int
    group: str

    @property
    def messages(self) -> int:
        return (self.end - self.start) // ENTRY


def topic_of(key: str) -> str:
    """The topic of a partition key ``brokerId:topic:partitionId``."""
    return key.split(":")[1]


def query_ranges(options: SourceOptions) -> dict[str, PartitionRange]:
    """The readable range of every subscribable partition of the options' topics.

    Runs on the driver, with a consumer of a group of its own that assigns each partition
    at offset 0 (the broker moves it to the partition's first offset), reads the ranges
    the broker reported, and releases the partitions without committing.
    """
    config = options.consumer_config(options.planner_group())
    consumer = _clients.assigned_consumer(config)
    try:
        return _query(consumer, options)
    except TubeMQError:
        _clients.discard(consumer)
        raise


def _query(consumer: Any, options: SourceOptions) -> dict[str, PartitionRange]:
    wanted = set(options.topics)
    metas = [m for m in consumer.partitions(refresh=True) if m.topic in wanted]
    keys = sorted(m.key for m in metas if m.subscribable)
    found = {m.topic for m in metas}
    if wanted - found:
        _logger.warning("tubemq source: no partitions found for %s", sorted(wanted - found))
    if not keys:
        return {}
    held = consumer.assignment()
    if held:
        consumer.unassign(held, commit=False)
    deadline = time.monotonic() + _QUERY_TIMEOUT_S
    delay = 0.2
    while True:
        try:
            consumer.assign(dict.fromkeys(keys, 0))
            break
        except PartitionOccupiedError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except ServerError as error:
            # A partition just added to a topic: the master lists it a moment before its
            # broker loads the new topic settings and accepts readers for it.
            if _NOT_YET_ON_BROKER not in str(error) or time.monotonic() + delay > deadline:
                raise
            _logger.info("tubemq source: a new partition is not ready yet (%s)", error)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    try:
        while True:
            reported = consumer.offsets()
            if all(key in reported for key in keys) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        consumer.unassign(keys, commit=False)
    missing = [key for key in keys if key not in reported]
    if missing:
        raise tubemq.TimeoutError(1000, f"no offsets reported for {missing}")
    ranges = {}
    for key in keys:
        high = int(reported[key]["max_offset"])
        low = int(reported[key].get("offset") or 0)
        ranges[key] = PartitionRange(low=min(max(low, 0), high), high=high)
    return ranges


def resolve(offsets: Offsets, ranges: Mapping[str, PartitionRange], option: str) -> dict[str, int]:
    """Concrete offsets per partition for a starting or ending position."""
    unknown = sorted(set(offsets.per_key) - set(ranges))
    if unknown:
        raise ConfigError(
            f"option '{option}' names partitions the topics do not have (or that are not "
            f"readable now): {unknown}; known: {sorted(ranges)}",
            key=option,
        )
    resolved = {}
    for key, span in ranges.items():
        position = offsets.for_key(key)
        if position == EARLIEST:
            resolved[key] = span.low
        elif position == LATEST:
            resolved[key] = span.high
        else:
            if position % ENTRY:
                raise ConfigError(
                    f"option '{option}': offset {position} of {key!r} is not a multiple of "
                    f"{ENTRY} (an index entry)",
                    key=option,
                )
            resolved[key] = int(position)
    return resolved


def plan(
    starts: Mapping[str, int], ends: Mapping[str, int], group: str, min_partitions: int
) -> list[ReadRange]:
    """Read ranges for every partition with data between start and end.

    An end below its start (a partition reset under a streaming query, see
    ``TubeMQStreamReader``) reads the partition from offset 0, which the broker clamps
    to its first message.

    With ``min_partitions`` above the count, the largest ranges are halved (on index
    entry boundaries) until there are enough; the result depends only on the arguments,
    so a re-planned micro-batch reads exactly the same messages.
    """
    pieces: list[tuple[str, int, int]] = []
    for key, end in sorted(ends.items()):
        start = starts.get(key, 0)
        if end < start:
            # The partition went back below the start (a streaming query found it
            # re-created, with failOnDataLoss=false): read what it holds now.
            start = 0
        if end > start:
            pieces.append((key, start, end))
    while len(pieces) < min_partitions:
        widest = max(range(len(pieces)), key=lambda i: pieces[i][2] - pieces[i][1], default=None)
        if widest is None:
            break
        key, start, end = pieces[widest]
        count = (end - start) // ENTRY
        if count < 2:
            break
        middle = start + (count // 2) * ENTRY
        pieces[widest : widest + 1] = [(key, start, middle), (key, middle, end)]
    ranges = []
    seen: dict[str, int] = {}
    for key, start, end in pieces:
        nth = seen.get(key, 0)
        seen[key] = nth + 1
        ranges.append(
            ReadRange(
                key=key,
                topic=topic_of(key),
                start=start,
                end=end,
                group=group if nth == 0 else f"{group}-{nth}",
            )
        )
    return ranges


def store_of(key: str) -> tuple[str, str, int]:
    """The store a partition belongs to: its partitions share one index (and offsets).

    TubeMQ numbers the partitions of store ``n`` from ``n * 10000``."""
    broker, topic, partition = key.split(":")
    return broker, topic, int(partition) // _STORE_BASE


def cap_messages(
    starts: Mapping[str, int], ends: Mapping[str, int], max_messages: int
) -> dict[str, int]:
    """``ends`` cut so that at most ``max_messages`` messages lie between ``starts`` and
    them.

    The partitions of a store share its index, one entry per message, so a store's step
    is an index span: every partition of the store stops at most ``span`` past the
    store's lowest start, which bounds the store's messages by ``span / 28``. The budget
    is shared among stores in proportion to their backlog (rounded down; what rounding
    leaves goes one message at a time to the largest remaining backlogs, in store order),
    so the cut depends only on the arguments.
    """
    stores: dict[tuple[str, str, int], list[str]] = {}
    for key in sorted(ends):
        if ends[key] > starts.get(key, 0):
            stores.setdefault(store_of(key), []).append(key)
    low = {store: min(starts.get(k, 0) for k in keys) for store, keys in stores.items()}
    backlog = {
        store: (max(ends[k] for k in keys) - low[store]) // ENTRY for store, keys in stores.items()
    }
    total = sum(backlog.values())
    if total <= max_messages:
        return dict(ends)
    share = {store: (count * max_messages) // total for store, count in backlog.items()}
    left = max_messages - sum(share.values())
    for store in sorted(backlog, key=lambda s: (share[s] - backlog[s], s)):
        if left <= 0:
            break
        if share[store] < backlog[store]:
            share[store] += 1
            left -= 1
    capped = dict(ends)
    for store, keys in stores.items():
        limit = low[store] + share[store] * ENTRY
        for key in keys:
            capped[key] = min(ends[key], max(starts.get(key, 0), limit))
    return capped
