"""Long-running consumption inside ``df.mapInArrow(fn, schema, barrier=True)``.

>>> fn, schema = consume_in_barrier(master, ["events"], idle_timeout_s=10)
>>> frame = spark.range(0, 2, 1, 2).mapInArrow(fn, schema, barrier=True)

Each task of the barrier stage joins one bound-consume session (``session_key``) of a
server-balanced group as one of ``source_count`` = number-of-tasks members. Barrier mode
starts every task at once, and the master holds the partitions back until all members
registered, so no partition moves between tasks while they read. Each member names its
share of the partitions (every n-th partition key, n = number of tasks) with the offset
to start from (``bound_offsets``); the master gives each share to the member that named
it. A task yields record batches with the source's columns (``SCHEMA_DDL``) until a stop
condition holds, and commits the fetched batches it yielded once Spark asks for the next
record batch (the previous one was handed over).

Why a server-balanced (bound) member and not an ``AssignedConsumer`` per task: the bound
session makes the master place the partitions and start them at the named offsets on the
first allocation only; a task attempt that joins the same session later resumes from the
group's commits, which is what a retried attempt needs, with no offset bookkeeping here.

Delivery is at least once; see the README (Spark: consuming in a barrier stage) for what
this does not guarantee.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import tubemq
from tubemq.spark import _clients
from tubemq.spark._arrow import SCHEMA_DDL, concat, record_batch
from tubemq.spark._offsets import query_ranges, resolve
from tubemq.spark._options import LATEST, source_options

__all__ = ["SCHEMA_DDL", "consume_in_barrier", "share_of"]

_logger = logging.getLogger("tubemq.spark")

# How long one poll waits; bounds how late a stop condition is noticed.
_POLL_TIMEOUT_S = 0.25
# Keys the helper sets on the consumer itself.
_OWNED_KEYS = frozenset(
    {"master", "group", "topics", "session_key", "source_count", "bound_offsets", "auto_commit"}
)


def share_of(keys: Sequence[str], tasks: int, task: int) -> list[str]:
    """Task ``task``'s partitions among ``tasks`` tasks: every ``tasks``-th key of the
    sorted keys, starting at the ``task``-th (an even split, whatever the keys' hashes)."""
    return sorted(keys)[task::tasks]


def consume_in_barrier(
    master: str,
    topics: Sequence[str],
    *,
    group: str | None = None,
    starting_offsets: str | Mapping[str, int | str] = LATEST,
    max_messages: int | None = None,
    idle_timeout_s: float | None = 10.0,
    deadline_s: float | None = None,
    assignment_timeout_s: float = 60.0,
    batch_rows: int = 4096,
    linger_s: float = 1.0,
    config: Mapping[str, Any] | None = None,
) -> tuple[Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], str]:
    """Returns ``(fn, schema)`` for ``df.mapInArrow(fn, schema, barrier=True)``.

    Runs on the driver: resolves ``starting_offsets`` (``"earliest"``, ``"latest"`` or
    ``{partition key: offset or "earliest"/"latest"}``; keys left out start at the
    latest) against what the brokers hold now, and picks a new ``session_key`` (and a
    new ``group`` unless given). Every attempt of the returned function joins that
    session: a task that joins while other members are in the group resumes at the
    group's commits, but once all members left the master starts the session over from
    the starting offsets, so a retried stage may read everything again (README).

    Each task (one per partition of the DataFrame ``fn`` is applied to; its rows are
    ignored) stops after the first of: ``max_messages`` messages yielded (checked after
    each fetched batch, which is yielded whole, so a task may yield up to one batch
    more), ``idle_timeout_s`` without a message once it held a partition, ``deadline_s``
    after it started, or ``assignment_timeout_s`` without ever holding a partition. Rows
    are yielded in record batches of about ``batch_rows``, at least every ``linger_s``
    while messages arrive. ``config`` adds consumer keys (e.g. ``confirm_timeout_ms``).
    """
    topics = [topics] if isinstance(topics, str) else list(topics)
    if not topics:
        raise tubemq.ConfigError("consume_in_barrier needs at least one topic", key="topics")
    extra = dict(config or {})
    owned = sorted(_OWNED_KEYS & set(extra))
    if owned:
        raise tubemq.ConfigError(
            f"consume_in_barrier sets {owned} itself; pass them as its arguments", key=owned[0]
        )
    for name, value in (("max_messages", max_messages), ("batch_rows", batch_rows)):
        if value is not None and value < 1:
            raise tubemq.ConfigError(f"{name} must be at least 1, got {value}", key=name)
    text = starting_offsets if isinstance(starting_offsets, str) else json.dumps(starting_offsets)
    options = source_options(
        {"master": master, "topic": ",".join(topics), "startingOffsets": text}, streaming=True
    )
    try:
        starts = resolve(options.starting, query_ranges(options), "starting_offsets")
    finally:  # the driver's offset query client is not needed again
        _clients.close_for("assigned", options.consumer_config(options.planner_group()))
    if not starts:
        raise tubemq.ConfigError(f"no readable partitions in {topics}", key="topics")
    task = _Task(
        consumer_config={
            "consume_from": "earliest",
            **extra,
            "master": master,
            "group": group or f"spark-barrier-{uuid.uuid4().hex[:12]}",
            "topics": topics,
            "session_key": uuid.uuid4().hex,
            "auto_commit": False,
        },
        starts=starts,
        max_messages=max_messages,
        idle_timeout_s=idle_timeout_s,
        deadline_s=deadline_s,
        assignment_timeout_s=assignment_timeout_s,
        batch_rows=batch_rows,
        linger_s=linger_s,
    )
    return task, SCHEMA_DDL


