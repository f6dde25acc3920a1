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
        (1001, tubemq.ConnectionError, None),
        (1002, tubemq.ConnectionError, None),
        (5001, tubemq.ConnectionError, None),
        (1004, tubemq.RemoteError, None),
        (410, tubemq.PartitionOccupiedError, None),
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


def test_retriable_follows_the_code():
    assert errors.error_from_code(1000, "slow").retriable
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
