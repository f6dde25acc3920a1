"""Bad configuration, table-driven from the schemas themselves: every key of every client
kind, with a wrong type, each side of its range, a value its checker refuses, and
misspelt; each must raise ConfigError naming the key, from the public constructor,
before any network (the master given is a port nobody listens on, so a check that let
a value through would surface as a ConnectionError instead). A key added to a schema
is covered without editing this file, or fails here until its bad values are known."""

from __future__ import annotations

import math
import socket
from typing import Any

import pytest

import tubemq
from tubemq._config import (
    ASSIGNED_CONSUMER_SCHEMA,
    CONSUMER_SCHEMA,
    PRODUCER_SCHEMA,
    Key,
    Schema,
)


def _dead_master() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


DEAD_MASTER = _dead_master()

CLIENTS: dict[str, tuple[Schema, Any, dict[str, Any]]] = {
    "producer": (PRODUCER_SCHEMA, tubemq.Producer, {"master": DEAD_MASTER}),
    "consumer": (
        CONSUMER_SCHEMA,
        tubemq.Consumer,
        {"master": DEAD_MASTER, "group": "g_bad", "topics": ["t_bad"]},
    ),
    "assigned consumer": (
        ASSIGNED_CONSUMER_SCHEMA,
        tubemq.AssignedConsumer,
        {"master": DEAD_MASTER, "group": "g_bad", "topics": ["t_bad"], "source_count": 2},
    ),
}

# Values of the right type that a key's checker must refuse (keys with `convert`, and
# strings with a rule of their own). Every such key must be listed here.
REFUSED_VALUES: dict[str, list[Any]] = {
    "master": ["", "nohost", "h:0", "h:99999", "h:port", ["h:1", 5], ["a:b:c"]],
    "tls_ca_file": ["/nonexistent/ca.pem", "/", "."],
    "tls_cert_file": ["/nonexistent/client.pem", "/"],
    "tls_key_file": ["/nonexistent/client.key", "/"],
    "topics": [
        [],
        {},
        [""],
        ["   "],
        ["1starts_with_digit"],
        ["has space"],
        ["has-dash"],
        ["comma,separated"],
        ["x"],
        ["t" * 65],
        ["tópico"],
        {"ok_topic": "A"},  # filters must be a list
        {"ok_topic": [""]},
        {"ok_topic": ["a,b"]},
        {"ok_topic": ["a#b"]},
        {"ok_topic": ["f" * 257]},
        {"ok_topic": [f"f{i}" for i in range(501)]},
        [5],
    ],
    "group": ["", "1group", "g", "has space", "g,h", "g:h", "g" * 1025, "grüppe"],
    "consume_from": ["first", "EARLIEST", ""],
    "decode": ["json", "InLongMsg", ""],
    "decode_errors": ["ignore", "RAISE", ""],
    "bound_offsets": [{"nocolons": 0}, {"1:t:0": -1}, {"1:t:0": "0"}, {"1:t:0": True}],
    "session_key": ["s" * 1025, "a,b"],
    # A send timeout: finite, and at least 1 ms (below, the outcome is always unknown).
    "send_timeout_s": [0, 0.0, -1, 1e-9, 0.0009, math.nan, math.inf, -math.inf],
}

# One value of a type no key accepts (object), plus ones that catch common slips.
SLIPS: list[Any] = [object(), "1000", 1.5, True, b"bytes", [1], {"a": 1}]


def _types(key: Key) -> tuple[type, ...]:
    return key.type if isinstance(key.type, tuple) else (key.type,)


def _wrong_types(key: Key) -> list[Any]:
    allowed = _types(key)
    wrong = []
    for value in SLIPS:
        if isinstance(value, bool):
            if bool not in allowed:
                wrong.append(value)  # True is not a number here
        elif not isinstance(value, allowed):
            wrong.append(value)
    return wrong


def _out_of_range(key: Key) -> list[Any]:
    values = []
    numeric_step = 1 if int in _types(key) and float not in _types(key) else 0.5
    if key.min is not None:
        values.append(key.min - numeric_step)
    if key.max is not None:
        values.append(key.max + numeric_step)
    return values


def _cases() -> list[Any]:
    cases = []
    for kind, (schema, _, _) in CLIENTS.items():
        for key in schema.keys.values():
            bad = [("type", v) for v in _wrong_types(key)]
            bad += [("range", v) for v in _out_of_range(key)]
            bad += [("value", v) for v in REFUSED_VALUES.get(key.name, [])]
            for index, (what, value) in enumerate(bad):
                cases.append(
                    pytest.param(kind, key.name, value, what, id=f"{kind}-{key.name}-{what}{index}")
                )
    return cases


def test_every_key_with_a_checker_has_refused_values():
    for schema, _, _ in CLIENTS.values():
        for key in schema.keys.values():
            if key.convert is not None:
                assert key.name in REFUSED_VALUES, f"list bad values of {key.name!r} here"


def test_the_table_covers_every_key_of_every_schema():
    covered = {(param.values[0], param.values[1]) for param in _cases()}
    for kind, (schema, _, _) in CLIENTS.items():
        for name, key in schema.keys.items():
            assert (kind, name) in covered, f"{kind} key {name!r} has no bad value"
            assert _wrong_types(key), f"{kind} key {name!r} accepts every slip"


@pytest.mark.parametrize("kind, name, value, what", _cases())
def test_a_bad_value_is_a_config_error_naming_the_key(kind, name, value, what):
    _, client, required = CLIENTS[kind]
    config = {**required, name: value}
    with pytest.raises(tubemq.ConfigError) as info:
        client(config)
    assert info.value.key == name, info.value
    assert repr(name)[1:-1] in str(info.value)
    assert isinstance(info.value, ValueError)
    # A wrong type is also a TypeError (ArgumentTypeError), as for method arguments.
    assert isinstance(info.value, tubemq.ArgumentTypeError) == (what == "type"), info.value
    assert info.value.code == 1010
    assert tubemq._core.service_state()["io_threads"] == 0  # nothing started


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_misspelt_and_foreign_keys_are_refused_with_a_suggestion(kind):
    schema, client, required = CLIENTS[kind]
    for name in schema.keys:
        misspelt = name[:-1] + ("x" if name[-1] != "x" else "y")
        with pytest.raises(tubemq.ConfigError) as info:
            client({**required, misspelt: 1})
        assert info.value.key == misspelt
        assert f"did you mean {name!r}" in str(info.value) or "unknown" in str(info.value)
    for foreign in ("bootstrap.servers", "", "MASTER", 5):
        with pytest.raises(tubemq.ConfigError) as info:
            client({**required, foreign: "x"})
        assert info.value.key == str(foreign)


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_every_required_key_is_required(kind):
    schema, client, required = CLIENTS[kind]
    for name, key in schema.keys.items():
        if not key.required:
            continue
        config = {k: v for k, v in required.items() if k != name}
        with pytest.raises(tubemq.ConfigError) as info:
            client(config)
        assert info.value.key == name


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_the_valid_edges_of_every_range_are_accepted(kind):
    schema, _, required = CLIENTS[kind]
    for key in schema.keys.values():
        for edge in (key.min, key.max):
            if edge is None:
                continue
            values = schema.validate({**required, key.name: edge}, {})
            assert values[key.name] == edge
