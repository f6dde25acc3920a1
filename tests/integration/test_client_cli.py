"""``tubemq produce`` and ``tubemq consume`` as a user runs them: separate processes,
lines in, lines (or JSON) out."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from raw_frames import send_message

pytestmark = pytest.mark.integration

TUBEMQ = [sys.executable, "-m", "tubemq.cli"]


def _tubemq(*args: str, stdin: str | None = None, timeout: float = 120):
    done = subprocess.run(
        [*TUBEMQ, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    # An editable install may print rebuild lines first; the commands' own output follows.
    return done.returncode, done.stdout, done.stderr


def _consume_json(master: str, topic: str, *extra: str):
    """``tubemq consume`` of a new group from the earliest message, as JSON, until idle."""
    group = f"cli_{uuid.uuid4().hex[:8]}"
    return _tubemq(
        *("consume", "--master", master, "--topic", topic, "--group", group),
        *("--from", "earliest", "--idle", "5", "--format", "json", *extra),
    )


def test_lines_produced_come_back_from_consume_as_values_and_json(master, topics):
    topic, marker = topics[4], f"cli_{uuid.uuid4().hex[:8]}"
    lines = [f"{marker} line {index}" for index in range(20)]
    code, _, err = _tubemq(
        "produce",
        "--master",
        master,
        "--topic",
        topic,
        "--attr",
        "origin=cli",
        "--msg-type",
        "cli",
        stdin="\n".join(lines) + "\n\n",
    )
    assert code == 0, err
    assert "sent 20 message(s)" in err

    group = f"cli_{uuid.uuid4().hex[:8]}"
    code, out, err = _tubemq(
        "consume",
        "--master",
        master,
        "--topic",
        topic,
        "--group",
        group,
        "--from",
        "earliest",
        "--idle",
        "5",
        "--format",
        "json",
    )
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    mine = [record for record in records if record.get("value", "").startswith(marker)]
    assert sorted(record["value"] for record in mine) == sorted(lines)
    assert all(r["attrs"] == {"origin": "cli"} and r["msg_type"] == "cli" for r in mine)


def test_count_stops_consume_and_bad_input_is_reported(master, topics):
    topic, marker = topics[4], f"cli_{uuid.uuid4().hex[:8]}"
    code, _, err = _tubemq(
        "produce", "--master", master, "--topic", topic, stdin=f"{marker} a\n{marker} b\n"
    )
    assert code == 0, err
    code, _, err = _tubemq(
        "consume",
        "--master",
        master,
        "--topic",
        topic,
        "--group",
        f"cli_{uuid.uuid4().hex[:8]}",
        "--from",
        "earliest",
        "--count",
        "1",
    )
    assert code == 0, err
    assert "received 1 message(s)" in err

    code, _, err = _tubemq("produce", "--master", "nohost", "--topic", topic, stdin="x\n")
    assert code == 1
    assert "master" in err  # the ConfigError names the bad key
    code, _, err = _tubemq("produce", "--master", master, "--topic", topic, "--attr", "novalue")
    assert code == 1
    assert "key=value" in err


def test_consume_json_shows_attribute_bytes_that_are_not_utf8_as_replacements(
    master, topics, cluster
):
    topic, marker = topics[4], f"cli_{uuid.uuid4().hex[:8]}"
    attribute = b"$msgType$=" + "订单".encode("gbk") + b",k=\xff\xfe,ok=fine"
    reply = send_message(cluster.broker_address, topic, 0, marker.encode(), attribute)
    assert reply[2] == [200], reply
    code, out, err = _consume_json(master, topic)
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    mine = [record for record in records if record.get("value") == marker]
    assert len(mine) == 1
    assert mine[0]["msg_type"] == "\ufffd" * 4  # GBK "订单": four bytes, none UTF-8
    assert mine[0]["attrs"] == {"k": "\ufffd\ufffd", "ok": "fine"}


def test_consume_decode_prints_the_records_of_inlongmsg_packs(master, topics):
    import tubemq
    from tubemq import inlong

    topic, marker = topics[5], f"cli_{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        producer.send(topic, f"{marker} plain".encode(), key=marker)
        records = [(f"{marker} r{i}".encode(), {"seq": str(i)}) for i in range(3)]
        producer.send(topic, inlong.encode(records, attrs={"m": marker}, version=4), key=marker)
    code, out, err = _consume_json(master, topic, "--decode", "inlongmsg")
    assert code == 0, err
    printed = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    mine = [r for r in printed if r["record_attrs"].get("m") == marker]
    assert [(r["value"], r["record_attrs"]["seq"], r["position"], r["count"]) for r in mine] == [
        (f"{marker} r{i}", str(i), i, 3) for i in range(3)
    ]
    assert len({r["message_id"] for r in mine}) == 1 and mine[0]["create_time_ms"] > 0
    assert "is not a valid InLongMsg pack" in err and "record(s)" in err
