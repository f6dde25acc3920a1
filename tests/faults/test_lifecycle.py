"""Lifecycle hazards (issue 8): many create/close cycles leak nothing; processes that exit
without closing their clients neither crash nor hang; fork() with live clients; close()
racing a blocked poll(); Ctrl-C on blocked consumer calls; gc in threads with callbacks
pending. Ctrl-C on a producer's send and flush: tests/integration/test_producer.py and,
blocked on a blackholed broker, tests/faults/test_network_faults.py."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

import tubemq
from ctrl_c import delay_after_signal, interrupting_script

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CYCLES = 1000


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _resources() -> dict[str, int]:
    gc.collect()
    return {
        "rss_kib": _rss_kib(),
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": len(os.listdir("/proc/self/task")),
    }


def _settle(baseline: dict[str, int], seconds: float = 5.0) -> dict[str, int]:
    """Resources once closing threads had time to end (never longer than ``seconds``)."""
    deadline = time.monotonic() + seconds
    current = _resources()
    while time.monotonic() < deadline and (
        current["fds"] > baseline["fds"] or current["threads"] > baseline["threads"]
    ):
        time.sleep(0.1)
        current = _resources()
    return current


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _cycle(make, warmup: int = 30):
    for _ in range(warmup):
        make().close()
    before = _resources()
    started = time.monotonic()
    for _ in range(CYCLES):
        make().close()
    elapsed = time.monotonic() - started
    after = _settle(before)
    return before, after, elapsed


def _report(kind: str, before, after, elapsed: float) -> None:
    print(
        f"\n{kind}: {CYCLES} create/close cycles in {elapsed:.1f} s; "
        f"RSS {before['rss_kib']} -> {after['rss_kib']} KiB, "
        f"fds {before['fds']} -> {after['fds']}, threads {before['threads']} -> {after['threads']}"
    )


def _assert_flat(before, after) -> None:
    # Small slack: allocator arenas and caches settle; a leak of one object graph per
    # client (a few KiB) times 1000 would exceed it, as would one fd or thread per cycle.
    assert after["rss_kib"] - before["rss_kib"] < 12 * 1024, (before, after)
    assert after["fds"] - before["fds"] <= 2, (before, after)
    assert after["threads"] - before["threads"] <= 1, (before, after)


def test_a_thousand_producers_created_and_closed_leak_nothing(master, topics):
    def make():
        producer = tubemq.Producer(master=master)
        producer.publish(topics[5])
        return producer

    before, after, elapsed = _cycle(make)
    _report("producer", before, after, elapsed)
    _assert_flat(before, after)


def test_a_thousand_consumers_created_and_closed_leak_nothing(master, topics):
    group = _unique("cycles")

    def make():
        return tubemq.Consumer(master=master, group=group, topics=[topics[5]])

    before, after, elapsed = _cycle(make)
    _report("consumer", before, after, elapsed)
    _assert_flat(before, after)


_UNCLOSED = """
import os, sys, threading, tubemq
master, topic, run = sys.argv[1], sys.argv[2], int(sys.argv[3])
producer = tubemq.Producer(master=master)
producer.publish(topic)
producer.send(topic, b"sync")
for index in range(20):
    producer.send_async(topic, b"left in flight %d" % index, callback=lambda e, r: None)
consumer = tubemq.Consumer(master=master, group="unclosed_%d" % (run % 4), topics=[topic])
def poll_until_closed():
    try:
        consumer.poll(30.0)
    except tubemq.ClientClosedError:
        pass  # the exit closed the consumer under it
if run % 3 == 1:
    # A daemon thread blocked in poll() when the interpreter goes away.
    threading.Thread(target=poll_until_closed, daemon=True).start()
print("ready", flush=True)
if run % 3 == 2:
    sys.exit(3)
"""


def test_processes_that_exit_without_closing_neither_crash_nor_hang(master, topics):
    slowest = 0.0
    for run in range(100):
        child = subprocess.Popen(
            [sys.executable, "-c", _UNCLOSED, master, topics[5], str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = child.stdout.readline()
            ready = time.monotonic()
            assert line.strip() == "ready", child.communicate(timeout=10)
            _, err = child.communicate(timeout=10)
            took = time.monotonic() - ready
        finally:
            child.kill()
        expected = 3 if run % 3 == 2 else 0
        assert child.returncode == expected, (run, child.returncode, err[-2000:])
        for sign in ("Traceback", "Fatal", "terminate called", "Segmentation"):
            assert sign not in err, (run, err[-2000:])
        assert took < 2.0, (run, took)
        slowest = max(slowest, took)
    print(f"\n100 unclosed runs: slowest exit {slowest:.2f} s after the clients were live")


_DROPPED_ON_A_DAEMON_THREAD = """
import atexit, sys, threading, time, tubemq
master, topic, kind, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
go, holding = threading.Event(), threading.Event()
def owner():
    if kind == "producer":
        client = tubemq.Producer(master=master)
        client.publish(topic)
    else:
        client = tubemq.Consumer(master=master, group="daemon_drop", topics=[topic])
    holding.set()
    go.wait()
    del client  # the last reference, never closed: destroyed on this daemon thread
