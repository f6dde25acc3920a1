"""Server texts that are not UTF-8 (docs/errors.md): a master whose replies carry GBK or
arbitrary bytes in exceptionName, stackTrace or errMsg makes a client fail with its
usual error, the bad bytes shown as \\xNN, and never with UnicodeDecodeError.

The master is a scripted loopback server (tests/raw_frames.py) answering every request
with one canned reply, so the bytes travel the real path: socket, frame codec, core
Status, the bindings' conversion, the facade's exception."""

from __future__ import annotations

import logging

import pytest

import tubemq
from raw_frames import ScriptedServer, blob, number, reply_exception, reply_ok

GBK_TEXT = "服务不可用".encode("gbk")  # "service unavailable"
BROKEN = b"bad \xff\xfe \xc3( \xe2\x82"  # no text at all: stray, cut and invalid sequences
FAST = {"register_attempts": 1, "rpc_timeout_ms": 3000, "heartbeat_period_ms": 1000}


def shown(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def client(kind: str, master: str) -> object:
    if kind == "producer":
        return tubemq.Producer(master=master, **FAST)
    return tubemq.Consumer(master=master, group="g_foreign", topics=["t_foreign"], **FAST)


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_an_exception_reply_with_foreign_bytes_raises_the_usual_error(kind):
    name, text = b"org.example.Fail\xb0Exception", GBK_TEXT + b" / " + BROKEN
    with ScriptedServer(lambda method: reply_exception(name, text)) as master:
        with pytest.raises(tubemq.TubeMQError) as info:
            client(kind, master.address)
    assert master.requests  # the registration did reach the master
    assert info.value.code == 1004  # kRemoteException, the same as for an ASCII reply
    assert f"{shown(name)}#{shown(text)}" in info.value.message
    assert "\\xb0" in str(info.value) and "\\xff\\xfe" in str(info.value)
    str(info.value).encode("utf-8")  # printable as it is


def test_a_refusal_whose_errmsg_is_gbk_raises_the_usual_error():
    # RegisterResponseM2P: success=false, errCode 400, errMsg in GBK, brokerCheckSum.
    refusal = number(1, 0) + number(2, 400) + blob(3, GBK_TEXT + BROKEN) + number(4, 0)
    with ScriptedServer(lambda method: reply_ok(method, refusal)) as master:
        with pytest.raises(tubemq.TubeMQError) as info:
            client("producer", master.address)
    assert info.value.code == 400
    assert shown(GBK_TEXT + BROKEN) in info.value.message


def test_log_records_show_foreign_bytes_escaped(caplog):
    # A refusal a retry may cure (503) is logged with the master's text, then retried.
    refusal = number(1, 0) + number(2, 503) + blob(3, b"busy \xb0\xa1") + number(4, 0)
    caplog.set_level(logging.DEBUG, logger="tubemq")
    with ScriptedServer(lambda method: reply_ok(method, refusal)) as master:
        with pytest.raises(tubemq.TubeMQError) as info:
            tubemq.Producer(master=master.address, **(FAST | {"register_attempts": 2}))
    assert info.value.code == 503 and len(master.requests) == 2
    messages = [record.getMessage() for record in caplog.records]
    assert any("busy \\xb0\\xa1" in message for message in messages), messages
