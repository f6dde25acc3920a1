"""bench.wire_split's reading of a capture: requests paired with their responses by
connection and serial number, produces told from fetches and data from "nothing new"
by the frame header's block lengths, and the wire time from a produce to the data
response after it."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from bench.wire_split import BEGIN_TOKEN, Segment, read_pcap, split

BROKER = 8123
PRODUCER, CONSUMER = 40001, 40002


def frame(serial: int, block_bytes: int, head: bytes = b"") -> bytes:
    """A frame of one block of `block_bytes`, of which only `head` was captured."""
    return BEGIN_TOKEN + struct.pack(">iii", serial, 1, block_bytes) + head


def test_a_window_splits_into_round_trips_and_wire_time():
    stamp = time.monotonic_ns() - 5_000_000
    produce = frame(7, 1132, b"\x00" * 40 + struct.pack("<q", stamp))
    segments = [
        Segment(10.000000, CONSUMER, BROKER, frame(1, 60)),  # a fetch ...
        Segment(10.000050, BROKER, CONSUMER, frame(1, 90)),  # ... nothing new, 50 us
        Segment(10.000100, PRODUCER, BROKER, produce),  # a produce on the wire
        Segment(10.000160, BROKER, PRODUCER, frame(7, 70)),  # its answer, 60 us
        Segment(10.000200, CONSUMER, BROKER, frame(2, 60)),
        Segment(10.000280, BROKER, CONSUMER, frame(2, 1300)),  # data, 80 us
        Segment(10.000300, BROKER, CONSUMER, frame(99, 90)),  # no request of its own
        Segment(10.000310, BROKER, PRODUCER, b"not a frame"),
    ]
    figures = split(segments, BROKER, stamp - 1)
    assert [round(x) for x in figures.empty_fetch_rtt] == [50]
    assert [round(x) for x in figures.produce_rtt] == [60]
    assert [round(x) for x in figures.data_fetch_rtt] == [80]
    assert [round(x) for x in figures.wire] == [180]  # 10.000100 -> 10.000280
    assert figures.send_path == [0.0]  # one stamp: at its own fastest


def test_same_serials_on_two_connections_are_not_mixed_up():
    segments = [
        Segment(1.0, PRODUCER, BROKER, frame(5, 60)),
        Segment(1.0001, CONSUMER, BROKER, frame(5, 60)),
        Segment(1.0004, BROKER, CONSUMER, frame(5, 90)),
        Segment(1.0009, BROKER, PRODUCER, frame(5, 90)),
    ]
    figures = split(segments, BROKER, 0)
    assert [round(x) for x in figures.empty_fetch_rtt] == [300, 900]


def test_a_pcap_file_is_read_segment_by_segment(tmp_path: Path):
    def packet(source: int, target: int, payload: bytes) -> bytes:
        tcp = struct.pack(">HHIIBBHHH", source, target, 0, 0, 5 << 4, 0x18, 0, 0, 0)
        total = 20 + len(tcp) + len(payload)
        ip = struct.pack(
            ">BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1"
        )
        return b"\0" * 14 + ip + tcp + payload

    records = [
        (5, 250, packet(CONSUMER, BROKER, frame(3, 60))),
        (5, 300, packet(BROKER, CONSUMER, b"")),
    ]
    body = b"".join(struct.pack("<IIII", s, us, len(p), len(p)) + p for s, us, p in records)
    path = tmp_path / "window.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 600, 1) + body)
    segments = read_pcap(path)
    assert len(segments) == 1  # the empty segment (an ACK) carries no frame
    assert (segments[0].source_port, segments[0].target_port) == (CONSUMER, BROKER)
    assert abs(segments[0].at - 5.00025) < 1e-9 and segments[0].payload == frame(3, 60)
