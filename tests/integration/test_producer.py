"""The producer against the real cluster: behaviour.md §10 scenarios 1-5 and 9, threads,
the in-flight window, interoperability with the official Java client, Ctrl-C."""

from __future__ import annotations

import collections
import subprocess
import sys
import threading
import time
import uuid

import pytest

import tubemq
from ctrl_c import delay_after_signal, interrupting_script
from tubemq import _core

pytestmark = pytest.mark.integration


@pytest.fixture
def producer(master, topics):
    with tubemq.Producer(master=master) as client:
        client.publish(topics[4])
        yield client


def test_publish_then_sync_send_is_stored(master, topics):
    # Scenario 1.
    with tubemq.Producer(master=master) as client:
        started = time.monotonic()
        client.publish(topics[4])
        assert time.monotonic() - started < 2.0
        before = time.time() * 1000
        result = client.send(topics[4], b"scenario-1")
        assert isinstance(result, tubemq.SendResult)
        assert result.message_id >= 0
        assert result.partition_id in {0, 1, 2, 3}
        assert result.partition_key == f"1:{topics[4]}:{result.partition_id}"
        assert result.topic == topics[4]
        assert abs(result.append_time - before) < 10_000
        assert result.append_offset >= 0
        assert result.attempts == 1


def test_round_robin_spreads_sync_sends_evenly(producer, topics):
    # Scenario 2 (4 partitions here: 300 sends -> 75 each).
    counts = collections.Counter(
        producer.send(topics[4], f"rr-{i}".encode()).partition_id for i in range(300)
    )
    assert sorted(counts) == [0, 1, 2, 3]
    assert all(73 <= count <= 77 for count in counts.values()), counts


def test_keyed_sends_stay_on_one_partition(producer, topics):
    partitions = {producer.send(topics[4], b"k", key="user-42").partition_id for _ in range(20)}
    assert len(partitions) == 1
    spread = {producer.send(topics[4], b"k", key=f"user-{i}").partition_id for i in range(40)}
    assert len(spread) > 1


def test_undeployed_topic_fails_to_publish_and_to_send_locally(master):
    # Scenario 3.
    with tubemq.Producer(master=master) as client:
        with pytest.raises(tubemq.TubeMQError) as info:
            client.publish("undeployed_topic_x")
        assert info.value.code == 443
        connections = _core.service_state()["connections"]
        with pytest.raises(tubemq.InvalidMessageError) as sent:
            client.send("undeployed_topic_x", b"data")
        assert sent.value.code in (443, 444)
        # Sent to without publish(), it is published first, and fails the same way.
        with pytest.raises(tubemq.InvalidMessageError) as never:
            client.send("never_published_topic", b"data")
        assert never.value.code == 443 and "not publishable" in never.value.message
        assert _core.service_state()["connections"] == connections  # no broker contacted


def test_local_checks_fail_without_network(master, topics):
    # Scenario 4, on a producer that has never talked to a broker.
    with tubemq.Producer(master=master) as client:
        client.publish(topics[4])
        connections = _core.service_state()["connections"]
        cases = [
            (dict(topic=topics[4], value=b""), 442, "empty"),
            (dict(topic="  ", value=b"x"), 441, "blank"),
            (dict(topic=topics[4], value=b"x" * (1024 * 1024 + 1)), 445, "exceeds the maximum"),
            (dict(topic=topics[4], value=b"x", attrs={"a=b": "c"}), 1010, "contains"),
            (dict(topic=topics[4], value=b"x", msg_time="2025"), 1010, "12 digits"),
        ]
        for kwargs, code, text in cases:
            with pytest.raises(tubemq.TubeMQError) as info:
                client.send(**kwargs)
            assert info.value.code == code, kwargs
            assert text in info.value.message
            future = client.send_async(**kwargs)
            assert future.exception(timeout=5).code == code
        assert _core.service_state()["connections"] == connections
        assert client.counters()["sent_ok"] == 0


