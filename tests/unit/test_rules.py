"""One owner per configuration rule (docs/rules.md): the Python facade, the Spark options
and the C++ checks agree because they ask the same code, and these tests hold them to it."""

from __future__ import annotations

from pathlib import Path

import pytest

import tubemq
from tubemq import _core
from tubemq._config import (
    ASSIGNED_CONSUMER_SCHEMA,
    CONSUME_FROM,
    CONSUMER_SCHEMA,
    PRODUCER_SCHEMA,
    closest,
    native_client_config,
    native_consumer_options,
    partition_key_topic,
)

MASTER = "127.0.0.1:8715"


def consumer_values(**overrides):
    return CONSUMER_SCHEMA.validate({"master": MASTER, "group": "g1", "topics": ["t1"]}, overrides)


def native_refusal(options: _core.ConsumerOptions) -> str:
    """The C++ consumer's own message for options it refuses (no Python check before)."""
    config = _core.ClientConfig()
    config.masters = MASTER
    with pytest.raises(tubemq.ConfigError) as info:
        _core.Consumer(config, options)
    return info.value.message


@pytest.mark.parametrize("group", ["g", "1group", "gr oup", "g#1", "grüppe", "g" * 1025])
def test_python_and_cpp_refuse_a_group_in_the_same_words(group):
    with pytest.raises(tubemq.ConfigError) as python:
        consumer_values(group=group)
    options = native_consumer_options(consumer_values(), assigned=False)
    options.group = group
    native = native_refusal(options)
    assert native.startswith(f"invalid group name '{group}': ")
    assert native.split("': ", 1)[1] in python.value.message


@pytest.mark.parametrize("topic", ["t", "9topic", "to-pic", "t:1", "tøpic", "t" * 65])
def test_python_and_cpp_refuse_a_topic_in_the_same_words(topic):
    with pytest.raises(tubemq.ConfigError) as python:
        consumer_values(topics=[topic])
    options = native_consumer_options(consumer_values(), assigned=False)
    options.topics = {topic: set()}
    native = native_refusal(options)
    assert native.startswith(f"invalid topic name '{topic}': ")
    assert native.split("': ", 1)[1] in python.value.message


@pytest.mark.parametrize("item", ["a,b", "a#b", "a:b", "a=b", "a@b", "a b", "a\tb", "x" * 257])
def test_python_and_cpp_refuse_a_filter_item_in_the_same_words(item):
    with pytest.raises(tubemq.ConfigError) as python:
        consumer_values(topics={"t1": [item]})
    options = native_consumer_options(consumer_values(), assigned=False)
    options.topics = {"t1": {item}}
    native = native_refusal(options)
    assert native.split("': ", 1)[1] in python.value.message


def test_filter_items_are_counted_in_characters_in_both():
    item = "ü" * 256  # 512 bytes, 256 characters: allowed
    values = consumer_values(topics={"t1": [item]})
    assert values["topics"] == {"t1": [item]}
    assert _core.filter_item_problem(item) == ""
    assert _core.filter_item_problem(item + "ü") != ""


@pytest.mark.parametrize("key", ["a,b", "a:b", "a b", "a@b", "k" * 1025])
def test_python_and_cpp_refuse_a_session_key_in_the_same_words(key):
    with pytest.raises(tubemq.ConfigError) as python:
        consumer_values(session_key=key, source_count=1)
    options = native_consumer_options(consumer_values(source_count=1), assigned=False)
    options.session_key = key
    native = native_refusal(options)
    assert native.split("': ", 1)[1] in python.value.message


def test_names_with_lone_surrogates_are_refused_not_crashed_on():
    with pytest.raises(tubemq.ConfigError, match="invalid topic name"):
        consumer_values(topics=["t\udcff1"])
    with pytest.raises(tubemq.ConfigError, match="invalid group name"):
        consumer_values(group="g\ud800")


@pytest.mark.parametrize(
    "key, topic",
    [("1:t1:0", "t1"), ("1:t1", None), ("1:t1:0:0", None), ("t1", None), (1, None)],
)
def test_one_partition_key_form(key, topic):
    assert partition_key_topic(key) == topic


def test_bound_offsets_take_the_one_partition_key_form():
    assert consumer_values(bound_offsets={"1:t1:0": 5})["bound_offsets"] == {"1:t1:0": 5}
    with pytest.raises(tubemq.ConfigError, match="brokerId:topic:partitionId"):
        consumer_values(bound_offsets={"1:t1:0:9": 5})


def test_consume_from_words_map_to_the_core_positions():
    assert list(CONSUME_FROM) == ["earliest", "latest", "max_always"]
    for word, position in CONSUME_FROM.items():
        options = native_consumer_options(consumer_values(consume_from=word), assigned=False)
        assert options.position == position
    with pytest.raises(tubemq.ConfigError, match="'earliest', 'latest' or 'max_always'"):
        consumer_values(consume_from="oldest")


