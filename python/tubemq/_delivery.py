"""Completing asynchronous sends in Python: futures, callbacks, and flush().

Each producer that has sent asynchronously owns one daemon thread, ``tubemq-delivery``,
started with its first ``send_async()``. It waits on the producer's native delivery
queue with the GIL released and, for every outcome, completes the send's
``concurrent.futures.Future`` and then calls its callback. So callbacks and future
done-callbacks run on that thread, one at a time, in completion order, never while a
native lock is held. A callback that raises is logged and does not stop the others.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Optional

from tubemq import _core
from tubemq.errors import TubeMQError, error_from_code

DeliveryCallback = Callable[[Optional[TubeMQError], Optional[_core.SendResult]], Any]

_log = logging.getLogger("tubemq.delivery")
_WAIT_SLICE_S = 0.2
_OUTCOME_UNKNOWN = 1003
_CLOSED_FIRST = (
    "the producer closed before the broker answered; the message may be stored, so "
    "sending it again may store it twice"
)


class DeliveryTracker:
    """Pending async sends of one producer, and the thread that completes them."""

    def __init__(self, native: _core.Producer) -> None:
        self._native = native
        self._tokens = itertools.count(1)
        self._pending: dict[int, tuple[Future[_core.SendResult], DeliveryCallback | None]] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def register(self, callback: DeliveryCallback | None) -> tuple[int, Future[_core.SendResult]]:
        """A token and future for a send about to be queued."""
        future: Future[_core.SendResult] = Future()
        future.set_running_or_notify_cancel()
        token = next(self._tokens)
        with self._changed:
            self._pending[token] = (future, callback)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tubemq-delivery", daemon=True
                )
                self._thread.start()
        return token, future

    def forget(self, token: int) -> None:
        """Drops a token whose send never got queued (it raised before)."""
        with self._changed:
            self._pending.pop(token, None)
            self._changed.notify_all()

    def pending(self) -> int:
        with self._changed:
            return len(self._pending)

    def wait_empty(self, timeout: float | None) -> int:
        """Waits until every queued send is completed; returns how many are left."""
        with self._changed:
            self._changed.wait_for(lambda: not self._pending, timeout)
            return len(self._pending)

    def stop(self, timeout: float = 2.0) -> None:
        """Ends the delivery thread after it has completed what is queued."""
        with self._changed:
            self._stopping = True
            thread = self._thread
        self._native.wake_deliveries()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            deliveries = self._native.drain_deliveries(_WAIT_SLICE_S)
            if deliveries:
                self._complete_all(deliveries)
            with self._changed:
                if self._stopping and not deliveries and not self._pending:
                    self._thread = None
                    return
                if self._stopping and not deliveries:
                    # Closing with sends whose answers close() did not wait for: fail
                    # them rather than leave futures hanging. Each was handed to the
                    # network and may yet be stored: their outcome is unknown (1003).
                    leftovers = list(self._pending)
                else:
                    leftovers = []
            for token in leftovers:
                self._complete(token, _OUTCOME_UNKNOWN, _CLOSED_FIRST, None)

    def _complete_all(self, deliveries: list[tuple[int, int, str, Any]]) -> None:
        # One lock round for the whole drained batch, not two per send: the lock and
        # the waiters' wake-ups were a large share of the async send path's cost.
        with self._changed:
            entries = [
                (self._pending.pop(token, None), code, message, result)
                for token, code, message, result in deliveries
            ]
        for entry, code, message, result in entries:
            if entry is not None:
                self._resolve(entry, code, message, result)
        with self._changed:
            self._changed.notify_all()

    def _complete(self, token: int, code: int, message: str, result: Any) -> None:
        with self._changed:
            entry = self._pending.pop(token, None)
        if entry is None:
            return
        self._resolve(entry, code, message, result)
        with self._changed:
            self._changed.notify_all()

    def _resolve(
        self,
        entry: tuple[Future[_core.SendResult], DeliveryCallback | None],
        code: int,
        message: str,
        result: Any,
    ) -> None:
        future, callback = entry
        error = None if result is not None else error_from_code(code, message)
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
        if callback is not None:
            try:
                callback(error, result)
            except Exception:
                _log.exception("a delivery callback raised")
