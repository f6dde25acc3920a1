"""Configuration: one schema per client kind, written once.

The schema lists every key with its type, default, range and meaning. It validates what
the user passes (unknown keys are refused with a close-match suggestion), builds the
native config struct, and is what the documentation's configuration reference is
generated from. Durations are integer milliseconds with an ``_ms`` suffix.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable

from tubemq import _core
from tubemq.errors import ConfigError


@dataclass(frozen=True)
class Key:
    """One configuration key."""

    name: str
    type: type | tuple[type, ...]
    default: Any
    doc: str
    min: int | None = None
    max: int | None = None
    required: bool = False
    # Normalises an already type-checked value; raises ValueError with the reason.
    convert: Callable[[Any], Any] | None = None


def _normalize_master(value: Any) -> str:
    """Accepts "h:p,h:p" or a list of "h:p"; returns the comma-joined form."""
    items = [value] if isinstance(value, str) else list(value)
    entries: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"entries must be 'host:port' strings, got {type(item).__name__}")
        entries.extend(part.strip() for part in item.split(",") if part.strip())
    if not entries:
        raise ValueError("no master address given")
    for entry in entries:
        host, sep, port = entry.rpartition(":")
        if not sep or not host or ":" in host:
            raise ValueError(f"'{entry}' is not host:port")
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"'{entry}' has no valid port (1..65535)")
    return ",".join(entries)


def _readable_file_or_empty(value: Any) -> str:
    """A path to a readable file, or "" for none."""
    path = os.fspath(value)
    if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise ValueError(f"'{path}' is not a readable file")
    return str(path)


# Keys every client has.
CLIENT_KEYS: tuple[Key, ...] = (
    Key(
        "master",
        (str, list, tuple),
        None,
        "Master addresses: 'host:port,host:port' or a list of 'host:port'.",
        required=True,
        convert=_normalize_master,
    ),
    Key(
        "rpc_timeout_ms",
        int,
        10000,
        "Deadline of each request to a master or broker.",
        min=500,
        max=600000,
    ),
    Key("connect_timeout_ms", int, 3000, "Deadline of each TCP connect.", min=100, max=60000),
    Key(
        "stats_interval_ms",
        int,
        5000,
        "How often a client made with stats_cb= calls it with its metrics().",
        min=100,
        max=3_600_000,
    ),
    Key(
        "heartbeat_period_ms",
        int,
        10000,
        "Interval of heartbeats to the master; keep it well below the master's client "
        "timeout (30 s by default).",
        min=200,
        max=60000,
    ),
    Key(
        "register_attempts",
        int,
        5,
        "Rounds over the master list when registering at start.",
        min=1,
        max=100,
    ),
    Key(
        "register_retry_wait_ms", int, 1000, "Pause between registration rounds.", min=1, max=60000
    ),
    Key(
        "local_host",
        str,
        "",
        "Address reported to the servers as this client's host; empty: the first "
        "non-loopback IPv4 address.",
    ),
    Key(
        "auth_user",
        str,
        "",
        "User name for authentication (protocol.md §8); empty: no authentication.",
    ),
    Key("auth_password", str, "", "Password that signs the requests of auth_user."),
    Key(
        "tls_enable",
        bool,
        False,
        "Speak TLS to the master and the brokers; `master` must then name the masters' "
        "TLS ports (8716 by default), and the brokers' TLS ports come from the master.",
    ),
    Key(
        "tls_ca_file",
        (str, os.PathLike),
        "",
        "PEM file of the CA certificates that verify the servers' certificates; empty: "
        "the system's trust store. The servers' certificates are always verified.",
        convert=_readable_file_or_empty,
    ),
    Key(
        "tls_verify_hostname",
        bool,
        True,
        "Also require the server's certificate to name the host the client dialled.",
    ),
    Key(
        "tls_cert_file",
        (str, os.PathLike),
        "",
        "PEM certificate this client proves itself with (two-way TLS, which TubeMQ 2.4 "
        "servers require of every TLS client); empty: none. Needs tls_key_file.",
        convert=_readable_file_or_empty,
    ),
    Key(
        "tls_key_file",
        (str, os.PathLike),
        "",
        "PEM private key (unencrypted) of tls_cert_file.",
        convert=_readable_file_or_empty,
    ),
)

PRODUCER_KEYS: tuple[Key, ...] = (
    Key(
        "max_in_flight",
        int,
        10000,
        "Sends that may await their broker reply at once; further sends block or fail.",
        min=1,
        max=1_000_000,
    ),
    Key(
        "block_on_full",
        bool,
        True,
        "When the in-flight window is full: True waits for a place (interruptible), "
        "False raises QueueFullError at once.",
    ),
    Key(
        "send_retries",
        int,
        2,
        "Extra attempts, on another partition where possible, after failures that prove "
        "the message was not stored. Timeouts are never retried (no duplicates).",
        min=0,
        max=10,
    ),
    Key(
        "send_timeout_s",
        (int, float),
        None,
        "Default timeout of a blocking send() in seconds; None: the RPC deadline bounds it.",
        min=0,
    ),
)


class Schema:
    """A set of keys and the validation that goes with them."""

    def __init__(self, kind: str, keys: Iterable[Key]) -> None:
        self.kind = kind
        self.keys = {key.name: key for key in keys}

    def validate(
        self, config: Mapping[str, Any] | None, overrides: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Merges a config dict and keyword overrides, checks them, fills defaults."""
        merged: dict[str, Any] = {}
        if config is not None:
            if not isinstance(config, Mapping):
                raise ConfigError(f"{self.kind} config must be a dict, got {type(config).__name__}")
            merged.update(config)
        merged.update(overrides)
        for name in merged:
            if not isinstance(name, str) or name not in self.keys:
                raise ConfigError(self._unknown_key_message(name), key=str(name))
        values: dict[str, Any] = {}
        for key in self.keys.values():
            if key.name not in merged or merged[key.name] is None:
                if key.required:
                    raise ConfigError(
                        f"{self.kind} config needs '{key.name}': {key.doc}", key=key.name
                    )
                values[key.name] = key.default
                continue
            values[key.name] = self._check(key, merged[key.name])
        return values

    def _unknown_key_message(self, name: object) -> str:
        message = f"unknown {self.kind} config key {name!r}"
        if isinstance(name, str):
            close = difflib.get_close_matches(name, list(self.keys), n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        return message

    def _check(self, key: Key, value: Any) -> Any:
        expected = key.type if isinstance(key.type, tuple) else (key.type,)
        # bool is an int in Python, but True is never a sensible timeout.
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            names = " or ".join(t.__name__ for t in expected)
            raise ConfigError(
                f"{self.kind} config key '{key.name}' must be {names}, "
                f"got {type(value).__name__} {value!r}",
                key=key.name,
            )
        if isinstance(value, (int, float)) and (
            (key.min is not None and value < key.min) or (key.max is not None and value > key.max)
        ):
            raise ConfigError(
                f"{self.kind} config key '{key.name}' must be within "
                f"{key.min}..{key.max}, got {value!r}",
                key=key.name,
            )
        if key.convert is not None:
            try:
                value = key.convert(value)
            except ValueError as error:
                raise ConfigError(
                    f"{self.kind} config key '{key.name}': {error}", key=key.name
                ) from None
        return value


PRODUCER_SCHEMA = Schema("producer", CLIENT_KEYS + PRODUCER_KEYS)


def native_client_config(values: Mapping[str, Any]) -> _core.ClientConfig:
    """The native struct for validated values."""
    native = _core.ClientConfig()
    native.masters = values["master"]
    native.rpc_timeout_ms = values["rpc_timeout_ms"]
    native.connect_timeout_ms = values["connect_timeout_ms"]
    native.heartbeat_period_ms = values["heartbeat_period_ms"]
    native.register_attempts = values["register_attempts"]
    native.register_retry_wait_ms = values["register_retry_wait_ms"]
    native.local_host = values["local_host"]
    native.auth_user = values["auth_user"]
    native.auth_password = values["auth_password"]
    native.tls_enable = values["tls_enable"]
    native.tls_ca_file = values["tls_ca_file"]
    native.tls_verify_hostname = values["tls_verify_hostname"]
    native.tls_cert_file = values["tls_cert_file"]
    native.tls_key_file = values["tls_key_file"]
    return native


def native_producer_options(values: Mapping[str, Any]) -> _core.ProducerOptions:
    """The native producer options for validated values."""
    options = _core.ProducerOptions()
    options.max_in_flight = values["max_in_flight"]
    options.send_retries = values["send_retries"]
    return options


# Name rules (behaviour.md §0.1), checked here before anything is sent: the master's RPC
# path checks little, and a separator inside a name would corrupt the strings the
# protocol builds from names ("topic#item,item", "brokerId:topic:partition").
_TOPIC_NAME = re.compile(r"[a-zA-Z]\w+", re.ASCII)
_GROUP_NAME = re.compile(r"[a-zA-Z][\w-]+", re.ASCII)
MAX_TOPIC_NAME = 64
MAX_GROUP_NAME = 1024
MAX_FILTER_ITEM = 256
MAX_FILTER_ITEMS = 500
MAX_SESSION_KEY = 1024
_FILTER_RESERVED = set(",#:= \t\r\n")


def check_topic_name(topic: Any) -> str:
    """The topic name, stripped; ValueError unless it follows the master's rule."""
    if not isinstance(topic, str) or not topic.strip():
        raise ValueError(f"topic names must be non-blank strings, got {topic!r}")
    name = topic.strip()
    if len(name) > MAX_TOPIC_NAME or not _TOPIC_NAME.fullmatch(name):
        raise ValueError(
            f"invalid topic name {name!r}: 2-{MAX_TOPIC_NAME} ASCII letters, digits and '_', "
            "starting with a letter"
        )
    return name


def _check_group(value: str) -> str:
    if len(value) > MAX_GROUP_NAME or not _GROUP_NAME.fullmatch(value):
        raise ValueError(
            f"invalid group name {value!r}: 2-{MAX_GROUP_NAME} ASCII letters, digits, '_' "
            "and '-', starting with a letter"
        )
    return value


def _check_session_key(value: str) -> str:
    if len(value) > MAX_SESSION_KEY or "," in value:
        raise ValueError(f"at most {MAX_SESSION_KEY} characters and no ','")
    return value


def _normalize_topics(value: Any) -> dict[str, list[str]]:
    """A list of topics, or a dict of topic to msgType filter items (None: no filter)."""
    if isinstance(value, str):
        value = [value]
    items = value.items() if isinstance(value, Mapping) else ((topic, None) for topic in value)
    topics: dict[str, list[str]] = {}
    for topic, filters in items:
        name = check_topic_name(topic)
        if filters is None:
            filters = []
        if isinstance(filters, str) or not all(isinstance(f, str) and f for f in filters):
            raise ValueError(f"the filters of '{name}' must be a list of non-blank strings")
        if len(set(filters)) > MAX_FILTER_ITEMS:
            raise ValueError(f"'{name}' has more than {MAX_FILTER_ITEMS} filter items")
        for item in filters:
            if len(item) > MAX_FILTER_ITEM or _FILTER_RESERVED.intersection(item):
                raise ValueError(
                    f"filter item {item[:40]!r} of '{name}': at most {MAX_FILTER_ITEM} "
                    "characters, none of ',#:=' or blanks"
                )
        topics[name] = sorted(set(filters))
    if not topics:
        raise ValueError("at least one topic is needed")
    return topics


def _check_consume_from(value: Any) -> str:
    if value not in ("earliest", "latest", "max_always"):
        raise ValueError(f"must be 'earliest', 'latest' or 'max_always', got {value!r}")
    return str(value)


CONSUMER_KEYS: tuple[Key, ...] = (
    Key(
        "group",
        str,
        None,
        "The consumer group; members share the topics' partitions.",
        required=True,
        convert=_check_group,
    ),
    Key(
        "topics",
        (str, list, tuple, dict),
        None,
        "Topics to consume: a list, or a dict of topic to a list of msgType filter items.",
        required=True,
        convert=_normalize_topics,
    ),
    Key(
        "consume_from",
        str,
        "latest",
        "Where a new group starts: 'earliest', 'latest', or 'max_always' (skip the backlog "
        "at every start).",
        convert=_check_consume_from,
    ),
    Key(
        "auto_commit",
        bool,
        True,
        "Commit a batch once all its messages were returned by poll(), before the next "
        "fetch, and at close.",
    ),
    Key(
        "msg_not_found_wait_ms",
        int,
        400,
        "How long a partition without new data rests before it is fetched again.",
        min=0,
        max=60000,
    ),
    Key(
        "confirm_timeout_ms",
        int,
        60000,
        "A batch not committed within this time is delivered again.",
        min=1000,
        max=3_600_000,
    ),
)

SOURCE_COUNT_KEY = Key(
    "source_count",
    int,
    0,
    "How many members the group has (bound consume) or split its partitions "
    "(AssignedConsumer); all members declare the same. 0 declares none.",
    min=0,
    max=10000,
)


def _check_bound_offsets(value: Any) -> dict[str, int]:
    offsets = dict(value or {})
    for key, offset in offsets.items():
        if not isinstance(key, str) or key.count(":") < 2:
            raise ValueError(f"key {key!r} is not 'brokerId:topic:partitionId'")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset of {key} must be an int >= 0, got {offset!r}")
    return offsets


# Bound consume (server-balanced consumers only): the group starts from given offsets.
BOUND_CONSUME_KEYS: tuple[Key, ...] = (
    Key(
        "session_key",
        str,
        "",
        "Bound consume: a key shared by all members of this consumption session; a new "
        "key starts a new session (from bound_offsets) once the old one's members left.",
        convert=_check_session_key,
    ),
    Key(
        "bound_offsets",
        dict,
        None,
        "Bound consume: partition key -> index offset this member wants the session to start from.",
        convert=_check_bound_offsets,
    ),
    Key(
        "select_big",
        bool,
        True,
        "Bound consume: where members name different offsets for a partition, the bigger "
        "one wins (else the smaller).",
    ),
)

CONSUMER_SCHEMA = Schema(
    "consumer", CLIENT_KEYS + CONSUMER_KEYS + (SOURCE_COUNT_KEY,) + BOUND_CONSUME_KEYS
)

# Keys of the client-balanced consumer, beyond the consumer's.
ASSIGNED_CONSUMER_KEYS: tuple[Key, ...] = (
    SOURCE_COUNT_KEY,
    Key(
        "node_id",
        int,
        0,
        "This member's index in [0, source_count), unique in the group.",
        min=0,
        max=9999,
    ),
)

ASSIGNED_CONSUMER_SCHEMA = Schema(
    "assigned consumer", CLIENT_KEYS + CONSUMER_KEYS + ASSIGNED_CONSUMER_KEYS
)
