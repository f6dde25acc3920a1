"""Options of the ``tubemq`` data source and sink: parsed once, checked, typed.

Spark hands a data source its options as a case-insensitive dict of strings. This module
turns them into frozen dataclasses (so they pickle to the workers as plain values) and
raises :class:`tubemq.ConfigError` naming the option for anything missing, unknown,
mistyped or out of range, before a single task starts.

Client settings pass through with a ``tubemq.`` prefix (``tubemq.rpc_timeout_ms=5000``);
they are converted to the type the client's schema declares and checked by the client.

The options themselves are :class:`tubemq._config.Key` tables like the clients' keys (one
dialect: name, type, default, range, meaning), which the configuration reference is
generated from; unknown names get the clients' "did you mean" (``_config.closest``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from tubemq._config import (
    CLIENT_KEYS,
    CONSUMER_KEYS,
    PARTITION_KEY_FORM,
    PRODUCER_KEYS,
    Key,
    closest,
    partition_key_topic,
)
from tubemq.errors import ConfigError
from tubemq.spark._files import ship

# Where a partition starts or ends: a symbolic position or an index offset.
EARLIEST = "earliest"
LATEST = "latest"
Position = Union[str, int]

# Options Spark itself adds to a data source's options (lower case, as Spark passes them).
_SPARK_OPTIONS = frozenset({"path", "paths", "checkpointlocation", "queryname"})

CLIENT_PREFIX = "tubemq."

_CLIENT_KEY_TYPES: dict[str, Any] = {
    key.name: key.type for key in (*CLIENT_KEYS, *CONSUMER_KEYS, *PRODUCER_KEYS)
}
# Keys the data source sets itself; a user may not override them through the prefix.
_OWNED_CLIENT_KEYS = frozenset(
    {"master", "group", "topics", "consume_from", "auto_commit", "decode", "decode_errors"}
)


@dataclass(frozen=True)
class Offsets:
    """A starting or ending position: ``default`` for every partition, or per partition key.

    ``per_key`` holds the JSON form's entries; partitions it does not name take ``default``.
    """

    default: str
    per_key: Mapping[str, Position] = field(default_factory=dict)

    def for_key(self, key: str) -> Position:
        return self.per_key.get(key, self.default)


@dataclass(frozen=True)
class SourceOptions:
    master: str
    topics: tuple[str, ...]
    group: str
    starting: Offsets
    ending: Offsets
    filters: Mapping[str, frozenset[str]]  # topic -> msgTypes kept; topic absent: keep all
    min_partitions: int
    max_messages_per_trigger: int | None
    fail_on_data_loss: bool
    read_timeout_s: float
    occupied_retry_s: float
    client: Mapping[str, Any]
    decode: bool = False  # one row per InLongMsg record
    skip_bad_packs: bool = False  # decodeErrors=skip
    # Fetched batches a task reads ahead of Spark, on a thread (0: none, no thread).
    prefetch_batches: int = 8
    # Whether the user named the group (option ``group``); if not, each reader process
    # reads in a group of its own, kept across tasks and queries (_clients.reader_group).
    group_given: bool = False

    def consumer_config(self, group: str | None = None) -> dict[str, Any]:
        """The AssignedConsumer configuration of a reader (``group`` overrides the group)."""
        return {
            **self.client,
            "master": self.master,
            "group": group or self.group,
            "topics": list(self.topics),
            "consume_from": "earliest",
            "auto_commit": False,
        }

    def planner_group(self) -> str:
        """The group of the driver's offset queries, apart from the readers' group."""
        return f"{self.group}-plan"


@dataclass(frozen=True)
class SinkOptions:
    master: str
    topic: str | None
    flush_timeout_s: float
    client: Mapping[str, Any]

    def producer_config(self) -> dict[str, Any]:
        return {**self.client, "master": self.master}


SOURCE_KEYS: tuple[Key, ...] = (
    Key("master", str, None, "Master addresses, 'host:port[,host:port]'.", required=True),
    Key("topic", str, None, "Topic or comma-separated topics to read.", required=True),
    Key("topics", str, None, "Alias of 'topic'."),
    Key(
        "group",
        str,
        None,
        "Consumer group of the readers; unset: one spark-<random> group per reader process "
        "and topic set, kept across its tasks and queries.",
    ),
    Key(
        "startingOffsets",
        str,
        None,
        "'earliest', 'latest' or JSON {partition key: offset}; unset: 'earliest' for batch "
        "queries, 'latest' for streaming ones.",
    ),
    Key(
        "endingOffsets",
        str,
        LATEST,
        "'latest' or JSON {partition key: offset} (batch queries only).",
    ),
    Key(
        "filters",
        str,
        None,
        "msgTypes to keep: 'a,b' for every topic or JSON {topic: [msgType, ...]}.",
    ),
    Key(
        "minPartitions",
        int,
        1,
        "Split partitions into at least this many Spark input partitions.",
        min=1,
    ),
    Key(
        "maxMessagesPerTrigger",
        int,
        None,
        "At most this many messages per micro-batch (streaming queries only).",
        min=1,
    ),
    Key("failOnDataLoss", bool, True, "Fail when a start offset has been deleted."),
    Key(
        "readTimeoutMs",
        int,
        120_000,
        "Fail a task that waits this long for data it planned to read.",
        min=1000,
    ),
    Key(
        "prefetchBatches",
        int,
        8,
        "Fetched batches a task reads ahead of Spark, on a thread of its own (0: none).",
        min=0,
    ),
    Key(
        "partitionOccupiedRetryMs",
        int,
        90_000,
        "How long a task retries a partition another reader holds.",
        min=0,
    ),
    Key(
        "decode",
        str,
        "none",
        "'inlongmsg': one row per record of the InLongMsg packs; 'none': one per message.",
    ),
    Key(
        "decodeErrors",
        str,
        "fail",
        "With decode: 'fail' or 'skip' a message that is not a valid pack.",
    ),
)

SINK_KEYS: tuple[Key, ...] = (
    Key("master", str, None, "Master addresses, 'host:port[,host:port]'.", required=True),
    Key("topic", str, None, "Topic of rows whose 'topic' column is absent or null."),
    Key(
        "flushTimeoutMs",
        int,
        120_000,
        "How long a task waits for the broker to confirm its sends.",
        min=100,
    ),
)

_SOURCE_OPTIONS = {key.name: key for key in SOURCE_KEYS}
_SINK_OPTIONS = {key.name: key for key in SINK_KEYS}


def _check_known(options: Mapping[str, str], known: Mapping[str, Key], kind: str) -> None:
    lowered_known = {name.lower(): name for name in known}
    for name in options:
        lowered = name.lower()
        if (
            lowered in lowered_known
            or lowered in _SPARK_OPTIONS
            or lowered.startswith(CLIENT_PREFIX)
        ):
            continue
        message = f"unknown tubemq {kind} option '{name}'"
        close = closest(lowered, lowered_known)
        if close is not None:
            message += f"; did you mean '{lowered_known[close]}'?"
        message += f". Known options: {', '.join(sorted(known))}, and tubemq.<client key>"
        raise ConfigError(message, key=name)


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _required(options: Mapping[str, str], name: str, kind: str) -> str:
    value = _get(options, name)
    if value is None:
        raise ConfigError(f"the tubemq {kind} needs the option '{name}'", key=name)
    return value


def _int(options: Mapping[str, str], key: Key) -> int | None:
    """An integer option, at least its key's minimum; the key's default when unset."""
    name = key.name
    text = _get(options, name)
    if text is None:
        return int(key.default) if key.default is not None else None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"option '{name}' must be an integer, got {text!r}", key=name) from None
    if key.min is not None and value < key.min:
        raise ConfigError(f"option '{name}' must be at least {key.min}, got {value}", key=name)
    return value


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _parse_bool(text: str) -> bool | None:
    """A Spark option's text as a bool (true/false, 1/0, yes/no, any case), else None."""
    lowered = text.strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _bool(options: Mapping[str, str], key: Key) -> bool:
    name = key.name
    text = _get(options, name)
    if text is None:
        return bool(key.default)
    value = _parse_bool(text)
    if value is None:
        raise ConfigError(f"option '{name}' must be true or false, got {text!r}", key=name)
    return value


