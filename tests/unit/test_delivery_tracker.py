"""The handle send_async() returns, against a stand-in native producer: its Future
contract, and that a pending send leaves the cyclic GC nothing to walk (issue 25)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import logging
import queue
import threading
import time
from collections.abc import Callable

import pytest

import tubemq
from tubemq._delivery import DeliveryTracker
from tubemq._handle import SendHandle


class FakeNative:
    """The calls the tracker makes of a native producer: outcomes are pushed by the
    test, as the I/O thread would push them onto the delivery queue."""

    def __init__(self) -> None:
        self._outcomes: queue.Queue[tuple[int, int, str, object] | None] = queue.Queue()
        self._left: list[tuple[int, int, str, object]] = []  # beyond a drain's max_items
        self.settled_batches = 0
        self.asked: list[int] = []  # each drain's max_items
        self.waits = FakeWaits()

    def answer(self, token: int, result: object = None, code: int = 0, text: str = "") -> None:
        self._outcomes.put((token, code, text, result))

    def drain_deliveries(
        self, wait_s: float, max_items: int = 10000
    ) -> list[tuple[int, int, str, object]]:
        self.asked.append(max_items)
        batch, self._left = self._left, []
        if not batch:
            try:
                first = self._outcomes.get(timeout=wait_s)
            except queue.Empty:
                return []
            batch = [first] if first is not None else []
        while True:
            try:
                more = self._outcomes.get_nowait()
            except queue.Empty:
                break
            if more is not None:
                batch.append(more)
        batch, self._left = batch[:max_items], batch[max_items:]
        return batch

    def deliveries_settled(self) -> None:
        self.settled_batches += 1

    def wake_deliveries(self) -> None:
        self._outcomes.put(None)

    def delivery_waits(self) -> FakeWaits:
        return self.waits


class FakeWaits:
    """The native delivery queue's counts of threads waiting for an outcome and of
    threads waiting for every outcome (flushing)."""

    def __init__(self) -> None:
        self.waiting = 0
        self.most = 0
        self.flushing = 0
        self.most_flushing = 0

    def begin(self) -> None:
        self.waiting += 1
        self.most = max(self.most, self.waiting)

    def end(self) -> None:
        self.waiting -= 1

    def begin_flush(self) -> None:
        self.flushing += 1
        self.most_flushing = max(self.most_flushing, self.flushing)

    def end_flush(self) -> None:
        self.flushing -= 1


@pytest.fixture
def tracked():
    native = FakeNative()
    tracker = DeliveryTracker(native)  # type: ignore[arg-type]
    yield native, tracker
    tracker.stop(5.0)


def _send(tracker: DeliveryTracker, callback=None) -> tuple[int, SendHandle]:
    token, handle = tracker.register(callback)
    assert handle is not None
    return token, handle


def test_a_handle_is_not_tracked_by_the_cyclic_gc(tracked):
    _, tracker = tracked
    _, handle = _send(tracker)
    assert isinstance(handle, tubemq.SendHandle)
    assert gc.is_tracked(handle) is False
    assert not hasattr(handle, "__dict__")


def test_pending_sends_add_almost_no_gc_tracked_objects(tracked):
    native, tracker = tracked
    _send(tracker)  # starts the delivery thread before counting
    gc.collect()
    before = len(gc.get_objects())
    handles = [_send(tracker)[1] for _ in range(5000)]
    tokens_with_callbacks = [tracker.register(None, handle=False)[0] for _ in range(5000)]
    grown = len(gc.get_objects()) - before
    # The list holding the handles is one object; a Future each was some twelve.
    assert grown < 50, grown
    assert tracker.pending() == 10001
    for handle in handles:
        native.answer(handle._token, result="stored")
    for token in tokens_with_callbacks:
        native.answer(token, result="stored")
    native.answer(1, result="stored")
    assert tracker.wait_empty(10) == 0


def test_result_exception_done_and_cancel(tracked):
    native, tracker = tracked
    ok_token, ok = _send(tracker)
    bad_token, bad = _send(tracker)
    assert not ok.done() and ok.running() and not ok.cancelled()
    with pytest.raises(concurrent.futures.TimeoutError):
        ok.result(timeout=0.05)
    with pytest.raises(concurrent.futures.TimeoutError):
        bad.exception(timeout=0.05)
    assert ok.cancel() is False  # a queued send is not taken back
    native.answer(ok_token, result="stored")
    native.answer(bad_token, code=443, text="topic not published")
    assert ok.result(timeout=5) == "stored"
    assert ok.exception() is None
    error = bad.exception(timeout=5)
    assert isinstance(error, tubemq.TubeMQError) and error.code == 443
    with pytest.raises(tubemq.TubeMQError) as info:
        bad.result()
    assert info.value.code == 443 and "not published" in info.value.message
    assert ok.done() and bad.done() and not ok.running()
    assert ok.cancel() is False and not ok.cancelled()


def test_done_callbacks_before_and_after_completion(tracked):
    native, tracker = tracked
    token, handle = _send(tracker)
    seen: list[tuple[str, SendHandle, str]] = []
    handle.add_done_callback(lambda h: seen.append(("early", h, threading.current_thread().name)))
    native.answer(token, result="stored")
    handle.result(timeout=5)
    assert tracker.wait_empty(5) == 0  # callbacks ran before the send left the tracker
    handle.add_done_callback(lambda h: seen.append(("late", h, threading.current_thread().name)))
    assert seen == [
        ("early", handle, "tubemq-delivery"),
        ("late", handle, threading.current_thread().name),
    ]


def test_a_dropped_handle_still_completes_for_its_done_callback_and_delivery_callback(tracked):
    # A handle nobody holds is settled by forgetting it (nobody can look at it), unless
    # something registered for it: a done-callback gets a completed handle, and the
    # delivery callback its outcome.
    native, tracker = tracked
    seen: list[object] = []
    token, handle = _send(tracker, callback=lambda error, result: seen.append((error, result)))
    handle.add_done_callback(lambda h: seen.append(h.result()))
    del handle
    failed_token, failed = _send(tracker)
    failed.add_done_callback(lambda h: seen.append(type(h.exception()).__name__))
    del failed
    quiet_token, _ = _send(tracker)  # dropped at once, with nothing registered
    native.answer(token, result="stored")
    native.answer(failed_token, code=443, text="topic not published")
    native.answer(quiet_token, result="stored")
    assert tracker.wait_empty(5) == 0
    assert seen == ["stored", (None, "stored"), "InvalidMessageError"]


def test_concurrent_futures_wait_and_as_completed_accept_handles(tracked):
    native, tracker = tracked
    sends = [_send(tracker) for _ in range(6)]
    handles = [handle for _, handle in sends]
    done, not_done = concurrent.futures.wait(handles, timeout=0.05)
    assert not done and len(not_done) == 6
    native.answer(sends[2][0], result="stored")
    done, not_done = concurrent.futures.wait(
        handles, timeout=5, return_when=concurrent.futures.FIRST_COMPLETED
    )
    assert done == {handles[2]}
    native.answer(sends[4][0], code=443, text="not published")
    done, _ = concurrent.futures.wait(
        handles, timeout=5, return_when=concurrent.futures.FIRST_EXCEPTION
    )
    assert handles[4] in done
    for token, _ in sends:
        native.answer(token, result="stored")  # a second answer is ignored
    completed = list(concurrent.futures.as_completed(handles, timeout=5))
    assert sorted(completed, key=id) == sorted(handles, key=id)
    done, not_done = concurrent.futures.wait(handles, timeout=5)
    assert len(done) == 6 and not not_done
    assert handles[4].exception().code == 443
    assert handles[0].result() == "stored"


def _waiting_thread(waits: FakeWaits, wait: Callable[[], object]) -> threading.Thread:
    """Runs `wait` on a thread; returns once it counts as waiting (or after 5 s)."""
    thread = threading.Thread(target=wait)
    thread.start()
    deadline = time.monotonic() + 5
    while waits.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    return thread


def test_every_thread_waiting_for_an_outcome_is_counted_while_it_waits(tracked):
    # While a thread waits for an outcome, the native queue hands outcomes out at once
    # instead of lingering for more (DeliveryQueue::Waiting): one send_async().result()
    # after another took the whole linger each. Every wait must end its count,
    # however it ends, or the queue would never linger again.
    native, tracker = tracked
    waits = native.waits
    token, handle = _send(tracker)
    with pytest.raises(concurrent.futures.TimeoutError):
        handle.result(timeout=0.05)
    assert (waits.waiting, waits.most) == (0, 1)
    seen: list[object] = []
    waiter = _waiting_thread(waits, lambda: seen.append(handle.result(timeout=5)))
    assert waits.waiting == 1
    native.answer(token, result="stored")
    waiter.join(5)
    assert seen == ["stored"] and waits.waiting == 0
    assert handle.result() == "stored" and handle.exception() is None and waits.most == 1
    others = [_send(tracker) for _ in range(3)]
    handles = [handle for _, handle in others]
    concurrent.futures.wait(handles, timeout=0.05)  # one waiter on each of the three
    assert (waits.waiting, waits.most) == (0, 3)
    for token, _ in others:
        native.answer(token, result="stored")
    assert len(list(concurrent.futures.as_completed([*handles, handle], timeout=5))) == 4
    assert waits.waiting == 0


def test_flush_counts_as_waiting_for_every_outcome_not_for_one(tracked):
    # Counted as waiting for one outcome, it stopped the linger for a whole window's
    # outcomes, handing them out a few at a time. Counted as waiting for every outcome,
    # the native queue ends a linger once all are in (delivery_queue_test.cc), so
    # produce() then flush() pays none; without a flush, a trickle's outcomes linger.
    # The count ends with the flush, however it ends.
    native, tracker = tracked
    waits = native.waits
    token, _ = tracker.register(None, handle=False)  # produce(), then flush()
    flushed: list[int] = []
    flusher = threading.Thread(target=lambda: flushed.append(tracker.wait_empty(5)))
    flusher.start()
    deadline = time.monotonic() + 5
    while waits.flushing == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert flusher.is_alive() and (waits.waiting, waits.most, waits.flushing) == (0, 0, 1)
    native.answer(token, result="stored")
    flusher.join(5)
    assert flushed == [0] and waits.most == 0 and (waits.flushing, waits.most_flushing) == (0, 1)
    late, _ = tracker.register(None, handle=False)
    assert tracker.wait_empty(0.05) == 1  # timed out: the count still ends
    assert waits.flushing == 0
    assert tracker.wait_empty(0) == 1 and waits.most_flushing == 1  # no wait, no count
    native.answer(late, result="stored")
    assert tracker.wait_empty(5) == 0


def test_raising_callbacks_are_logged_and_do_not_stop_the_others(tracked, caplog):
    native, tracker = tracked
    calls: list[object] = []

    def bad(error, result):
        raise RuntimeError("callback bug")

    sends = [_send(tracker, callback=bad) for _ in range(3)]
    sends.append(_send(tracker, callback=lambda error, result: calls.append(result)))
    sends[0][1].add_done_callback(lambda handle: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="tubemq.delivery"):
        for token, _ in sends:
            native.answer(token, result="stored")
        assert tracker.wait_empty(5) == 0
    assert calls == ["stored"]
    assert all(handle.result() == "stored" for _, handle in sends)
    messages = [record.getMessage() for record in caplog.records]
    assert sum("a delivery callback raised" in text for text in messages) == 3
    assert sum("done-callback" in text for text in messages) == 1


def test_a_callback_only_send_has_no_handle_and_flush_waits_for_it(tracked):
    native, tracker = tracked
    outcomes: list[tuple[object, object]] = []
    token, handle = tracker.register(lambda error, result: outcomes.append((error, result)), False)
    assert handle is None
    assert tracker.wait_empty(0.05) == 1
    native.answer(token, result="stored")
    assert tracker.wait_empty(5) == 0
    assert outcomes == [(None, "stored")]


def test_stopping_fails_what_is_left_with_outcome_unknown(tracked):
    _, tracker = tracked
    _, handle = _send(tracker)
    errors: list[object] = []
    tracker.register(lambda error, result: errors.append(error), False)
    tracker.stop(5.0)
    assert handle.exception(timeout=5).code == 1003
    assert [getattr(error, "code", None) for error in errors] == [1003]


def _unseen_counts(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The counts of the 'failed with nobody to tell' lines logged so far."""
    return [
        int(record.getMessage().split()[0])
        for record in caplog.records
        if record.name == "tubemq.delivery" and "no delivery callback" in record.getMessage()
    ]