threading.Thread(target=owner, daemon=True).start()
holding.wait()
def drop_as_we_exit():
    go.set()
    time.sleep(pause)  # the interpreter finalizes while the client is being destroyed
atexit.register(drop_as_we_exit)
"""


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_a_daemon_thread_dropping_an_unclosed_client_as_the_process_exits_is_safe(
    master, topics, kind
):
    # The client's destruction let the GIL go while it closed the client, and took it
    # back after finalization had begun: Python ends such a thread with pthread_exit(),
    # whose unwind through the destructor aborted the process ("terminate called without
    # an active exception") in 22 of 24 runs.
    for pause in ("0", "0.0005", "0.001", "0.002"):
        child = subprocess.run(
            [sys.executable, "-c", _DROPPED_ON_A_DAEMON_THREAD, master, topics[5], kind, pause],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 0, (pause, child.returncode, child.stderr[-2000:])
        assert "terminate called" not in child.stderr, (pause, child.stderr[-2000:])


def test_fork_with_live_clients(master, topics):
    topic, marker = topics[5], _unique("fork")
    script = textwrap.dedent(f"""
        import gc, os, sys, time, tubemq
        master, topic, marker = {master!r}, {topic!r}, {marker!r}

        def roundtrip(producer, consumer, body):
            # Once the consumer holds every partition, a message sent now reaches it.
            deadline = time.monotonic() + 60
            while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
                consumer.poll(0.2)
            producer.send(topic, body)
            while time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and bytes(message) == body:
                    return True
            return False

        producer = tubemq.Producer(master=master)
        producer.publish(topic)
        consumer = tubemq.Consumer(master=master, group=marker, topics=[topic])
        pid = os.fork()
        if pid == 0:
            report = []
            for name, call in (("send", lambda: producer.send(topic, b"x")),
                               ("send_async", lambda: producer.send_async(topic, b"x")),
                               ("flush", lambda: producer.flush(1)),
                               ("poll", lambda: consumer.poll(0.1)),
                               ("assignment", consumer.assignment)):
                try:
                    call()
                    report.append(name + ":no error")
                except tubemq.ForkedClientError as error:
                    report.append(name + ":%d" % error.code)
            del producer, consumer  # the parent's clients, dropped here
            gc.collect()
            with tubemq.Producer(master=master) as own, tubemq.Consumer(
                    master=master, group=marker + "_child", topics=[topic]) as own_consumer:
                own.publish(topic)
                if roundtrip(own, own_consumer, (marker + "-child").encode()):
                    report.append("child consumed")
            print(" ".join(report), flush=True)
            sys.exit(0)  # a normal exit: atexit meets the parent's clients
        deadline = time.monotonic() + 90
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                print("the child hung", flush=True)
                sys.exit(2)
            time.sleep(0.1)
        if roundtrip(producer, consumer, (marker + "-parent").encode()):
            print("parent consumed", os.waitstatus_to_exitcode(status), flush=True)
        producer.close()
        consumer.close()
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) >= 2, done.stdout + done.stderr[-3000:]
    assert lines[-2] == (
        "send:1012 send_async:1012 flush:1012 poll:1012 assignment:1012 child consumed"
    ), done.stdout
    assert lines[-1] == "parent consumed 0", done.stdout


def test_close_during_a_blocked_poll_returns_both_promptly(master, topics):
    consumer = tubemq.Consumer(
        master=master, group=_unique("closing"), topics=[topics[5]], consume_from="latest"
    )
    outcome: dict[str, object] = {}

    def poller():
        try:
            while "closed" not in outcome:  # poll again until the close lands
                outcome["result"] = consumer.poll(30.0)
        except tubemq.TubeMQError as error:
            outcome["result"] = error
        outcome["returned"] = time.monotonic()

    thread = threading.Thread(target=poller)
    thread.start()
    time.sleep(1.0)  # the poller is waiting inside poll(30)
    started = time.monotonic()
    consumer.close()
    outcome["closed"] = time.monotonic()
    thread.join(timeout=5)
    assert not thread.is_alive(), "poll() still blocked after close()"
    assert outcome["closed"] - started < 3.0
    assert outcome["returned"] - outcome["closed"] < 1.0
    result = outcome["result"]
    assert result is None or isinstance(result, tubemq.ClientClosedError), result
    assert consumer.closed


