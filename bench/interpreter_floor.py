"""``python -m bench.interpreter_floor``: what CPython alone costs per message of the
consume workload, with no client under it.

The consume window of ``py_worker.py`` runs this loop body per message: the value's first
byte (``message[0]``) and its length (``len(message)``) added up, a count, and a clock
check every 1024 messages. Here the same body runs over ``bytes`` values that are already
in a list, so no fetch, decode or message object is in it: what is left is the
interpreter's share, a floor under the per-message cost of any Python consumer that
reads its messages this way. Issue 18 asks for Python at most 1.25 times our C++
driver's CPU per message; (C++ + floor) / C++ is the least that ratio can be for this
loop. ``--view`` times the loop the bench ran before, through ``memoryview(message)``:
that object alone costs about as much again.
"""

from __future__ import annotations

import argparse
import statistics
import time

VALUES = 1024  # distinct values, cycled, as the backlog's are
MESSAGES = 4_000_000


def loop_ns(size: int, messages: int = MESSAGES, view: bool = False) -> float:
    """CPU nanoseconds per message of the consume loop body over ``size``-byte values
    (through a memoryview of each, with ``view``)."""
    values = [bytes([1 + i % 255]) * size for i in range(VALUES)]
    stream = values * (messages // VALUES)
    count, total, checksum = 0, 0, 0
    deadline = time.perf_counter() + 3600.0
    started = time.process_time()
    if view:
        for message in stream:
            value = memoryview(message)
            checksum += value[0]
            total += value.nbytes
            count += 1
            if not count & 1023 and time.perf_counter() >= deadline:
                break
    else:
        for message in stream:
            checksum += message[0]
            total += len(message)
            count += 1
            if not count & 1023 and time.perf_counter() >= deadline:
                break
    cpu = time.process_time() - started
    if not checksum or total != count * size:
        raise RuntimeError("the loop did not read every value")
    return cpu / count * 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.interpreter_floor")
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--view", action="store_true", help="through memoryview(message)")
    args = parser.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        figures = sorted(loop_ns(size, view=args.view) for _ in range(args.rounds))
        print(
            f"{size} B: {statistics.median(figures):.1f} ns per message "
            f"({figures[0]:.1f}-{figures[-1]:.1f}, {args.rounds} rounds)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