def test_every_failure_nobody_hears_of_is_counted_in_a_log_line_by_the_flush(tracked, caplog):
    # The first is logged at once; the ones after it, within the 10 s between lines,
    # used to wait for a later failure to carry their count, and without one never
    # showed: three lost sends read as one.
    native, tracker = tracked
    caplog.set_level(logging.WARNING, logger="tubemq.delivery")
    tokens = [tracker.register(None, False)[0] for _ in range(4)]
    native.answer(tokens[0], code=443, text="first")
    assert tracker.wait_empty(0.02) == 3
    for token in tokens[1:]:
        native.answer(token, code=443, text="later")
        time.sleep(0.01)  # each in a drain of its own
    assert tracker.wait_empty(5) == 0
    assert _unseen_counts(caplog) == [1, 3]
    assert "[443] later" in caplog.records[-1].getMessage()


def test_failures_nobody_hears_of_are_logged_at_stop_without_a_flush(tracked, caplog):
    native, tracker = tracked
    caplog.set_level(logging.WARNING, logger="tubemq.delivery")
    first, second = tracker.register(None, False)[0], tracker.register(None, False)[0]
    native.answer(first, code=1000, text="a")
    native.answer(second, code=1000, text="b")
    tracker.stop(5.0)
    assert sum(_unseen_counts(caplog)) == 2


