"""Our Python client as a long-lived benchmark driver, written as a user writes it.

    python -m bench.py_worker --master H:P

The runner starts one such process per run and keeps it for every window, so that
the warm-up and the measured rounds run in the same process (as with the JVM). It
prints ``{"ready": ...}`` once imported, then reads one command per line on stdin and
answers each with one JSON line on stdout (the protocol of every driver, see
``bench/drivers.py``):

    window MODE SIZE TOPIC SECONDS MAX_COUNT ATTRS RATE
    quit

A window ends after SECONDS or MAX_COUNT messages, whichever comes first (latency:
SECONDS at RATE msg/s; ATTRS 1: every message sent carries the 2 attributes). Payloads
are built before the clock starts; a consumer's group join and first message are
outside it. ``cpu_s`` is this process's CPU time (every thread) over the window.
"""

from __future__ import annotations

import gc
import json
import random
import resource
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import tubemq
from bench.procfs import status_mib

_STAMP = struct.Struct("<q")  # the send time in a latency payload's first 8 bytes
ATTRS = {"region": "eu-west", "tenant": "bench"}  # the two attributes of the backlog
PARTITIONS = 4  # of every bench topic (bench/runner.py)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class GcPauses:
    """The cyclic collector's longest pause since the last reset: a pending send that
    holds tracked objects makes every full collection long (issue 25)."""

    def __init__(self) -> None:
        self.longest_s = 0.0
        self._began = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.longest_s = max(self.longest_s, time.perf_counter() - self._began)

    def take_ms(self) -> float:
        """The longest pause in ms since the last take, and start afresh."""
        longest, self.longest_s = self.longest_s, 0.0
        return longest * 1e3


def _payloads(size: int) -> list[bytes]:
    generator = random.Random(7)
    letters = b"abcdefghijklmnopqrstuvwxyz"
    return [bytes(generator.choices(letters, k=size)) for _ in range(16)]


def _quantiles(latencies: list[float], first: float) -> dict[str, float]:
    """The percentiles of a latency window's settled messages, and `first`, the delay of
    its first message (the one that ends the consumer's idle spell)."""
    latencies.sort()

    def at(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "p999": at(0.999),
            "max": latencies[-1], "first": first}  # fmt: skip


