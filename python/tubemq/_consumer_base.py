"""What both consumer kinds share: polling, committing, offsets, pausing, closing.

A fetch brings a batch from one partition; its messages are handed out one by one. The
broker keeps one position per partition and moves it a whole batch at a time, so:

* ``commit(message)`` says that ``message`` and every earlier message of its batch are
  processed. The batch is confirmed to the broker once its last message is committed;
  until then the rest of the batch keeps being handed out, and the partition delivers
  nothing new. ``commit()`` commits every message handed out so far; ``commit(batch)``
  a batch from ``poll_batch()``.
* With ``auto_commit`` (the default) a batch whose messages were all handed out counts as
  processed when the next one is asked for.
* ``nack(message)`` rolls the whole batch back: it is delivered again, the messages
  already handed out included, and its messages not handed out yet are not.
* A batch that is not confirmed when the consumer closes, or within
  ``confirm_timeout_ms``, is rolled back the same way.

No call confirms a message that was not handed out. Delivery is at least once.

With ``decode="inlongmsg"`` each message is an InLongMsg pack and ``poll()`` hands out
its records one by one (:class:`tubemq.inlong.ConsumedRecord`, knowing its ``message``).
A message counts as handed out once its last record is. So:

* ``commit(record)`` of a pack's last record commits its message (and the earlier
  messages of the batch, as above). ``commit(record)`` of an earlier record commits only
  the messages before its pack: the pack is committed with its last record. The broker
  keeps no position inside a message: a pack that is rolled back comes again whole.
* ``commit()`` commits every message whose records were all handed out.
* A message that is not a valid pack makes ``poll()`` raise
  :class:`tubemq.inlong.PackDecodeError` once (``decode_errors="raise"``, the default),
  or is logged and passed over (``"skip"``, counted in ``metrics()["decode_errors"]``).
  Either way it counts as handed out, with no records: ``commit()`` and auto-commit
  settle it like any other message, ``nack(error.consumed_message)`` has the batch
  delivered again.
* ``poll_batch()`` hands out raw batches whatever ``decode`` says.

Everything runs on the caller's thread: ``poll()`` blocks in C++ with the GIL released
and wakes as soon as a partition is ready. The messages of the batch at hand are handed
out by a native cursor (``_core.MessageCursor``): ``poll()`` takes one in a single C
call, and ``for message in consumer`` is one native ``__next__`` per message until the
batch runs out (issue 18).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Union

from tubemq import _core, _lifecycle
from tubemq._config import MAX_TIMEOUT_S, check_timeout
from tubemq._stats import StatsCallback, StatsReporter
from tubemq.errors import ArgumentTypeError, CommitError, ConfigError, TubeMQError
from tubemq.inlong import ConsumedRecord, PackDecodeError, consumed_records

Message = _core.Message

if TYPE_CHECKING:
    # What poll() hands out: messages, or records with decode="inlongmsg". The default
    # keeps a bare ``Consumer`` annotation meaning a consumer of messages.
    from typing_extensions import TypeVar

    Item = TypeVar("Item", Message, ConsumedRecord, default=Message)
else:
    from typing import TypeVar

    Item = TypeVar("Item")

# What commit() and nack() take.
Committable = Union[Message, _core.Batch, ConsumedRecord]
_logger = logging.getLogger("tubemq.consumer")

INDEX_ENTRY_SIZE = 28
"""Bytes per message in the broker's index: offsets are index positions, so a span of
offsets covers ``span // INDEX_ENTRY_SIZE`` messages of the partition's store."""


def _wait_s(timeout: object, name: str = "timeout") -> float:
    """A poll's timeout: 0 (do not wait) up to a year, None for no bound. The common
    case (a sane float or int) costs two comparisons: polls are a hot path."""
    if (type(timeout) is float or type(timeout) is int) and 0 <= timeout <= MAX_TIMEOUT_S:
        return timeout
    checked = check_timeout(timeout, name, allow_none=True, allow_zero=True)
    return MAX_TIMEOUT_S if checked is None else checked


