"""Configuration: one schema per client kind, written once.

The schema lists every key with its type, default, range and meaning. It validates what
the user passes (unknown keys are refused with a close-match suggestion), builds the
native config struct, and is what the documentation's configuration reference is
generated from. Durations are integer milliseconds with an ``_ms`` suffix.
"""

from __future__ import annotations

import datetime
import difflib
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable, cast

from tubemq import _core
from tubemq.errors import ArgumentTypeError, ConfigError


@dataclass(frozen=True)
class Key:
    """One configuration key."""

    name: str
    type: type | tuple[type, ...]
    default: Any
    doc: str
    min: float | None = None
    max: float | None = None
    required: bool = False
    # Normalises an already type-checked value; raises ValueError with the reason.
    convert: Callable[[Any], Any] | None = None


def _normalize_master(value: Any) -> str:
    """Accepts "h:p,h:p" or a list of "h:p"; returns the comma-joined form.

    Only the Python shapes are handled here; what makes an entry valid is the core's one
    parser of master lists (tubemq::MasterListProblem), asked rather than copied.
    """
    items = [value] if isinstance(value, str) else list(value)
    entries: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"entries must be 'host:port' strings, got {type(item).__name__}")
        entries.extend(part.strip() for part in item.split(",") if part.strip())
    joined = ",".join(entries)
    check_text(joined, "master")
    problem = _core.master_list_problem(joined)
    if problem:
        raise ValueError(problem)
    return joined


def _readable_file_or_empty(value: Any) -> str:
    """A path to a readable file, or "" for none."""
    path = os.fspath(value)
    if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise ValueError(f"'{path}' is not a readable file")
    return str(path)


# --- arguments of methods -----------------------------------------------------------
#
# Every public method checks its arguments here before any native call, so that a bad
# one is a ConfigError naming it (ArgumentTypeError, also a TypeError, for a wrong type)
# and never reaches the core: no message is handed to the network because of it.

# Longest timeout accepted, in seconds (a year); None is the way to say "no bound".
MAX_TIMEOUT_S = 365 * 24 * 3600.0
# Shortest timeout of a send. A shorter one ends, nearly always, before the broker can
# answer: the message goes out and the caller learns only that its outcome is unknown.
# Such a value is a slip (milliseconds given as seconds, a computed deadline already
# spent), so it is refused before anything is sent.
MIN_SEND_TIMEOUT_S = 0.001


def _type_name(value: object) -> str:
    return type(value).__name__