def test_a_coroutine_may_await_a_handle(tracked):
    # asyncio.wrap_future() wants a concurrent.futures.Future; `await handle` is the way.
    native, tracker = tracked
    token_ok, ok = _send(tracker)
    token_bad, bad = _send(tracker)

    async def main():
        threading.Timer(0.1, native.answer, (token_ok, "stored")).start()
        threading.Timer(0.05, lambda: waiting.append(native.waits.waiting)).start()
        result = await ok
        threading.Timer(0.1, native.answer, (token_bad, None, 443, "not published")).start()
        with pytest.raises(tubemq.TubeMQError) as failed:
            await bad
        return result, failed.value.code, await ok  # a done handle answers at once

    waiting: list[int] = []
    assert asyncio.run(main()) == ("stored", 443, "stored")
    assert waiting == [1] and native.waits.waiting == 0  # counted while it awaited


def test_slow_callbacks_make_the_delivery_thread_take_fewer_outcomes_at_a_time(tracked):
    """Nothing is drained while a batch's callbacks run, so the number taken at a time
    follows how long the last batch's callbacks took: with slow callbacks one or two
    (senders then wait for one callback, not a batch), with none it grows back towards
    the whole queue."""
    native, tracker = tracked
    slow_tokens = [tracker.register(lambda error, result: time.sleep(0.02))[0] for _ in range(40)]
    for token in slow_tokens:
        native.answer(token, result="stored")
    assert tracker.wait_empty(10) == 0
    assert native.asked[0] == 16  # before anything is known of the callbacks
    assert max(native.asked[1:]) <= 2, native.asked
    fast_tokens = [_send(tracker)[0] for _ in range(3000)]
    for _ in range(12):  # batches without callbacks: the size doubles each time
        for token in fast_tokens[:1]:
            native.answer(token, result="stored")
        del fast_tokens[:1]
        deadline = time.monotonic() + 5
        while tracker.pending() > len(fast_tokens) and time.monotonic() < deadline:
            time.sleep(0.001)
    for token in fast_tokens:
        native.answer(token, result="stored")
    assert tracker.wait_empty(10) == 0
    assert native.asked[-1] >= 256, native.asked[-12:]


