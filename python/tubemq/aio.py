"""asyncio front ends: ``tubemq.aio.Producer`` and ``tubemq.aio.Consumer``.

They wrap the blocking clients without adding a thread that spins:

* A send is the producer's asynchronous send without a handle (``produce``); its
  delivery callback, on the producer's delivery thread, completes an asyncio future
  through ``loop.call_soon_threadsafe``. An
  ``asyncio.Semaphore`` of ``max_in_flight`` places keeps the native window from ever
  filling, so a send never blocks the loop.
* Calls that wait for the network (start, publish, poll, commit, flush, close) run on
  one worker thread per client, where they wait in C++ with the GIL released. Messages
  already fetched are handed out on the loop itself, without a thread hop.

Start a client with ``async with tubemq.aio.Producer(...) as producer:`` or
``producer = await tubemq.aio.Producer(...).start()``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar, cast, overload

from tubemq import producer as _producer
from tubemq._config import CONSUMER_SCHEMA, PRODUCER_SCHEMA, check_timeout
from tubemq._consumer_base import Committable, ConsumerBase, Item, Message, _commit_wait, _wait_s
from tubemq.consumer import Consumer as _SyncConsumer
from tubemq.errors import ClientClosedError, TubeMQError
from tubemq.inlong import ConsumedRecord
from tubemq.producer import BytesLike, MsgTime, Partition, SendResult

__all__ = ["Consumer", "Producer"]

_T = TypeVar("_T")


class _OneThread:
    """A single worker thread for one client's blocking calls, so that they run in
    order and never two at once."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)

    async def run(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, functools.partial(function, *args, **kwargs)
        )

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False)


def _settle(
    outcome: asyncio.Future[SendResult],
    window: asyncio.Semaphore,
    error: TubeMQError | None,
    result: SendResult | None,
) -> None:
    """On the loop: frees the send's place in the window and completes its future (unless
    the awaiting task was cancelled meanwhile: the send itself goes on regardless)."""
    window.release()
    if outcome.done():
        return
    if error is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(cast(SendResult, result))


def _retrieve_error(fetch: asyncio.Future[bool]) -> None:
    """Marks a fetch's error as seen: the poll that started it may have been cancelled,
    and the next poll raises it (or, if there is none, asyncio should not warn)."""
    if not fetch.cancelled():
        fetch.exception()