def _topics(options: Mapping[str, str]) -> tuple[str, ...]:
    text = _get(options, "topic") or _get(options, "topics")
    if text is None:
        raise ConfigError("the tubemq source needs the option 'topic'", key="topic")
    topics = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not topics:
        raise ConfigError(f"option 'topic' names no topic: {text!r}", key="topic")
    return topics


def parse_offsets(text: str | None, name: str, default: str, allowed: tuple[str, ...]) -> Offsets:
    """``earliest`` / ``latest`` or a JSON object of partition key to offset."""
    if text is None:
        return Offsets(default)
    if text.lower() in allowed:
        return Offsets(text.lower())
    if not text.startswith("{"):
        raise ConfigError(
            f"option '{name}' must be {' or '.join(map(repr, allowed))} or a JSON object "
            f"of partition key to offset, got {text!r}",
            key=name,
        )
    try:
        parsed = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"option '{name}' is not valid JSON: {error}", key=name) from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"option '{name}' must be a JSON object", key=name)
    per_key: dict[str, Position] = {}
    for key, value in parsed.items():
        if partition_key_topic(key) is None:
            raise ConfigError(
                f"option '{name}': {key!r} is not a partition key '{PARTITION_KEY_FORM}'",
                key=name,
            )
        if isinstance(value, str) and value.lower() in (EARLIEST, LATEST):
            per_key[key] = value.lower()
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            per_key[key] = value
        else:
            raise ConfigError(
                f"option '{name}': the offset of {key!r} must be a non-negative integer, "
                f"'earliest' or 'latest', got {value!r}",
                key=name,
            )
    return Offsets(default, per_key)


