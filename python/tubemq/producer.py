"""``tubemq.Producer``: publishes messages to TubeMQ topics.

The class is a thin shell over the native producer: it validates the configuration,
starts the native client, and turns native errors into :mod:`tubemq.errors` exceptions.
Every blocking call releases the GIL and can be interrupted with Ctrl-C.

Where callbacks run: handles returned by :meth:`Producer.send_async` are completed, and
their done-callbacks and delivery callbacks called, on the producer's ``tubemq-delivery``
thread (see :mod:`tubemq._delivery`); never on a native I/O thread, never under a native
lock.
"""

from __future__ import annotations

import datetime
import time
import weakref
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Union, cast

from tubemq import _core, _lifecycle, _log
from tubemq._config import (
    MIN_SEND_TIMEOUT_S,
    PRODUCER_SCHEMA,
    check_attributes,
    check_bytes_like,
    check_callable,
    check_msg_time,
    check_text,
    check_timeout,
    check_topic_name,
    native_client_config,
    native_producer_options,
    topic_name_problem,
    wire_text,
)
from tubemq._delivery import DeliveryCallback, DeliveryTracker
from tubemq._handle import SendHandle as SendHandle
from tubemq._stats import StatsCallback, StatsReporter
from tubemq.errors import ArgumentTypeError, ConfigError

SendResult = _core.SendResult
BytesLike = Union[bytes, bytearray, memoryview]
MsgTime = Union[str, datetime.datetime, None]
# A partition key, a partition id, or what partitions() lists (its key is used).
Partition = Union[str, int, _core.PartitionInfo, None]


def _topic_list(topics: str | Iterable[str]) -> list[str]:
    if isinstance(topics, (bytes, bytearray)) or topics is None:
        raise ArgumentTypeError(
            f"topics must be a name or a list of names, got {type(topics).__name__}",
            key="topics",
        )
    try:
        items = [topics] if isinstance(topics, str) else list(topics)
    except TypeError:
        raise ArgumentTypeError(
            f"topics must be a name or a list of names, got {type(topics).__name__}",
            key="topics",
        ) from None
    for topic in items:
        if not isinstance(topic, str):
            raise ArgumentTypeError(
                f"topics must be names (str), got {type(topic).__name__} {topic!r:.40}",
                key="topics",
            )
    try:
        return [check_topic_name(topic) for topic in items]
    except ValueError as error:
        raise ConfigError(f"topics: {error}", key="topics") from None


def _message_arguments(
    topic: object,
    value: object,
    key: object,
    attrs: object,
    msg_type: object,
    msg_time: object,
) -> tuple[str, BytesLike, str | None, list[tuple[str | bytes, str | bytes]], str | bytes, str]:
    """The native send arguments of one message, each checked first (ConfigError naming
    the bad one); the content rules of attributes, msg_type and msg_time are the core's."""
    # Each check is called only when the common case's quick test fails: this runs once
    # per message, and the calls alone cost more than half a microsecond.
    if type(topic) is not str or not topic.isascii():
        check_text(topic, "topic")
    if type(value) is not bytes:
        check_bytes_like(value, "value")
    if key is not None:
        check_text(key, "key")
    attributes = [] if attrs is None else check_attributes(attrs, "attrs")
    wire_msg_type = "" if msg_type is None else wire_text(msg_type, "msg_type")
    time_text = "" if msg_time is None else check_msg_time(msg_time, "msg_time")
    return (
        cast(str, topic),
        cast(BytesLike, value),
        cast("str | None", key),
        attributes,
        cast("str | bytes", wire_msg_type),
        time_text,
    )


def _check_partition(partition: object, key: object) -> None:
    """The checks of ``partition=`` that need no live producer: its type, its text, and
    that it does not come with ``key=`` (two routing rules for one message)."""
    if partition is None:
        return
    if isinstance(partition, bool) or not isinstance(partition, (str, int, _core.PartitionInfo)):
        hint = "; decode it first" if isinstance(partition, (bytes, bytearray)) else ""
        raise ArgumentTypeError(
            "partition must be a partition key 'brokerId:topic:partitionId' (str), a "
            "partition id (int), a PartitionInfo of partitions() or None, got "
            f"{type(partition).__name__} {partition!r:.60}{hint}",
            key="partition",
        )
    if isinstance(partition, str):
        check_text(partition, "partition")
    if key is not None:
        raise ConfigError(
            "partition: give key= or partition=, not both (a key chooses the partition by "
            "its hash)",
            key="partition",
        )


def _writable_partitions(native: _core.Producer, topic: str) -> list[_core.PartitionInfo]:
    """The writable partitions of ``topic``, publishing it first if this producer has
    not yet, as its first send would."""
    if topic not in native.published_topics() and not topic_name_problem(topic):
        native.publish([topic], None)
    return list(native.partitions(topic))


