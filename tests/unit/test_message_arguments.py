"""The per-send argument checks of the producer, without a cluster: the quick paths
taken by the common arguments give what the general checks give, and anything else
still reaches the general checks and their typed errors."""

from __future__ import annotations

import datetime
from types import MappingProxyType

import pytest

from tubemq._config import check_attributes
from tubemq.errors import ArgumentTypeError, ConfigError
from tubemq.producer import _message_arguments

ATTRIBUTE_CASES = [
    {},
    {"region": "eu-west", "tenant": "bench"},
    {"city": "Zürich"},  # not ASCII: goes out as UTF-8 bytes
    {"raw": "caf\udce9"},  # a consumed non-UTF-8 byte (surrogateescape) goes out as it came
    {"Ключ": "v", "k": "значение"},
]


@pytest.mark.parametrize("attrs", ATTRIBUTE_CASES)
def test_a_dict_of_attributes_gives_what_any_other_mapping_gives(attrs):
    quick = check_attributes(attrs)
    general = check_attributes(MappingProxyType(attrs))
    assert quick == general
    assert [key for key, _ in quick] == [key if key.isascii() else key.encode() for key in attrs]


def test_attributes_that_are_not_ascii_go_out_as_utf8_and_the_rest_as_they_are():
    assert check_attributes({"a": "b", "c": "é"}) == [("a", "b"), ("c", "é".encode())]
    assert check_attributes({"raw": "caf\udce9"}) == [("raw", b"caf\xe9")]


@pytest.mark.parametrize(
    ("attrs", "error", "named"),
    [
        ({"k": 1}, ArgumentTypeError, "attrs['k']"),
        ({1: "v"}, ArgumentTypeError, "attrs key 1"),
        ({"k": b"v"}, ArgumentTypeError, "decode it first"),
        ({"k": "\ud800"}, ConfigError, "attrs['k']"),
        ([("k", "v")], ArgumentTypeError, "mapping of str to str"),
    ],
)
def test_bad_attributes_raise_a_typed_error_naming_the_bad_one(attrs, error, named):
    with pytest.raises(error) as raised:
        check_attributes(attrs)
    assert named in str(raised.value)
    assert raised.value.key == "attrs"


def test_common_arguments_pass_and_others_reach_their_checks():
    assert _message_arguments("t", b"v", None, None, None, None) == ("t", b"v", None, [], "", "")
    when = datetime.datetime(2026, 1, 2, 3, 4)
    assert _message_arguments("t", bytearray(b"v"), "k", {"a": "b"}, "ty", when) == (
        "t",
        bytearray(b"v"),
        "k",
        [("a", "b")],
        "ty",
        "202601020304",
    )
    for args, named in [
        ((b"t", b"v", None, None, None, None), "topic"),
        (("t\ud800", b"v", None, None, None, None), "topic"),
        (("t", "v", None, None, None, None), "value"),
        (("t", b"v", 5, None, None, None), "key"),
        (("t", b"v", None, None, 7, None), "msg_type"),
        (("t", b"v", None, None, None, 202601020304), "msg_time"),
    ]:
        with pytest.raises(ConfigError) as raised:
            _message_arguments(*args)
        assert raised.value.key == named, args