def test_values_of_any_bytes_like_type(producer, topics):
    for value in (b"bytes", bytearray(b"bytearray"), memoryview(b"view"), memoryview(b"xx")[1:]):
        assert producer.send(topics[4], value).message_id >= 0
    with pytest.raises(TypeError):
        producer.send(topics[4], "a str is not bytes")


def test_java_client_reads_what_we_produce(master, topics, reference_consumer):
    # Scenario 5 and the interoperability acceptance: the official Java consumer sees the
    # same bytes, attributes, msgType and msgTime; an attribute-less message has flag 0.
    marker = f"interop-{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=master) as client:
        client.publish(topics[3])
        client.send(topics[3], f"{marker}-plain".encode())
        client.send(
            topics[3],
            f"{marker}-typed".encode(),
            msg_type="A",
            msg_time="202501011230",
            attrs={"origin": "python", "empty": ""},
        )
        client.send(topics[3], f"{marker}-attrs".encode() + bytes(range(256)), attrs={"k": "v"})
        client.send(topics[3], f"{marker}-empty-attrs".encode(), attrs={})
    rows = reference_consumer(master, topics[3], f"g_{marker.replace('-', '_')}", marker, 4)
    by_body = {row["body"][len(marker) + 1 :].split(b"\x00")[0]: row for row in rows}
    plain = by_body[b"plain"]
    assert plain["flag"] == 0 and plain["attribute"] is None and plain["msg_type"] is None
    typed = by_body[b"typed"]
    assert typed["flag"] == 1
    assert typed["msg_type"] == "A" and typed["msg_time"] == "202501011230"
    assert typed["attribute"] == "$msgType$=A,$msgTime$=202501011230,origin=python,empty="
    attrs = next(row for row in rows if row["body"].startswith(f"{marker}-attrs".encode()))
    assert attrs["body"] == f"{marker}-attrs".encode() + bytes(range(256))
    assert attrs["attribute"] == "k=v"
    assert by_body[b"empty-attrs"]["flag"] == 0


def test_ten_thousand_async_sends_from_four_threads(master, topics):
    per_thread, threads = 2500, 4
    completions = collections.Counter()
    lock = threading.Lock()

    def on_delivery(error, result):
        with lock:
            completions["error" if error else "ok"] += 1

    with tubemq.Producer(master=master, max_in_flight=2000) as client:
        client.publish(topics[5])
        futures: list = []

        def worker(index: int) -> None:
            mine = [
                client.send_async(topics[5], f"{index}-{i}".encode(), callback=on_delivery)
                for i in range(per_thread)
            ]
            with lock:
                futures.extend(mine)

        workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in workers), "senders deadlocked"
        assert client.flush(timeout=60) == 0
        assert len(futures) == per_thread * threads
        assert all(future.done() for future in futures)
        ids = [future.result().message_id for future in futures]
        assert len(set(ids)) == len(ids)  # each future resolved with its own message
    assert completions == {"ok": per_thread * threads}


def test_full_window_raises_queue_full_when_asked_not_to_block(master, topics):
    with tubemq.Producer(master=master, max_in_flight=1, block_on_full=False) as client:
        client.publish(topics[5])
        raised = 0
        futures = []
        for i in range(200):
            try:
                futures.append(client.send_async(topics[5], f"w{i}".encode()))
            except tubemq.QueueFullError as error:
                assert error.code == 1011
                raised += 1
        assert client.flush(timeout=30) == 0
        assert raised > 0
        assert all(future.result().message_id >= 0 for future in futures)


