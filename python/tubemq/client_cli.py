"""``tubemq produce`` and ``tubemq consume``: the clients from the shell.

``produce`` sends one message per input line (stdin or ``--file``); ``consume`` prints
one message per line, as its value or as JSON, until ``--count`` messages arrived, no
message arrived for ``--idle`` seconds while partitions were held, or Ctrl-C. Errors end
the command with status 1 and the error on stderr. ``consume --decode inlongmsg`` prints
the records of InLongMsg packs instead (JSON adds the record's attributes, create time
and place in its pack); a message that is not a pack is reported on stderr and passed over.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

from tubemq._config import CONSUME_FROM
from tubemq.consumer import Consumer
from tubemq.errors import TubeMQError
from tubemq.inlong import ConsumedRecord, PackDecodeError
from tubemq.producer import Producer


def _attributes(items: list[str]) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--attr needs key=value, got {item!r}")
        attrs[key] = value
    return attrs


def _partition(text: str | None) -> str | int | None:
    """--partition: a partition id when it is all digits, else a partition key."""
    if text is None:
        return None
    return int(text) if text.strip().isdigit() else text


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    for line in stream:
        line = line.rstrip(b"\r\n")
        if line:
            yield line


def produce(args: argparse.Namespace) -> int:
    attrs = _attributes(args.attr)
    sent = 0
    with Producer(master=args.master) as producer:
        producer.publish(args.topic)
        stream: IO[bytes] = open(args.file, "rb") if args.file else sys.stdin.buffer
        try:
            futures = [
                producer.send_async(
                    args.topic,
                    line,
                    key=args.key,
                    attrs=attrs or None,
                    msg_type=args.msg_type,
                    partition=_partition(args.partition),
                )
                for line in _lines(stream)
            ]
        finally:
            if args.file:
                stream.close()
        producer.flush()
        failures = [future.exception() for future in futures if future.exception() is not None]
        sent = len(futures) - len(failures)
    print(f"sent {sent} message(s) to {args.topic}", file=sys.stderr)
    if failures:
        print(f"{len(failures)} failed, first: {failures[0]}", file=sys.stderr)
        return 1
    return 0


def _readable(text: str) -> str:
    """A message's text field as printable text: bytes a producer wrote that are not
    UTF-8 (kept as lone surrogates, docs/consumers.md) become U+FFFD, as in Spark."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _as_json(message: Any) -> str:
    """A message, or a record of a pack (with the fields of its message)."""
    if isinstance(message, ConsumedRecord):
        record: dict[str, Any] = {
            "record_attrs": message.attrs,
            "create_time_ms": message.create_time_ms,
            "position": message.position,
            "count": message.count,
        }
        value, message = bytes(message.body), message.message
    else:
        record, value = {}, bytes(message)
    try:
        text: dict[str, Any] = {"value": value.decode("utf-8")}
    except UnicodeDecodeError:
        text = {"value_base64": base64.b64encode(value).decode("ascii")}
    return json.dumps(
        {
            **record,
            "topic": message.topic,
            "partition": message.partition_key,
            "message_id": message.message_id,
            "msg_type": message.msg_type and _readable(message.msg_type),
            "msg_time": message.msg_time,
            "attrs": {_readable(k): _readable(v) for k, v in message.attrs.items()},
            **text,
        },
        ensure_ascii=False,
    )


def consume(args: argparse.Namespace) -> int:
    out: IO[str] = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    received = 0
    try:
        with Consumer(
            master=args.master,
            group=args.group,
            topics=args.topic,
            consume_from=args.start,
            decode=args.decode,
        ) as consumer:
            idle = 0.0
            while args.count is None or received < args.count:
                try:
                    message = consumer.poll(1.0)
                except PackDecodeError as error:  # the next poll goes on after it
                    print(f"tubemq consume: {error}", file=sys.stderr)
                    continue
                if message is None:
                    # Idle time counts once partitions are held: the first ones arrive
                    # with a rebalance, a few seconds after joining.
                    idle += 1.0 if consumer.assignment() else 0.0
                    if args.idle is not None and idle >= args.idle:
                        break
                    continue
                idle = 0.0
                received += 1
                if args.format == "json":
                    out.write(_as_json(message) + "\n")
                else:
                    value = message.body if isinstance(message, ConsumedRecord) else message
                    out.write(bytes(value).decode("utf-8", "replace") + "\n")
                out.flush()
    finally:
        if args.output:
            out.close()
    kind = "record" if args.decode == "inlongmsg" else "message"
    print(f"received {received} {kind}(s)", file=sys.stderr)
    return 0


def parser(prog: str = "tubemq") -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=prog)
    commands = top.add_subparsers(dest="command", required=True)

    p = commands.add_parser("produce", help="send one message per input line")
    p.add_argument("--master", required=True, help="host:port[,host:port]")
    p.add_argument("--topic", required=True)
    p.add_argument("--file", help="read lines from this file instead of stdin")
    p.add_argument("--attr", action="append", default=[], help="key=value (repeatable)")
    p.add_argument("--msg-type", dest="msg_type", help="msgType of every message")
    p.add_argument("--key", help="partition key (same key, same partition)")
    p.add_argument(
        "--partition", help="send every line to this partition: brokerId:topic:partitionId or id"
    )
    p.set_defaults(run=produce)

    c = commands.add_parser("consume", help="print messages, one per line")
    c.add_argument("--master", required=True, help="host:port[,host:port]")
    c.add_argument("--topic", required=True, action="append", help="repeatable")
    c.add_argument("--group", required=True)
    c.add_argument("--from", dest="start", default="latest", choices=tuple(CONSUME_FROM))
    c.add_argument("--count", type=int, help="stop after this many messages (records)")
    c.add_argument("--idle", type=float, help="stop after this many seconds without a message")
    c.add_argument("--format", choices=("value", "json"), default="value")
    c.add_argument("--output", help="write to this file instead of stdout")
    c.add_argument(
        "--decode",
        choices=("none", "inlongmsg"),
        default="none",
        help="inlongmsg: print the records of InLongMsg packs, not messages",
    )
    c.set_defaults(run=consume)
    return top


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (TubeMQError, OSError, argparse.ArgumentTypeError) as error:
        print(f"tubemq {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