def _commit_wait(asynchronous: object) -> bool | None:
    """commit()'s ``asynchronous`` as the core's ``wait``: None (as configured) stays None."""
    if asynchronous is None:
        return None
    if type(asynchronous) is not bool:
        raise ArgumentTypeError(
            f"asynchronous must be True, False or None, got {type(asynchronous).__name__}",
            key="asynchronous",
        )
    return not asynchronous


def _no_message(timeout: object) -> None:
    """poll()'s first try with decode="inlongmsg": records are not in the cursor."""
    return None


def _check_keys(partition_keys: object, name: str = "partition_keys") -> list[str]:
    if isinstance(partition_keys, (str, bytes)) or not isinstance(
        partition_keys, (list, tuple, set, frozenset)
    ):
        raise ArgumentTypeError(
            f"{name} must be a list of partition keys (e.g. consumer.assignment()), "
            f"got {type(partition_keys).__name__}",
            key=name,
        )
    for key in partition_keys:
        # Only the type: keys come from the server, possibly with surrogate escapes.
        if not isinstance(key, str):
            raise ArgumentTypeError(
                f"{name} must hold partition keys (str), got {type(key).__name__}", key=name
            )
    return list(partition_keys)


class _Unsettled:
    """A fetched batch not confirmed to the broker yet, and how much of it is committed.

    The cursor (``_core.MessageCursor.commit``) raises ``committed`` of the batch at hand
    itself, by that name, for commit(message) of a message before the batch's last."""

    __slots__ = ("batch", "committed", "context", "size", "warned")

    def __init__(self, batch: _core.Batch) -> None:
        self.batch = batch
        self.context: str = batch.confirm_context
        self.size = len(batch)
        self.committed = 0  # messages 0 .. committed-1 are processed
        self.warned = False


_SETTLED_MEMORY = 1024
"""How many confirmed or rolled-back batches a consumer remembers, so that a late commit
of one of their messages is answered truthfully (a no-op, or CommitError)."""