def test_a_slow_callback_slows_the_sender_instead_of_piling_up_outcomes(master, topics):
    """Outcomes the delivery thread has not handed to Python yet count against
    max_in_flight: with a callback of 10 ms, send_async waits for it, so no more than
    the window's worth of sends are ever in flight or undelivered, and nothing is lost."""
    window, count, nap = 20, 300, 0.01
    delivered: list[int] = []

    def slow(error, result):
        time.sleep(nap)
        delivered.append(0 if error is None else 1)

    with tubemq.Producer(master=master, max_in_flight=window) as client:
        client.publish(topics[5])
        began, undelivered = time.monotonic(), 0
        for i in range(count):
            client.send_async(topics[5], f"slow{i}".encode(), callback=slow)
            undelivered = max(undelivered, client.metrics()["in_flight"])
        sending = time.monotonic() - began
        assert client.flush(timeout=60) == 0
    # In flight and undelivered together at most `window`, plus the send waiting for room.
    assert undelivered <= window + 1, undelivered
    assert sending >= (count - window) * nap * 0.8  # paced by the callback
    assert delivered == [0] * count


def test_a_slow_callback_paces_the_sender_instead_of_stalling_it(master, topics):
    """Room in the bound comes back as the callbacks get through the outcomes, not after
    a whole drained batch of them: past the bound, a sender goes on at the callbacks'
    pace, and no send waits anywhere near as long as a bound's worth of callbacks takes
    (before: one drain took every waiting outcome, and the sender stood still until
    all of their callbacks had run, then sent a burst)."""
    window, count, nap = 300, 900, 0.005
    delivered: list[bool] = []

    def slow(error, result):
        time.sleep(nap)
        delivered.append(error is None)

    with tubemq.Producer(master=master, max_in_flight=window) as client:
        client.publish(topics[5])
        client.send(topics[5], b"connected")
        longest, last = 0.0, time.monotonic()
        for _ in range(count):
            client.send_async(topics[5], b"paced", callback=slow)
            now = time.monotonic()
            longest, last = max(longest, now - last), now
        assert client.flush(timeout=60) == 0
    # A bound's worth of callbacks takes window * nap = 1.5 s.
    assert longest < window * nap / 3, f"a send waited {longest:.2f} s"
    assert delivered == [True] * count


def test_a_callback_may_send_even_when_outcomes_wait(master, topics):
    """The delivery thread itself never waits for room: a callback that sends again
    (a retry, a follow-up) cannot deadlock it."""
    follow_ups = []

    with tubemq.Producer(master=master, max_in_flight=2) as client:
        client.publish(topics[5])

        def again(error, result):
            if len(follow_ups) < 50:
                follow_ups.append(client.send_async(topics[5], b"follow-up"))

        for _ in range(20):
            client.send_async(topics[5], b"first", callback=again)
        assert client.flush(timeout=30) == 0
        assert client.flush(timeout=30) == 0  # the follow-ups sent by callbacks
    assert len(follow_ups) == 20
    assert all(future.result(timeout=10).message_id >= 0 for future in follow_ups)


def test_the_kafka_producer_loop_runs_as_written_for_kafka(master, topics):
    """The loop of every Kafka client's first example: poll(0) between sends, produce
    with callback=, flush at the end; no publish() first, as Kafka has none."""
    reports: list[tuple[object, object]] = []

    def delivery_report(error, result):
        reports.append((error, result))

    with tubemq.Producer(master=master) as client:
        for i in range(500):
            client.poll(0)
            client.produce(topics[5], f"kafka-{i}".encode(), callback=delivery_report)
        assert client.flush() == 0
    assert len(reports) == 500
    assert all(error is None and result.message_id >= 0 for error, result in reports)