def check_timeout(
    value: object,
    name: str,
    *,
    allow_none: bool = True,
    allow_zero: bool = False,
    minimum: float | None = None,
) -> float | None:
    """Checks a timeout argument in seconds; returns it as a float (None stays None).

    The rule every client method shares: an int or float (not bool), finite, greater
    than zero and at most :data:`MAX_TIMEOUT_S`. Options widen or narrow it per argument:
    ``allow_none`` accepts None (what None means is the caller's to document: usually
    "no bound of the client's own"), ``allow_zero`` accepts 0 (usually "do not wait"),
    ``minimum`` raises the lower bound. Raises :class:`ArgumentTypeError` for a wrong
    type and :class:`ConfigError` for a value out of range (NaN, infinities, negatives,
    zero where it has no meaning, below ``minimum``); both have ``key == name`` and
    name the argument in the message.
    """
    if value is None:
        if allow_none:
            return None
        raise ArgumentTypeError(f"{name} must be a number of seconds, got None", key=name)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        accepted = "a number of seconds" + (" or None" if allow_none else "")
        raise ArgumentTypeError(
            f"{name} must be {accepted}, got {_type_name(value)} {value!r}", key=name
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float
        seconds = -math.inf if value < 0 else math.inf
    lowest = minimum if minimum is not None else 0.0
    if math.isnan(seconds) or math.isinf(seconds):
        hint = "; use None to wait without a bound" if allow_none and seconds > 0 else ""
        raise ConfigError(
            f"{name} must be a finite number of seconds, got {value!r}{hint}", key=name
        )
    if seconds == 0 and allow_zero:
        return 0.0
    if seconds <= 0 or seconds < lowest or seconds > MAX_TIMEOUT_S:
        if minimum is not None:
            wanted = f"at least {minimum:g} s"
        elif allow_zero:
            wanted = "0 (do not wait) or more"
        else:
            wanted = "more than 0 s"
        raise ConfigError(
            f"{name} must be {wanted} and at most {MAX_TIMEOUT_S:.0f} s, got {value!r}",
            key=name,
        )
    return seconds


def check_text(value: object, name: str, *, allow_none: bool = False, what: str = "") -> None:
    """Checks a text argument (topic, key, msg_type, ...): a ``str`` that UTF-8 can
    encode (no lone surrogates), or None where ``allow_none``. Bytes are refused rather
    than guessed at. Raises :class:`ArgumentTypeError` or :class:`ConfigError` with
    ``key == name``; the message names ``what`` (default: ``name``)."""
    text = _checked_str(value, name, allow_none, what)
    if text is None or text.isascii():  # the common case, without encoding a copy
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise _not_text(text, error, what or name, name) from None


def wire_text(
    value: object, name: str, *, allow_none: bool = False, what: str = ""
) -> str | bytes | None:
    """Checks text that may come from the wire (attributes, msg_type) and gives what the
    core sends: ASCII text as it is, other text as its UTF-8 bytes, where lone surrogates
    U+DC80..U+DCFF stand for the bytes they escape - the form in which a consumer hands
    out bytes that are not UTF-8 (surrogateescape), so that what was consumed can be sent
    on unchanged. Other lone surrogates are refused as :func:`check_text` refuses them."""
    text = _checked_str(value, name, allow_none, what)
    if text is None or text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        raise _not_text(text, error, what or name, name) from None


def _checked_str(value: object, name: str, allow_none: bool, what: str) -> str | None:
    """``value`` if it is a str (or None where allowed); ArgumentTypeError otherwise."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        accepted = "str" + (" or None" if allow_none else "")
        hint = "; decode it first" if isinstance(value, (bytes, bytearray)) else ""
        raise ArgumentTypeError(
            f"{what or name} must be {accepted}, got {_type_name(value)} {value!r:.60}{hint}",
            key=name,
        )
    return value


def _not_text(value: object, error: UnicodeEncodeError, label: str, name: str) -> ConfigError:
    return ConfigError(
        f"{label} is not valid text: {error.reason} at index {error.start} ({value!r:.60})",
        key=name,
    )


def check_bytes_like(value: object, name: str) -> None:
    """Checks a message value: any C-contiguous object with the buffer protocol (bytes,
    bytearray, memoryview, array, ...), which the core then copies once. A str is
    refused (encode it first), as is a strided view, whose bytes are not one run."""
    if type(value) is bytes or type(value) is bytearray:  # the common cases, at no cost
        return
    try:
        view = memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        hint = "; encode it first" if isinstance(value, str) else ""
        raise ArgumentTypeError(
            f"{name} must be bytes-like (bytes, bytearray, memoryview), "
            f"got {_type_name(value)}{hint}",
            key=name,
        ) from None
    except ValueError as error:  # a released memoryview
        raise ConfigError(f"{name} is not usable: {error}", key=name) from None
    with view:
        if not view.c_contiguous:
            raise ConfigError(f"{name} must be a contiguous buffer, got a strided view", key=name)


def check_callable(value: object, name: str) -> None:
    """Checks a callback argument: a callable, or None for none."""
    if value is not None and not callable(value):
        raise ArgumentTypeError(
            f"{name} must be callable or None, got {_type_name(value)} {value!r:.60}", key=name
        )


def check_attributes(value: object, name: str = "attrs") -> list[tuple[str | bytes, str | bytes]]:
    """Checks message attributes: None, or a mapping of str to str, each as
    :func:`wire_text` wants it (so a consumed message's ``attrs`` go out as they came in);
    returns the pairs in order, as the core sends them. Their content rules (no ``,`` or
    ``=``, reserved keys) are the core's, checked before anything is sent."""
    if value is None:
        return []
    if type(value) is dict:
        # The common case, checked at a tenth of the general loop's cost (which builds
        # the names its errors would use): a dict of ASCII str, which goes out as it is.
        for key, text in value.items():
            if type(key) is not str or type(text) is not str:
                break
            if not (key.isascii() and text.isascii()):
                break
        else:
            return list(value.items())
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(
            f"{name} must be a mapping of str to str or None, got {_type_name(value)}", key=name
        )
    pairs: list[tuple[str | bytes, str | bytes]] = []
    for key, text in value.items():
        wire_key = wire_text(key, name, what=f"{name} key {key!r:.40}")
        wire_value = wire_text(text, name, what=f"{name}[{key!r:.40}]")
        pairs.append((cast("str | bytes", wire_key), cast("str | bytes", wire_value)))
    return pairs


def check_msg_time(value: object, name: str = "msg_time") -> str:
    """Checks a message time: None (none), a ``datetime`` (its own wall-clock fields),
    or ``"yyyyMMddHHmm"`` text, whose digits the core checks; returns the text."""
    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y%m%d%H%M")
    if isinstance(value, str):
        check_text(value, name)
        return value
    wanted = "'yyyyMMddHHmm', a datetime or None"
    raise ArgumentTypeError(
        f"{name} must be {wanted}, got {_type_name(value)} {value!r:.40}", key=name
    )


# The defaults of keys that the core's structs also have are the core's: its headers
# (tubemq/client_config.h, producer.h, consumer.h) are what C++ users get, so the values
# are written there and read here, once, from default-made structs.
_NATIVE_CLIENT = _core.ClientConfig()
_NATIVE_PRODUCER = _core.ProducerOptions()
_NATIVE_CONSUMER = _core.ConsumerOptions()

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
        _NATIVE_CLIENT.rpc_timeout_ms,
        "Deadline of each request to a master or broker.",
        min=500,
        max=600000,
    ),
    Key(
        "connect_timeout_ms",
        int,
        _NATIVE_CLIENT.connect_timeout_ms,
        "Deadline of each TCP connect.",
        min=100,
        max=60000,
    ),
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
        _NATIVE_CLIENT.heartbeat_period_ms,
        "Interval of heartbeats to the master; keep it well below the master's client "
        "timeout (30 s by default).",
        min=200,
        max=60000,
    ),
    Key(
        "register_attempts",
        int,
        _NATIVE_CLIENT.register_attempts,
        "Rounds over the master list when registering at start.",
        min=1,
        max=100,
    ),
    Key(
        "register_retry_wait_ms",
        int,
        _NATIVE_CLIENT.register_retry_wait_ms,
        "Pause between registration rounds.",
        min=1,
        max=60000,
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
        _NATIVE_CLIENT.tls_enable,
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
        _NATIVE_CLIENT.tls_verify_hostname,
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
        _NATIVE_PRODUCER.max_in_flight,
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
        _NATIVE_PRODUCER.send_retries,
        "Extra attempts, on another partition where possible, after failures that prove "
        "the message was not stored. Timeouts are never retried (no duplicates).",
        min=0,
        max=10,
    ),
    Key(
        "send_timeout_s",
        (int, float),
        None,
        "Default timeout of a blocking send() in seconds; None: only the RPC deadline "
        "bounds it. A send that times out after its message went out raises "
        "OutcomeUnknownError (not retriable).",
        min=MIN_SEND_TIMEOUT_S,
        max=MAX_TIMEOUT_S,
    ),
)