class Driver:
    """One producer for the life of the process (as an application keeps one), a new
    consumer group per consume window (each window reads the backlog from its start)."""

    def __init__(self, master: str) -> None:
        self.master = master
        self.producer: tubemq.Producer | None = None
        self.published: set[str] = set()
        self.groups = 0
        self.gc_pauses = GcPauses()

    def _producer(self, topic: str) -> tubemq.Producer:
        if self.producer is None:
            self.producer = tubemq.Producer(master=self.master, max_in_flight=20000)
        if topic not in self.published:
            self.producer.publish(topic)
            # Connect to the broker before timing; with the backlog's attributes, as this
            # message may land in a backlog that consume-attrs reads.
            self.producer.send(topic, b"x" * 8, attrs=ATTRS)
            self.published.add(topic)
        return self.producer

    def _consumer(self, topic: str, **settings: Any) -> tubemq.Consumer:
        """A consumer of a new group (so every window starts afresh); joins settle
        faster with 1 s heartbeats, as for the other drivers."""
        return tubemq.Consumer(
            master=self.master, group=self._group(), topics=[topic], heartbeat_period_ms=1000,
            **settings,
        )  # fmt: skip

    def _group(self) -> str:
        self.groups += 1
        return f"bench_py_{id(self):x}_{self.groups}"

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close()

    def window(self, mode: str, size: int, topic: str, seconds: float, max_count: int,
               attrs: bool, rate: float) -> dict:  # fmt: skip
        self.gc_pauses.take_ms()
        result = self._window(mode, size, topic, seconds, max_count, attrs, rate)
        result["gc_max_ms"] = self.gc_pauses.take_ms()
        return result

    def _window(self, mode: str, size: int, topic: str, seconds: float, max_count: int,
                attrs: bool, rate: float) -> dict:  # fmt: skip
        if mode in ("produce-sync", "produce-async"):
            return self._produce(mode == "produce-async", size, topic, seconds, max_count, attrs)
        if mode == "slow-callback":
            return self._slow_callback(size, topic, seconds)
        if mode in ("consume", "consume-attrs"):
            return self._consume(mode == "consume-attrs", topic, seconds, max_count)
        if mode == "consume-batch":
            return self._consume_batches(topic, seconds, max_count)
        if mode in ("latency", "latency-tuned"):
            return self._latency(size, topic, seconds, rate, tuned=mode == "latency-tuned")
        if mode == "idle":
            return self._idle(topic, seconds)
        raise ValueError(f"unknown mode {mode}")

    def _produce(self, asynchronous: bool, size: int, topic: str, seconds: float,
                 max_count: int, attrs: bool) -> dict:  # fmt: skip
        payloads = _payloads(size)
        producer = self._producer(topic)
        failed_before = producer.counters()["sent_failed"]
        send = producer.send_async if asynchronous else producer.send
        # The attributes are passed by keyword in the loop, as a user writes it: a
        # functools.partial made a dict of keywords per call, a cost no user pays.
        attributes = ATTRS if attrs else None
        cpu_before, started = _cpu_seconds(), time.perf_counter()
        deadline, count = started + seconds, 0
        # The clock is read once per 256 sends so that reading it costs nothing.
        while count < max_count:
            for i in range(count, min(count + 256, max_count)):
                send(topic, payloads[i & 15], attrs=attributes)
            count = min(count + 256, max_count)
            if time.perf_counter() >= deadline:
                break
        if asynchronous and producer.flush(timeout=600) != 0:
            raise RuntimeError("sends still pending after 600 s")
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        failed = producer.counters()["sent_failed"] - failed_before
        if failed:
            raise RuntimeError(f"{failed} sends failed")
        return {"count": count, "bytes": count * size, "elapsed_s": elapsed, "cpu_s": cpu}

    def _slow_callback(self, size: int, topic: str, seconds: float) -> dict:
        """send_async as fast as the producer admits, each callback sleeping 10 ms (an
        application writing every outcome somewhere slow): the sends must slow to the
        callback's pace instead of piling outcomes up, and memory must stay flat."""
        payloads = _payloads(size)
        producer = self._producer(topic)
        slow = threading.Event()
        slow.set()

        def callback(error: BaseException | None, result: object) -> None:
            if slow.is_set():  # cleared at the end, so that the flush does not take minutes
                time.sleep(SLOW_CALLBACK_S)

        cpu_before, started = _cpu_seconds(), time.perf_counter()
        # Memory and pace are taken from 2 s on (a smoke run's short window: half-way).
        settled, deadline = started + min(2.0, seconds / 2), started + seconds
        count, waiting_max = 0, 0
        rss_start, count_start, now = 0.0, 0, started
        while now < deadline:
            producer.send_async(topic, payloads[count & 15], callback=callback)
            count += 1
            if not count & 63:
                now = time.perf_counter()
                waiting_max = max(waiting_max, producer.metrics()["in_flight"])
                if not rss_start and now >= settled:
                    rss_start, count_start, settled = status_mib("self", "VmRSS"), count, now
        elapsed, cpu = now - started, _cpu_seconds() - cpu_before
        rss_end = status_mib("self", "VmRSS")
        slow.clear()
        if producer.flush(timeout=600) != 0:
            raise RuntimeError("sends still pending after 600 s")
        return {"count": count, "bytes": count * size, "elapsed_s": elapsed, "cpu_s": cpu,
                "steady_msg_s": (count - count_start) / max(now - settled, 1e-9),
                "rss_start_mib": rss_start, "rss_end_mib": rss_end,
                "waiting_max": waiting_max}  # fmt: skip

    def _consume(self, read_attrs: bool, topic: str, seconds: float, max_count: int) -> dict:
        with self._consumer(topic, consume_from="earliest") as consumer:
            messages: Iterator[tubemq.Message] = iter(consumer)
            first = next(messages)  # joining is not part of the measure
            count, total, checksum = 1, len(first), first[0]
            cpu_before, started = _cpu_seconds(), time.perf_counter()
            deadline = started + seconds
            for message in messages:
                # The value's first byte and its length, read where the fetch left them
                # (no copy, no memoryview object), as the C++ driver reads them.
                checksum += message[0]
                total += len(message)
                if read_attrs:
                    attrs = message.attrs
                    checksum += len(attrs["region"]) + len(attrs["tenant"])
                count += 1
                # Checked every 1024 messages: the clock is not free.
                if count >= max_count or (not count & 1023 and time.perf_counter() >= deadline):
                    break
            elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        if not checksum:
            raise RuntimeError("every value was empty")
        return {"count": count, "bytes": total, "elapsed_s": elapsed, "cpu_s": cpu}

    def _consume_batches(self, topic: str, seconds: float, max_count: int) -> dict:
        """The backlog a batch at a time, as a numpy or Arrow reader takes it: the values
        as one buffer plus offsets (Batch.values()), no Python object per message; each
        batch committed whole."""
        with self._consumer(topic, consume_from="earliest") as consumer:
            first = None
            while first is None or not len(first):  # joining is not part of the measure
                first = consumer.poll_batch(1.0)
            data, offsets = first.values()
            checksum = data[0]
            consumer.commit(first)
            # The first batch is outside the clock, so outside the count too; it still
            # counts towards max_count, the backlog's size.
            seen, count, total = len(first), 0, 0
            cpu_before, started = _cpu_seconds(), time.perf_counter()
            deadline = started + seconds
            while seen < max_count and time.perf_counter() < deadline:
                batch = consumer.poll_batch(1.0)
                if batch is None:
                    continue
                data, offsets = batch.values()
                if len(offsets) > 1:
                    checksum += data[0]  # the first value's first byte, and the length
                    total += len(data)
                    count += len(offsets) - 1
                    seen += len(offsets) - 1
                consumer.commit(batch)
            elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        if not checksum:
            raise RuntimeError("every value was empty")
        if not count:
            raise RuntimeError("no batch after the first")
        return {"count": count, "bytes": total, "elapsed_s": elapsed, "cpu_s": cpu}

    def _latency(self, size: int, topic: str, seconds: float, rate: float, tuned: bool) -> dict:
        payloads = [bytearray(p) for p in _payloads(size)]
        count, period = max(1, int(seconds * rate)), 1.0 / rate
        latencies: list[float] = []
        producer = self._producer(topic)
        tuning = {"msg_not_found_wait_ms": TUNED_NOT_FOUND_WAIT_MS} if tuned else {}
        with self._consumer(topic, consume_from="latest", **tuning) as consumer:
            # Sends made before the group owns every partition could land where nobody
            # reads yet.
            wanted, deadline = len(producer.partitions(topic)), time.monotonic() + 60
            while len(consumer.assignment()) < wanted:
                if time.monotonic() > deadline:
                    raise RuntimeError("the consumer never held every partition")
                consumer.poll(0.1)
            for _ in range(8):  # every partition answered "nothing new": steady state
                consumer.poll(0.05)
            errors: list[BaseException] = []

            def send_at_rate() -> None:
                try:
                    start = time.perf_counter()
                    for i in range(count):
                        delay = start + i * period - time.perf_counter()
                        if delay > 0:  # the pacing every driver shares (SENDER_TICK_S)
                            time.sleep(max(delay, SENDER_TICK_S))
                        body = payloads[i & 15]
                        _STAMP.pack_into(body, 0, time.perf_counter_ns())
                        producer.send_async(topic, body)
                    producer.flush(timeout=60)
                except BaseException as error:
                    errors.append(error)

            sender = threading.Thread(target=send_at_rate, name="bench-sender")
            cpu_before, started = _cpu_seconds(), time.perf_counter()
            sender.start()
            total, seen, first, give_up = 0, 0, None, started + seconds + 30
            settled_ns = int((started + LATENCY_SETTLE_S) * 1e9)
            while seen < count and time.perf_counter() < give_up:
                message = consumer.poll(0.1)
                if message is None:
                    continue
                now = time.perf_counter_ns()
                value = memoryview(message)
                sent = _STAMP.unpack_from(value, 0)[0]
                if first is None:
                    first = (now - sent) / 1e6
                if sent >= settled_ns:
                    latencies.append((now - sent) / 1e6)
                seen += 1
                total += value.nbytes
            sender.join()
            elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        if errors:
            raise errors[0]
        if first is None or not latencies:
            raise RuntimeError("no message arrived after the window's first second")
        return {"count": seen, "bytes": total, "elapsed_s": elapsed, "cpu_s": cpu,
                "latency_ms": _quantiles(latencies, first)}  # fmt: skip

    def _idle(self, topic: str, seconds: float) -> dict:
        """A consumer of a new group on a topic nobody writes, polled all along as an
        application waiting for data polls: what waiting costs client and broker."""
        with self._consumer(topic) as consumer:
            deadline = time.monotonic() + 60
            while len(consumer.assignment()) < PARTITIONS:  # joining is not measured
                if time.monotonic() > deadline:
                    raise RuntimeError("the consumer never held every partition")
                consumer.poll(0.1)
            count, cpu_before, started = 0, _cpu_seconds(), time.perf_counter()
            end = started + seconds
            while (left := end - time.perf_counter()) > 0:
                if consumer.poll(min(left, 1.0)) is not None:
                    count += 1
            elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        return {"count": count, "bytes": 0, "elapsed_s": elapsed, "cpu_s": cpu}


