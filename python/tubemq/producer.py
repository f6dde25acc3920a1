"""``tubemq.Producer``: publishes messages to TubeMQ topics.

The class is a thin shell over the native producer: it validates the configuration,
starts the native client, and turns native errors into :mod:`tubemq.errors` exceptions.
Every blocking call releases the GIL and can be interrupted with Ctrl-C.

Where callbacks run: futures returned by :meth:`Producer.send_async` are completed, and
their delivery callbacks called, on the producer's ``tubemq-delivery`` thread (see
:mod:`tubemq._delivery`); never on a native I/O thread, never under a native lock.
"""

from __future__ import annotations

import datetime
import os
import time
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Union

from tubemq import _core, _lifecycle, _log
from tubemq._config import (
    PRODUCER_SCHEMA,
    check_topic_name,
    native_client_config,
    native_producer_options,
)
from tubemq._delivery import DeliveryCallback, DeliveryTracker
from tubemq._stats import StatsCallback, StatsReporter
from tubemq.errors import ConfigError

SendResult = _core.SendResult
BytesLike = Union[bytes, bytearray, memoryview]
MsgTime = Union[str, datetime.datetime, None]


def _topic_list(topics: str | Iterable[str]) -> list[str]:
    try:
        items = [topics] if isinstance(topics, str) else list(topics)
    except TypeError:
        raise ConfigError(
            f"topics must be a name or a list of names, got {type(topics).__name__}",
            key="topics",
        ) from None
    try:
        return [check_topic_name(topic) for topic in items]
    except ValueError as error:
        raise ConfigError(str(error), key="topics") from None


def _attributes(attrs: Mapping[str, str] | None) -> list[tuple[str, str]]:
    if attrs is None:
        return []
    if not isinstance(attrs, Mapping):
        raise TypeError(f"attrs must be a mapping of str to str, got {type(attrs).__name__}")
    items = list(attrs.items())
    for key, value in items:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"attrs must map str to str, got {key!r}: {value!r}")
    return items


def _msg_time(value: MsgTime) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y%m%d%H%M")
    if isinstance(value, str):
        return value
    raise TypeError(f"msg_time must be 'yyyyMMddHHmm' or a datetime, got {type(value).__name__}")


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
        self._stats: StatsReporter | None = None
        self._pid = os.getpid()
        self._block = self._config["block_on_full"]
        self._send_timeout = self._config["send_timeout_s"]
        _log.start_log_dispatcher()
        native = _core.Producer(
            native_client_config(self._config), native_producer_options(self._config)
        )
        self._native: _core.Producer | None = native
        self._deliveries = DeliveryTracker(native)
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
        """Declares topics to publish to; returns once the master lists them usable."""
        self._live().publish(_topic_list(topics), timeout)

    def published_topics(self) -> list[str]:
        return sorted(self._live().published_topics())

    def partitions(self, topic: str) -> list[_core.PartitionInfo]:
        """The writable partitions of a published topic, as the master last reported them."""
        return list(self._live().partitions(topic))

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
    ) -> SendResult:
        """Sends one message and waits for the broker; returns its :class:`SendResult`.

        ``value`` is any bytes-like object (copied once). ``key`` pins the partition by a
        stable hash instead of round robin. ``msg_type`` is the filter item consumers can
        select on; ``msg_time`` is a ``datetime`` or ``"yyyyMMddHHmm"``.
        """
        return self._live().send(
            topic,
            value,
            key,
            _attributes(attrs),
            msg_type or "",
            _msg_time(msg_time),
            self._block,
            self._send_timeout if timeout is None else timeout,
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
    ) -> Future[SendResult]:
        """Queues one message; returns a future of its :class:`SendResult`.

        ``callback(error, result)`` is called once as well (error ``None`` on success).
        Only bad arguments and a full window (with ``block_on_full=False``:
        :class:`QueueFullError`) raise here; every other failure arrives through the
        future and the callback.
        """
        native = self._live()
        attributes = _attributes(attrs)
        time_text = _msg_time(msg_time)
        token, future = self._deliveries.register(callback)
        try:
            native.send_async(
                topic, value, key, attributes, msg_type or "", time_text, token, self._block
            )
        except BaseException:
            self._deliveries.forget(token)
            raise
        return future

    def flush(self, timeout: float | None = None) -> int:
        """Waits until every queued send has completed; returns how many are still pending."""
        self._live()
        return self._deliveries.wait_empty(timeout)

    def in_flight(self) -> int:
        """Sends queued and not yet completed."""
        return self._deliveries.pending()

    def close(self, timeout: float | None = 5.0) -> None:
        """Flushes (bounded by ``timeout``), unregisters and releases connections; idempotent."""
        if self._native is None:
            return
        native = self._live()
        if self._stats is not None:
            self._stats.stop()
        self._native = None
        _lifecycle.untrack(self)
        try:
            if timeout is None:
                self._deliveries.wait_empty(None)
                native.close(None)
            else:  # one budget for both steps
                deadline = time.monotonic() + timeout
                self._deliveries.wait_empty(timeout)
                native.close(max(0.05, deadline - time.monotonic()))
        finally:
            self._deliveries.stop()

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
        or a broker opened again after the previous one was lost); and ``in_flight`` now."""
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