@dataclass(frozen=True)
class _Task:
    """The function Spark pickles to the workers: plain settings, no client."""

    consumer_config: dict[str, Any]
    starts: dict[str, int]
    max_messages: int | None
    idle_timeout_s: float | None
    deadline_s: float | None
    assignment_timeout_s: float
    batch_rows: int
    linger_s: float

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        for _ in batches:  # the input rows only set the number of tasks
            pass
        context = BarrierTaskContext.get()  # raises outside barrier mode
        tasks, index = len(context.getTaskInfos()), context.partitionId()
        share = share_of(list(self.starts), tasks, index)
        config = {
            **self.consumer_config,
            "source_count": tasks,
            "bound_offsets": {key: self.starts[key] for key in share},
        }
        _logger.info(
            "barrier task %d/%d (attempt %d) joins %s for %s",
            index,
            tasks,
            context.attemptNumber(),
            config["group"],
            share,
        )
        consumer = tubemq.Consumer(config)
        try:
            yield from self._consume(consumer)
        finally:
            consumer.close()  # without auto_commit: what was not committed is read again

    def _consume(self, consumer: tubemq.Consumer) -> Iterator[pa.RecordBatch]:
        gathered: list[pa.RecordBatch] = []
        rows = 0
        unsettled: list[Any] = []  # fetched batches not committed yet
        started = time.monotonic()
        idle_since: float | None = None  # set once a partition is held
        oldest: float | None = None  # when the rows gathered began to gather
        yielded = 0
        while True:
            now = time.monotonic()
            if self.deadline_s is not None and now - started >= self.deadline_s:
                break
            if self.max_messages is not None and yielded + rows >= self.max_messages:
                break
            if idle_since is None and now - started >= self.assignment_timeout_s:
                _logger.warning("barrier task held no partition for %.0f s", now - started)
                break
            if (
                idle_since is not None
                and self.idle_timeout_s is not None
                and now - idle_since >= self.idle_timeout_s
            ):
                break
            # Whole fetched batches: a commit covers every message of its fetch.
            batch = consumer.poll_batch(timeout=_POLL_TIMEOUT_S)
            if batch is not None:
                unsettled.append(batch)
                if len(batch):
                    idle_since = time.monotonic()
                    oldest = oldest or idle_since
                    gathered.append(record_batch(batch))
                    rows += len(batch)
            elif idle_since is None and consumer.assignment():
                idle_since = time.monotonic()
            due = oldest is not None and time.monotonic() - oldest >= self.linger_s
            if rows and (rows >= self.batch_rows or batch is None or due):
                yield concat(gathered)
                # Spark took the rows: their fetches count as consumed.
                self._commit(consumer, unsettled)
                yielded += rows
                gathered, rows, oldest = [], 0, None
        if gathered:
            yield concat(gathered)
        self._commit(consumer, unsettled)

    @staticmethod
    def _commit(consumer: tubemq.Consumer, unsettled: list[Any]) -> None:
        for batch in unsettled:
            try:
                consumer.commit(batch)
            except tubemq.TubeMQError as error:
                # The partition moved to another member (or the commit was lost): its
                # new holder reads the batch again. At least once, not a task failure.
                _logger.warning("commit of %s failed: %s", batch.confirm_context, error)
        unsettled.clear()