# latency-tuned: the ceiling of the rest after "nothing new" that a user after low
# latency sets (Java's tuned latency consumer rests 10 ms too); "latency" runs every
# client with its defaults. bench/runner.py names both in the report.
TUNED_NOT_FOUND_WAIT_MS = 10

# A latency sender's shortest sleep. Java's Thread.sleep(ms, ns) sleeps whole
# milliseconds (JDK 17 rounds a positive remainder up), so its sender woke at most once
# per millisecond and sent every message due by then, bursts of about 10 at 10 000
# msg/s, while ours slept 0.1 ms per message. Every driver now paces this way
# (kSenderTick in bench/cpp, SENDER_TICK_MS in bench/java).
SENDER_TICK_S = 0.001

# The percentiles of a latency window are those of the messages sent after its first
# second; the first message's delay is reported apart ("first"). A consumer that waited
# before the window has backed its partitions off towards its ceiling (400 ms by
# default; Java tuned: 10 ms), so the first messages waited up to one rest: at 1 000
# msg/s, 20-110 of 10 000 messages at 5-110 ms, a p99 of 14 ms for our C++ driver in one
# round and 1.2 in the next, by when the rest happened to end. That is the cost of
# leaving idle, not of a steady rate; the same for every driver (kLatencySettle in
# bench/cpp, LATENCY_SETTLE_S in bench/java).
LATENCY_SETTLE_S = 1.0

# slow-callback: what each outcome's callback sleeps.
SLOW_CALLBACK_S = 0.01


def serve(master: str, commands, answers) -> None:
    """Answers each command line with one JSON line until ``quit`` or end of input."""
    driver = Driver(master)
    answers.write(json.dumps({"ready": True, "cpu_s": _cpu_seconds()}) + "\n")
    answers.flush()
    try:
        for line in commands:
            words = line.split()
            if not words or words[0] == "quit":
                break
            if words[0] != "window" or len(words) != 8:
                raise ValueError(f"bad command {line!r}")
            mode, size, topic, seconds, max_count, attrs, rate = words[1:]
            try:
                result = driver.window(mode, int(size), topic, float(seconds), int(max_count),
                                       attrs == "1", float(rate))  # fmt: skip
            except Exception as error:  # answered, so the runner can say which window failed
                result = {"error": f"{type(error).__name__}: {error}"}
            answers.write(json.dumps(result) + "\n")
            answers.flush()
    finally:
        driver.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--master":
        raise SystemExit("usage: python -m bench.py_worker --master H:P")
    serve(argv[1], sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
