"""``python -m bench.wire_split``: where a latency window's median goes, on the wire.

The bench reports end-to-end latency (the send time in the payload against the time the
consumer holds the message). This captures the broker's port on loopback with
``tcpdump`` while a latency window of each client runs, in interleaved rounds, and
splits the time by what the wire shows:

- *produce RTT* and *fetch RTT* (a "nothing new" fetch, and one that brought data): a
  request frame to the response frame with its serial number, on one connection;
- *wire*: a produce request on the wire to the first fetch response after it that
  brought data, what the broker and the consumer's probing take together (at one
  message per millisecond, the response that follows is the one that carries it);
- *client*: the window's median latency less the median wire time, what the client's
  own send and receive paths add (the two medians do not subtract exactly: read it
  as a size, not a sum);
- *send path*: how far above its fastest a produce request reaches the wire after the
  send stamp in its payload (every driver stamps ``CLOCK_MONOTONIC``: the C++ driver's
  steady clock, Python's ``perf_counter_ns``, Java's ``System.nanoTime``), so what the
  sending side adds beyond its best case.

Only frames that begin a TCP segment are read (the capture keeps each segment's first
bytes), so counts are lower than the frames sent: gathered writes carry several frames
in one segment. Needs ``tcpdump`` (Debian's package) and the right to capture.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import drivers, runner

BEGIN_TOKEN = b"\xff\x7f\xf4\xfe"  # every frame's first four bytes (protocol.md §1.2)
SNAP_BYTES = 600  # a segment's first bytes: the frame header and a produce's stamp
PRODUCE_BYTES = 1000  # a request frame longer than this is a 1 KiB produce
DATA_BYTES = 300  # a fetch response longer than this brought data
CAPTURE_S = 4.0  # captured from CAPTURE_DELAY_S into a 10 s window
CAPTURE_DELAY_S = 3.0
WINDOW_S = 10.0


@dataclass
class Segment:
    at: float  # seconds, the capture's clock
    source_port: int
    target_port: int
    payload: bytes


@dataclass
class Split:
    """One window's figures, microseconds (lists: one value per frame or message)."""

    produce_rtt: list[float] = field(default_factory=list)
    empty_fetch_rtt: list[float] = field(default_factory=list)
    data_fetch_rtt: list[float] = field(default_factory=list)
    wire: list[float] = field(default_factory=list)
    send_path: list[float] = field(default_factory=list)


