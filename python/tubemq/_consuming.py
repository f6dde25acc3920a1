"""What both consumer kinds share: polling, committing, offsets, pausing, closing.

A fetch brings a batch from one partition; its messages are handed out one by one. A
batch is committed when all its messages were handed out and the next one is asked for
(``auto_commit``, the default), or explicitly with ``commit()``; ``nack()`` rolls it
back so it is delivered again. Delivery is at least once.

Everything runs on the caller's thread: ``poll()`` blocks in C++ with the GIL released
and wakes as soon as a partition is ready.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from tubemq import _core, _lifecycle
from tubemq._stats import StatsCallback, StatsReporter
from tubemq.errors import ConfigError, TubeMQError

Message = _core.Message
_logger = logging.getLogger("tubemq.consumer")

INDEX_ENTRY_SIZE = 28
"""Bytes per message in the broker's index: offsets are index positions, so a span of
offsets covers ``span // INDEX_ENTRY_SIZE`` messages of the partition's store."""


# The pid of this process, kept current across fork() by the hook below, so that the
# per-message fast path of poll() can check for a forked client without a getpid()
# system call per message.
_process_pid = os.getpid()


def _note_fork() -> None:
    global _process_pid
    _process_pid = os.getpid()


os.register_at_fork(after_in_child=_note_fork)


