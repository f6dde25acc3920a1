"""Long-running consumption inside ``df.mapInArrow(fn, schema, barrier=True)``.

>>> fn, schema = consume_in_barrier(master, ["events"], idle_timeout_s=10)
>>> frame = spark.range(0, 2, 1, 2).mapInArrow(fn, schema, barrier=True)

Each task of the barrier stage joins one bound-consume session (``session_key``) of a
server-balanced group as one of ``source_count`` = number-of-tasks members. Barrier mode
starts every task at once, and the master holds the partitions back until all members
registered, so no partition moves between tasks while they read. Each member names its
share of the partitions (every n-th partition key, n = number of tasks) with the offset
to start from (``bound_offsets``); the master gives each share to the member that named
it. A task yields record batches with the source's columns (``SCHEMA_DDL``) plus
``next_offset`` until a stop condition holds.

Spark runs a barrier stage again as a whole when one of its tasks fails (and discards
the failed attempt's output), so what a task read must not move any position a later
attempt starts from. Every stage attempt therefore gets a group and session of its own
(named after the lowest task attempt id among its tasks): it starts exactly at the
planned offsets, whatever an earlier attempt read or committed, and members of that
earlier attempt that are still registered can neither block nor steer it. Within an
attempt, each fetched batch is committed at once, only to move that attempt's reading on.

What a run read is kept with its output: ``next_offset`` is where the row's partition
continues after the row's fetch. A later run continues where the *written* output ends
with ``resume=written_positions(spark.read.parquet(path))``; output that Spark never
committed (an aborted job, a killed driver) holds no positions, so its messages are read
again. Exactly once, provided each run's output is written atomically (Spark's file
sinks are).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import tubemq
from tubemq._config import CLIENT_KEYS, partition_key_topic
from tubemq.spark import _clients
from tubemq.spark._arrow import SCHEMA_DDL, concat, record_batch
from tubemq.spark._files import materialize, ship
from tubemq.spark._offsets import query_ranges, resolve
from tubemq.spark._options import LATEST, source_options

__all__ = ["BARRIER_SCHEMA_DDL", "consume_in_barrier", "share_of", "written_positions"]

# The source's columns and where each row's partition continues after the row's fetch.
BARRIER_SCHEMA_DDL = SCHEMA_DDL + ", next_offset bigint"

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
    resume: Mapping[str, int] | None = None,
) -> tuple[Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], str]:
    """Returns ``(fn, schema)`` for ``df.mapInArrow(fn, schema, barrier=True)``.

    Runs on the driver: resolves ``starting_offsets`` (``"earliest"``, ``"latest"`` or
    ``{partition key: offset or "earliest"/"latest"}``; keys left out start at the
    latest) against what the brokers hold now; ``resume`` (``written_positions()`` of
    an earlier run's output) overrides it for the partitions it names. Every attempt of
    the stage starts at exactly these offsets, in a group and session of its own
    (``group`` is their prefix; a new one per call unless given).

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
    extra = ship(config or {})  # TLS files: their bytes go with the task
    owned = sorted(_OWNED_KEYS & set(extra))
    if owned:
        raise tubemq.ConfigError(
            f"consume_in_barrier sets {owned} itself; pass them as its arguments", key=owned[0]
        )
    for name in ("decode", "decode_errors"):
        if name in extra:  # it reads whole batches, which decode leaves as they are
            raise tubemq.ConfigError(
                f"consume_in_barrier does not decode InLongMsg packs ({name!r}); decode its "
                "value column with tubemq.inlong.decode, or read with "
                'spark.read.format("tubemq").option("decode", "inlongmsg")',
                key=name,
            )
    for name, value in (("max_messages", max_messages), ("batch_rows", batch_rows)):
        if value is not None and value < 1:
            raise tubemq.ConfigError(f"{name} must be at least 1, got {value}", key=name)
    text = starting_offsets if isinstance(starting_offsets, str) else json.dumps(starting_offsets)
    options = source_options(
        {"master": master, "topic": ",".join(topics), "startingOffsets": text}, streaming=True
    )
    # The driver's offset query connects as the tasks will (TLS, authentication).
    client_keys = {key.name for key in CLIENT_KEYS}
    connection = {key: value for key, value in extra.items() if key in client_keys}
    options = dataclasses.replace(options, client={**options.client, **connection})
    try:
        starts = resolve(options.starting, query_ranges(options), "starting_offsets")
    finally:  # the driver's offset query client is not needed again
        _clients.close_for("assigned", options.consumer_config(options.planner_group()))
    if not starts:
        raise tubemq.ConfigError(f"no readable partitions in {topics}", key="topics")
    starts.update(_checked_resume(resume, topics))
    run = uuid.uuid4().hex[:12]
    task = _Task(
        consumer_config={
            "consume_from": "earliest",
            **extra,
            "master": master,
            "group": f"{group or 'spark-barrier'}-{run}",
            "topics": topics,
            "session_key": run,
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
    return task, BARRIER_SCHEMA_DDL


def written_positions(frame: Any) -> dict[str, int]:
    """Where a run continues after the rows ``frame`` holds (what earlier runs of
    ``consume_in_barrier`` wrote, with their ``partition`` and ``next_offset``
    columns): per partition, the furthest ``next_offset``. Pass it as ``resume``."""
    from pyspark.sql import functions

    rows = frame.groupBy("partition").agg(functions.max("next_offset").alias("next")).collect()
    return {row["partition"]: int(row["next"]) for row in rows if row["next"] is not None}


def _checked_resume(resume: Mapping[str, int] | None, topics: Sequence[str]) -> dict[str, int]:
    if resume is None:
        return {}
    if not isinstance(resume, Mapping):
        raise tubemq.ArgumentTypeError(
            "resume must map partition keys to offsets (see written_positions())", key="resume"
        )
    checked: dict[str, int] = {}
    for key, offset in resume.items():
        if partition_key_topic(key) not in topics:
            raise tubemq.ConfigError(
                f"resume names {key!r}, not a partition key of {list(topics)}", key="resume"
            )
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise tubemq.ConfigError(
                f"resume: the offset of {key} must be a non-negative int, got {offset!r}",
                key="resume",
            )
        checked[key] = offset
    return checked


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
        # A group and session per stage attempt: see the module's docstring. PySpark has
        # no stage attempt number, but the tasks of one attempt can agree on the lowest
        # of their task attempt ids, which no other attempt shares.
        attempt = min(int(id_) for id_ in context.allGather(str(context.taskAttemptId())))
        config = {
            **self.consumer_config,
            "group": f"{self.consumer_config['group']}-{attempt}",
            "session_key": f"{self.consumer_config['session_key']}-{attempt}",
            "source_count": tasks,
            "bound_offsets": {key: self.starts[key] for key in share},
        }
        _logger.info(
            "barrier task %d/%d (stage attempt key %d) joins %s for %s",
            index,
            tasks,
            attempt,
            config["group"],
            share,
        )
        consumer = tubemq.Consumer(materialize(config))
        try:
            yield from self._consume(consumer, bound=bool(share))
        finally:
            consumer.close()

    def _consume(self, consumer: tubemq.Consumer, bound: bool) -> Iterator[pa.RecordBatch]:
        gathered: list[pa.RecordBatch] = []
        rows = 0
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
            batch = consumer.poll_batch(timeout=_POLL_TIMEOUT_S)
            if batch is not None:
                # This attempt's own group: the commit only moves its reading on, and
                # tells where the partition continues (kept with the rows): the broker's
                # answer, so the commit waits for it.
                consumer.commit(batch, asynchronous=False)
                if len(batch):
                    idle_since = time.monotonic()
                    oldest = oldest or idle_since
                    next_offset = consumer.offsets()[batch.partition_key]["offset"]
                    gathered.append(_with_next_offset(record_batch(batch), next_offset))
                    rows += len(batch)
            elif idle_since is None and consumer.assignment():
                idle_since = time.monotonic()
            if bound and consumer.bound_offsets_applied is False:
                # The master allocated the session before this member's first assignment
                # (behaviour.md 3.10): its partitions would start at consume_from, not
                # at the planned offsets. Failing the task makes Spark run the stage
                # again (or abort it, visibly) instead of writing rows it did not plan.
                raise RuntimeError(
                    "this barrier task's bound offsets were not applied (the session was "
                    "allocated before its first assignment); the stage must run again"
                )
            due = oldest is not None and time.monotonic() - oldest >= self.linger_s
            if rows and (rows >= self.batch_rows or batch is None or due):
                yield concat(gathered)
                yielded += rows
                gathered, rows, oldest = [], 0, None
        if gathered:
            yield concat(gathered)


def _with_next_offset(rows: pa.RecordBatch, next_offset: int) -> pa.RecordBatch:
    column = pa.repeat(pa.scalar(next_offset, pa.int64()), rows.num_rows)
    return pa.RecordBatch.from_arrays(
        [*rows.columns, column], names=[*rows.schema.names, "next_offset"]
    )
