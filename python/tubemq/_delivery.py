"""Completing asynchronous sends in Python: handles, callbacks, and flush().

Each producer that has sent asynchronously owns one daemon thread, ``tubemq-delivery``,
started with its first ``send_async()``. It waits on the producer's native delivery
queue with the GIL released and, for every outcome, completes the send's
:class:`~tubemq._handle.SendHandle` (if it has one that anybody can still look at), runs
the handle's done-callbacks and then calls its delivery callback. So callbacks run on
that thread, one at a time, in completion order, never while a native lock is held. A
callback that raises is logged and does not stop the others.

Per pending send the tracker keeps one dict entry (token to handle, or to None when the
caller wanted only a callback) and, only when a callback was given, one entry in a
second dict: no object per send the cyclic GC would have to walk (issue 25).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Optional

from tubemq import _core
from tubemq._handle import HandleBoard, SendHandle, run_done_callback
from tubemq.errors import TubeMQError, error_from_code

DeliveryCallback = Callable[[Optional[TubeMQError], Optional[_core.SendResult]], Any]

_log = logging.getLogger("tubemq.delivery")
_WAIT_SLICE_S = 0.2
_UNSEEN_LOG_EVERY_S = 10.0
# How many outcomes one drain takes. While a batch's callbacks run, nothing is drained,
# so the bound fills and senders wait: a batch of 10 000 callbacks of 10 ms each held
# them for minutes, then let a burst through. So a drain takes as many outcomes as the
# last batch's callbacks would run in about _BATCH_S, starting from _DRAIN_FIRST and at
# most doubling from one batch to the next, up to _DRAIN_MAX: past the bound, senders
# go at the callbacks' pace.
_BATCH_S = 0.01
_DRAIN_FIRST = 16
_DRAIN_MAX = 10000
_OUTCOME_UNKNOWN = 1003
_CLOSED_FIRST = (
    "the producer closed before the broker answered; the message may be stored, so "
    "sending it again may store it twice"
)
# An outcome made in Python (close() fails what it did not wait for): token, code,
# text, and the SendResult (None when failed), as a drained DeliveryBatch holds them.
_Outcome = tuple[int, int, str, Any]


class UnseenFailures:
    """Failed sends that nobody can be told of: no delivery callback, and no handle that
    anyone kept (``produce()`` without ``on_delivery``, a dropped ``send_async()``
    handle). Logged, since nothing else would say a message was lost: the first at once,
    then at most one summary per ``_UNSEEN_LOG_EVERY_S``, counting those in between.
    A summary still owed is logged once that time has passed even if no failure follows,
    and at once when the caller flushes or closes: a count that waited for a later
    failure had left a burst of lost sends reported as one.

    Used under the tracker's lock."""

    def __init__(self) -> None:
        self._since_log = 0
        self._first: tuple[int, str] = (0, "")  # of those not logged yet
        self._logged_at = -math.inf

    def count(self, failures: int, first: tuple[int, str] | None) -> None:
        if not self._since_log and first is not None:
            self._first = first
        self._since_log += failures
        self.report()

    def report(self, now: bool = False) -> None:
        """Logs the failures not reported yet: when ``now``, or once the last report is
        ``_UNSEEN_LOG_EVERY_S`` old."""
        if not self._since_log:
            return  # the common case, without a clock read
        clock = time.monotonic()
        if not now and clock - self._logged_at < _UNSEEN_LOG_EVERY_S:
            return
        code, text = self._first
        _log.warning(
            "%d send(s) failed with no delivery callback or kept handle to report to "
            "(pass on_delivery= / callback=, or keep the handle): [%d] %s",
            self._since_log,
            code,
            text,
        )
        self._since_log, self._logged_at = 0, clock