def closest(name: object, known: Iterable[str]) -> str | None:
    """The known name an unknown ``name`` most likely misspells, or None: the "did you
    mean" of every unknown key or option (client configs and the Spark options)."""
    if not isinstance(name, str):
        return None
    close = difflib.get_close_matches(name, list(known), n=1)
    return close[0] if close else None


# A Kafka client's config keys a user brings along, and ours that mean the same.
KAFKA_KEYS = {
    "bootstrap.servers": "master",
    "group.id": "group",
    "auto.offset.reset": "consume_from",
    "enable.auto.commit": "auto_commit",
    "request.timeout.ms": "rpc_timeout_ms",
    "retries": "send_retries",
    "message.send.max.retries": "send_retries",
    "queue.buffering.max.messages": "max_in_flight",
    "heartbeat.interval.ms": "heartbeat_period_ms",
}


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
                message = f"{self.kind} config must be a dict, got {type(config).__name__}"
                if isinstance(config, str) and "master" in self.keys:
                    # Java's ConsumerConfig and most clients take the address first.
                    message += f"; for the master's address pass master={config!r}"
                raise ArgumentTypeError(message, key="config")
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
        ours = KAFKA_KEYS.get(name) if isinstance(name, str) else None
        close = ours if ours in self.keys else closest(name, self.keys)
        if close is not None:
            message += f"; did you mean {close!r}?"
        return message

    def _check(self, key: Key, value: Any) -> Any:
        expected = key.type if isinstance(key.type, tuple) else (key.type,)
        # bool is an int in Python, but True is never a sensible timeout.
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            names = " or ".join(t.__name__ for t in expected)
            raise ArgumentTypeError(
                f"{self.kind} config key '{key.name}' must be {names}, "
                f"got {type(value).__name__} {value!r}",
                key=key.name,
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(
                f"{self.kind} config key '{key.name}' must be finite, got {value!r}",
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


# Name rules (behaviour.md §0.1) are the core's (tubemq/names.h), asked here before
# anything is sent: the C++ consumer checks the same rules for C++ users, and keeping a
# second copy here is how the two once came to differ. The messages are built here, from
# the rule's words, so that they quote names the Python way.
MAX_TOPIC_NAME: int = _core.MAX_TOPIC_NAME
MAX_GROUP_NAME: int = _core.MAX_GROUP_NAME
MAX_FILTER_ITEM: int = _core.MAX_FILTER_ITEM
MAX_FILTER_ITEMS: int = _core.MAX_FILTER_ITEMS
MAX_SESSION_KEY: int = _core.MAX_SESSION_KEY
PARTITION_KEY_FORM: str = _core.PARTITION_KEY_FORM


def _name_problem(rule: Callable[[bytes], str], text: str) -> str:
    # surrogatepass: a lone surrogate reaches the rule as bytes that break it, instead of
    # failing the conversion to UTF-8.
    return rule(text.encode("utf-8", "surrogatepass"))


def topic_name_problem(name: str) -> str:
    """The master's rule ``name`` breaks, in words; "" when it follows it."""
    return _name_problem(_core.topic_name_problem, name)


def check_topic_name(topic: Any) -> str:
    """The topic name, stripped; ValueError unless it follows the master's rule."""
    if not isinstance(topic, str) or not topic.strip():
        raise ValueError(f"topic names must be non-blank strings, got {topic!r}")
    name = topic.strip()
    problem = topic_name_problem(name)
    if problem:
        raise ValueError(f"invalid topic name {name!r}: {problem}")
    return name


def _check_group(value: str) -> str:
    problem = _name_problem(_core.group_name_problem, value)
    if problem:
        raise ValueError(f"invalid group name {value!r}: {problem}")
    return value


def _check_session_key(value: str) -> str:
    problem = _name_problem(_core.session_key_problem, value)
    if problem:
        raise ValueError(problem)
    return value


def partition_key_topic(key: object) -> str | None:
    """The topic of a partition key ``brokerId:topic:partitionId`` (the form every
    check of one uses), or None when ``key`` is not one."""
    if not isinstance(key, str):
        return None
    return _core.partition_key_topic(key.encode("utf-8", "surrogatepass"))


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
            problem = _name_problem(_core.filter_item_problem, item)
            if problem:
                raise ValueError(f"filter item {item[:40]!r} of '{name}': {problem}")
        topics[name] = sorted(set(filters))
    if not topics:
        raise ValueError("at least one topic is needed")
    return topics


# The words of consume_from, spelled here only: the CLIs offer these keys, and the core
# takes the position they stand for.
CONSUME_FROM: dict[str, _core.ConsumePosition] = {
    "earliest": _core.ConsumePosition.EARLIEST,
    "latest": _core.ConsumePosition.LATEST,
    "max_always": _core.ConsumePosition.MAX_ALWAYS,
}


def _one_of(allowed: Iterable[str], value: object) -> str:
    """``value`` if it is one of ``allowed``; ValueError naming them otherwise."""
    words = list(allowed)
    if value not in words:
        listed = " or ".join(map(repr, words))
        if len(words) > 2:
            listed = ", ".join(map(repr, words[:-1])) + f" or {words[-1]!r}"
        raise ValueError(f"must be {listed}, got {value!r}")
    return str(value)


def _check_consume_from(value: Any) -> str:
    return _one_of(CONSUME_FROM, value)


def _check_decode(value: str) -> str:
    return _one_of(("none", "inlongmsg"), value)


def _check_decode_errors(value: str) -> str:
    return _one_of(("raise", "skip"), value)


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
        next(word for word, at in CONSUME_FROM.items() if at == _NATIVE_CONSUMER.position),
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
        "decode",
        str,
        "none",
        "'inlongmsg': poll() hands out the records of InLongMsg packs (tubemq.inlong."
        "ConsumedRecord), not messages; 'none': messages.",
        convert=_check_decode,
    ),
    Key(
        "decode_errors",
        str,
        "raise",
        "With decode: a message that is not a valid pack makes poll() raise "
        "tubemq.inlong.PackDecodeError once ('raise') or is logged and passed over "
        "('skip'); either way the next poll() goes on after it.",
        convert=_check_decode_errors,
    ),
    Key(
        "msg_not_found_wait_ms",
        int,
        _NATIVE_CONSUMER.msg_not_found_wait_ms,
        "The longest a partition without new data rests before it is fetched again: "
        "after an empty fetch it rests 0.5 ms, then 1 ms, 2 ms, 4 ms ... up to this (unless "
        "a flow-control frequency rule says otherwise); while its data comes at a steady "
        "pace, never more than a sixteenth of the usual time between its data (at least "
        "0.25 ms) or an eighth of how long it has been quiet, whichever is longer. A busy "
        "partition that caught up (a batch of 2 or more messages that read to the end of "
        "the store) rests 0.6 ms, at most this, before its next fetch.",
        min=0,
        max=60000,
    ),
    Key(
        "confirm_timeout_ms",
        int,
        _NATIVE_CONSUMER.confirm_timeout_ms,
        "A batch not committed within this time is delivered again.",
        min=1000,
        max=3_600_000,
    ),
    Key(
        "commit_on_next_fetch",
        bool,
        _NATIVE_CONSUMER.commit_on_next_fetch,
        "A commit sends no request of its own: the partition's next fetch (or its "
        "release at unassign, rebalance or close) carries it to the broker, one round trip "
        "per batch instead of two. Until then a crash means the batch comes again. False: "
        "every commit waits for the broker's answer, as commit(..., asynchronous=False) does.",
    ),
    Key(
        "fetch_ahead_bytes",
        int,
        _NATIVE_CONSUMER.fetch_ahead_bytes,
        "While the application works on a batch, the partitions it does not hold are "
        "fetched already; their batches wait for the next polls up to this many bytes "
        "(0: one fetch at a time, when a poll asks).",
        min=0,
        max=1 << 30,
    ),
)

