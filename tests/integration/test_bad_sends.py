"""Bad input to a running producer: each case is a typed error raised before anything
reaches a broker (the producer never opens a broker connection and stores nothing).
The config table is tests/unit/test_bad_input.py."""

from __future__ import annotations

import pytest

import tubemq
from tubemq import _core

pytestmark = pytest.mark.integration

MAX_BODY = 1024 * 1024

# (what, send keyword arguments, error class, code or None, text in the message)
SEND_CASES = [
    ("blank topic", dict(topic="  ", value=b"x"), tubemq.InvalidMessageError, 441, "blank"),
    (
        "unpublished name",
        dict(topic="not_published", value=b"x"),
        tubemq.InvalidMessageError,
        443,
        "",
    ),
    ("name with a colon", dict(topic="a:b", value=b"x"), tubemq.InvalidMessageError, 443, ""),
    ("name with a comma", dict(topic="a,b", value=b"x"), tubemq.InvalidMessageError, 443, ""),
    ("empty value", dict(value=b""), tubemq.InvalidMessageError, 442, "empty"),
    (
        "oversized value",
        dict(value=b"x" * (MAX_BODY + 1)),
        tubemq.InvalidMessageError,
        445,
        "exceeds",
    ),
    (
        "value and attributes over the limit",
        dict(value=b"x" * (MAX_BODY - 8), attrs={"k": "v" * 16}),
        tubemq.InvalidMessageError,
        445,
        "exceeds",
    ),
    ("attr key with =", dict(attrs={"a=b": "c"}), tubemq.ConfigError, 1010, "contains"),
    ("attr key with ,", dict(attrs={"a,b": "c"}), tubemq.ConfigError, 1010, "contains"),
    ("attr value with =", dict(attrs={"a": "b=c"}), tubemq.ConfigError, 1010, "contains"),
    ("attr value with ,", dict(attrs={"a": "b,c"}), tubemq.ConfigError, 1010, "contains"),
    ("blank attr key", dict(attrs={" ": "c"}), tubemq.ConfigError, 1010, "blank"),
    ("reserved attr key", dict(attrs={"$msgType$": "c"}), tubemq.ConfigError, 1010, "reserved"),
    ("msg_type with ,", dict(msg_type="a,b"), tubemq.ConfigError, 1010, "contains"),
    ("msg_type with =", dict(msg_type="a=b"), tubemq.ConfigError, 1010, "contains"),
    ("msg_time not 12 digits", dict(msg_time="2025"), tubemq.ConfigError, 1010, "12 digits"),
    ("msg_time with letters", dict(msg_time="2025010112ab"), tubemq.ConfigError, 1010, "12 digits"),
    ("non-string attr key", dict(attrs={1: "v"}), TypeError, None, "str"),
    ("non-string attr value", dict(attrs={"k": 1}), TypeError, None, "str"),
    ("attrs not a mapping", dict(attrs=[("k", "v")]), TypeError, None, "mapping"),
    ("str value", dict(value="text"), TypeError, None, ""),
    ("int value", dict(value=5), TypeError, None, ""),
    ("msg_time of a wrong type", dict(msg_time=202501011230), TypeError, None, "msg_time"),
]


@pytest.fixture(scope="module")
def fresh_producer(master, topics):
    """A producer that has published but never talked to a broker."""
    with tubemq.Producer(master=master) as producer:
        producer.publish(topics[7])
        yield producer


@pytest.mark.parametrize(
    "kwargs, error_class, code, text",
    [pytest.param(*case[1:], id=case[0]) for case in SEND_CASES],
)
def test_bad_sends_are_typed_errors_and_send_nothing(
    fresh_producer, topics, kwargs, error_class, code, text
):
    arguments = {"topic": topics[7], "value": b"x", **kwargs}
    connections = _core.service_state()["connections"]
    with pytest.raises(error_class) as info:
        fresh_producer.send(**arguments)
    if code is not None:
        assert info.value.code == code
    assert text in str(info.value)
    # The asynchronous path reports the same error, through the future or at once.
    try:
        future = fresh_producer.send_async(**arguments)
    except error_class:
        pass
    else:
        error = future.exception(timeout=5)
        assert isinstance(error, error_class), error
        assert code is None or error.code == code
    assert fresh_producer.flush(timeout=5) == 0
    assert _core.service_state()["connections"] == connections  # no broker contacted
    assert fresh_producer.counters()["sent_ok"] == 0


@pytest.mark.parametrize(
    "topic",
    ["", " ", "1abc", "a", "has space", "a,b", "a:b", "a#b", "x" * 65, "tópico", 5, None],
)
def test_publishing_an_invalid_topic_name_is_refused_locally(fresh_producer, topic):
    registrations = fresh_producer.counters()["heartbeats_ok"]
    with pytest.raises(tubemq.ConfigError) as info:
        fresh_producer.publish(topic)
    assert info.value.key == "topics"
    assert fresh_producer.counters()["heartbeats_ok"] == registrations
    assert topic not in fresh_producer.published_topics()


@pytest.mark.parametrize("group", ["", "g", "1g", "g h", "g,h", "g:h", "g" * 1025])
def test_invalid_group_names_are_refused_before_registering(master, topics, group):
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq.Consumer(master=master, group=group, topics=[topics[7]])
    assert info.value.key == "group"