def test_poll_waits_for_completions_and_says_how_many(master, topics):
    with tubemq.Producer(master=master) as client:
        client.publish(topics[5])
        began = time.monotonic()
        assert client.poll(0.3) == 0  # nothing in flight: waits out its timeout
        assert time.monotonic() - began >= 0.29
        completed = 0
        for _ in range(3):
            client.produce(topics[5], b"poll")
        deadline = time.monotonic() + 30
        while completed < 3:
            assert time.monotonic() < deadline
            completed += client.poll(5.0)  # returns once one completes, not after 5 s
        assert client.poll(0) == 0
        seen: list[int] = []

        def polls_from_its_callback(error, result):
            seen.append(client.poll(10.0))  # would wait for itself: returns 0 at once

        began = time.monotonic()
        client.produce(topics[5], b"from a callback", callback=polls_from_its_callback)
        assert client.flush(timeout=30) == 0
        assert seen == [0] and time.monotonic() - began < 5
        with pytest.raises(tubemq.ArgumentTypeError, match="timeout"):
            client.poll("1")  # type: ignore[arg-type]
        with pytest.raises(tubemq.ConfigError, match="not both"):
            client.produce(topics[5], b"x", on_delivery=print, callback=print)
        assert client.in_flight() == 0  # refused before anything was queued
    with pytest.raises(tubemq.ClientClosedError):
        client.poll(0)


def test_closed_producer_refuses_sends(master, topics):
    # Scenario 9.
    client = tubemq.Producer(master=master)
    client.publish(topics[4])
    future = client.send_async(topics[4], b"before close")
    client.close()
    assert future.result(timeout=1).message_id >= 0  # close flushed it
    for send in (client.send, client.send_async):
        with pytest.raises(tubemq.ClientClosedError) as info:
            send(topics[4], b"after close")
        assert info.value.code == 420


def test_callback_exceptions_do_not_stop_delivery(master, topics, caplog):
    def bad_callback(error, result):
        raise RuntimeError("callback bug")

    with tubemq.Producer(master=master) as client:
        client.publish(topics[4])
        futures = [client.send_async(topics[4], b"cb", callback=bad_callback) for _ in range(5)]
        assert client.flush(timeout=10) == 0
        assert all(future.result().message_id >= 0 for future in futures)
    assert sum("a delivery callback raised" in r.getMessage() for r in caplog.records) == 5


@pytest.mark.parametrize("blocking_call", ["flush", "send"])
def test_ctrl_c_interrupts_a_blocking_call_quickly(master, topics, blocking_call):
    script = interrupting_script(f"""
        import tubemq
        client = tubemq.Producer(master={master!r}, max_in_flight=50)
        client.publish({topics[6]!r})
        interrupt_in_a_second()
        value = b"x" * 1024
        try:
            if {blocking_call!r} == "flush":
                for _ in range(60000):
                    client.send_async({topics[6]!r}, value)
                    if "sent" in stamp:
                        break
                client.flush()
            else:
                while True:
                    client.send({topics[6]!r}, value)
        except KeyboardInterrupt:
            report_interrupted()
        report_not_interrupted()
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    delay = delay_after_signal(done.stdout)
    assert delay < 0.2, delay


def test_close_is_prompt_with_sends_still_in_flight(master, topics):
    # Issue 15: blocking sends whose caller stopped waiting are still in flight
    # natively. With two or more of them, close() lost its continuation at the first
    # reply and waited out the RPC timeout (raising after its own 5 s); with one, its
    # leftover safety timer made stopping the I/O service take 1 s.
    producer = tubemq.Producer(master=master)
    producer.publish(topics[4])
    native = producer._native
    unknown = 0
    for index in range(20):
        # The native call, not send(): the facade refuses a timeout this short. The
        # producer's first sends wait for its broker connection, so most are in flight
        # (a reply that beats the GIL back lets one succeed).
        try:
            native.send(topics[4], b"abandoned %d" % index, None, [], "", "", True, 1e-6)
        except tubemq.OutcomeUnknownError as error:
            assert not error.retriable
            unknown += 1
    assert unknown >= 2 and native.in_flight() >= 2, (unknown, native.in_flight())
    started = time.monotonic()
    producer.close()
    assert time.monotonic() - started < 0.5
    assert native.counters()["sent_ok"] == 20  # each one stored, none lost