class ConsumerBase:
    """The shared half of :class:`tubemq.Consumer` and :class:`tubemq.AssignedConsumer`."""

    _kind = "consumer"

    def __init__(
        self,
        config: dict[str, Any],
        native: _core.Consumer,
        stats_cb: StatsCallback | None = None,
    ) -> None:
        self._config = config
        self._stats: StatsReporter | None = None
        self._pid = os.getpid()
        self._auto_commit: bool = config["auto_commit"]
        self._native: _core.Consumer | None = native
        self._pending: list[Message] = []
        self._outstanding: dict[str, _core.Batch] = {}  # fetched, not yet committed
        try:
            native.start()
        except BaseException:
            native.close(timeout=1.0)
            self._native = None
            raise
        _lifecycle.track(self)
        if stats_cb is not None:
            self._stats = StatsReporter(self.metrics, stats_cb, config["stats_interval_ms"])

    @property
    def client_id(self) -> str:
        return self._live().client_id

    def poll(self, timeout: float = 1.0) -> Message | None:
        """The next message, or None if none arrived within ``timeout`` seconds."""
        if self._pending and self._native is not None and self._pid == _process_pid:
            return self._pending.pop()  # the batch at hand: no native call needed
        native = self._live()
        if not self._pending:
            if self._auto_commit:
                self._commit_outstanding(native)
            batch = native.poll(timeout)
            self._after_fetch(native)
            if batch is None:
                return None
            self._outstanding[batch.confirm_context] = batch
            self._pending = batch.messages()
            self._pending.reverse()
        return self._pending.pop()

    def poll_batch(self, timeout: float = 1.0) -> _core.Batch | None:
        """The next fetched batch whole, or None if none arrived within ``timeout``.

        A ``Batch`` has ``topic``, ``partition_key``, ``offset`` (where it starts),
        ``messages()`` and ``arrow_columns()`` (its messages as Arrow buffers, for
        ``tubemq.spark``); ``commit(batch)`` / ``nack(batch)`` settle it (with
        ``auto_commit``, the next poll commits it). Not while ``poll()`` is still handing
        out the messages of an earlier batch."""
        native = self._live()
        if self._pending:
            raise ConfigError(
                "poll_batch() while poll() has messages of a batch left to hand out",
                key="poll_batch",
            )
        if self._auto_commit:
            self._commit_outstanding(native)
        batch = native.poll(timeout)
        self._after_fetch(native)
        if batch is None:
            return None
        self._outstanding[batch.confirm_context] = batch
        return batch

    def consume(self, max_messages: int = 100, timeout: float = 1.0) -> list[Message]:
        """Up to ``max_messages`` messages; returns early, possibly empty, after ``timeout``."""
        messages: list[Message] = []
        message = self.poll(timeout)
        while message is not None:
            messages.append(message)
            if len(messages) >= max_messages:
                break
            message = self.poll(0) if self._pending else None
        return messages

    def __iter__(self) -> Iterator[Message]:
        while True:
            message = self.poll(1.0)
            if message is not None:
                yield message

    def commit(self, message: Message | _core.Batch) -> None:
        """Commits the batch ``message`` came in, or a batch from ``poll_batch()`` (all
        its messages count as consumed)."""
        self._confirm(message, consumed=True)

    def nack(self, message: Message | _core.Batch) -> None:
        """Rolls back the batch ``message`` came in: it will be delivered again."""
        self._confirm(message, consumed=False)

    def offsets(self) -> dict[str, dict[str, int]]:
        """Per held partition: committed ``offset`` and ``max_offset`` (index positions, as
        the broker counts them) and ``lag``, the index entries between them. Partitions
        of one store share its index, so ``lag`` counts the store's messages behind."""
        return {
            key: {
                "offset": current,
                "max_offset": maximum,
                "lag": max(0, maximum - current) // INDEX_ENTRY_SIZE,
            }
            for key, (current, maximum) in self._live().offsets().items()
        }

    def metrics(self) -> dict[str, Any]:
        """Counts since the client was made — ``registrations``, ``heartbeats_ok`` and
        ``heartbeats_failed``, ``rebalance_events``, ``fetches``, ``fetch_errors``,
        ``batches``, ``received`` (messages), ``bytes``, ``committed`` (batches the broker
        acknowledged), ``commit_failures``, ``reconnects`` (connections to the master or a
        broker opened again after the previous one was lost) — and now: ``assigned``
        partition count, ``in_flight`` (messages fetched, not yet handed out) and ``lag``
        per partition."""
        native = self._live()
        counters = dict(native.counters())
        counters["received"] = counters.pop("messages")
        counters["committed"] = counters.pop("commits")
        return {
            **counters,
            "assigned": len(native.held_partitions()),
            "in_flight": len(self._pending),
            "lag": {key: item["lag"] for key, item in self.offsets().items()},
        }

    def pause(self, partition_keys: list[str]) -> None:
        """Stops fetching from these held partitions; they stay assigned to this member.
        Messages already handed out from a paused partition's batch are not recalled."""
        self._set_paused(partition_keys, pause=True)

    def resume(self, partition_keys: list[str]) -> None:
        """Fetches from these partitions again."""
        self._set_paused(partition_keys, pause=False)

    def paused(self) -> list[str]:
        return sorted(self._live().paused())

    def assignment(self) -> list[str]:
        """Keys of the partitions this member holds now."""
        return sorted(self._live().held_partitions())

    def close(self, timeout: float | None = 5.0) -> None:
        """Commits (with auto_commit), releases every partition, leaves the group."""
        if self._native is None:
            return
        native = self._live()
        if self._stats is not None:
            self._stats.stop()
        try:
            if self._auto_commit and not self._pending:
                self._commit_outstanding(native)
        finally:
            self._native = None
            self._pending = []
            _lifecycle.untrack(self)
            native.close(timeout)

    @property
    def closed(self) -> bool:
        return self._native is None

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _buffered(self) -> bool:
        """Whether the next poll() can return a message without waiting."""
        return bool(self._pending)

    # --- for subclasses ---

    def _after_fetch(self, native: _core.Consumer) -> None:
        """Called on the caller's thread after every fetch attempt."""

    def _settle_partition(self, partition_key: str, consumed: bool) -> None:
        """Confirms the batches of one partition still outstanding here, and forgets
        their messages not handed out yet."""
        native = self._live()
        for context, batch in list(self._outstanding.items()):
            if batch.partition_key != partition_key:
                continue
            del self._outstanding[context]
            self._pending = [m for m in self._pending if m.confirm_context != context]
            try:
                native.confirm(context, consumed)
            except TubeMQError as error:
                _logger.warning("settling %s did not complete: %s", context, error)

    def _live(self) -> _core.Consumer:
        return _lifecycle.usable(self._native, self._pid, self._kind)

    # --- internals ---

    def _set_paused(self, partition_keys: list[str], pause: bool) -> None:
        native = self._live()
        if isinstance(partition_keys, str):
            raise TypeError("pass a list of partition keys, e.g. consumer.assignment()")
        unknown = [
            key
            for key in partition_keys
            if not (native.pause(key) if pause else native.resume(key))
        ]
        if unknown:
            raise ConfigError(f"not held by this consumer: {unknown}", key="partition_keys")

    def _confirm(self, message: Message | _core.Batch, consumed: bool) -> None:
        native = self._live()
        context = message.confirm_context
        if context in self._outstanding:
            del self._outstanding[context]
            self._pending = [m for m in self._pending if m.confirm_context != context]
        native.confirm(context, consumed)

    def _commit_outstanding(self, native: _core.Consumer) -> None:
        # Auto-commit never fails a poll: a batch whose partition moved away (2004) goes
        # to its new holder, and a commit RPC that failed is settled by the partition's
        # next fetch. Either way delivery stays at least once.
        outstanding, self._outstanding = self._outstanding, {}
        for context in outstanding:
            try:
                native.confirm(context, True)
            except TubeMQError as error:
                _logger.warning("auto-commit of %s did not complete: %s", context, error)