def _filters(options: Mapping[str, str], topics: tuple[str, ...]) -> dict[str, frozenset[str]]:
    text = _get(options, "filters")
    if text is None:
        return {}
    if not text.startswith("{"):
        items = frozenset(part.strip() for part in text.split(",") if part.strip())
        return dict.fromkeys(topics, items)
    try:
        parsed = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"option 'filters' is not valid JSON: {error}", key="filters") from None
    if not isinstance(parsed, dict):
        raise ConfigError("option 'filters' must be 'a,b' or a JSON object", key="filters")
    result: dict[str, frozenset[str]] = {}
    for topic, items in parsed.items():
        if topic not in topics:
            raise ConfigError(f"option 'filters' names {topic!r}, which is not read", "filters")
        if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
            raise ConfigError(f"option 'filters': {topic!r} needs a list of msgTypes", "filters")
        result[topic] = frozenset(items)
    return result


def _convert_client_value(key: str, option: str, text: str) -> Any:
    declared = _CLIENT_KEY_TYPES[key]
    types = declared if isinstance(declared, tuple) else (declared,)
    if bool in types:
        value = _parse_bool(text)
        if value is not None:
            return value
    elif int in types:
        try:
            return int(text)
        except ValueError:
            if float not in types:
                raise ConfigError(f"option '{option}' must be an integer", key=option) from None
    if float in types:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"option '{option}' must be a number", key=option) from None
    if str in types:
        return text
    raise ConfigError(f"option '{option}' has an invalid value {text!r}", key=option)


