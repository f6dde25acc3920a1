"""``SendHandle``: what ``Producer.send_async()`` returns, a Future without a Future's weight.

A ``concurrent.futures.Future`` per pending send was about twelve GC-tracked objects (its
Condition, RLock, waiter and callback lists, ...): with 20,000 sends in flight every full
collection walked them all with the GIL held (issue 25). A handle is one object of a
native type the cyclic GC does not track (``_core.SendHandle``: its board, its token,
its outcome); its methods are Python functions installed on that type here. What a
Future keeps per instance lives on the producer's one :class:`HandleBoard` instead, and
only while someone asked for it: one Condition that every ``result()`` waits on,
done-callbacks and ``concurrent.futures`` waiters by token.

A handle never holds an exception or a callback: either may reference the handle back,
and a cycle through an untracked object is never collected. ``exception()`` and
``result()`` make the error afresh from the code and text the broker's answer left.

The Future protocol kept: ``result``, ``exception``, ``done``, ``running``,
``cancelled``, ``cancel`` (always False: a queued send cannot be taken back), and
``add_done_callback``; ``concurrent.futures.wait`` and ``as_completed`` accept handles
(they reach ``_condition``, ``_state`` and ``_waiters``, provided below); and a coroutine
may ``await`` a handle.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

from tubemq import _core
from tubemq.errors import TubeMQError, error_from_code

_log = logging.getLogger("tubemq.delivery")

PENDING, SUCCEEDED, FAILED = 0, 1, 2  # as CompleteSendHandle (bindings/send_handle.cc) writes them


class HandleBoard:
    """What the handles of one producer share: the Condition their waits use, the
    done-callbacks and ``concurrent.futures`` waiters of the few handles that have any,
    and ``waits``, through which a waiting thread tells the native delivery queue to hand
    out outcomes at once rather than linger for more (``DeliveryQueue::Waiting``)."""

    __slots__ = ("condition", "done_callbacks", "waiters", "waits")

    def __init__(self, waits: _core.DeliveryWaits) -> None:
        self.condition = threading.Condition()
        self.done_callbacks: dict[int, list[Callable[[SendHandle], object]]] = {}
        self.waiters: dict[int, _Waiters] = {}
        self.waits = waits

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While the caller waits for an outcome: the native queue hands outcomes out at
        once instead of lingering for more."""
        self.waits.begin()
        try:
            yield
        finally:
            self.waits.end()

    @contextlib.contextmanager
    def flushing(self) -> Iterator[None]:
        """While the caller waits for every outcome (flush, close): the native queue
        lingers no more once all of them have arrived."""
        self.waits.begin_flush()
        try:
            yield
        finally:
            self.waits.end_flush()


class _Waiters(list):  # type: ignore[type-arg]  # concurrent.futures' private waiter objects
    """A handle's ``concurrent.futures`` waiters. ``wait()`` and ``as_completed()`` add
    their waiter to every handle they watch and remove it from each when they return:
    each waiter is a thread waiting, for as long as it is on the list. They remove it
    after the handle completed, when the board no longer keeps the list: removing from
    the fresh empty one then is not an error (and still ends that thread's wait)."""

    def __init__(self, waits: _core.DeliveryWaits) -> None:
        super().__init__()
        self._waits = waits

    def append(self, value: Any) -> None:
        super().append(value)
        self._waits.begin()

    def remove(self, value: Any) -> None:
        if value in self:
            super().remove(value)
        self._waits.end()


SendHandle = _core.SendHandle
"""The outcome of one asynchronous send, once the broker has answered.

It acts as a ``concurrent.futures.Future[SendResult]`` completed on the producer's
``tubemq-delivery`` thread. Not an instance of ``Future``: for asyncio, await
:meth:`tubemq.aio.Producer.send`, or complete a loop future from ``callback=``.
"""


# The methods below are set on the native type (see _install): a Python subclass would
# make every handle GC-tracked again.


def _done(self: SendHandle) -> bool:
    """True once the send succeeded or failed."""
    return self._status != PENDING


def _running(self: SendHandle) -> bool:
    """True until the outcome is known (a queued send is always running)."""
    return self._status == PENDING


def _cancelled(self: SendHandle) -> bool:
    """Always False: a send is never cancelled."""
    return False


