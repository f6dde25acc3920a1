"""A TCP fault proxy for tests: listens on loopback and relays every accepted connection to
an upstream ``host:port``, bytes unchanged, unless a fault mode says otherwise.

The mode is read when a connection is accepted and again for every chunk relayed, so a
test can switch it while connections are open:

``pass``       relay as is.
``delay``      hold each chunk ``delay_s`` before relaying it (both directions).
``slow``       relay at most ``rate`` bytes per second, in small pieces (both directions).
``blackhole``  accept and read, relay and answer nothing; the client sees silence.
``reset``      close the client side with RST: at once for new connections; for open
               ones, after ``reset_after`` bytes of the next server reply have passed, so
               the client sees a frame cut off mid-way and then a reset.
``truncate``   relay the first ``truncate_after`` bytes of the next server reply, then
               close both sides with FIN.
``refuse``     close new connections at once (the client sees an accepted-then-closed
               socket), leave open ones alone.

Plain blocking sockets, one thread per direction: simple, and independent of asyncio
loops the code under test might run.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

MODES = ("pass", "delay", "slow", "blackhole", "reset", "truncate", "refuse")


@dataclass
class Settings:
    mode: str = "pass"
    delay_s: float = 0.5
    rate: int = 2048
    reset_after: int = 20
    truncate_after: int = 20


@dataclass
class _Link:
    client: socket.socket
    upstream: socket.socket | None
    closed: threading.Event = field(default_factory=threading.Event)


class FaultProxy:
    """``with FaultProxy(("127.0.0.1", port)) as proxy: proxy.address`` ..."""

    def __init__(
        self, upstream: tuple[str, int], listen_port: int = 0, host: str = "127.0.0.1"
    ) -> None:
        self.upstream = upstream
        self.settings = Settings()
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self.accepted = 0
        self.bytes_up = 0  # client -> server
        self.bytes_down = 0  # server -> client
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, listen_port))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.address = f"{host}:{self.port}"
        self._acceptor = threading.Thread(
            target=self._accept_loop, name="proxy-accept", daemon=True
        )
        self._acceptor.start()

    # -- control ------------------------------------------------------------------------
    def set_mode(self, mode: str, **settings: float) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}")
        with self._lock:
            for name, value in settings.items():
                if not hasattr(self.settings, name):
                    raise ValueError(f"unknown proxy setting {name!r}")
                setattr(self.settings, name, value)
            self.settings.mode = mode

    @property
    def mode(self) -> str:
        return self.settings.mode

    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for link in self._links if not link.closed.is_set())

    def drop_all(self) -> int:
        """Resets every connection (RST to the client), whatever the mode; returns how
        many were still open."""
        with self._lock:
            links = list(self._links)
        live = sum(1 for link in links if not link.closed.is_set())
        for link in links:
            self._close(link, reset=True)
        return live

    def close(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.drop_all()
        self._acceptor.join(timeout=2)
        for thread in list(self._threads):
            thread.join(timeout=2)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- relaying -----------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                ready, _, _ = select.select([self._listener], [], [], 0.05)
                if not ready:
                    continue
                client, _ = self._listener.accept()
            except (OSError, ValueError):  # ValueError: closed under select()
                return
            self.accepted += 1
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            mode = self.settings.mode
            if mode in ("reset", "refuse"):
                self._close(_Link(client, None), reset=mode == "reset")
                continue
            upstream = None
            if mode != "blackhole":
                try:
                    upstream = socket.create_connection(self.upstream, timeout=5)
                    upstream.settimeout(None)
                    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    self._close(_Link(client, None), reset=True)
                    continue
            link = _Link(client, upstream)
            with self._lock:
                self._links = [known for known in self._links if not known.closed.is_set()]
                self._links.append(link)
            if upstream is None:
                self._start(self._swallow, link)
            else:
                self._start(self._pump, link, client, upstream, True)
                self._start(self._pump, link, upstream, client, False)

    def _start(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name="proxy-pump", daemon=True)
        self._threads = [known for known in self._threads if known.is_alive()]
        self._threads.append(thread)
        thread.start()

    def _swallow(self, link: _Link) -> None:
        # A blackholed connection: read whatever comes, answer nothing, until closed.
        while not link.closed.is_set():
            try:
                ready, _, _ = select.select([link.client], [], [], 0.05)
                if ready and not link.client.recv(65536):
                    break
            except (OSError, ValueError):
                break
        self._close(link, reset=False)

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket, up: bool) -> None:
        # The byte budget of a reset/truncate starts with the first reply chunk seen in
        # that mode, so "mid-frame" means inside the reply that was on its way.
        budget: int | None = None
        while not link.closed.is_set():
            try:
                ready, _, _ = select.select([source], [], [], 0.05)
                if not ready:
                    continue
                chunk = source.recv(65536)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            settings = self.settings
            mode = settings.mode
            if mode == "blackhole":
                continue  # dropped: neither side hears anything more
            if mode == "delay":
                time.sleep(settings.delay_s)
            if not up and mode in ("reset", "truncate"):
                if budget is None:
                    budget = settings.reset_after if mode == "reset" else settings.truncate_after
                part, budget = chunk[:budget], budget - min(budget, len(chunk))
                self._send(sink, part, up)
                if budget == 0:
                    self._close(link, reset=mode == "reset")
                    return
                continue
            if mode == "slow":
                if not self._send_slowly(link, sink, chunk, settings.rate, up):
                    break
                continue
            if not self._send(sink, chunk, up):
                break
        self._close(link, reset=False)

    def _send(self, sink: socket.socket, data: bytes, up: bool) -> bool:
        try:
            sink.sendall(data)
        except OSError:
            return False
        if up:
            self.bytes_up += len(data)
        else:
            self.bytes_down += len(data)
        return True

    def _send_slowly(
        self, link: _Link, sink: socket.socket, data: bytes, rate: int, up: bool
    ) -> bool:
        piece = max(1, rate // 20)
        for at in range(0, len(data), piece):
            if link.closed.is_set() or not self._send(sink, data[at : at + piece], up):
                return False
            time.sleep(0.05)
        return True

    def _close(self, link: _Link, reset: bool) -> None:
        if link.closed.is_set() and not reset:
            return
        link.closed.set()
        if reset:
            # SO_LINGER with a zero timeout turns close() into an RST.
            with contextlib.suppress(OSError):
                link.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for sock in (link.client, link.upstream):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
