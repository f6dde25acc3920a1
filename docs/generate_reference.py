"""Writes the two reference pages that come from the code: the configuration keys of every
client (from the config schemas) and the error codes (from the native table and the
exception classes). ``python docs/generate_reference.py`` rewrites them; a test checks
that the committed pages are current."""

from __future__ import annotations

import sys
from pathlib import Path

from tubemq import _core
from tubemq._config import (
    ASSIGNED_CONSUMER_SCHEMA,
    CONSUMER_SCHEMA,
    PRODUCER_SCHEMA,
    Key,
    Schema,
)
from tubemq.errors import error_class_for

DOCS = Path(__file__).resolve().parent


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _schema_table(schema: Schema, skip: set[str]) -> list[str]:
    return _key_table([key for key in schema.keys.values() if key.name not in skip])


def _key_table(keys: list[Key], heading: str = "key") -> list[str]:
    lines = [f"| {heading} | type | default | range | meaning |", "|---|---|---|---|---|"]
    for key in keys:
        default = "required" if key.required else repr(key.default)
        if key.min is None and key.max is None:
            bounds = ""
        elif key.max is None:
            bounds = f"at least {key.min}"
        else:
            bounds = f"{key.min}..{key.max}"
        lines.append(
            f"| `{key.name}` | {_type_name(key.type)} | {default} | {bounds} | {key.doc} |"
        )
    return lines


def configuration_page() -> str:
    common = set(PRODUCER_SCHEMA.keys) & set(CONSUMER_SCHEMA.keys)
    consumer_only = set(CONSUMER_SCHEMA.keys) - common
    sections = [
        "# Configuration reference",
        "",
        "Generated from the configuration schemas (`python docs/generate_reference.py`).",
        "Every client takes a dict, keyword arguments, or both; unknown keys, wrong types",
        "and out-of-range values raise `tubemq.ConfigError` naming the key. Durations are",
        "integer milliseconds (`_ms`) unless the name says seconds (`_s`).",
        "",
        "## Every client",
        "",
        *_schema_table(PRODUCER_SCHEMA, set(PRODUCER_SCHEMA.keys) - common),
        "",
        "## Producer",
        "",
        *_schema_table(PRODUCER_SCHEMA, common),
        "",
        "## Consumer",
        "",
        *_schema_table(CONSUMER_SCHEMA, common),
        "",
        "## AssignedConsumer",
        "",
        "The consumer's keys except bound consume's, and:",
        "",
        *_schema_table(ASSIGNED_CONSUMER_SCHEMA, common | consumer_only),
        "",
        *_spark_sections(),
    ]
    return "\n".join(sections)


def _spark_sections() -> list[str]:
    # Imported here: the Spark options need no Spark, but they are a page of their own.
    from tubemq.spark._options import CLIENT_PREFIX, SINK_KEYS, SOURCE_KEYS

    return [
        "## PySpark data source and sink",
        "",
        "Options of `spark.read`/`readStream` and `df.write`/`writeStream` with",
        '`format("tubemq")` (names case-insensitive, values strings). Client keys above pass',
        f"through with the prefix `{CLIENT_PREFIX}` (`{CLIENT_PREFIX}rpc_timeout_ms`), except",
        "the ones the data source sets itself.",
        "",
        "### Source",
        "",
        *_key_table(list(SOURCE_KEYS), "option"),
        "",
        "### Sink",
        "",
        *_key_table(list(SINK_KEYS), "option"),
        "",
    ]


def errors_page() -> str:
    lines = [
        "# Error codes",
        "",
        "Generated from the native code table and `tubemq.errors`",
        "(`python docs/generate_reference.py`). Every exception is a `tubemq.TubeMQError`",
        "with `.code`, `.message` and `.retriable` (whether the same call may succeed later).",
        "",
        "A message may quote what a server said (`errMsg`, an exception's name and text).",
        "That text is not always UTF-8; bytes that are not are shown as `\\xNN` escapes",
        "(Python's `backslashreplace`), in messages and in the native log records alike,",
        "so that raising or logging never fails on them.",
        "The escapes are for reading; the original bytes are not kept.",
        "",
        "| code | name | raised as | retriable |",
        "|---|---|---|---|",
    ]
    for code in range(100, 6000):
        name = _core.error_code_name(code)
        if name == "UNKNOWN" or code == 200:
            continue
        cls = error_class_for(code).__name__
        retriable = "yes" if _core.is_retriable(code) else "no"
        lines.append(f"| {code} | `{name}` | `{cls}` | {retriable} |")
    return "\n".join([*lines, *_AFTER_A_FAILED_SEND, ""])


# Written here, not generated: what the classes of the table mean for a caller.
_AFTER_A_FAILED_SEND = [
    "",
    "## After a failed send",
    "",
    "`retriable` says whether sending the same message again is safe, duplicates included:",
    "",
    "- `OutcomeUnknownError` (1003, a subclass of `TimeoutError`, not retriable): the send",
    "  timed out after its message was handed to the network, by the RPC deadline or by the",
    "  caller's own `timeout`/`send_timeout_s`. The broker may have stored it, or may still.",
    "  A blind retry may store it twice: retry only where duplicates are acceptable or",
    "  removed downstream; otherwise record the message as in doubt, or consume the topic",
    "  to find out.",
    "- `TimeoutError` (1000, retriable): nothing was sent because of this call (a send",
    "  found no place in the in-flight window in time; a publish or close ran out of",
    "  time). Retry.",
    "- `QueueFullError` (1011, retriable): the window is full and `block_on_full=False`:",
    "  retry later, or `flush()` first.",
    "- `ConnectionError`, `ServerError` with `retriable` yes: the producer has already",
    "  retried, on another partition, every failure that proves nothing was stored; a",
    "  later retry may succeed. A `ConnectionError` whose message says the broker may have",
    "  stored the message (the connection broke after the request went out) carries the",
    "  same risk as `OutcomeUnknownError`.",
    "- `ConfigError` (1010; `ArgumentTypeError`, also a `TypeError`, for a wrong type) and",
    "  `InvalidMessageError` (440-445): a bad argument or message, refused before anything",
    "  was sent; `.key` names the argument where one is to blame. Fix the call.",
    "- `ClientClosedError` (420, 2002): the producer is closed.",
]


PAGES = {"configuration.md": configuration_page, "errors.md": errors_page}


def main() -> int:
    for name, render in PAGES.items():
        (DOCS / name).write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