def _resolve_partition(
    native: _core.Producer, topic: str, partition: str | int | _core.PartitionInfo
) -> str:
    """The key of the writable partition ``partition`` names, from the partitions the
    master last reported for ``topic``; ConfigError naming ``partition`` when none does
    (or, for a bare id, when brokers share it and the id alone is ambiguous)."""
    writable = _writable_partitions(native, topic)
    if isinstance(partition, (str, _core.PartitionInfo)):
        wanted = partition.strip() if isinstance(partition, str) else partition.key
        matches = [info.key for info in writable if info.key == wanted]
    else:
        matches = [info.key for info in writable if info.partition_id == partition]
    if len(matches) == 1:
        return matches[0]
    keys = sorted(info.key for info in writable)
    listed = ", ".join(keys[:8]) + (f", ... ({len(keys)} in all)" if len(keys) > 8 else "")
    if matches:
        raise ConfigError(
            f"partition: id {partition} is ambiguous for topic '{topic}' (brokers share it: "
            f"{', '.join(sorted(matches))}); give the partition key",
            key="partition",
        )
    raise ConfigError(
        f"partition: {partition!r:.80} is not a writable partition of topic '{topic}'; "
        f"writable: {listed or 'none'}",
        key="partition",
    )


class Producer:
    """A producer registered to a TubeMQ master.

    ``Producer({"master": "127.0.0.1:8715"})`` or ``Producer(master="127.0.0.1:8715")``.
    The constructor registers to the master and returns once it has answered; it raises a
    :class:`tubemq.TubeMQError` subclass if that fails. Use it as a context manager, or call
    :meth:`close`; clients still open at interpreter exit are closed there.
    ``stats_cb(metrics)`` is called every ``stats_interval_ms`` from a thread of its own.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        stats_cb: StatsCallback | None = None,
        **overrides: Any,
    ) -> None:
        self._config = PRODUCER_SCHEMA.validate(config, overrides)
        check_callable(stats_cb, "stats_cb")
        self._stats: StatsReporter | None = None
        self._pid = _lifecycle.process_pid
        self._block = self._config["block_on_full"]
        self._send_timeout = self._config["send_timeout_s"]
        _log.start_log_dispatcher()
        native = _core.Producer(
            native_client_config(self._config), native_producer_options(self._config)
        )
        self._native: _core.Producer | None = native
        self._deliveries = DeliveryTracker(native)
        # send_async() and produce() queue a send that needs no checking natively; any
        # other goes through _queue (bindings/send_shortcut.cc). The shortcut is given
        # the function, not a bound method, so that it never refers back to the facade.
        self._shortcut = _core.SendShortcut(
            native, self._deliveries, _core.SendHandle, Producer._queue, self._block
        )
        # A producer dropped without close(): its delivery thread (which holds the
        # native producer) ends once the facade is collected, so the native producer is
        # destroyed (a brief best-effort close) instead of living on with a thread.
        # Not at exit: there the registry closes live producers, flushing first.
        weakref.finalize(self, self._deliveries.stop, 0.0).atexit = False
        try:
            native.start()
        except BaseException:
            native.close(timeout=1.0)
            self._native = None
            raise
        _lifecycle.track(self)
        if stats_cb is not None:
            self._stats = StatsReporter(self.metrics, stats_cb, self._config["stats_interval_ms"])

    @property
    def config(self) -> dict[str, Any]:
        """The validated configuration, defaults filled in (a copy)."""
        return dict(self._config)

    @property
    def client_id(self) -> str:
        return self._live().client_id

    def publish(self, topics: str | Iterable[str], timeout: float | None = None) -> None:
        """Declares topics to publish to; returns once the master lists them usable.

        Optional: a send to a topic not published yet publishes it first (one master
        round trip before that first send). Publishing ahead moves that wait, and a
        failure for a topic the master does not know, to a place of the caller's choosing.

        A topic the master lists without writable partitions is asked for again, in
        ``register_attempts`` rounds ``register_retry_wait_ms`` apart (about 4 s with the
        defaults), before publish raises :class:`InvalidMessageError` (443): a master that
        has just taken over from a failed one learns partitions from the brokers' next
        reports, and a topic being deployed appears the same way.

        ``timeout`` in seconds, more than 0; None (the default) waits for the master's
        answer, which the RPC deadline (``rpc_timeout_ms``) bounds. A publish that times
        out raises :class:`TimeoutError`; the topics stay declared, and publishing them
        again is safe.
        """
        names = _topic_list(topics)
        seconds = check_timeout(timeout, "timeout")
        self._live().publish(names, seconds)

    def published_topics(self) -> list[str]:
        return sorted(self._live().published_topics())

    def partitions(self, topic: str) -> list[_core.PartitionInfo]:
        """The writable partitions of ``topic``, as the master last reported them; a
        topic this producer has not published yet is published first (as by a send)."""
        check_text(topic, "topic")
        return _writable_partitions(self._live(), topic)

    def send(
        self,
        topic: str,
        value: BytesLike,
        *,
        key: str | None = None,
        attrs: Mapping[str, str] | None = None,
        msg_type: str | None = None,
        msg_time: MsgTime = None,
        timeout: float | None = None,
        partition: Partition = None,
    ) -> SendResult:
        """Sends one message and waits for the broker; returns its :class:`SendResult`.

        ``value`` is any bytes-like object (copied once). ``key`` pins the partition by a
        stable hash instead of round robin. ``partition`` sends to exactly that partition
        (retries included): a partition key ``"brokerId:topic:partitionId"``, a partition
        id (int) or an item of :meth:`partitions`, of a writable partition of the topic; not with
        ``key``. ``msg_type`` is the filter item consumers can
        select on; ``msg_time`` is a ``datetime`` or ``"yyyyMMddHHmm"``.

        ``timeout`` bounds the whole call, in seconds: at least 0.001 (a shorter one could
        only end before any broker answers) and finite; None (the default) takes the
        producer's ``send_timeout_s``, and when that is None too only the RPC deadline
        bounds the wait for the broker. Running out of time while waiting for a place in
        the in-flight window raises :class:`TimeoutError` (nothing was sent; retriable).
        Running out after the message was handed to the network raises
        :class:`OutcomeUnknownError` (not retriable): the broker may store it, so sending
        it again may store it twice.

        Every argument is checked before anything is sent: a bad one raises
        :class:`ConfigError` (:class:`ArgumentTypeError` for a wrong type) naming it.
        """
        seconds = check_timeout(timeout, "timeout", minimum=MIN_SEND_TIMEOUT_S)
        message = _message_arguments(topic, value, key, attrs, msg_type, msg_time)
        _check_partition(partition, key)
        native = self._live()
        pinned = None if partition is None else _resolve_partition(native, message[0], partition)
        return native.send(
            *message, self._block, self._send_timeout if seconds is None else seconds, pinned
        )

    def send_async(
        self,
        topic: str,
        value: BytesLike,
        *,
        key: str | None = None,
        attrs: Mapping[str, str] | None = None,
        msg_type: str | None = None,
        msg_time: MsgTime = None,
        callback: DeliveryCallback | None = None,
        partition: Partition = None,
    ) -> SendHandle:
        """Queues one message; returns a :class:`SendHandle` of its :class:`SendResult`.

        The handle acts as a ``concurrent.futures.Future``: ``result(timeout)``,
        ``exception(timeout)``, ``done()``, ``add_done_callback(fn)``, and
        ``concurrent.futures.wait`` / ``as_completed`` accept it; ``cancel()`` returns
        False (a queued send is not taken back). ``callback(error, result)`` is called
        once as well (error ``None`` on success). When only the callback is wanted,
        :meth:`produce` queues the same send without making a handle.

        ``partition`` as for :meth:`send` (an unknown one raises here). Only bad arguments
        (:class:`ConfigError`, checked before anything is queued) and a full window (with
        ``block_on_full=False``: :class:`QueueFullError`) raise here; every other failure
        arrives through the handle and the callback.
        """
        handle = self._shortcut.queue(
            self, topic, value, key, attrs, msg_type, msg_time, callback, partition, True
        )
        assert handle is not None  # asked for one
        return handle

    def produce(
        self,
        topic: str,
        value: BytesLike,
        *,
        key: str | None = None,
        attrs: Mapping[str, str] | None = None,
        msg_type: str | None = None,
        msg_time: MsgTime = None,
        on_delivery: DeliveryCallback | None = None,
        partition: Partition = None,
        callback: DeliveryCallback | None = None,
    ) -> None:
        """Queues one message as :meth:`send_async` does, without a handle: its outcome
        reaches only ``on_delivery(error, result)`` (if given), on the delivery thread.
        ``callback`` is another name for ``on_delivery``, as in Kafka clients.

        The cheapest way to send many messages: nothing per send is left for Python to
        keep but the callback you pass (share one function rather than making a closure
        per message). :meth:`flush` waits for these sends as for any other.
        """
        if callback is not None:
            check_callable(callback, "callback")
            if on_delivery is not None:
                raise ConfigError(
                    "give on_delivery= or callback= (another name for it), not both",
                    key="callback",
                )
            on_delivery = callback
        self._shortcut.queue(
            self, topic, value, key, attrs, msg_type, msg_time, on_delivery, partition, False
        )

    def _queue(
        self,
        topic: object,
        value: object,
        key: object,
        attrs: object,
        msg_type: object,
        msg_time: object,
        callback: DeliveryCallback | None,
        partition: Partition,
        with_handle: bool,
    ) -> SendHandle | None:
        """The checked path of send_async() and produce(): every send the native shortcut
        does not take itself comes here, and every argument error is raised here."""
        message = _message_arguments(topic, value, key, attrs, msg_type, msg_time)
        _check_partition(partition, key)
        check_callable(callback, "on_delivery" if not with_handle else "callback")
        native = self._live()
        pinned = None if partition is None else _resolve_partition(native, message[0], partition)
        token, handle = self._deliveries.register(callback, with_handle)
        try:
            native.send_async(*message, token, self._block, pinned)
        except BaseException:
            self._deliveries.forget(token)
            raise
        return handle

    def flush(self, timeout: float | None = None) -> int:
        """Waits until every queued send has completed; returns how many are still pending.

        ``timeout`` in seconds: None (the default) waits for as long as it takes, 0 does
        not wait (it only counts), a positive number waits at most that long.
        """
        seconds = check_timeout(timeout, "timeout", allow_zero=True)
        self._live()
        return self._deliveries.wait_empty(seconds)

    def poll(self, timeout: float | None = 0) -> int:
        """Waits up to ``timeout`` seconds for sends to complete; returns how many did
        (their callbacks ran) during the call.

        Nothing needs it: outcomes reach handles and callbacks on the delivery thread by
        themselves. It is here for loops written for Kafka clients (``poll(0)`` between
        sends, or ``poll(1.0)`` as a service loop's wait): it returns as soon as one send
        completes, and otherwise after ``timeout`` (0: at once; None: until one does).
        """
        seconds = check_timeout(timeout, "timeout", allow_none=True, allow_zero=True)
        self._live()
        return self._deliveries.wait_completed(seconds)

    def in_flight(self) -> int:
        """Sends queued and not yet completed."""
        return self._deliveries.pending()

    def close(self, timeout: float | None = 5.0) -> None:
        """Flushes, unregisters and releases connections; idempotent.

        ``timeout`` bounds the whole close, in seconds: the flush, then the
        unregistration. If it runs out, :class:`TimeoutError` is raised, the producer is
        closed all the same, and the sends still pending fail with
        :class:`OutcomeUnknownError`. None waits without a bound of its own (the RPC
        deadline still bounds each step); 0 does not wait: pending sends fail at once with
        :class:`OutcomeUnknownError` and the unregistration goes on in the background.
        """
        seconds = check_timeout(timeout, "timeout", allow_zero=True)
        if self._native is None:
            return
        native = self._live()
        if self._stats is not None:
            self._stats.stop()
        self._native = None
        self._shortcut.retire()
        _lifecycle.untrack(self)
        try:
            if seconds is None:
                self._deliveries.wait_empty(None)
                native.close(None)
            elif seconds == 0:
                native.close(0.0)  # starts the close, never raises for its outcome
            else:  # one budget for both steps
                deadline = time.monotonic() + seconds
                self._deliveries.wait_empty(seconds)
                native.close(max(0.05, deadline - time.monotonic()))
        finally:
            self._deliveries.stop(0.0 if seconds == 0 else 2.0)

    @property
    def closed(self) -> bool:
        return self._native is None

    def counters(self) -> dict[str, int]:
        """Native counters: heartbeats, registrations, sends ok/failed, retries."""
        return dict(self._live().counters())

    def metrics(self) -> dict[str, int]:
        """Counts since the producer was made: ``sent`` (sends handed to the producer),
        ``acked`` (stored by a broker), ``failed``, ``retries``, ``registrations``,
        ``heartbeats_ok``, ``heartbeats_failed``, ``reconnects`` (connections to the master
        or a broker opened again after the previous one was lost), ``master_switches``
        (calls answered by another master of the group than the call before: failovers
        seen) and ``master_standby_answers`` ("not the active master" answers met on the
        way); and ``in_flight`` now."""
        counters = self.counters()
        in_flight = self._deliveries.pending()
        return {
            "sent": counters["sent_ok"] + counters["sent_failed"] + in_flight,
            "acked": counters["sent_ok"],
            "failed": counters["sent_failed"],
            "retries": counters["retries"],
            "in_flight": in_flight,
            "registrations": counters["registrations"],
            "heartbeats_ok": counters["heartbeats_ok"],
            "heartbeats_failed": counters["heartbeats_failed"],
            "reconnects": counters["reconnects"],
            "master_switches": counters["master_switches"],
            "master_standby_answers": counters["master_standby_answers"],
        }

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._native is None else self._native.client_id
        return f"<tubemq.Producer {state} master={self._config['master']}>"

    def _live(self) -> _core.Producer:
        return _lifecycle.usable(self._native, self._pid, "producer")