SOURCE_COUNT_KEY = Key(
    "source_count",
    int,
    _NATIVE_CONSUMER.source_count,
    "How many members the group has (bound consume) or split its partitions "
    "(AssignedConsumer); all members declare the same. 0 declares none.",
    min=0,
    max=10000,
)


def _check_bound_offsets(value: Any) -> dict[str, int]:
    offsets = dict(value or {})
    for key, offset in offsets.items():
        if partition_key_topic(key) is None:
            raise ValueError(f"key {key!r} is not '{PARTITION_KEY_FORM}'")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset of {key} must be an int >= 0, got {offset!r}")
    return offsets


def native_consumer_options(values: Mapping[str, Any], *, assigned: bool) -> _core.ConsumerOptions:
    """The native consumer options for validated values (of either consumer schema)."""
    options = _core.ConsumerOptions()
    options.group = values["group"]
    options.topics = {topic: set(items) for topic, items in values["topics"].items()}
    options.position = CONSUME_FROM[values["consume_from"]]
    options.msg_not_found_wait_ms = values["msg_not_found_wait_ms"]
    options.confirm_timeout_ms = values["confirm_timeout_ms"]
    options.commit_on_next_fetch = values["commit_on_next_fetch"]
    options.fetch_ahead_bytes = values["fetch_ahead_bytes"]
    options.assigned = assigned
    options.source_count = values["source_count"]
    if assigned:
        options.node_id = values["node_id"]
    else:
        options.session_key = values["session_key"]
        options.select_big = values["select_big"]
        options.bound_offsets = values["bound_offsets"] or {}
    return options


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
        _NATIVE_CONSUMER.select_big,
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
        _NATIVE_CONSUMER.node_id,
        "This member's index in [0, source_count), unique in the group.",
        min=0,
        max=9999,
    ),
)

ASSIGNED_CONSUMER_SCHEMA = Schema(
    "assigned consumer", CLIENT_KEYS + CONSUMER_KEYS + ASSIGNED_CONSUMER_KEYS
)