class DeliveryTracker:
    """Pending async sends of one producer, and the thread that completes them."""

    def __init__(self, native: _core.Producer) -> None:
        self._native = native
        self._tokens = itertools.count(1)
        # Handles hold the board, not the tracker: a handle kept after its producer was
        # dropped must not keep the native producer alive.
        self._board = HandleBoard(native.delivery_waits())
        self._changed = self._board.condition
        self._pending: dict[int, SendHandle | None] = {}
        self._callbacks: dict[int, DeliveryCallback] = {}
        # Sends of the batch whose callbacks are running: still in `_pending`, so that
        # flush() waits for their callbacks, but known and no longer in flight.
        self._settling = 0
        self._completed = 0  # sends completed so far, their callbacks run (for poll())
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._unseen = UnseenFailures()

    def register(
        self, callback: DeliveryCallback | None, handle: bool = True
    ) -> tuple[int, SendHandle | None]:
        """A token, and a handle unless ``handle`` is False, for a send about to be queued.

        The native send shortcut (bindings/send_shortcut.cc) registers the sends it
        queues itself, on these same tables, in the same steps: keep the two alike."""
        token = next(self._tokens)
        made = SendHandle(self._board, token) if handle else None
        # No lock: each store is atomic, and nothing looks for this token before the send
        # is queued, after this returns. (The lock's round trip was a tenth of the Python
        # cost of a send.) Once stopping, the thread's exit is decided under the lock
        # from `_pending`, which holds this token already: the locked check then sees
        # either the thread that will complete it, or none, and starts one.
        self._pending[token] = made
        if callback is not None:
            self._callbacks[token] = callback
        if self._thread is None or self._stopping:
            self._start_thread()
        return token, made

    def _start_thread(self) -> None:
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tubemq-delivery", daemon=True
                )
                self._thread.start()

    def forget(self, token: int) -> None:
        """Drops a token whose send never got queued (it raised before)."""
        with self._changed:
            self._pending.pop(token, None)
            self._callbacks.pop(token, None)
            self._changed.notify_all()

    def pending(self) -> int:
        """Sends whose outcome is not known yet (those whose callbacks are running now
        are done: they no longer count, although flush() still waits for them)."""
        with self._changed:
            return len(self._pending) - self._settling

    def wait_empty(self, timeout: float | None) -> int:
        """Waits until every queued send is completed and its callbacks ran; returns how
        many are left. From a callback (on the delivery thread) it cannot wait for the
        callbacks of its own batch: there it waits for the outcomes only, as before."""
        if threading.current_thread() is self._thread:
            with self._changed:
                self._changed.wait_for(lambda: self.pending() == 0, timeout)
                return self.pending()
        # Not counted as waiting for an outcome (waiting()): that would hand a flushed
        # window's outcomes out a few at a time. Counted as waiting for all of them
        # instead: the native queue then lingers for none once every outcome is in, so
        # produce() then flush() in a loop pays no linger.
        with self._changed:
            if self._pending and timeout != 0:
                with self._board.flushing():
                    self._changed.wait_for(lambda: not self._pending, timeout)
            self._unseen.report(now=True)  # a flush is where the caller looks
            return len(self._pending)

    def wait_completed(self, timeout: float | None) -> int:
        """Waits until a send completes (its callbacks ran), at most ``timeout`` (None:
        no bound); returns how many completed meanwhile. From a callback it returns 0 at
        once: nothing completes while the delivery thread runs that callback. A close
        (stop()) ends the wait too."""
        if threading.current_thread() is self._thread:
            return 0
        with self._changed:
            before = self._completed
            if timeout != 0:
                # A thread waiting for an outcome (Kafka's produce() then poll(1.0)): the
                # native queue hands the next one out at once instead of lingering.
                with self._board.waiting():
                    self._changed.wait_for(
                        lambda: self._completed != before or self._stopping, timeout
                    )
            return self._completed - before

    def waiting(self) -> contextlib.AbstractContextManager[None]:
        """While a caller waits for an outcome (as ``tubemq.aio`` does): see
        :meth:`HandleBoard.waiting`."""
        return self._board.waiting()

    def stop(self, timeout: float = 2.0) -> None:
        """Ends the delivery thread after it has completed what is queued."""
        with self._changed:
            self._stopping = True
            thread = self._thread
            self._changed.notify_all()  # a poll() waiting for completions returns
        self._native.wake_deliveries()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        most = _DRAIN_FIRST
        while True:
            deliveries = self._native.drain_deliveries(_WAIT_SLICE_S, most)
            if deliveries:
                began = time.perf_counter()
                self._complete_all(deliveries)
                took = time.perf_counter() - began
                in_time = int(len(deliveries) * _BATCH_S / max(took, 1e-9))
                most = max(1, min(_DRAIN_MAX, 2 * most, in_time))
            with self._changed:
                if self._stopping and not deliveries and not self._pending:
                    self._unseen.report(now=True)
                    self._thread = None
                    return
                self._unseen.report()  # no later failure may come to carry it
                if self._stopping and not deliveries:
                    # Closing with sends whose answers close() did not wait for: fail
                    # them rather than leave futures hanging. Each was handed to the
                    # network and may yet be stored: their outcome is unknown (1003).
                    leftovers = list(self._pending)
                else:
                    leftovers = []
            if leftovers:
                self._complete_all(
                    [(token, _OUTCOME_UNKNOWN, _CLOSED_FIRST, None) for token in leftovers]
                )

    def _complete_all(self, deliveries: _core.DeliveryBatch | list[_Outcome]) -> None:
        # At most two lock rounds for a whole drained batch, not two per send: the lock
        # and the waiters' wake-ups were a large share of the async send path's cost.
        # Handles are settled under it, natively (add_done_callback() decides under it
        # too); callbacks run between the rounds, never under it. A send leaves
        # `_pending` only after its callbacks ran, so flush() returning means they have.
        board = self._board
        with self._changed:
            work, settling, unseen, first_unseen = _core.settle_deliveries(
                deliveries, self._pending, self._callbacks, board.waiters, board.done_callbacks
            )
            # The batch's futures are complete: its room in the native queue is given
            # back now, with this lock held, so a sender never sees room that the
            # in-flight count (pending()) does not show yet, nor the reverse.
            self._native.deliveries_settled()
            if unseen:
                self._unseen.count(unseen, first_unseen)
            if not work:
                self._forget_all(deliveries)
                return
            self._settling = settling
            self._changed.notify_all()  # result() need not wait for the callbacks
        for handle, done, callback, code, message, result in work:
            if handle is not None:
                for fn in done:
                    run_done_callback(fn, handle)
            if callback is not None:
                error = None if result is not None else error_from_code(code, message)
                try:
                    callback(error, result)
                except Exception:
                    _log.exception("a delivery callback raised")
        with self._changed:
            self._forget_all(deliveries)

    def _forget_all(self, deliveries: _core.DeliveryBatch | list[_Outcome]) -> None:
        _core.forget_deliveries(deliveries, self._pending)
        self._completed += len(deliveries)
        self._settling = 0
        self._changed.notify_all()