def test_the_clis_offer_the_consume_from_words():
    from tubemq import client_cli, perf_cli

    for module in (client_cli, perf_cli):
        source = Path(module.__file__).read_text(encoding="utf-8")
        assert "choices=tuple(CONSUME_FROM)" in source
        assert "max_always" not in source


def test_defaults_are_the_core_structs():
    client, producer, consumer = (
        _core.ClientConfig(),
        _core.ProducerOptions(),
        _core.ConsumerOptions(),
    )
    for name in ("rpc_timeout_ms", "connect_timeout_ms", "heartbeat_period_ms"):
        assert PRODUCER_SCHEMA.keys[name].default == getattr(client, name)
    assert PRODUCER_SCHEMA.keys["max_in_flight"].default == producer.max_in_flight == 10000
    assert PRODUCER_SCHEMA.keys["send_retries"].default == producer.send_retries
    for name in ("msg_not_found_wait_ms", "confirm_timeout_ms", "select_big", "source_count"):
        assert CONSUMER_SCHEMA.keys[name].default == getattr(consumer, name)
    assert ASSIGNED_CONSUMER_SCHEMA.keys["node_id"].default == consumer.node_id
    assert CONSUME_FROM[CONSUMER_SCHEMA.keys["consume_from"].default] == consumer.position


def test_consumer_options_carry_every_value():
    values = ASSIGNED_CONSUMER_SCHEMA.validate(
        {"master": MASTER, "group": "g1", "topics": {"t1": ["a", "b"]}},
        {"consume_from": "earliest", "source_count": 3, "node_id": 2, "confirm_timeout_ms": 5000},
    )
    options = native_consumer_options(values, assigned=True)
    assert options.group == "g1" and options.topics == {"t1": {"a", "b"}}
    assert options.position == _core.ConsumePosition.EARLIEST
    assert options.assigned and (options.source_count, options.node_id) == (3, 2)
    assert options.confirm_timeout_ms == 5000 and options.msg_not_found_wait_ms == 400
    bound = native_consumer_options(
        consumer_values(session_key="s1", source_count=2, bound_offsets={"1:t1:0": 7}),
        assigned=False,
    )
    assert (bound.session_key, bound.bound_offsets, bound.select_big) == ("s1", {"1:t1:0": 7}, True)


@pytest.mark.parametrize(
    "master, reason",
    [("", "no master address"), ("a:1,b", "'b' is not host:port"), ("a:0", "no valid port")],
)
def test_master_lists_have_one_parser(master, reason):
    assert reason in _core.master_list_problem(master)
    with pytest.raises(tubemq.ConfigError, match=reason):
        PRODUCER_SCHEMA.validate({"master": master}, {})
    config = native_client_config(PRODUCER_SCHEMA.validate({"master": MASTER}, {}))
    config.masters = master
    with pytest.raises(tubemq.ConfigError, match=reason):
        _core.Producer(config, _core.ProducerOptions())


def test_one_did_you_mean():
    assert closest("rpc_timout_ms", PRODUCER_SCHEMA.keys) == "rpc_timeout_ms"
    assert closest("zzz", PRODUCER_SCHEMA.keys) is None
    assert closest(5, PRODUCER_SCHEMA.keys) is None


def test_spark_options_are_keys_with_the_defaults_they_apply():
    from tubemq.spark._options import SINK_KEYS, SOURCE_KEYS, sink_options, source_options

    source = {key.name: key for key in SOURCE_KEYS}
    options = source_options({"master": MASTER, "topic": "t1"}, streaming=False)
    assert options.min_partitions == source["minPartitions"].default
    assert options.read_timeout_s * 1000 == source["readTimeoutMs"].default
    assert options.occupied_retry_s * 1000 == source["partitionOccupiedRetryMs"].default
    assert options.prefetch_batches == source["prefetchBatches"].default
    assert options.fail_on_data_loss is source["failOnDataLoss"].default
    sink = sink_options({"master": MASTER})
    assert sink.flush_timeout_s * 1000 == {k.name: k for k in SINK_KEYS}["flushTimeoutMs"].default
    with pytest.raises(tubemq.ConfigError, match="must be at least 1000, got 5"):
        source_options({"master": MASTER, "topic": "t1", "readTimeoutMs": "5"}, streaming=False)
    with pytest.raises(tubemq.ConfigError, match="did you mean 'readTimeoutMs'"):
        source_options({"master": MASTER, "topic": "t1", "readTimeoutMS2": "5"}, streaming=False)
