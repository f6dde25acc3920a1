"""tubemq.AdminClient's checks that need no master: the derived web address, argument
errors raised before any request, and a token that never shows."""

from __future__ import annotations

import pytest

import tubemq
from tubemq import admin_cli


def test_the_web_address_is_derived_only_from_the_default_port() -> None:
    assert tubemq.AdminClient("10.0.0.1:8715").web_address == "10.0.0.1:8080"
    assert tubemq.AdminClient("10.0.0.1:8715,10.0.0.2:8715").web_address == "10.0.0.1:8080"
    assert tubemq.AdminClient("x:1", web="h:81").web_address == "h:81"
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq.AdminClient("10.0.0.1:9000")
    assert info.value.key == "web"
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq.AdminClient()
    assert info.value.key == "master"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"web": "nohost"}, "web"),
        ({"web": "h:0"}, "web"),
        ({"web": 5}, "web"),
        ({"master": b"h:8715"}, "master"),
        ({"web": "h:1", "token": 5}, "token"),
        ({"web": "h:1", "timeout": -1}, "timeout"),
        ({"web": "h:1", "timeout": "1"}, "timeout"),
        ({"web": "h:1", "user": None}, "user"),
    ],
)
def test_bad_arguments_are_config_errors_naming_them(kwargs: dict, key: str) -> None:
    with pytest.raises(tubemq.ConfigError) as info:
        tubemq.AdminClient(**kwargs)
    assert info.value.key == key


def test_modifying_calls_need_a_token_and_check_arguments_before_any_request() -> None:
    admin = tubemq.AdminClient(web="127.0.0.1:1")  # nothing listens there
    for call in (lambda: admin.create_topic("demo"), lambda: admin.delete_topic("demo")):
        with pytest.raises(tubemq.ConfigError) as info:
            call()
        assert info.value.key == "token"
    with_token = tubemq.AdminClient(web="127.0.0.1:1", token="secret-value")
    with pytest.raises(tubemq.ConfigError) as info:
        with_token.create_topic("1bad")
    assert info.value.key == "topic"
    with pytest.raises(tubemq.ConfigError) as info:
        with_token.create_topic("demo", partitions=0)
    assert info.value.key == "partitions"
    with pytest.raises(tubemq.ConfigError) as info:
        with_token.create_topic("demo", brokers=["1"])  # type: ignore[list-item]
    assert info.value.key == "brokers"
    assert "secret-value" not in repr(with_token)


def test_admin_error_is_a_server_error_with_the_servers_code() -> None:
    error = tubemq.AdminError(400, "unauthorized")
    assert isinstance(error, tubemq.ServerError) and isinstance(error, tubemq.TubeMQError)
    assert error.code == 400 and error.message == "unauthorized"


def test_the_cli_verbs_parse() -> None:
    args = admin_cli.parser().parse_args(
        ["topics", "create", "demo", "--master", "h:8715", "--partitions", "2", "--json"]
    )
    assert (args.command, args.action, args.topic, args.partitions, args.json) == (
        "topics",
        "create",
        "demo",
        2,
        True,
    )
    args = admin_cli.parser().parse_args(["groups", "describe", "g", "--web", "h:1"])
    assert (args.command, args.action, args.group, args.web) == ("groups", "describe", "g", "h:1")
