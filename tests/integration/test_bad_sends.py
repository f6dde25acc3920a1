"""Bad input to a running producer: each case is a typed error raised before anything
reaches a broker (the producer never opens a broker connection and stores nothing).
The config table is tests/unit/test_bad_input.py; the table of bad arguments to every
method is tests/argument_table.py, whose live-producer rows run here."""

from __future__ import annotations

import math
import time

import pytest

import tubemq
from argument_table import GOOD_CALLS, TOPIC, check_error, rows
from tubemq import _core

pytestmark = pytest.mark.integration

MAX_BODY = 1024 * 1024

# (what, send keyword arguments, error class, code or None, text in the message)
SEND_CASES = [
    ("blank topic", dict(topic="  ", value=b"x"), tubemq.InvalidMessageError, 441, "blank"),
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
    # Wrong types: ArgumentTypeError, a ConfigError that is also a TypeError (more in
    # the argument table below).
    ("non-string attr key", dict(attrs={1: "v"}), tubemq.ArgumentTypeError, 1010, "str"),
    ("non-string attr value", dict(attrs={"k": 1}), tubemq.ArgumentTypeError, 1010, "str"),
    ("attrs not a mapping", dict(attrs=[("k", "v")]), tubemq.ArgumentTypeError, 1010, "mapping"),
    ("str value", dict(value="text"), tubemq.ArgumentTypeError, 1010, "encode"),
    ("int value", dict(value=5), tubemq.ArgumentTypeError, 1010, "bytes-like"),
    (
        "msg_time of a wrong type",
        dict(msg_time=202501011230),
        tubemq.ArgumentTypeError,
        1010,
        "msg_time",
    ),
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


# --- the argument table (tests/argument_table.py) on a live producer -------------------


def _traffic(producer: tubemq.Producer) -> tuple:
    """Everything a send or publish that got through would change."""
    counters = producer.counters()
    native = producer._native
    assert native is not None
    return (
        counters["sent_ok"],
        counters["sent_failed"],
        native.in_flight(),
        producer.in_flight(),
        producer.published_topics(),
        _core.service_state()["connections"],
    )


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in rows("Producer")])
def test_a_bad_argument_is_refused_before_anything_is_sent(fresh_producer, topics, row):
    before = _traffic(fresh_producer)
    with pytest.raises(tubemq.TubeMQError) as info:
        getattr(fresh_producer, row.method)(**row.arguments(topics[7]))
    check_error(info.value, row)
    assert not fresh_producer.closed  # a refused close() closes nothing
    assert _traffic(fresh_producer) == before  # nothing sent, queued or published
    assert fresh_producer.counters()["sent_ok"] == 0  # nothing ever stored


def test_the_good_calls_of_the_table_succeed(master, topics):
    # The control of the rows above: the same calls with good arguments get through.
    with tubemq.Producer(master=master) as producer:
        producer.publish(topics[6])
        calls = {
            method: args for (target, method), args in GOOD_CALLS.items() if target == "Producer"
        }
        for method, arguments in calls.items():
            if method == "close":
                continue
            good = {k: topics[6] if v == TOPIC else v for k, v in arguments.items()}
            result = getattr(producer, method)(**good)
            if method == "send_async":
                assert result.result(timeout=10).message_id >= 0
        assert producer.flush(**calls["flush"]) == 0
        producer.close(**calls["close"])
        assert producer.closed


@pytest.mark.parametrize("value", [0, -1, 1e-9, math.nan, math.inf, "1", True])
def test_a_bad_send_timeout_s_is_refused_before_registering(master, value):
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq.Producer(master=master, send_timeout_s=value)
    assert info.value.key == "send_timeout_s"


def test_flush_and_close_with_zero_do_not_wait(master, topics):
    producer = tubemq.Producer(master=master)
    producer.publish(topics[6])
    futures = [producer.send_async(topics[6], b"zero %d" % i) for i in range(200)]
    started = time.monotonic()
    pending = producer.flush(timeout=0)
    assert 0 <= pending <= len(futures)
    producer.close(timeout=0)  # neither waits nor raises
    assert time.monotonic() - started < 0.5
    assert producer.closed
    for future in futures:  # each completes: stored, or failed as an unknown outcome
        error = future.exception(timeout=5)
        assert error is None or isinstance(error, tubemq.OutcomeUnknownError), error
