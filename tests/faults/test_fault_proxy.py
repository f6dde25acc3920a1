"""The fault proxy itself, against a local echo server: each mode does what it says, so
that the fault scenarios built on it test the client and not the proxy."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time

import pytest
from proxy import FaultProxy


@pytest.fixture
def echo_server():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()
    stop.set()
    listener.close()


@pytest.fixture
def proxy(echo_server):
    with FaultProxy(echo_server) as running:
        yield running


def connect(proxy: FaultProxy, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def test_pass_relays_bytes_unchanged_both_ways(proxy):
    payload = os.urandom(300_000)
    with connect(proxy) as sock:
        sender = threading.Thread(target=sock.sendall, args=(payload,))
        sender.start()
        assert read_exactly(sock, len(payload)) == payload
        sender.join()
    # A pump counts a chunk once its sendall() returned, which may be just after the
    # reader above already holds the chunk: give the counters a moment to catch up.
    deadline = time.monotonic() + 5
    while proxy.bytes_down < len(payload) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.bytes_up == proxy.bytes_down == len(payload)


def test_delay_holds_each_chunk(proxy):
    proxy.set_mode("delay", delay_s=0.3)
    with connect(proxy) as sock:
        started = time.monotonic()
        sock.sendall(b"ping")
        assert read_exactly(sock, 4) == b"ping"
        assert time.monotonic() - started >= 0.55  # held on the way in and out


def test_slow_limits_the_rate(proxy):
    proxy.set_mode("slow", rate=4000)
    with connect(proxy) as sock:
        started = time.monotonic()
        sock.sendall(b"x" * 2000)
        assert read_exactly(sock, 2000) == b"x" * 2000
        # 2000 bytes at 4000 B/s: 0.5 s (the two directions overlap).
        assert time.monotonic() - started >= 0.45


def test_blackhole_answers_nothing_on_new_and_open_connections(proxy):
    with connect(proxy, timeout=0.5) as open_sock:
        open_sock.sendall(b"before")
        assert read_exactly(open_sock, 6) == b"before"
        proxy.set_mode("blackhole")
        open_sock.sendall(b"after")
        with pytest.raises(socket.timeout):
            open_sock.recv(10)
    with connect(proxy, timeout=0.5) as new_sock:
        new_sock.sendall(b"hello")
        with pytest.raises(socket.timeout):
            new_sock.recv(10)


def test_reset_cuts_the_reply_and_resets(proxy):
    with connect(proxy) as sock:
        # A round trip first: connect() returns before the proxy has accepted, and a
        # connection it accepts in reset mode is a new one, reset at once.
        sock.sendall(b".")
        assert read_exactly(sock, 1) == b"."
        proxy.set_mode("reset", reset_after=3)
        sock.sendall(b"abcdefgh")
        received = b""
        with pytest.raises(ConnectionResetError):
            while True:
                chunk = sock.recv(100)
                if not chunk:
                    break
                received += chunk
        assert received in (b"", b"a", b"ab", b"abc")
    # A new connection in reset mode is reset: on loopback the reset can land
    # before connect() returns, or on the first read or write after it.
    with pytest.raises((ConnectionResetError, BrokenPipeError)):
        with connect(proxy) as sock:
            sock.sendall(b"x")
            time.sleep(0.2)
            sock.recv(10)
            sock.sendall(b"y")


def test_truncate_passes_a_prefix_then_closes(proxy):
    with connect(proxy) as sock:
        proxy.set_mode("truncate", truncate_after=5)
        sock.sendall(b"0123456789")
        assert read_exactly(sock, 10) == b"01234"  # then end of stream


def test_pass_again_after_a_fault_and_drop_all(proxy):
    proxy.set_mode("blackhole")
    with contextlib.closing(connect(proxy)):
        pass
    proxy.set_mode("pass")
    with connect(proxy) as sock:
        sock.sendall(b"ok")
        assert read_exactly(sock, 2) == b"ok"
        proxy.drop_all()
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            time.sleep(0.1)
            sock.sendall(b"z")
            sock.recv(10)
            sock.sendall(b"z")
