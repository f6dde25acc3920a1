"""The configuration schema: what a user sees when a config is wrong, and what it builds."""

from __future__ import annotations

import pytest

import tubemq
from tubemq._config import PRODUCER_SCHEMA, native_client_config


def validate(config=None, **overrides):
    return PRODUCER_SCHEMA.validate(config, overrides)


def test_defaults_are_filled_and_master_is_normalised():
    values = validate({"master": " 10.0.0.1:8715 , 10.0.0.2:8715"})
    assert values["master"] == "10.0.0.1:8715,10.0.0.2:8715"
    assert values["rpc_timeout_ms"] == 10000
    assert values["heartbeat_period_ms"] == 10000


def test_master_may_be_a_list_and_keywords_override_the_dict():
    values = validate({"master": "a:1", "rpc_timeout_ms": 2000}, master=["b:2", "c:3"])
    assert values["master"] == "b:2,c:3"
    assert values["rpc_timeout_ms"] == 2000


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(tubemq.ConfigError) as info:
        validate(master="a:1", rpc_timout_ms=5)
    assert info.value.key == "rpc_timout_ms"
    assert "did you mean 'rpc_timeout_ms'" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert info.value.code == 1010


def test_missing_master_is_refused():
    with pytest.raises(tubemq.ConfigError, match="needs 'master'") as info:
        validate({})
    assert info.value.key == "master"


@pytest.mark.parametrize(
    "master, reason",
    [
        ("", "no master address"),
        ("localhost", "is not host:port"),
        ("localhost:0", "no valid port"),
        ("localhost:70000", "no valid port"),
        ("localhost:http", "no valid port"),
        ([8715], "must be 'host:port' strings"),
    ],
)
def test_bad_master_addresses_are_explained(master, reason):
    with pytest.raises(tubemq.ConfigError, match=reason):
        validate(master=master)


def test_wrong_types_and_ranges_are_refused():
    with pytest.raises(tubemq.ConfigError, match="must be int, got str"):
        validate(master="a:1", rpc_timeout_ms="5000")
    with pytest.raises(tubemq.ConfigError, match="must be int, got bool"):
        validate(master="a:1", rpc_timeout_ms=True)
    with pytest.raises(tubemq.ConfigError, match=r"within 500\.\.600000, got 10"):
        validate(master="a:1", rpc_timeout_ms=10)


def test_config_must_be_a_mapping():
    with pytest.raises(tubemq.ConfigError, match="must be a dict, got list"):
        validate(["master", "a:1"])


@pytest.mark.parametrize("client", [tubemq.Producer, tubemq.Consumer])
def test_an_address_given_first_as_java_takes_it_is_pointed_to_master(client):
    # ProducerConfig("host:port") / ConsumerConfig("host:port", group) in Java.
    with pytest.raises(tubemq.ArgumentTypeError, match=r"pass master='127.0.0.1:8715'") as caught:
        client("127.0.0.1:8715")
    assert caught.value.key == "config"


def test_native_config_carries_every_value():
    values = validate(master="h:1", rpc_timeout_ms=1234, local_host="10.1.1.1")
    native = native_client_config(values)
    assert native.masters == "h:1"
    assert native.rpc_timeout_ms == 1234
    assert native.local_host == "10.1.1.1"


def test_producer_rejects_bad_config_before_any_network():
    with pytest.raises(tubemq.ConfigError, match="unknown producer config key 'colour'"):
        tubemq.Producer(master="127.0.0.1:8715", colour="blue")
    assert tubemq._core.service_state()["io_threads"] == 0


@pytest.mark.parametrize(
    ("client", "kafka_key", "ours"),
    [
        (tubemq.Producer, "bootstrap.servers", "master"),
        (tubemq.Consumer, "bootstrap.servers", "master"),
        (tubemq.Consumer, "auto.offset.reset", "consume_from"),
        (tubemq.Consumer, "enable.auto.commit", "auto_commit"),
        (tubemq.Producer, "retries", "send_retries"),
    ],
)
def test_a_kafka_config_key_is_pointed_to_ours(client, kafka_key, ours):
    # confluent-kafka's Producer({"bootstrap.servers": ...}), as a Kafka user writes it.
    hint = rf"unknown .* {kafka_key!r}; did you mean {ours!r}\?"
    with pytest.raises(tubemq.ConfigError, match=hint):
        client({kafka_key: "x"})
