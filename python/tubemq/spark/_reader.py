"""One task's read: a partition from a start offset to an end offset, as Arrow batches.

The task takes its process's cached client-balanced consumer (in the process's reader
group for the topics, registered once for all its tasks, unless the query names a group),
assigns the partition at the start offset, and polls until the message before the end
offset has arrived. It never commits to a group anyone relies on: Spark's plan (batch)
or checkpoint (streaming) says what was read, so the same range read again yields the
same messages. Messages of a msgType the ``filters`` option leaves out are read and
dropped here, which keeps the end of a range exact.

The fetching runs on a thread of its own, ahead of Spark by at most ``prefetchBatches``
fetched batches (option; 0 reads on the task's thread): while Spark writes one record
batch to the JVM, the next fetch, its commit and its conversion to Arrow go on. The
consumer is used by that thread alone until it has stopped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from tubemq.errors import PartitionOccupiedError, ServerError, TimeoutError, TubeMQError
from tubemq.inlong import InLongMsgError
from tubemq.spark import _clients
from tubemq.spark._arrow import decoded_batch, record_batch
from tubemq.spark._offsets import ENTRY, ReadRange
from tubemq.spark._options import SourceOptions

_logger = logging.getLogger("tubemq.spark")

POLL_TIMEOUT_S = 0.5
# How often a prefetching thread blocked on a full queue looks whether to stop.
_STOP_CHECK_S = 0.1


class DataLossError(RuntimeError):
    """Messages a query planned to read are gone from the broker (``failOnDataLoss``)."""


def read_range(part: ReadRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    """The messages of ``part`` kept by the filters, as record batches (runs in a task);
    with ``decode``, the records of their InLongMsg packs."""
    if part.end <= part.start:
        return
    group = (
        part.group if options.group_given else _clients.reader_group(options.master, options.topics)
    )
    consumer = _clients.assigned_consumer(options.consumer_config(group))
    healthy = True
    reading = _RangeRead(consumer, part, options)
    try:
        if options.prefetch_batches:
            yield from reading.prefetched(options.prefetch_batches)
        else:
            yield from reading.batches()
    except InLongMsgError:
        raise  # a bad pack (decodeErrors=fail): the client itself is fine
    except TubeMQError:
        healthy = False
        raise
    finally:
        if healthy:
            try:
                consumer.unassign([part.key], commit=False)
            except TubeMQError as error:
                _logger.warning("releasing %s failed (%s); dropping the client", part.key, error)
                healthy = False
        if not healthy:
            _clients.discard(consumer)


class _Stopped(Exception):
    """The task stopped reading (Spark closed the iterator): the fetching thread ends."""


class _Failed:
    """What the fetching thread raised, for the task's thread to raise again."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = object()


