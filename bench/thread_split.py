"""``python -m bench.thread_split``: where a consume or latency window's CPU goes, thread
by thread, for our Python client and our C++ driver side by side.

The bench reports each client's process CPU per message. This splits it between the
application's thread (the caller: the loop, the hand-out, the polls and commits) and the
core's I/O thread (fetching and decoding), with how often each was scheduled, per
message: the way to see which side of the client a difference is on. Both drivers read
the same backlog (``bench.runner``'s, 2 attributes per message) in interleaved rounds.
Threads are sampled every 20 ms from /proc (``schedstat``: nanoseconds on a CPU, times
scheduled), so that the C++ driver's threads, which end with its window, count too.
A window's group join is in its figures, for both clients alike: a few milliseconds in
a window of a second or more.

``--modes latency`` runs the bench's latency window instead (a sender thread at
``--rate`` messages per second, the caller consuming): there the threads other than the
caller and the I/O threads (the sender, the delivery thread) are shown by name, and the
figures are per message sent.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import threading
from pathlib import Path

from bench import drivers, runner

SAMPLE_S = 0.02
CLIENTS = ("cpp", "python")


def _threads(pid: int) -> dict[str, tuple[str, int, int]]:
    """tid -> (name, ns on a CPU, times scheduled) of a process's live threads."""
    found = {}
    try:
        tids = [entry.name for entry in Path(f"/proc/{pid}/task").iterdir()]
    except FileNotFoundError:
        return found
    for tid in tids:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            on_cpu, _, scheduled = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue  # the thread ended meanwhile
        found[tid] = (name, int(on_cpu), int(scheduled))
    return found


class ThreadSampler:
    """Every thread of one process from now until stop(), sampled every SAMPLE_S."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._before = _threads(pid)
        self._last = dict(self._before)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(SAMPLE_S):
            self._last.update(_threads(self._pid))

    def stop(self) -> dict[str, tuple[float, float]]:
        """Per kind of thread (``caller``, ``io``, or the thread's name): (ns on a CPU,
        times scheduled) since the start."""
        self._stopping.set()
        self._thread.join()
        self._last.update(_threads(self._pid))
        split: dict[str, tuple[float, float]] = {}
        for tid, (name, on_cpu, scheduled) in self._last.items():
            _, cpu_before, scheduled_before = self._before.get(tid, (name, 0, 0))
            kind = (
                "caller" if tid == str(self._pid)
                else "io" if name.startswith("tubemq-io") else name
            )  # fmt: skip
            cpu, times = split.get(kind, (0.0, 0.0))
            split[kind] = (cpu + on_cpu - cpu_before, times + scheduled - scheduled_before)
        return split


def window_split(
    driver: drivers.Driver, mode: str, size: int, messages: int, rate: float = 0.0
) -> dict[str, float]:
    """One consume (or latency, at ``rate``) window of ``driver``: ns per message per kind
    of thread, times scheduled per 1 000 messages, and the process's ns per message."""
    sampler = ThreadSampler(driver.pid)
    if mode.startswith("latency"):
        answer = driver.window(
            mode, size, runner.LATENCY_TOPIC, runner.FULL.latency_s, 0, rate=rate
        )
    else:
        answer = driver.window(mode, size, runner.backlog_topic(size), 600.0, messages)
    split = sampler.stop()
    count = answer["count"]
    figures = {"process": answer["cpu_s"] / count * 1e9}
    for kind, (cpu, times) in split.items():
        figures[kind] = cpu / count
        figures[f"{kind} sched/1k"] = times / count * 1000
    return figures


def _shown(figures: dict[str, float]) -> str:
    return ", ".join(
        f"{kind} {value:.1f}" if "sched" in kind else f"{kind} {value:.0f}"
        for kind, value in sorted(figures.items())
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.thread_split")
    parser.add_argument("--cluster-dir", type=Path, help="use the running cluster of this workdir")
    parser.add_argument("--size", type=int, default=1024, choices=sorted(runner.FULL.backlog))
    parser.add_argument("--modes", default="consume,consume-batch")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000.0, help="latency: msg/s")
    args = parser.parse_args(argv)
    messages = runner.FULL.backlog[args.size]
    modes = args.modes.split(",")
    drivers.build_native()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    cluster, started_here = runner.open_cluster(args.cluster_dir)
    try:
        if any(not mode.startswith("latency") for mode in modes):
            runner.fill_backlogs(cluster.master_address, runner.FULL, (args.size,), 1800.0)
        clients = {
            name: drivers.Driver(name, cluster.master_address, None, 600.0) for name in CLIENTS
        }
        try:
            for round_number in range(args.rounds):
                order = CLIENTS if round_number % 2 == 0 else CLIENTS[::-1]
                for mode in modes:
                    for name in order:  # the C++ driver's consume-batch is its consume
                        figures = window_split(clients[name], mode, args.size, messages, args.rate)
                        results.setdefault((name, mode), []).append(figures)
                        print(f"round {round_number + 1} {name} {mode}: {_shown(figures)}",
                              flush=True)  # fmt: skip
        finally:
            for driver in clients.values():
                driver.close()
    finally:
        if started_here:
            cluster.down()
            shutil.rmtree(cluster.workdir, ignore_errors=True)  # its backlog: a gigabyte
    print(f"\nmedians of {args.rounds} rounds, {args.size} B, ns per message "
          "(sched/1k: times scheduled per 1 000 messages):")  # fmt: skip
    for (name, mode), rounds in sorted(results.items()):
        kinds = set().union(*rounds)
        medians = {kind: statistics.median(r.get(kind, 0.0) for r in rounds) for kind in kinds}
        print(f"  {name:6} {mode:13} {_shown(medians)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