class ConsumerBase(Generic[Item]):
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
        self._pid = _lifecycle.process_pid
        self._auto_commit: bool = config["auto_commit"]
        self._native: _core.Consumer | None = native
        # The batch being handed out and the next message of it. poll() tries it first
        # (_take: one C call that also accepts only a plain timeout); with decode, records
        # are handed out instead, so poll() has no message to take.
        self._cursor = _core.MessageCursor(MAX_TIMEOUT_S)
        self._decode = config["decode"] == "inlongmsg"
        self._skip_bad_packs = config["decode_errors"] == "skip"
        self._take: Callable[[object], Message | None] = (
            _no_message if self._decode else self._cursor.take
        )
        self._records: list[ConsumedRecord] = []  # of the pack being handed out, reversed
        self._decode_errors = 0
        self._deferred: PackDecodeError | None = None  # for the poll after a consume()
        self._outstanding: dict[str, _Unsettled] = {}  # by confirm context
        self._settled: dict[str, bool] = {}  # recently settled contexts: consumed?
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

    def poll(self, timeout: float | None = 1.0) -> Item | None:
        """The next message (with ``decode="inlongmsg"``: the next record), or None if
        none arrived within ``timeout`` seconds (0: do not wait; None: wait until one
        arrives)."""
        # The hot path: a message of the batch at hand, for a plain timeout. The cursor
        # is cleared by close() and hands out nothing after a fork(), so the checks of
        # _live() are left to the slow path.
        message = self._take(timeout)
        if message is not None:
            return message  # type: ignore[return-value]
        return self._poll_slowly(timeout)

    def _poll_slowly(self, timeout: object) -> Item | None:
        """poll() without a message at hand (or with a timeout to check, or records)."""
        wait = _wait_s(timeout)
        if self._decode:
            return self._poll_record(wait)  # type: ignore[return-value]
        return self._poll_message(wait)  # type: ignore[return-value]

    def _poll_message(self, timeout: float) -> Message | None:
        message = self._cursor.take(timeout)
        if message is not None:
            return message
        batch = self._next_batch(self._live(), timeout, self._cursor.load)
        if batch is None:
            return None
        # None for a batch left empty by local filtering: nothing arrived to hand out.
        return self._cursor.take(0)

    def _poll_record(self, timeout: float) -> ConsumedRecord | None:
        records = self._records
        if records and self._native is not None and self._pid == _lifecycle.process_pid:
            return records.pop()
        self._live()
        if self._deferred is not None:
            error, self._deferred = self._deferred, None
            raise error
        deadline = time.monotonic() + timeout
        while True:
            message = self._poll_message(timeout)
            if message is None:
                return None
            try:
                unpacked = consumed_records(message)
            except PackDecodeError as error:
                self._decode_errors += 1
                if not self._skip_bad_packs:
                    raise
                _logger.warning("passing over a message (decode_errors='skip'): %s", error)
                unpacked = []
            if unpacked:
                unpacked.reverse()
                self._records = unpacked
                return unpacked.pop()
            # An empty pack, or a bad one passed over: the next message, in the time left.
            timeout = max(0.0, deadline - time.monotonic())

    def poll_batch(self, timeout: float | None = 1.0) -> _core.Batch | None:
        """The next fetched batch whole, or None if none arrived within ``timeout``.

        A ``Batch`` has ``topic``, ``partition_key``, ``offset`` (where it starts),
        ``messages()``, ``values()`` (the values as one buffer plus int64 offsets, for
        numpy and Arrow) and ``arrow_columns()`` (its messages as Arrow buffers, for
        ``tubemq.spark``); ``commit(batch)`` / ``nack(batch)`` settle it (with
        ``auto_commit``, the next poll commits it). Not while ``poll()`` is still handing
        out the messages of an earlier batch."""
        timeout = _wait_s(timeout)
        native = self._live()
        if self._buffered():
            raise ConfigError(
                "poll_batch() while poll() has messages of a batch left to hand out",
                key="poll_batch",
            )
        return self._next_batch(native, timeout)

    def _next_batch(
        self,
        native: _core.Consumer,
        timeout: float,
        keep: Callable[[_core.Batch, _Unsettled], None] | None = None,
    ) -> _core.Batch | None:
        """The next fetched batch, tracked until it is settled (the batches handed out
        before it committed first, with ``auto_commit``); None after ``timeout``.

        ``keep(batch, entry)`` puts it where poll() hands it out from, before it is tracked:
        tracked first, a KeyboardInterrupt between the two left a batch that counted as
        handed out whole, and the next commit() or auto_commit confirmed it unread.
        Kept first, the same interrupt leaves it untracked: rolled back, delivered again."""
        if self._auto_commit and self._outstanding:
            self._commit_outstanding(native)
        batch = native.poll(timeout)
        self._after_fetch(native)
        if batch is None:
            self._warn_if_waiting_for_commits()
            return None
        entry = _Unsettled(batch)
        if keep is not None:
            keep(batch, entry)
        self._track(entry)
        return batch

    def consume(self, max_messages: int = 100, timeout: float | None = 1.0) -> list[Item]:
        """Up to ``max_messages`` messages (records, with ``decode``); returns early,
        possibly empty, after ``timeout``."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int):
            raise ArgumentTypeError(
                f"max_messages must be an int, got {type(max_messages).__name__}",
                key="max_messages",
            )
        if max_messages < 1:
            raise ConfigError(
                f"max_messages must be 1 or more, got {max_messages}", key="max_messages"
            )
        timeout = _wait_s(timeout)
        messages: list[Item] = []
        message = self.poll(timeout)
        while message is not None:
            messages.append(message)
            if len(messages) >= max_messages:
                break
            try:
                message = self.poll(0) if self._buffered() else None
            except PackDecodeError as error:
                # What was gathered is returned (it counts as handed out); the next
                # poll raises the error.
                self._deferred = error
                break
        return messages

    def __iter__(self) -> Iterator[Item]:
        """Every message (record), endlessly: the batch at hand is handed out natively,
        one C call per message; then ``poll(1.0)`` until a message comes. Exceptions of
        poll() (KeyboardInterrupt, a closed or forked consumer) end the loop."""
        if self._decode:
            return self._records_forever()
        return self._cursor.iterate(self._poll_a_second)  # type: ignore[return-value]

    def _poll_a_second(self) -> Message | None:
        # Without decode only (see __iter__), where poll() hands out messages.
        return self.poll(1.0)  # type: ignore[return-value]

    def _records_forever(self) -> Iterator[Item]:
        while True:
            record = self.poll(1.0)
            if record is not None:
                yield record

    def commit(self, message: Committable | None = None, asynchronous: bool | None = None) -> None:
        """Marks ``message`` and every earlier message of its batch as processed; the
        batch is confirmed to the broker once its last message is committed. A ``Batch``
        from ``poll_batch()`` is confirmed whole. A record (``decode="inlongmsg"``)
        commits its message if it is the pack's last, else only the messages before its
        pack. Without an argument, every message handed out so far is committed.
        Committing a message whose batch was confirmed already does nothing; one whose
        batch was rolled back raises CommitError.

        As in Kafka clients, a commit is asynchronous by default (``commit_on_next_fetch``):
        it returns at once and reaches the broker with the partition's next fetch, or with
        its release at close, rebalance or unassign; a crash before then delivers the batch
        again. ``asynchronous=False`` returns only once the broker has stored the commit
        (one round trip), and raises if it refused it."""
        if self._cursor.commit(message, asynchronous):
            return  # a message before its batch's last: marked, nothing is due yet
        wait = _commit_wait(asynchronous)
        if message is None:
            native = self._live()
            for context, entry in list(self._outstanding.items()):
                entry.committed = max(entry.committed, self._handed_out(entry))
                if entry.committed == entry.size:
                    self._confirm(native, context, consumed=True, wait=wait)
            return
        context, upto = self._commit_target(message, "commit")  # the argument, then the state
        native = self._live()
        target = self._outstanding.get(context)
        if target is None:
            # A record before its pack's last covers no message whole: it can only be
            # told that its batch was rolled back.
            partial = isinstance(message, ConsumedRecord) and not message.last
            self._confirm_unknown(native, context, consumed=True, ask_core=not partial)
            return
        target.committed = max(target.committed, target.size if upto is None else upto)
        if target.committed == target.size:
            self._confirm(native, context, consumed=True, wait=wait)

    def nack(self, message: Committable) -> None:
        """Rolls back the batch ``message`` (or record) came in: the whole batch is
        delivered again (its messages handed out already included), and its messages
        (records) not handed out yet are dropped from this consumer's hand-out."""
        context, _ = self._commit_target(message, "nack")
        native = self._live()
        if context in self._outstanding:
            self._confirm(native, context, consumed=False)
        else:
            self._confirm_unknown(native, context, consumed=False)

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
        ``rests_cut_short`` (short rests after "nothing new" that a reply for another
        partition of the same store ended early, since that store had grown),
        ``batches``, ``received`` (messages), ``bytes``, ``committed`` (batches the
        broker acknowledged), ``commit_failures``, ``reconnects`` (connections to the master or a
        broker opened again after the previous one was lost), ``master_switches`` (calls
        answered by another master of the group than the call before: failovers seen),
        ``master_standby_answers`` ("not the active master" answers met) — and now: ``assigned``
        partition count, ``in_flight`` (messages fetched, not yet handed out) and ``lag``
        per partition. ``decode_errors``: messages that were not valid InLongMsg packs
        (``decode="inlongmsg"``)."""
        native = self._live()
        counters = dict(native.counters())
        counters["received"] = counters.pop("messages")
        counters["committed"] = counters.pop("commits")
        return {
            **counters,
            "decode_errors": self._decode_errors,
            "assigned": len(native.held_partitions()),
            "in_flight": len(self._cursor),
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
        """Commits (with auto_commit), releases every partition, leaves the group.
        ``timeout``: None has no bound of its own, 0 does not wait."""
        timeout = check_timeout(timeout, "timeout", allow_none=True, allow_zero=True)
        if self._native is None:
            return
        native = self._live()
        if self._stats is not None:
            self._stats.stop()
        try:
            if self._auto_commit:
                self._commit_outstanding(native)
            # What stays unconfirmed (a batch still being handed out, or, without
            # auto_commit, one not committed to its last message) is rolled back when the
            # consumer leaves: delivered again to the group's next reader.
        finally:
            self._native = None
            self._cursor.clear()
            self._records = []
            self._deferred = None
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
        """Whether the next poll() can return a message (record) without waiting."""
        return bool(len(self._cursor) or self._records)

    def _fetch_ahead(self, timeout: float) -> bool:
        """Waits up to ``timeout`` for the next batch and keeps it for poll(), handing
        out nothing; returns whether poll(0) now has a message (record) at hand.

        For a front end that waits on another thread than the one it hands messages out
        on (tubemq.aio): if the caller gives up the wait (a cancelled task), the batch
        stays here for the next poll() instead of being handed out to nobody, where a
        commit (or auto_commit) would then have confirmed it unread."""
        if self._buffered():
            return True
        self._next_batch(self._live(), timeout, self._cursor.load)
        return self._buffered()

    # --- for subclasses ---

    def _after_fetch(self, native: _core.Consumer) -> None:
        """Called on the caller's thread after every fetch attempt."""

    def _settle_partition(self, partition_key: str, consumed: bool) -> None:
        """Settles the batches of one partition still outstanding here. A batch with
        messages not handed out yet is rolled back whatever ``consumed`` says: nothing
        is confirmed that was not handed out."""
        native = self._live()
        for context, entry in list(self._outstanding.items()):
            if entry.batch.partition_key != partition_key:
                continue
            whole = consumed and self._handed_out(entry) == entry.size
            try:
                self._confirm(native, context, consumed=whole)
            except TubeMQError as error:
                _logger.warning("settling %s did not complete: %s", context, error)

    def _live(self) -> _core.Consumer:
        native = self._native
        if native is not None and self._pid == _lifecycle.process_pid:
            return native  # the common case, without a second call: polls are a hot path
        return _lifecycle.usable(native, self._pid, self._kind)

    # --- internals ---

    def _set_paused(self, partition_keys: list[str], pause: bool) -> None:
        partition_keys = _check_keys(partition_keys)
        native = self._live()
        unknown = [
            key
            for key in partition_keys
            if not (native.pause(key) if pause else native.resume(key))
        ]
        if unknown:
            raise ConfigError(f"not held by this consumer: {unknown}", key="partition_keys")

    def _track(self, new: _Unsettled) -> None:
        # A new batch of a partition whose previous batch is still outstanding here means
        # the core gave that one up (confirm_timeout_ms): it is delivered again.
        outstanding = self._outstanding
        if outstanding:
            key = new.batch.partition_key
            for context, entry in list(outstanding.items()):
                if entry.batch.partition_key == key:
                    del outstanding[context]
                    self._let_go(entry)
                    self._remember(context, consumed=False)
        outstanding[new.context] = new

    def _let_go(self, entry: _Unsettled) -> None:
        """An entry leaves the ledger: if its batch is at hand, the cursor drops it, so
        that the cursor's commit() no longer marks it (a commit of its messages is then
        answered from memory). Rolled back, its messages come again with the batch;
        confirmed, it was handed out whole (only a message handed out can be committed)."""
        if self._cursor.batch is entry.batch:
            self._cursor.clear()

    def _handed_out(self, entry: _Unsettled) -> int:
        """How many of a batch's messages were handed out: all but those still pending
        (only the batch being handed out has any), and but the pack whose records are
        still being handed out."""
        context = entry.context
        handed_out = entry.size
        if self._cursor.batch is entry.batch:
            handed_out -= len(self._cursor)
        records = self._records
        if records and records[0].message.confirm_context == context:
            handed_out -= 1
        return handed_out

    @staticmethod
    def _commit_target(message: object, verb: str) -> tuple[str, int | None]:
        """The confirm context of ``message`` and how many messages of its batch it
        covers (None: the whole batch)."""
        if isinstance(message, _core.Message):
            return message.confirm_context, message.index + 1
        if isinstance(message, _core.Batch):
            return message.confirm_context, None
        if isinstance(message, ConsumedRecord):
            pack = message.message  # covered once its last record is
            return pack.confirm_context, pack.index + (1 if message.last else 0)
        raise ArgumentTypeError(
            f"{verb}(): message must be a Message, a Batch or a record this consumer handed out, "
            f"got {type(message).__name__}",
            key="message",
        )

    def _confirm(
        self, native: _core.Consumer, context: str, consumed: bool, wait: bool | None = None
    ) -> None:
        """Confirms (or rolls back) an outstanding batch and forgets it here; ``wait`` as
        in ``_core.Consumer.confirm`` (None: as configured)."""
        entry = self._outstanding.pop(context)
        self._let_go(entry)
        if not consumed and self._records and self._records[0].message.confirm_context == context:
            self._records = []
        self._remember(context, consumed)
        try:
            native.confirm(context, consumed, wait)
        except CommitError:
            # The partition moved to another member: the batch goes to its new holder.
            self._remember(context, consumed=False)
            raise

    def _confirm_unknown(
        self, native: _core.Consumer, context: str, consumed: bool, ask_core: bool = True
    ) -> None:
        """A commit or nack of a batch not outstanding here: answered from memory where
        it was settled recently, otherwise by the core (which refuses stale contexts)."""
        settled = self._settled.get(context)
        if settled is None:
            if ask_core:
                native.confirm(context, consumed)
        elif consumed and not settled:
            raise CommitError(
                2004,
                f"the batch of {context} was rolled back (nack, rebalance, unassign, close "
                "or confirm_timeout_ms) and is delivered again; commit those messages then",
            )
        # A commit of a committed batch, or a nack of a settled one: nothing to do.

    def _remember(self, context: str, consumed: bool) -> None:
        settled = self._settled
        settled[context] = consumed
        if len(settled) > _SETTLED_MEMORY:
            del settled[next(iter(settled))]

    def _warn_if_waiting_for_commits(self) -> None:
        """Without auto_commit, a batch handed out whole but not committed to its last
        message holds its partition: say so once, as it looks like a stall."""
        if self._auto_commit:
            return
        for entry in self._outstanding.values():
            if not entry.warned and self._handed_out(entry) == entry.size:
                entry.warned = True
                _logger.warning(
                    "%s: %d of the %d messages of its last batch are not committed; the "
                    "partition delivers nothing new until they are (commit() or commit of "
                    "the batch's last message), or until confirm_timeout_ms rolls it back",
                    entry.batch.partition_key,
                    entry.size - entry.committed,
                    entry.size,
                )

    def _commit_outstanding(self, native: _core.Consumer) -> None:
        # Auto-commit of every batch handed out whole. It never fails a poll: a batch
        # whose partition moved away (2004) goes to its new holder, and a commit RPC that
        # failed is settled by the partition's next fetch. Either way delivery stays at
        # least once.
        for context, entry in list(self._outstanding.items()):
            if self._handed_out(entry) < entry.size:
                continue
            try:
                self._confirm(native, context, consumed=True)
            except TubeMQError as error:
                _logger.warning("auto-commit of %s did not complete: %s", context, error)