class _RangeRead:
    """Reads ``[start, end)`` of one partition exactly, batch by batch.

    TubeMQ offsets are positions in an index that the partitions of a store share, and a
    message carries none of its own: a fetched batch says where it starts, and committing
    it (in the task's private group) tells where it ends. A batch that ends at or before
    ``end`` belongs to the range whole. A batch that starts before ``end`` and ends after
    it is split by reading ``[end, its end)`` once more: the message ids found there are
    the ones past ``end`` (docs/offsets.md).
    """

    def __init__(self, consumer: Any, part: ReadRange, options: SourceOptions) -> None:
        self._consumer = consumer
        self._part = part
        self._options = options
        kept = options.filters.get(part.topic)
        self._kept = frozenset(kept) if kept else None
        self._stop = threading.Event()

    def prefetched(self, depth: int) -> Iterator[pa.RecordBatch]:
        """``batches()`` computed on a thread, at most ``depth`` record batches ahead."""
        ahead: queue.Queue[Any] = queue.Queue(maxsize=depth)

        def put(item: Any) -> bool:
            while not self._stop.is_set():
                try:
                    ahead.put(item, timeout=_STOP_CHECK_S)
                    return True
                except queue.Full:
                    continue
            return False

        def fetch() -> None:
            try:
                for chunk in self.batches():
                    if not put(chunk):
                        return
                put(_DONE)
            except _Stopped:
                pass
            except BaseException as error:  # raised again on the task's thread
                put(_Failed(error))

        thread = threading.Thread(target=fetch, name=f"tubemq-read-{self._part.key}", daemon=True)
        thread.start()
        try:
            while True:
                item = ahead.get()
                if item is _DONE:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                yield item
        finally:
            # Before the task releases the partition: the consumer is the thread's until
            # it ends (within a poll timeout or an RPC deadline).
            self._stop.set()
            thread.join()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The range's messages, a record batch per fetched batch (no copy beyond the
        one into Arrow)."""
        part = self._part
        self._assign(part.start)
        self._check_start()
        position = part.start
        while position < part.end:
            batch = self._next_batch(position, part.end)
            if batch is None:
                break  # the partition holds nothing more before the end
            begin = batch.offset
            if begin >= part.end:
                break
            following = self._commit(batch)
            beyond = None
            if following > part.end:
                beyond = self._ids_between(part.end, following)
                following = part.end
            if self._options.decode:
                chunk = decoded_batch(batch, self._kept, beyond, self._options.skip_bad_packs)
            else:
                chunk = record_batch(batch, kept=self._kept, skip_ids=beyond)
            if chunk.num_rows:
                yield chunk
            position = max(following, position + ENTRY)

    def _check_start(self) -> None:
        """Whether the broker still holds the planned start. Its answer to the assignment
        says where reading begins: the start itself, or the first offset it still holds
        if retention deleted the start. The first batch cannot tell: the broker may report
        it at any index position up to its first message, and the entries before that
        message belong to the store's other partitions (docs/offsets.md)."""
        key, start = self._part.key, self._part.start
        deadline = time.monotonic() + self._options.read_timeout_s
        while (held := self._consumer.offsets().get(key)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    1000,
                    f"{key}: no answer to its assignment at offset {start} within "
                    f"{self._options.read_timeout_s} s (option readTimeoutMs)",
                )
            time.sleep(0.01)
        begins, end = int(held["offset"]), int(held["max_offset"])
        if begins < start <= end:
            # Reading from here would hand Spark messages before the range: a retried
            # task gets a fresh assignment instead.
            raise ServerError(
                1000,
                f"{key}: the broker placed the reader at offset {begins}, not at the "
                f"planned start {start} it holds",
            )
        if begins > start:
            self._loss(
                f"{key} resumed at offset {begins}, after the planned start {start}: "
                "the messages in between were deleted"
            )

    def _next_batch(self, position: int, end: int) -> Any | None:
        """The next fetched batch of the partition; None once its position has passed
        ``end`` without one (the index entries left belong to other partitions)."""
        consumer, key = self._consumer, self._part.key
        last_progress = time.monotonic()
        while True:
            if self._stop.is_set():
                raise _Stopped()
            try:
                batch = consumer.poll_batch(timeout=POLL_TIMEOUT_S)
            except PartitionOccupiedError:
                # Another reader of the group holds it (e.g. a killed attempt of this
                # task whose registration has not expired yet): wait and assign again.
                self._assign(position)
                continue
            if batch is not None and batch.partition_key == key and len(batch):
                return batch
            reached = consumer.offsets().get(key, {}).get("offset", -1)
            if reached >= end:
                return None
            if reached > position:
                position, last_progress = reached, time.monotonic()
            elif time.monotonic() - last_progress > self._options.read_timeout_s:
                raise TimeoutError(
                    1000,
                    f"{key} did not move past offset {position} for "
                    f"{self._options.read_timeout_s} s while reading up to {end} "
                    "(option readTimeoutMs)",
                )

    def _commit(self, batch: Any) -> int:
        """Commits ``batch`` in the private group; returns where it ends (the broker's
        answer to the commit, so the commit waits for it)."""
        self._consumer.commit(batch, asynchronous=False)
        return int(self._consumer.offsets()[self._part.key]["offset"])

    def _ids_between(self, start: int, end: int) -> set[int]:
        """Message ids of the partition at index positions ``[start, end)``."""
        ids: set[int] = set()
        self._assign(start)
        position = start
        while position < end:
            batch = self._next_batch(position, end)
            if batch is None or batch.offset >= end:
                break
            ids.update(message.message_id for message in batch.messages())
            position = max(self._commit(batch), position + ENTRY)
        return ids

    def _assign(self, offset: int) -> None:
        """Assigns the partition at ``offset``, retrying while another member holds it."""
        consumer, key = self._consumer, self._part.key
        deadline = time.monotonic() + self._options.occupied_retry_s
        delay = 0.5
        while True:
            try:
                stale = [held for held in consumer.assignment() if held != key]
                if stale:
                    consumer.unassign(stale, commit=False)
                consumer.assign({key: offset})
                return
            except PartitionOccupiedError as error:
                if time.monotonic() + delay > deadline:
                    raise
                _logger.info("%s is occupied (%s); retrying in %.1f s", key, error, delay)
                if self._stop.wait(delay):
                    raise _Stopped() from None
                delay = min(delay * 2, 5.0)

    def _loss(self, text: str) -> None:
        if self._options.fail_on_data_loss:
            raise DataLossError(text + "; set failOnDataLoss=false to go on without them")
        _logger.warning("tubemq source: %s; going on (failOnDataLoss=false)", text)
