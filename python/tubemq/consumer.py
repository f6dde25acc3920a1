"""``tubemq.Consumer``: consumes topics as a member of a server-balanced group.

The master assigns the partitions of the group's topics to its members; the consumer
fetches batches from the partitions it holds and hands out their messages one by one.
A batch is committed when all its messages were handed out and the next one is asked
for (``auto_commit``, the default), or explicitly with :meth:`Consumer.commit`;
:meth:`Consumer.nack` rolls it back so it is delivered again. Delivery is at least once.

Everything runs on the caller's thread: ``poll()`` blocks in C++ with the GIL released
and wakes as soon as a partition is ready.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

from tubemq import _core, _lifecycle, _log
from tubemq._config import CONSUMER_SCHEMA, native_client_config
from tubemq.errors import ConfigError, TubeMQError

Message = _core.Message
_logger = logging.getLogger("tubemq.consumer")

# Offsets are positions in the broker's index, whose entries are 28 bytes each.
_INDEX_ENTRY_SIZE = 28


class Consumer:
    """A member of a consumer group.

    ``Consumer(master="127.0.0.1:8715", group="g1", topics=["t1"])``; ``topics`` may be a
    dict of topic to msgType filter items. The constructor joins the group and returns
    once the master has answered; partitions arrive with the following rebalance.
    ``on_assign(keys)`` / ``on_revoke(keys)`` are called from ``poll()``, on the caller's
    thread, with the partition keys this member gained or lost since the last call.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        on_assign: Callable[[list[str]], Any] | None = None,
        on_revoke: Callable[[list[str]], Any] | None = None,
        **overrides: Any,
    ) -> None:
        self._config = CONSUMER_SCHEMA.validate(config, overrides)
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._assigned: set[str] = set()
        self._pid = os.getpid()
        self._auto_commit = self._config["auto_commit"]
        _log.start_log_dispatcher()
        native = _core.Consumer(
            native_client_config(self._config),
            self._config["group"],
            {topic: set(items) for topic, items in self._config["topics"].items()},
            self._config["consume_from"],
            self._config["msg_not_found_wait_ms"],
            self._config["confirm_timeout_ms"],
        )
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

    @property
    def client_id(self) -> str:
        return self._live().client_id

    def poll(self, timeout: float = 1.0) -> Message | None:
        """The next message, or None if none arrived within ``timeout`` seconds."""
        native = self._live()
        if not self._pending:
            if self._auto_commit:
                self._commit_outstanding(native)
            batch = native.poll(timeout)
            self._notify_assignment(native)
            if batch is None:
                return None
            self._outstanding[batch.confirm_context] = batch
            self._pending = batch.messages()
            self._pending.reverse()
        return self._pending.pop()

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

    def commit(self, message: Message) -> None:
        """Commits the batch ``message`` came in (all its messages count as consumed)."""
        self._confirm(message, consumed=True)

    def nack(self, message: Message) -> None:
        """Rolls back the batch ``message`` came in: it will be delivered again."""
        self._confirm(message, consumed=False)

    def offsets(self) -> dict[str, dict[str, int]]:
        """Per held partition: committed ``offset`` and ``max_offset`` (index positions, as
        the broker counts them) and ``lag`` in messages, as of the last fetch or commit."""
        return {
            key: {
                "offset": current,
                "max_offset": maximum,
                "lag": max(0, maximum - current) // _INDEX_ENTRY_SIZE,
            }
            for key, (current, maximum) in self._live().offsets().items()
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

    def assignment(self) -> list[str]:
        """Keys of the partitions this member holds now."""
        return sorted(self._live().held_partitions())

    def close(self, timeout: float | None = 5.0) -> None:
        """Commits (with auto_commit), releases every partition, leaves the group."""
        if self._native is None:
            return
        native = self._live()
        try:
            if self._auto_commit and not self._pending:
                self._commit_outstanding(native)
        finally:
            self._native = None
            _lifecycle.untrack(self)
            native.close(timeout)

    @property
    def closed(self) -> bool:
        return self._native is None

    def __enter__(self) -> Consumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _notify_assignment(self, native: _core.Consumer) -> None:
        # Rebalances happen on I/O threads; the callbacks run here, on the caller's
        # thread, between fetches, with the partitions that left first.
        if self._on_assign is None and self._on_revoke is None:
            return
        held = set(native.held_partitions())
        revoked, assigned = sorted(self._assigned - held), sorted(held - self._assigned)
        self._assigned = held
        if revoked and self._on_revoke is not None:
            self._on_revoke(revoked)
        if assigned and self._on_assign is not None:
            self._on_assign(assigned)

    def _confirm(self, message: Message, consumed: bool) -> None:
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

    def _live(self) -> _core.Consumer:
        return _lifecycle.usable(self._native, self._pid, "consumer")