def client_settings(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``tubemq.<key>`` options, converted to the client schema's types."""
    settings: dict[str, Any] = {}
    for name, value in options.items():
        lowered = name.lower()
        if not lowered.startswith(CLIENT_PREFIX):
            continue
        key = lowered[len(CLIENT_PREFIX) :]
        if key in _OWNED_CLIENT_KEYS:
            raise ConfigError(
                f"option '{name}' is set by the data source; use its own option instead",
                key=name,
            )
        if key not in _CLIENT_KEY_TYPES:
            message = f"option '{name}': unknown client key {key!r}"
            close = closest(key, _CLIENT_KEY_TYPES)
            if close is not None:
                message += f"; did you mean '{CLIENT_PREFIX}{close}'?"
            raise ConfigError(message, key=name)
        settings[key] = _convert_client_value(key, name, str(value).strip())
    return ship(settings, CLIENT_PREFIX)


def new_group() -> str:
    """A group name of its own for one query run; nothing is ever committed to it."""
    return f"spark-{uuid.uuid4().hex[:12]}"


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(name).lower(): value for name, value in options.items()}


def source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Checks and types the options of ``spark.read`` / ``spark.readStream``."""
    options = _lowered(options)
    _check_known(options, _SOURCE_OPTIONS, "source")
    topics = _topics(options)
    ending_text = _get(options, "endingOffsets")
    if streaming and ending_text is not None:
        raise ConfigError(
            "option 'endingOffsets' applies to batch queries only; a streaming query "
            "reads until it is stopped",
            key="endingOffsets",
        )
    max_per_trigger = _int(options, _SOURCE_OPTIONS["maxMessagesPerTrigger"])
    if not streaming and max_per_trigger is not None:
        raise ConfigError(
            "option 'maxMessagesPerTrigger' applies to streaming queries only",
            key="maxMessagesPerTrigger",
        )
    decode = _choice(options, _SOURCE_OPTIONS["decode"], ("none", "inlongmsg")) == "inlongmsg"
    skip_bad_packs = _choice(options, _SOURCE_OPTIONS["decodeErrors"], ("fail", "skip")) == "skip"
    if _get(options, "decodeErrors") is not None and not decode:
        raise ConfigError(
            "option 'decodeErrors' applies with option('decode', 'inlongmsg') only",
            key="decodeErrors",
        )
    return SourceOptions(
        master=_required(options, "master", "source"),
        topics=topics,
        group=_get(options, "group") or new_group(),
        starting=parse_offsets(
            _get(options, "startingOffsets"),
            "startingOffsets",
            LATEST if streaming else EARLIEST,
            (EARLIEST, LATEST),
        ),
        ending=parse_offsets(
            ending_text, "endingOffsets", _SOURCE_OPTIONS["endingOffsets"].default, (LATEST,)
        ),
        filters=_filters(options, topics),
        min_partitions=_int(options, _SOURCE_OPTIONS["minPartitions"]) or 1,
        max_messages_per_trigger=max_per_trigger,
        fail_on_data_loss=_bool(options, _SOURCE_OPTIONS["failOnDataLoss"]),
        read_timeout_s=(_int(options, _SOURCE_OPTIONS["readTimeoutMs"]) or 0) / 1000.0,
        occupied_retry_s=(_int(options, _SOURCE_OPTIONS["partitionOccupiedRetryMs"]) or 0) / 1000.0,
        client=client_settings(options),
        decode=decode,
        skip_bad_packs=skip_bad_packs,
        prefetch_batches=_int(options, _SOURCE_OPTIONS["prefetchBatches"]) or 0,
        group_given=_get(options, "group") is not None,
    )


def _choice(options: Mapping[str, str], key: Key, allowed: tuple[str, ...]) -> str:
    """One of ``allowed`` (case-insensitive); the key's default when the option is absent."""
    name = key.name
    text = _get(options, name)
    if text is None:
        return str(key.default)
    if text.lower() not in allowed:
        raise ConfigError(
            f"option '{name}' must be {' or '.join(map(repr, allowed))}, got {text!r}", key=name
        )
    return text.lower()


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Checks and types the options of ``df.write`` / ``df.writeStream``."""
    options = _lowered(options)
    _check_known(options, _SINK_OPTIONS, "sink")
    return SinkOptions(
        master=_required(options, "master", "sink"),
        topic=_get(options, "topic"),
        flush_timeout_s=(_int(options, _SINK_OPTIONS["flushTimeoutMs"]) or 0) / 1000.0,
        client=client_settings(options),
    )