def _cancel(self: SendHandle) -> bool:
    """Always False: the message was already handed to the producer, which sends it;
    nothing takes it back (as for a running ``concurrent.futures.Future``)."""
    return False


def _result(self: SendHandle, timeout: float | None = None) -> _core.SendResult:
    """The :class:`SendResult`; raises the send's error if it failed, and
    ``concurrent.futures.TimeoutError`` if no outcome within ``timeout`` seconds."""
    if self._status == PENDING:
        _wait(self, timeout)
    if self._status == FAILED:
        raise error_from_code(self._code, self._outcome)
    return self._outcome  # type: ignore[no-any-return]


def _exception(self: SendHandle, timeout: float | None = None) -> TubeMQError | None:
    """The send's error (a new exception object each call), or None if it succeeded;
    ``concurrent.futures.TimeoutError`` if no outcome within ``timeout`` seconds."""
    if self._status == PENDING:
        _wait(self, timeout)
    if self._status == FAILED:
        return error_from_code(self._code, self._outcome)
    return None


def _add_done_callback(self: SendHandle, fn: Callable[[SendHandle], object]) -> None:
    """Calls ``fn(handle)`` once the outcome is known, on the delivery thread; at once,
    on this thread, if it is known already. An exception it raises is logged."""
    board: HandleBoard = self._owner
    with board.condition:
        if self._status == PENDING:
            board.done_callbacks.setdefault(self._token, []).append(fn)
            return
    run_done_callback(fn, self)


def _await(self: SendHandle) -> Generator[Any, None, _core.SendResult]:
    """``await handle`` in a coroutine: the event loop waits for the outcome without a
    thread (``asyncio.wrap_future`` wants a real Future; this is its place), then it is
    the result, or the send's error is raised."""
    if self._status == PENDING:
        # Imported here, not with tubemq: asyncio imports ssl, and so the system's
        # OpenSSL, into a process that may only want the wheel's own (tests/packaging).
        import asyncio

        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def wake(_: SendHandle) -> None:  # on the delivery thread
            try:
                loop.call_soon_threadsafe(_set_done, waiter)
            except RuntimeError:
                pass  # the loop closed meanwhile: nobody waits any more

        self.add_done_callback(wake)
        board: HandleBoard = self._owner
        with board.waiting():
            yield from waiter.__await__()
    return _result(self)


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _repr(self: SendHandle) -> str:
    state = ("pending", "succeeded", "failed")[self._status]
    return f"<SendHandle {self._token} {state}>"


def _wait(handle: SendHandle, timeout: float | None) -> None:
    board: HandleBoard = handle._owner
    with board.condition:
        if handle._status != PENDING:
            return
        with board.waiting():
            if not board.condition.wait_for(lambda: handle._status != PENDING, timeout):
                raise concurrent.futures.TimeoutError()


# What concurrent.futures.wait() and as_completed() read of a Future.
def _condition(self: SendHandle) -> threading.Condition:
    board: HandleBoard = self._owner
    return board.condition


def _state(self: SendHandle) -> str:
    return "RUNNING" if self._status == PENDING else "FINISHED"


def _waiters(self: SendHandle) -> _Waiters:
    # Read under the board's condition (wait() holds it), as the completion writes.
    board: HandleBoard = self._owner
    if self._status != PENDING:
        return _Waiters(board.waits)  # a completed handle notifies nobody any more
    waiters = board.waiters.get(self._token)
    if waiters is None:
        waiters = board.waiters[self._token] = _Waiters(board.waits)
    return waiters


def _install() -> None:
    for name, member in {
        "done": _done,
        "running": _running,
        "cancelled": _cancelled,
        "cancel": _cancel,
        "result": _result,
        "exception": _exception,
        "add_done_callback": _add_done_callback,
        "__await__": _await,
        "__repr__": _repr,
        "_condition": property(_condition),
        "_state": property(_state),
        "_waiters": property(_waiters),
    }.items():
        setattr(SendHandle, name, member)


_install()


def run_done_callback(fn: Callable[[SendHandle], object], handle: SendHandle) -> None:
    try:
        fn(handle)
    except Exception:
        _log.exception("a done-callback of %r raised", handle)
