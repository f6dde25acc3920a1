"""``tubemq perf produce|consume``: load a topic or drain it, printing a line of figures
every ``--interval`` seconds (messages/s, MiB/s, and for produce the send latency) and a
summary at the end, like the perf tools of other message queues.

    tubemq perf produce --master M --topic T [--size 1024] [--rate 0] [--seconds 10]
    tubemq perf consume --master M --topic T [--group G] [--seconds 10]

``--rate 0`` sends as fast as the in-flight window allows. Ctrl-C stops early and still
prints the summary.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from typing import Any

from tubemq._config import CONSUME_FROM
from tubemq.consumer import Consumer
from tubemq.errors import TubeMQError
from tubemq.producer import Producer, SendResult

MIB = 1024 * 1024


class _Window:
    """Counts and latencies of the current interval, shared with the delivery thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.bytes = 0
        self.failed = 0
        self.latencies_ms: list[float] = []

    def take(self) -> tuple[int, int, int, list[float]]:
        with self.lock:
            taken = self.count, self.bytes, self.failed, self.latencies_ms
            self.count = self.bytes = self.failed = 0
            self.latencies_ms = []
            return taken


def _percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _line(label: str, elapsed: float, count: int, size: int, extra: str = "") -> str:
    rate = count / elapsed if elapsed > 0 else 0.0
    return f"{label} {rate:10,.0f} msg/s {rate * size / MIB:8.2f} MiB/s{extra}"


def produce(args: argparse.Namespace) -> int:
    payload = os.urandom(args.size)
    window, totals = _Window(), _Window()
    stop = time.monotonic() + args.seconds
    with Producer(master=args.master, max_in_flight=args.max_in_flight) as producer:
        producer.publish(args.topic)
        started = last = time.monotonic()

        def done(sent_at: float) -> Any:
            def record(error: BaseException | None, _result: SendResult | None) -> None:
                latency = (time.monotonic() - sent_at) * 1000
                for target in (window, totals):
                    with target.lock:
                        if error is None:
                            target.count += 1
                            target.bytes += args.size
                            target.latencies_ms.append(latency)
                        else:
                            target.failed += 1

            return record

        sent = 0
        try:
            while time.monotonic() < stop:
                now = time.monotonic()
                if args.rate and sent >= (now - started) * args.rate:
                    time.sleep(min(0.001, stop - now))
                else:
                    # The callback is all it needs: produce() makes no handle per send.
                    producer.produce(args.topic, payload, on_delivery=done(now))
                    sent += 1
                if now - last >= args.interval:
                    count, _, failed, latencies = window.take()
                    print(
                        _line(
                            "produce",
                            now - last,
                            count,
                            args.size,
                            f"  latency p50 {_percentile(latencies, 0.5):6.1f} ms "
                            f"p99 {_percentile(latencies, 0.99):6.1f} ms  failed {failed}",
                        ),
                        flush=True,
                    )
                    last = now
        except KeyboardInterrupt:
            pass
        producer.flush(timeout=30)
        elapsed = time.monotonic() - started
    count, _, failed, latencies = totals.take()
    print(
        _line(
            "total  ",
            elapsed,
            count,
            args.size,
            f"  latency p50 {_percentile(latencies, 0.5):6.1f} ms "
            f"p99 {_percentile(latencies, 0.99):6.1f} ms  failed {failed}  "
            f"({count} messages in {elapsed:.1f} s)",
        ),
        flush=True,
    )
    return 1 if failed else 0


def consume(args: argparse.Namespace) -> int:
    group = args.group or f"perf-{uuid.uuid4().hex[:8]}"
    total = total_bytes = 0
    with Consumer(
        master=args.master, group=group, topics=[args.topic], consume_from=args.start
    ) as consumer:
        # The clock starts once the group gave this member its partitions (a rebalance,
        # a few seconds after joining), so the rates are not diluted by the join.
        joined_by = time.monotonic() + 120
        first: Any = None
        while first is None and not consumer.assignment() and time.monotonic() < joined_by:
            first = consumer.poll(0.2)
        started = last = time.monotonic()
        count = 1 if first is not None else 0
        size = len(first) if first is not None else 0
        stop = started + args.seconds
        try:
            while time.monotonic() < stop:
                message = consumer.poll(0.2)
                if message is not None:
                    count += 1
                    size += len(message)
                now = time.monotonic()
                if now - last >= args.interval:
                    average = size // count if count else 0
                    print(_line("consume", now - last, count, average), flush=True)
                    total, total_bytes = total + count, total_bytes + size
                    count = size = 0
                    last = now
        except KeyboardInterrupt:
            pass
        total, total_bytes = total + count, total_bytes + size
        elapsed = time.monotonic() - started
    average = total_bytes // total if total else 0
    print(_line("total  ", elapsed, total, average, f"  ({total} messages in {elapsed:.1f} s)"))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="tubemq perf", description=__doc__.split("\n\n")[0])
    modes = top.add_subparsers(dest="mode", required=True)
    p = modes.add_parser("produce", help="send fixed-size messages and report the rates")
    p.add_argument("--master", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--size", type=int, default=1024, help="value size in bytes")
    p.add_argument("--rate", type=float, default=0, help="messages/s; 0: as fast as possible")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--max-in-flight", dest="max_in_flight", type=int, default=10000)
    p.set_defaults(run=produce)
    c = modes.add_parser("consume", help="read a topic and report the rates")
    c.add_argument("--master", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--group", help="default: a new group each run")
    c.add_argument("--from", dest="start", default="earliest", choices=tuple(CONSUME_FROM))
    c.add_argument("--seconds", type=float, default=10)
    c.add_argument("--interval", type=float, default=1.0)
    c.set_defaults(run=consume)
    return top


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "size", 1) < 1 or args.seconds <= 0 or args.interval <= 0:
        print("tubemq perf: --size, --seconds and --interval must be positive", file=sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except TubeMQError as error:
        print(f"tubemq perf {args.mode}: {error}", file=sys.stderr)
        return 1
