"""The handle send_async() returns and produce(), against the real cluster (issue 25):
the Future contract a user relies on, with no GC-tracked object per pending send."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import threading

import pytest

import tubemq
import tubemq.aio

pytestmark = pytest.mark.integration

# A name no master accepts: a send to it fails at once with 443, without publishing
# (a send to any valid name publishes it first: test_publish_on_send.py).
UNPUBLISHABLE = "not:a:topic"


@pytest.fixture
def producer(master, topics):
    with tubemq.Producer(master=master, max_in_flight=5000) as client:
        client.publish(topics[5])
        yield client


def test_result_of_a_stored_send(producer, topics):
    handle = producer.send_async(topics[5], b"handled", key="k")
    assert gc.is_tracked(handle) is False
    result = handle.result(timeout=10)
    assert result.topic == topics[5] and result.message_id >= 0
    assert handle.done() and not handle.running() and handle.exception() is None
    assert handle.result() is result


def test_async_results_name_where_each_send_was_stored(master, cluster, topics):
    # Outcomes share one record of where they were stored per partition
    # (bindings/deliveries.h): each result must still name its own topic, partition
    # and broker, and a failed send none.
    written = (topics[4], topics[5])
    with tubemq.Producer(master=master) as client:
        client.publish(list(written))
        handles = [
            (topic, client.send_async(topic, b"where")) for _ in range(40) for topic in written
        ]
        failed = client.send_async(UNPUBLISHABLE, b"never published")
        results = [(topic, handle.result(timeout=10)) for topic, handle in handles]
        assert failed.exception(timeout=10).code == 443
    for topic, result in results:
        assert result.topic == topic
        assert result.partition_key == f"1:{topic}:{result.partition_id}"
        assert result.broker_address == cluster.broker_address
    assert {(topic, result.partition_id) for topic, result in results} == {
        (topic, partition) for topic in written for partition in range(4)
    }


def test_a_failed_send_reports_its_error(producer, topics):
    handle = producer.send_async(UNPUBLISHABLE, b"never published")
    error = handle.exception(timeout=10)
    assert isinstance(error, tubemq.TubeMQError) and error.code == 443
    with pytest.raises(tubemq.TubeMQError) as info:
        handle.result()
    assert info.value.code == 443
    assert handle.done() and not handle.cancelled()


def test_done_callbacks_run_once_before_and_after_completion(producer, topics):
    calls: list[tuple[tubemq.SendHandle, bool, str]] = []
    lock = threading.Lock()

    def record(handle: tubemq.SendHandle) -> None:
        with lock:
            calls.append((handle, handle.done(), threading.current_thread().name))

    handles = [producer.send_async(topics[5], b"cb %d" % i) for i in range(200)]
    for handle in handles:
        handle.add_done_callback(record)
    assert producer.flush(timeout=30) == 0
    assert sorted(id(call[0]) for call in calls) == sorted(id(handle) for handle in handles)
    assert all(done for _, done, _ in calls)
    # Registered while pending: on the delivery thread; once done: at once, right here.
    assert {name for _, _, name in calls} <= {"tubemq-delivery", "MainThread"}
    calls.clear()
    handles[0].add_done_callback(record)
    assert calls == [(handles[0], True, threading.current_thread().name)]


def test_concurrent_futures_wait_and_as_completed(producer, topics):
    handles = [producer.send_async(topics[5], b"w %d" % i) for i in range(500)]
    done, not_done = concurrent.futures.wait(handles, timeout=30)
    assert len(done) == 500 and not not_done
    assert len({handle.result().message_id for handle in handles}) == 500
    more = [producer.send_async(topics[5], b"c %d" % i) for i in range(100)]
    completed = list(concurrent.futures.as_completed(more, timeout=30))
    assert len(completed) == 100 and set(completed) == set(more)


def test_cancel_never_takes_a_queued_send_back(producer, topics):
    handle = producer.send_async(topics[5], b"not cancelled")
    assert handle.cancel() is False
    assert not handle.cancelled()
    assert handle.result(timeout=10).message_id >= 0


def test_flush_waits_for_every_handle_and_produce_callback(producer, topics):
    outcomes: list[int] = []
    handles = [producer.send_async(topics[5], b"f %d" % i) for i in range(2000)]
    for i in range(2000):
        assert (
            producer.produce(
                topics[5],
                b"p %d" % i,
                on_delivery=lambda error, result: outcomes.append(0 if error is None else 1),
            )
            is None
        )
    assert producer.flush(timeout=60) == 0
    assert all(handle.done() for handle in handles)
    assert outcomes == [0] * 2000  # all called before flush() returned


def test_produce_reports_a_failure_to_its_callback(producer, topics):
    errors: list[tubemq.TubeMQError | None] = []
    producer.produce(UNPUBLISHABLE, b"unpublished", on_delivery=lambda e, r: errors.append(e))
    assert producer.flush(timeout=10) == 0
    assert [getattr(error, "code", None) for error in errors] == [443]
    with pytest.raises(tubemq.ConfigError):
        producer.produce(topics[5], b"x", on_delivery="not callable")  # type: ignore[arg-type]


def test_close_resolves_every_pending_handle(master, topics):
    client = tubemq.Producer(master=master, max_in_flight=20000)
    client.publish(topics[5])
    handles = [client.send_async(topics[5], b"c %d" % i) for i in range(3000)]
    client.close(timeout=0)  # do not wait: what is pending fails with 1003
    codes = set()
    for handle in handles:
        error = handle.exception(timeout=10)
        codes.add(0 if error is None else error.code)
    assert codes <= {0, 1003}, codes


def test_asyncio_send_and_its_failure(master, topics):
    async def scenario() -> tuple[int, int]:
        async with tubemq.aio.Producer(master=master, max_in_flight=8) as producer:
            await producer.publish(topics[5])
            results = await asyncio.gather(
                *(producer.send(topics[5], b"aio %d" % i) for i in range(50))
            )
            with pytest.raises(tubemq.TubeMQError) as info:
                await producer.send(UNPUBLISHABLE, b"unpublished")
            return len({result.message_id for result in results}), info.value.code

    assert asyncio.run(scenario()) == (50, 443)


def test_common_sends_are_queued_natively_and_the_others_on_the_checked_path(
    master, topics, monkeypatch
):
    # The native shortcut (bindings/send_shortcut.cc) takes the sends that need no check
    # beyond a type test; every other send goes through Producer._queue, which alone
    # raises argument errors. Both store the message the same way.
    checked: list[object] = []
    original = tubemq.Producer._queue

    def counting(self, topic, value, *rest):
        checked.append(value)
        return original(self, topic, value, *rest)

    monkeypatch.setattr(tubemq.Producer, "_queue", counting)  # before the producer exists
    delivered: list[object] = []
    with tubemq.Producer(master=master) as client:
        client.publish(topics[5])
        common = [
            client.send_async(topics[5], b"plain"),
            client.send_async(
                topics[5],
                bytearray(b"all"),
                key="k",
                attrs={"a": "1"},
                msg_type="t",
                callback=lambda error, result: delivered.append(error),
            ),
        ]
        client.produce(topics[5], b"no handle", on_delivery=lambda e, r: delivered.append(e))
        assert checked == []
        other = [
            client.send_async(topics[5], memoryview(b"a view")),
            client.send_async(topics[5], b"wide attribute", attrs={"clé": "été"}),
            client.send_async(topics[5], b"pinned", partition=0),
        ]
        assert checked == [memoryview(b"a view"), b"wide attribute", b"pinned"]
        with pytest.raises(tubemq.ArgumentTypeError) as info:
            client.send_async(topics[5], "text")
        assert info.value.key == "value"
        assert all(handle.result(timeout=10).message_id >= 0 for handle in common + other)
        assert client.flush(timeout=10) == 0
        assert delivered == [None, None]
    with pytest.raises(tubemq.ClientClosedError):
        client.send_async(topics[5], b"after close")