def test_wait_completed_counts_what_completed_and_returns_as_soon_as_one_does(tracked):
    native, tracker = tracked
    began = time.monotonic()
    assert tracker.wait_completed(0.2) == 0  # nothing in flight: the whole timeout
    assert time.monotonic() - began >= 0.19
    tokens = [_send(tracker)[0] for _ in range(3)]
    assert tracker.wait_completed(0) == 0
    answered = threading.Timer(0.1, lambda: [native.answer(t, result="ok") for t in tokens])
    answered.start()
    began = time.monotonic()
    completed = 0
    while completed < 3:
        completed += tracker.wait_completed(10)  # returns on a completion, not after 10 s
    assert time.monotonic() - began < 5
    answered.join()


def test_wait_completed_counts_as_waiting_for_an_outcome_while_it_waits(tracked):
    # Kafka's produce() then poll(1.0): the native queue must hand the outcome out at
    # once, not after its linger. poll(0) waits for nothing and so is not counted.
    native, tracker = tracked
    waits = native.waits
    token, _ = _send(tracker)
    assert tracker.wait_completed(0) == 0 and waits.most == 0
    returned: list[int] = []
    waiter = _waiting_thread(waits, lambda: returned.append(tracker.wait_completed(10)))
    assert waits.waiting == 1 and waits.flushing == 0
    native.answer(token, result="stored")
    waiter.join(5)
    assert returned == [1] and waits.waiting == 0
    assert tracker.wait_completed(0.05) == 0 and (waits.waiting, waits.most) == (0, 1)


def test_wait_completed_from_a_callback_returns_at_once(tracked):
    native, tracker = tracked
    seen: list[tuple[int, float]] = []

    def waits_from_its_callback(error, result):
        began = time.monotonic()
        seen.append((tracker.wait_completed(10), time.monotonic() - began))

    token, _ = tracker.register(waits_from_its_callback)
    native.answer(token, result="ok")
    assert tracker.wait_empty(10) == 0
    assert len(seen) == 1 and seen[0][0] == 0 and seen[0][1] < 1


def test_a_wait_without_bound_ends_when_the_tracker_stops(tracked):
    _, tracker = tracked
    returned: list[int] = []
    waiter = threading.Thread(target=lambda: returned.append(tracker.wait_completed(None)))
    waiter.start()
    time.sleep(0.2)
    assert not returned  # nothing in flight: it waits
    tracker.stop(5.0)
    waiter.join(5)
    assert returned == [0]