class Producer:
    """An asyncio producer. Keys and meaning of the configuration are those of
    :class:`tubemq.Producer`; the blocking ``block_on_full`` is not used."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        self._config = PRODUCER_SCHEMA.validate(config, overrides)
        self._config["block_on_full"] = False
        self._thread = _OneThread("tubemq-aio-producer")
        self._sync: _producer.Producer | None = None
        self._window: asyncio.Semaphore | None = None  # made on the loop that starts us

    async def start(self) -> Producer:
        """Registers to the master (on the worker thread); returns the producer."""
        if self._sync is None:
            self._window = asyncio.Semaphore(self._config["max_in_flight"])
            self._sync = await self._thread.run(_producer.Producer, self._config)
        return self

    async def publish(self, topics: str | Iterable[str], timeout: float | None = None) -> None:
        """As :meth:`tubemq.Producer.publish`; the arguments are checked on the loop."""
        names = _producer._topic_list(topics)
        seconds = check_timeout(timeout, "timeout")
        await self._thread.run(self._live().publish, names, seconds)

    async def send(
        self,
        topic: str,
        value: BytesLike,
        *,
        key: str | None = None,
        attrs: Mapping[str, str] | None = None,
        msg_type: str | None = None,
        msg_time: MsgTime = None,
        partition: Partition = None,
    ) -> SendResult:
        """Sends one message; returns its :class:`tubemq.SendResult` once stored.

        The arguments are those of :meth:`tubemq.Producer.send_async`, checked before the
        send waits for a place in the window (a bad one raises :class:`ConfigError`).
        """
        _producer._message_arguments(topic, value, key, attrs, msg_type, msg_time)
        _producer._check_partition(partition, key)
        producer = self._live()
        if partition is not None:  # an unknown partition raises before waiting for the window
            _producer._resolve_partition(producer._live(), topic, partition)
        window = self._window
        assert window is not None  # set with the producer by start()
        await window.acquire()
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[SendResult] = loop.create_future()

        def on_delivery(error: TubeMQError | None, result: SendResult | None) -> None:
            # On the delivery thread: hand the outcome to the loop, unless it is gone.
            if not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(_settle, outcome, window, error, result)
                except RuntimeError:  # closed in the meantime
                    pass

        try:
            producer.produce(
                topic,
                value,
                key=key,
                attrs=attrs,
                msg_type=msg_type,
                msg_time=msg_time,
                on_delivery=on_delivery,
                partition=partition,
            )
        except BaseException:
            window.release()
            raise
        with producer._deliveries.waiting():  # no linger: this coroutine waits for it
            return await outcome

    async def flush(self, timeout: float | None = None) -> int:
        """As :meth:`tubemq.Producer.flush`: None waits as long as it takes, 0 only counts."""
        seconds = check_timeout(timeout, "timeout", allow_zero=True)
        return await self._thread.run(self._live().flush, seconds)

    async def close(self, timeout: float | None = 5.0) -> None:
        """Flushes, unregisters and stops the worker thread; idempotent. ``timeout`` as
        for :meth:`tubemq.Producer.close` (None: no bound of its own; 0: do not wait)."""
        check_timeout(timeout, "timeout", allow_zero=True)
        producer, self._sync = self._sync, None
        if producer is not None:
            await self._thread.run(producer.close, timeout)
        self._thread.shutdown()

    @property
    def sync(self) -> _producer.Producer:
        """The blocking producer underneath (for its other methods)."""
        return self._live()

    async def __aenter__(self) -> Producer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def _live(self) -> _producer.Producer:
        if self._sync is None:
            raise ClientClosedError(2002, "the producer is not started or already closed")
        return self._sync


class Consumer(Generic[Item]):
    """An asyncio member of a server-balanced group, with the configuration of
    :class:`tubemq.Consumer`. ``async for message in consumer`` iterates forever;
    ``await consumer.poll(timeout)`` returns a message or None (with
    ``decode="inlongmsg"``: a :class:`tubemq.inlong.ConsumedRecord` or None)."""

    @overload
    def __init__(
        self: Consumer[Message],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["none"] | None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: Consumer[ConsumedRecord],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["inlongmsg"],
        **overrides: Any,
    ) -> None: ...

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        decode: str | None = None,
        **overrides: Any,
    ) -> None:
        if decode is not None:
            overrides["decode"] = decode
        self._config = CONSUMER_SCHEMA.validate(config, overrides)
        self._thread = _OneThread("tubemq-aio-consumer")
        self._sync: _SyncConsumer[Item] | None = None
        self._lock: asyncio.Lock | None = None  # one fetch or commit at a time
        # The fetch running on the worker thread: the current poll's, or one whose poll
        # was cancelled, which the next poll waits for first.
        self._fetching: asyncio.Future[bool] | None = None

    async def start(self) -> Consumer[Item]:
        """Joins the group (on the worker thread); returns the consumer."""
        if self._sync is None:
            self._lock = asyncio.Lock()
            self._sync = await self._thread.run(_SyncConsumer, self._config)
        return self

    async def poll(self, timeout: float | None = 1.0) -> Item | None:
        """The next message (record), or None if none arrived within ``timeout``.

        Cancelling it (``asyncio.wait_for``, a task's ``cancel()``) loses nothing: the
        wait goes on on the worker thread, and what it fetches is handed out by the next
        poll, which first waits for that fetch to end."""
        timeout = _wait_s(timeout)
        consumer = self._live()
        async with self._serial():
            # Only the fetch runs on the worker thread; messages are handed out here, on
            # the loop, so a cancelled wait leaves its batch with the consumer. A fetch
            # left running by a cancelled poll is waited for first: the worker thread
            # may still be loading its batch.
            fetching = self._fetching
            if fetching is None and not consumer._buffered():
                fetching = asyncio.ensure_future(self._thread.run(consumer._fetch_ahead, timeout))
                fetching.add_done_callback(_retrieve_error)
                self._fetching = fetching
            if fetching is not None:
                try:
                    at_hand = await asyncio.shield(fetching)
                finally:
                    if fetching.done():
                        self._fetching = None
                if not at_hand:
                    return None
            return consumer.poll(0)  # fetched: no wait, no thread hop

    async def commit(
        self, message: Committable | None = None, asynchronous: bool | None = None
    ) -> None:
        """As :meth:`tubemq.Consumer.commit`: ``message`` and the earlier messages of its
        batch (a record: as there); without an argument, everything handed out so far;
        ``asynchronous=False`` waits for the broker's answer (without blocking the loop)."""
        if message is not None:
            ConsumerBase._commit_target(message, "commit")
        _commit_wait(asynchronous)
        async with self._serial():
            await self._thread.run(self._live().commit, message, asynchronous)

    async def nack(self, message: Committable) -> None:
        ConsumerBase._commit_target(message, "nack")
        async with self._serial():
            await self._thread.run(self._live().nack, message)

    def assignment(self) -> list[str]:
        return self._live().assignment()

    def offsets(self) -> dict[str, dict[str, int]]:
        return self._live().offsets()

    async def close(self, timeout: float | None = 5.0) -> None:
        timeout = check_timeout(timeout, "timeout", allow_none=True, allow_zero=True)
        if self._sync is not None:
            async with self._serial():
                consumer, self._sync = self._sync, None
                if consumer is not None:
                    await self._thread.run(consumer.close, timeout)
        self._thread.shutdown()

    def __aiter__(self) -> AsyncIterator[Item]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Item]:
        while True:
            message = await self.poll(1.0)
            if message is not None:
                yield message

    async def __aenter__(self) -> Consumer[Item]:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def _serial(self) -> asyncio.Lock:
        if self._lock is None:
            raise ClientClosedError(2002, "the consumer is not started")
        return self._lock

    def _live(self) -> _SyncConsumer[Item]:
        if self._sync is None:
            raise ClientClosedError(2002, "the consumer is not started or already closed")
        return self._sync