def _silent_master() -> socket.socket:
    """A socket that completes TCP handshakes (backlog) and never answers: a hung master."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener


@pytest.mark.parametrize("call", ["poll", "iterate", "consume", "start_producer", "start_consumer"])
def test_ctrl_c_interrupts_a_blocked_consumer_or_start_within_200ms(master, topics, call):
    with _silent_master() as hung:
        hung_address = f"127.0.0.1:{hung.getsockname()[1]}"
        script = interrupting_script(f"""
            import tubemq
            call = {call!r}
            if call.startswith("start"):
                master, kwargs = {hung_address!r}, dict(rpc_timeout_ms=60000, register_attempts=3)
            else:
                master, kwargs = {master!r}, {{}}
                consumer = tubemq.Consumer(master=master, group={_unique("sigint")!r},
                                           topics=[{topics[5]!r}], consume_from="latest")
            interrupt_in_a_second()
            try:
                if call == "poll":
                    consumer.poll(60.0)
                elif call == "iterate":
                    for message in consumer:
                        pass
                elif call == "consume":
                    consumer.consume(100, timeout=60.0)
                elif call == "start_producer":
                    tubemq.Producer(master=master, **kwargs)
                else:
                    tubemq.Consumer(master=master, group="g_hung", topics=["t_hung"], **kwargs)
            except KeyboardInterrupt:
                report_interrupted()
            report_not_interrupted()
        """)
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    delay = delay_after_signal(done.stdout)
    assert delay < 0.2, delay


def test_gc_in_threads_with_callbacks_pending_is_safe(master, topics):
    script = textwrap.dedent(f"""
        import gc, threading, time, tubemq
        master, topic = {master!r}, {topics[5]!r}
        stop = threading.Event()
        collections = [0]
        def collector():
            while not stop.is_set():
                gc.collect()
                collections[0] += 1
        # Daemons: a failure of the main thread must end the process, not leave it to
        # the test's timeout.
        collectors = [threading.Thread(target=collector, daemon=True) for _ in range(3)]
        for thread in collectors:
            thread.start()
        calls = {{}}
        lock = threading.Lock()
        class Cycle:  # reference cycles that only the collector frees
            def __init__(self, index):
                self.me, self.index = self, index
            def __call__(self, error, result):
                with lock:
                    calls[self.index] = calls.get(self.index, 0) + 1
        futures = []
        for round_ in range(5):
            producer = tubemq.Producer(master=master, max_in_flight=200)
            producer.publish(topic)
            for index in range(400):
                callback = Cycle(round_ * 400 + index)
                futures.append(producer.send_async(topic, b"gc", callback=callback))
            if round_ % 2:
                producer.close()
            else:
                producer.flush(30)
                del producer  # dropped unclosed; atexit or gc finds it
            gc.collect()
        class Assigned:  # a reference cycle as well, called with the keys assigned
            def __init__(self):
                self.me, self.keys = self, []
            def __call__(self, keys):
                self.keys.extend(keys)
        on_assign = Assigned()
        consumer = tubemq.Consumer(master=master, group="gc_threads", topics=[topic],
                                   consume_from="earliest", on_assign=on_assign)
        deadline = time.monotonic() + 30
        while not on_assign.keys and time.monotonic() < deadline:
            consumer.poll(0.01)
        consumer.close()
        stop.set()
        for thread in collectors:
            thread.join()
        ok = sum(1 for f in futures if f.exception(timeout=30) is None)
        once = all(calls.get(i) == 1 for i in range(2000))
        print("futures", len(futures), "ok", ok, "callbacks once", once,
              "assigned", bool(on_assign.keys), "gc runs", collections[0])
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    assert words[:6] == ["futures", "2000", "ok", "2000", "callbacks", "once"], done.stdout
    assert words[6:9] == ["True", "assigned", "True"], done.stdout
    print(done.stdout)


def test_producers_dropped_without_close_leave_no_threads_behind(master, topics):
    def drop_one():
        producer = tubemq.Producer(master=master)
        producer.publish(topics[5])
        producer.send_async(topics[5], b"dropped").result(timeout=10)  # starts its thread

    for _ in range(5):
        drop_one()
    before = _resources()
    for _ in range(100):
        drop_one()
    after = _settle(before, seconds=10)
    print(
        f"\n100 dropped producers: threads {before['threads']} -> {after['threads']}, "
        f"fds {before['fds']} -> {after['fds']}"
    )
    assert after["threads"] - before["threads"] <= 1, (before, after)
    assert after["fds"] - before["fds"] <= 2, (before, after)
