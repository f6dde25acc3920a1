"""Our Python client through one workload, as a user writes it; prints one JSON line.

Run by the benchmark runner in a process of its own (so that its rusage is its own):

    python -m bench.py_worker --master H:P --topic T --mode MODE --size B --count N
                              [--group G] [--rate R] [--not-found-wait-ms MS]

The modes and the timed sections are those of ``bench/cpp/native_bench.cc``: payloads
are built before the clock starts; joining a group and the first batch are outside it.
``cpu_s`` is the process's CPU time (every thread) over the timed section.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import struct
import sys
import threading
import time

import tubemq

_STAMP = struct.Struct("<q")  # the send time in a latency payload's first 8 bytes


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _payloads(size: int) -> list[bytes]:
    generator = random.Random(7)
    letters = b"abcdefghijklmnopqrstuvwxyz"
    return [bytes(generator.choices(letters, k=size)) for _ in range(16)]


def _produce(args: argparse.Namespace, asynchronous: bool) -> dict:
    payloads = _payloads(args.size)
    topic, count = args.topic, args.count
    with tubemq.Producer(master=args.master, max_in_flight=20000) as producer:
        producer.publish(topic)
        producer.send(topic, payloads[0])  # connect to the broker before timing
        cpu_before, started = _cpu_seconds(), time.perf_counter()
        if asynchronous:
            for i in range(count):
                producer.send_async(topic, payloads[i & 15])
            if producer.flush(timeout=600) != 0:
                raise RuntimeError("sends still pending after 600 s")
        else:
            for i in range(count):
                producer.send(topic, payloads[i & 15])
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
        failed = producer.counters()["sent_failed"]
    if failed:
        raise RuntimeError(f"{failed} sends failed")
    return {"count": count, "bytes": count * args.size, "elapsed_s": elapsed, "cpu_s": cpu}


def _consume(args: argparse.Namespace) -> dict:
    with tubemq.Consumer(
        master=args.master,
        group=args.group,
        topics=[args.topic],
        consume_from="earliest",
        heartbeat_period_ms=1000,
        msg_not_found_wait_ms=args.not_found_wait_ms,
    ) as consumer:
        messages = iter(consumer)
        first = memoryview(next(messages))  # joining is not part of the measure
        count, total, checksum = 1, first.nbytes, first[0]
        cpu_before, started = _cpu_seconds(), time.perf_counter()
        for message in messages:
            value = memoryview(message)  # the value, without a copy
            checksum += value[0]
            total += value.nbytes
            count += 1
            if count == args.count:
                break
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
    if not checksum:
        raise RuntimeError("every value was empty")
    return {"count": count, "bytes": total, "elapsed_s": elapsed, "cpu_s": cpu}


def _latency(args: argparse.Namespace) -> dict:
    payloads = [bytearray(p) for p in _payloads(args.size)]
    topic, count, period = args.topic, args.count, 1.0 / args.rate
    latencies: list[float] = []
    consumer = tubemq.Consumer(
        master=args.master,
        group=args.group,
        topics=[topic],
        consume_from="latest",
        heartbeat_period_ms=1000,
        msg_not_found_wait_ms=args.not_found_wait_ms,
    )
    producer = tubemq.Producer(master=args.master, max_in_flight=20000)
    with consumer, producer:
        producer.publish(topic)
        # Sends made before the group owns every partition could land where nobody reads.
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
                    if delay > 0:
                        time.sleep(delay)
                    body = payloads[i & 15]
                    _STAMP.pack_into(body, 0, time.perf_counter_ns())
                    producer.send_async(topic, body)
                producer.flush(timeout=60)
            except BaseException as error:
                errors.append(error)

        sender = threading.Thread(target=send_at_rate, name="bench-sender")
        cpu_before, started = _cpu_seconds(), time.perf_counter()
        sender.start()
        total, give_up = 0, started + count / args.rate + 30
        while len(latencies) < count and time.perf_counter() < give_up:
            message = consumer.poll(0.1)
            if message is None:
                continue
            now = time.perf_counter_ns()
            value = memoryview(message)
            latencies.append((now - _STAMP.unpack_from(value, 0)[0]) / 1e6)
            total += value.nbytes
        sender.join()
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
    if errors:
        raise errors[0]
    latencies.sort()

    def at(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {
        "count": len(latencies),
        "bytes": total,
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "latency_ms": {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": latencies[-1]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--mode", required=True, choices=["produce-sync", "produce-async", "consume", "latency"]
    )
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--group", default="bench_py")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--not-found-wait-ms", type=int, default=400)
    args = parser.parse_args(argv)
    if args.mode == "consume":
        result = _consume(args)
    elif args.mode == "latency":
        result = _latency(args)
    else:
        result = _produce(args, asynchronous=args.mode == "produce-async")
    record = {"client": "python", "mode": args.mode, "latency_ms": None, **result}
    # The editable install may print rebuild lines on stdout: the record is the last line.
    sys.stdout.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