def read_pcap(path: Path) -> list[Segment]:
    """The TCP segments with a payload of a classic pcap file (Ethernet or loopback)."""
    data = path.read_bytes()
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", data, 0)
    if magic != 0xA1B2C3D4:
        raise ValueError(f"{path}: not a microsecond pcap file (magic {magic:#x})")
    link_bytes = 14 if link == 1 else 4
    segments, offset = [], 24
    while offset + 16 <= len(data):
        seconds, micros, kept, _ = struct.unpack_from("<IIII", data, offset)
        packet = data[offset + 16 : offset + 16 + kept]
        offset += 16 + kept
        ip = packet[link_bytes:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:  # IPv4 and TCP only
            continue
        header = (ip[0] & 15) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[header:]
        source, target = struct.unpack_from(">HH", tcp, 0)
        tcp_header = (tcp[12] >> 4) * 4
        if total - header - tcp_header > 0:
            segments.append(Segment(seconds + micros / 1e6, source, target, tcp[tcp_header:]))
    return segments


def split(segments: list[Segment], broker_port: int, stamps_after_ns: int) -> Split:
    """Pairs requests with responses by connection and serial number."""
    out = Split()
    requests: dict[tuple[int, int], tuple[float, bool]] = {}
    last_produce = None
    send_delays = []
    for segment in segments:
        frame = segment.payload
        if len(frame) < 12 or frame[:4] != BEGIN_TOKEN:
            continue
        serial = struct.unpack_from(">i", frame, 4)[0]
        if segment.target_port == broker_port:
            is_produce = _frame_bytes(frame) > PRODUCE_BYTES
            requests[(segment.source_port, serial)] = (segment.at, is_produce)
            if is_produce:
                last_produce = segment.at
                stamp = _stamp(frame, stamps_after_ns)
                if stamp is not None:
                    send_delays.append(segment.at * 1e9 - stamp)
            continue
        asked = requests.pop((segment.target_port, serial), None)
        if asked is None:
            continue
        rtt = (segment.at - asked[0]) * 1e6
        if asked[1]:
            out.produce_rtt.append(rtt)
        elif _frame_bytes(frame) > DATA_BYTES:
            out.data_fetch_rtt.append(rtt)
            if last_produce is not None:
                out.wire.append((segment.at - last_produce) * 1e6)
        else:
            out.empty_fetch_rtt.append(rtt)
    if send_delays:  # the two clocks differ by a constant: relative to the fastest
        fastest = min(send_delays)
        out.send_path = [(delay - fastest) / 1000 for delay in send_delays]
    return out


def _frame_bytes(frame: bytes) -> int:
    """The frame's length as its header gives it (the capture keeps only its start):
    the blocks' lengths as far as they were captured."""
    blocks = struct.unpack_from(">i", frame, 8)[0]
    total, offset = 12, 12
    for _ in range(blocks):
        if offset + 4 > len(frame):
            return max(total, len(frame))
        length = struct.unpack_from(">i", frame, offset)[0]
        total += 4 + length
        offset += 4 + length
    return total


def _stamp(frame: bytes, after_ns: int) -> int | None:
    """The first 8 little-endian bytes that read as a CLOCK_MONOTONIC time since
    `after_ns`: the payload's send stamp."""
    now_ns = time.monotonic_ns()
    for offset in range(16, min(len(frame), SNAP_BYTES) - 7):
        value = struct.unpack_from("<q", frame, offset)[0]
        if after_ns < value < now_ns:
            return value
    return None


def window(driver: drivers.Driver, rate: float, broker_port: int, broker_pid: int) -> dict:
    """One latency window of `driver`, captured part-way."""
    with tempfile.TemporaryDirectory(prefix="tubemq-wire-") as scratch:
        capture = Path(scratch) / "window.pcap"
        started_ns = time.monotonic_ns()

        def record() -> None:
            time.sleep(CAPTURE_DELAY_S)
            dump = subprocess.Popen(
                ["tcpdump", "-i", "lo", "-s", str(SNAP_BYTES), "-w", str(capture),
                 "tcp", "port", str(broker_port)],
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            time.sleep(CAPTURE_S)
            dump.terminate()
            dump.wait()

        recorder = threading.Thread(target=record)
        recorder.start()
        workload = runner.Workload("latency", runner.ATTRS_SIZE, rate)
        settings = runner.replace(runner.FULL, latency_s=WINDOW_S)
        answer = runner.run_window(driver, workload, settings, WINDOW_S, broker_pid)
        recorder.join()
        figures = split(read_pcap(capture), broker_port, started_ns)
    app_p50 = answer["latency_ms"]["p50"] * 1000
    wire = statistics.median(figures.wire) if figures.wire else float("nan")
    return {
        "p50": app_p50,
        "produce RTT": _median(figures.produce_rtt),
        "empty fetch RTT": _median(figures.empty_fetch_rtt),
        "data fetch RTT": _median(figures.data_fetch_rtt),
        "wire": wire,
        "client": app_p50 - wire,
        "send path": _median(figures.send_path),
        "empty fetches/msg": len(figures.empty_fetch_rtt) / max(1, len(figures.wire)),
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wire_split")
    parser.add_argument("--cluster-dir", type=Path, help="use the running cluster of this workdir")
    parser.add_argument("--clients", default="python,cpp,java-tuned")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if shutil.which("tcpdump") is None:
        raise SystemExit("bench.wire_split needs tcpdump (apt-get install tcpdump)")
    clients = args.clients.split(",")
    drivers.build_native()
    if any(client.startswith("java") for client in clients):
        drivers.build_java()
    cluster, started_here = runner.open_cluster(args.cluster_dir)
    results: dict[str, list[dict]] = {}
    try:
        broker_port = int(cluster.broker_address.rsplit(":", 1)[1])
        broker_pid = runner.broker_pid(cluster)
        with tempfile.TemporaryDirectory(prefix="tubemq-wire-") as scratch:
            log_config = Path(scratch) / "log4j2.xml"
            log_config.write_text(runner.LOG4J2)
            live = {c: drivers.Driver(c, cluster.master_address, log_config, 120) for c in clients}
            try:
                for driver in live.values():  # warm-up, untimed
                    workload = runner.Workload("latency", runner.ATTRS_SIZE, args.rate)
                    runner.run_window(driver, workload, runner.FULL, 4.0, broker_pid)
                for round_number in range(args.rounds):
                    for client in runner.rotated(clients, round_number):
                        figures = window(live[client], args.rate, broker_port, broker_pid)
                        results.setdefault(client, []).append(figures)
                        print(f"round {round_number + 1} {client}: {_shown(figures)}", flush=True)
            finally:
                for driver in live.values():
                    driver.close()
    finally:
        if started_here:
            cluster.down()
            shutil.rmtree(cluster.workdir, ignore_errors=True)
    print(f"\nmedians of {args.rounds} rounds at {args.rate:,.0f} msg/s, microseconds:")
    for client, rounds in results.items():
        medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(f"  {client:10} {_shown(medians)}")
    return 0


def _shown(figures: dict[str, float]) -> str:
    return ", ".join(
        f"{key} {value:.1f}" if key.endswith("/msg") else f"{key} {value:.0f}"
        for key, value in figures.items()
    )


if __name__ == "__main__":
    sys.exit(main())
