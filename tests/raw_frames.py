"""TubeMQ frames written and read by hand, for tests that need bytes our clients would
never send (protocol.md §1-2, §4.3, §5.9).

A producer written in C++ or Go puts whatever bytes it has into a message's attribute
and into ``SendMessageRequestP2B.msgType``: GBK text, or bytes that are no text at all.
Our producer refuses that, and so would Python's protobuf runtime (its string fields must
be valid UTF-8), so the few messages needed here are encoded field by field: a protobuf
field is a varint key and a varint or length-prefixed value, which takes a dozen lines.

``send_message`` sends one message straight to a broker's write service, as a foreign
producer does. ``ScriptedServer`` answers every request with one canned reply, to play a
master whose errors carry such bytes.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

BEGIN_TOKEN = 0xFF7FF4FE
BLOCK = 8192  # the Java writer's block size (§1.4)
SEND_MESSAGE = 13  # method id (§3.2)
WRITE_SERVICE = 3
STATUS_SUCCESS, STATUS_ERROR = 0, 1

Fields = dict[int, list]  # field number -> values (int for varints, bytes otherwise)


# -- protobuf, by hand ----------------------------------------------------------------
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64 go out as ten bytes
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def number(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def blob(field: int, value: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(value)) + value


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def parse(data: bytes) -> Fields:
    """The fields of one message (varint and length-delimited ones, which is all here)."""
    fields: Fields = {}
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        if key & 7 == 0:
            value, at = _read_varint(data, at)
            fields.setdefault(key >> 3, []).append(value)
        elif key & 7 == 2:
            size, at = _read_varint(data, at)
            fields.setdefault(key >> 3, []).append(data[at : at + size])
            at += size
        else:
            raise ValueError(f"wire type {key & 7} not expected here")
    return fields


def delimited_messages(payload: bytes, count: int = 3) -> list[bytes]:
    out, at = [], 0
    for _ in range(count):
        size, at = _read_varint(payload, at)
        out.append(payload[at : at + size])
        at += size
    return out


# -- frames ---------------------------------------------------------------------------
def frame(serial: int, payload: bytes) -> bytes:
    blocks = [payload[at : at + BLOCK] for at in range(0, len(payload), BLOCK)]
    out = struct.pack(">Iii", BEGIN_TOKEN, serial, len(blocks))
    return out + b"".join(struct.pack(">i", len(block)) + block for block in blocks)


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed mid-frame")
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    """(serial number, payload) of the next frame."""
    token, serial, count = struct.unpack(">Iii", _exactly(sock, 12))
    if token != BEGIN_TOKEN:
        raise ConnectionError(f"not a TubeMQ frame: {token:#x}")
    payload = b""
    for _ in range(count):
        (size,) = struct.unpack(">i", _exactly(sock, 4))
        payload += _exactly(sock, size)
    return serial, payload


def request(service_type: int, method: int, body: bytes, timeout_ms: int = 10000) -> bytes:
    """A request payload: RpcConnHeader, RequestHeader, RequestBody, each delimited."""
    parts = [
        number(1, 0),  # RpcConnHeader.flag: request
        number(1, service_type) + number(2, 3),  # RequestHeader: serviceType, protocolVer
        number(1, method) + number(2, timeout_ms) + blob(3, body),  # RequestBody
    ]
    return b"".join(varint(len(part)) + part for part in parts)


def reply_ok(method: int, data: bytes) -> bytes:
    """A SUCCESS response payload carrying a method's response message."""
    parts = [
        number(1, 1),
        number(1, STATUS_SUCCESS) + number(3, 3),
        number(1, method) + blob(2, data),
    ]
    return b"".join(varint(len(part)) + part for part in parts)


def reply_exception(name: bytes, text: bytes, status: int = STATUS_ERROR) -> bytes:
    """An exception response payload: RspExceptionBody(exceptionName, stackTrace)."""
    parts = [number(1, 1), number(1, status) + number(3, 3), blob(1, name) + blob(2, text)]
    return b"".join(varint(len(part)) + part for part in parts)


# -- a foreign producer ---------------------------------------------------------------
def message_data(attribute: bytes, body: bytes) -> tuple[bytes, int]:
    """``SendMessageRequestP2B`` data and flag (§5.9): the attribute header only when
    there is an attribute."""
    if not attribute:
        return body, 0
    return struct.pack(">i", len(attribute)) + attribute + body, 1


def send_message(
    broker: str,
    topic: str,
    partition_id: int,
    body: bytes,
    attribute: bytes = b"",
    msg_type: bytes | None = None,
    client_id: str = "raw-frame-writer",
) -> Fields:
    """Sends one message to ``broker`` (``host:port``) and returns the fields of its
    ``SendMessageResponseB2P`` (1 success, 2 errCode, 3 errMsg, 5 messageId, ...).

    ``attribute`` goes into the data as is; ``msg_type``, when given, also goes into the
    request's msgType field, raw, as the broker's filter hash is made from that."""
    data, flag = message_data(attribute, body)
    fields = [
        blob(1, client_id.encode()),
        blob(2, topic.encode()),
        number(3, partition_id),
        blob(4, data),
        number(5, flag),
        number(6, -1),  # checkSum: not supplied, as every client sends it
        number(7, 0x7F000001),  # sentAddr 127.0.0.1
    ]
    if msg_type is not None:
        fields.append(blob(8, msg_type))
    host, port = broker.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(frame(1, request(WRITE_SERVICE, SEND_MESSAGE, b"".join(fields))))
        serial, payload = read_frame(sock)
    assert serial == 1
    _, header, body_bytes = delimited_messages(payload)
    status = parse(header)[1][0]
    reply = parse(body_bytes)
    if status != STATUS_SUCCESS:
        raise RuntimeError(f"exception reply: {reply}")
    return parse(reply[2][0])


# -- a server that always says the same -----------------------------------------------
class ScriptedServer:
    """Listens on loopback; answers every request frame with ``answer(method)`` (a response
    payload) under the request's serial number. ``with ScriptedServer(...) as s: s.address``."""

    def __init__(self, answer: Callable[[int], bytes]) -> None:
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.requests: list[int] = []  # method ids, in arrival order
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._serve(self._accept_loop)

    def _serve(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        self._listener.settimeout(0.1)  # to notice __exit__
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self._serve(self._answer_loop, conn)

    def _answer_loop(self, conn: socket.socket) -> None:
        with conn:
            while not self._stopping:
                try:
                    serial, payload = read_frame(conn)
                except (ConnectionError, OSError):
                    return
                method = parse(delimited_messages(payload)[2])[1][0]
                self.requests.append(method)
                conn.sendall(frame(serial, self._answer(method)))

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping = True
        self._threads[0].join(5)
        self._listener.close()
