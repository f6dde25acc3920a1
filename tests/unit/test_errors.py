"""The exception hierarchy: one class per kind of failure, each with code and message."""

from __future__ import annotations

import builtins

import pytest

import tubemq
from tubemq import errors


@pytest.mark.parametrize(
    "code, cls, name",
    [
        (1000, tubemq.TimeoutError, "REQUEST_TIMEOUT"),
        (1003, tubemq.OutcomeUnknownError, "SEND_OUTCOME_UNKNOWN"),
        (1001, tubemq.ConnectionError, None),
        (1002, tubemq.ConnectionError, None),
        (5001, tubemq.ConnectionError, None),
        (1004, tubemq.RemoteError, None),
        (410, tubemq.PartitionOccupiedError, None),
        (421, tubemq.PartitionOccupiedError, None),
        (415, tubemq.AuthenticationError, None),
        (450, tubemq.AuthorizationError, None),
        (1011, tubemq.QueueFullError, None),
        (1012, tubemq.ForkedClientError, None),
        (2002, tubemq.ClientClosedError, None),
        (500, tubemq.ServerError, None),
    ],
)
def test_each_code_maps_to_its_class(code, cls, name):
    error = errors.error_from_code(code, "what happened")
    assert type(error) is cls
    assert isinstance(error, tubemq.TubeMQError)
    assert error.code == code
    assert error.message == "what happened"
    assert str(code) in str(error) and "what happened" in str(error)
    assert error.code_name and error.code_name != "UNKNOWN"
    if name:
        assert error.code_name == name


def test_transport_errors_are_also_builtin_errors():
    assert isinstance(errors.error_from_code(1000, "x"), builtins.TimeoutError)
    assert isinstance(errors.error_from_code(1001, "x"), builtins.ConnectionError)
    assert isinstance(errors.error_from_code(1010, "x"), ValueError)


def test_a_wrong_type_is_a_config_error_and_a_type_error():
    error = tubemq.ArgumentTypeError("timeout must be a number", key="timeout")
    assert isinstance(error, tubemq.ConfigError)
    assert isinstance(error, TypeError) and isinstance(error, ValueError)
    assert error.code == 1010 and error.key == "timeout" and not error.retriable


def test_retriable_follows_the_code():
    assert errors.error_from_code(1000, "slow").retriable
    # A send timed out after it went out: still a TimeoutError, but not safe to repeat.
    unknown = errors.error_from_code(1003, "maybe stored")
    assert isinstance(unknown, tubemq.TimeoutError) and isinstance(unknown, builtins.TimeoutError)
    assert not unknown.retriable
    assert errors.error_from_code(1001, "refused").retriable
    assert not errors.error_from_code(1010, "bad").retriable
    assert not errors.error_from_code(415, "who are you").retriable


def test_native_errors_arrive_as_the_same_classes():
    # A master address the native parser refuses, bypassing the Python schema.
    config = tubemq._core.ClientConfig()
    config.masters = "no-port-here"
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq._core.Producer(config, tubemq._core.ProducerOptions())
    assert info.value.code == 1010
    assert "no-port-here" in info.value.message


# Every code of behaviour.md §8.4 and of the client range, with whether retrying may help.
ALL_CODES = {
    201: True,
    301: True,
    400: False,
    401: False,
    402: True,
    403: True,
    404: True,
    405: True,
    406: True,
    407: True,
    408: True,
    410: True,
    411: True,
    412: False,
    415: False,
    419: True,
    420: False,
    421: True,
    422: False,
    423: False,
    424: False,
    425: False,
    426: False,
    427: False,
    428: False,
    429: False,
    430: False,
    431: False,
    440: False,
    441: False,
    442: False,
    443: False,
    444: True,
    445: False,
    450: False,
    452: True,
    455: False,
    500: True,
    503: True,
    510: True,
    599: True,
    1000: True,
    1001: True,
    1002: True,
    1003: False,  # a send whose outcome is unknown: a blind retry may duplicate it
    1004: False,
    1010: False,
    1011: True,
    1012: False,
    2002: False,
    5001: True,
}


@pytest.mark.parametrize("code, retriable", sorted(ALL_CODES.items()))
def test_every_documented_code_has_a_name_a_class_and_a_retry_verdict(code, retriable):
    error = errors.error_from_code(code, f"native text for {code}")
    assert isinstance(error, tubemq.TubeMQError)
    assert error.code_name != "UNKNOWN"
    assert error.retriable is retriable
    assert error.message == f"native text for {code}"
