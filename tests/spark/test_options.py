"""Option parsing and offset planning of the tubemq data source (no cluster, no Spark)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from tubemq import ConfigError, ServerError
from tubemq.spark._offsets import (
    PartitionRange,
    _query,
    cap_messages,
    plan,
    resolve,
)
from tubemq.spark._options import Offsets, sink_options, source_options
from tubemq.spark.stream_source import _advance

BASE = {"master": "127.0.0.1:8715", "topic": "a, b"}


def test_source_defaults_differ_between_batch_and_streaming():
    batch = source_options(BASE, streaming=False)
    stream = source_options(BASE, streaming=True)
    assert batch.topics == ("a", "b")
    assert batch.starting == Offsets("earliest") and batch.ending == Offsets("latest")
    assert stream.starting == Offsets("latest")
    assert batch.group.startswith("spark-") and batch.group != stream.group
    config = batch.consumer_config()
    assert config["auto_commit"] is False and config["topics"] == ["a", "b"]


def test_options_are_case_insensitive_and_typed():
    options = source_options(
        {
            **BASE,
            "STARTINGOFFSETS": json.dumps({"1:a:0": 56, "1:a:1": "latest"}),
            "maxmessagespertrigger": "500",
            "failOnDataLoss": "false",
            "filters": json.dumps({"a": ["x", "y"]}),
            "group": "mine",
            "tubemq.rpc_timeout_ms": "4000",
        },
        streaming=True,
    )
    assert options.starting.per_key == {"1:a:0": 56, "1:a:1": "latest"}
    assert options.max_messages_per_trigger == 500
    assert options.fail_on_data_loss is False
    assert options.filters == {"a": frozenset({"x", "y"})}
    assert options.group == "mine" and options.planner_group() == "mine-plan"
    assert options.client == {"rpc_timeout_ms": 4000}
    assert source_options({**BASE, "filters": "x,y"}, False).filters == {
        "a": frozenset({"x", "y"}),
        "b": frozenset({"x", "y"}),
    }


def test_every_boolean_option_takes_the_same_spellings():
    # One parser for the source's own switches and the client's (tubemq.*) ones.
    for text, value in (("true", True), ("YES", True), ("1", True), ("False", False),
                        ("no", False), ("0", False)):  # fmt: skip
        own = source_options({**BASE, "failOnDataLoss": text}, streaming=True)
        client = source_options({**BASE, "tubemq.tls_enable": text}, streaming=False)
        assert own.fail_on_data_loss is value and client.client == {"tls_enable": value}
    with pytest.raises(ConfigError) as caught:
        source_options({**BASE, "tubemq.tls_enable": "perhaps"}, streaming=False)
    assert caught.value.key == "tubemq.tls_enable"


@pytest.mark.parametrize(
    ("extra", "streaming", "named"),
    [
        ({"topic": " , "}, False, "topic"),
        ({"startingOffsets": "first"}, False, "startingOffsets"),
        ({"startingOffsets": "{not json"}, False, "startingOffsets"),
        ({"startingOffsets": '{"a-0": 5}'}, False, "startingOffsets"),
        ({"startingOffsets": '{"1:a:0": -3}'}, False, "startingOffsets"),
        ({"endingOffsets": "earliest"}, False, "endingOffsets"),
        ({"endingOffsets": "latest"}, True, "endingOffsets"),
        ({"maxMessagesPerTrigger": "10"}, False, "maxMessagesPerTrigger"),
        ({"maxMessagesPerTrigger": "0"}, True, "maxMessagesPerTrigger"),
        ({"minPartitions": "many"}, False, "minPartitions"),
        ({"failOnDataLoss": "perhaps"}, False, "failOnDataLoss"),
        ({"filters": '{"c": ["x"]}'}, False, "filters"),
        ({"startingOfsets": "earliest"}, False, "startingOfsets"),
        ({"tubemq.group": "g"}, False, "tubemq.group"),
        ({"tubemq.rpc_timeout": "5"}, False, "tubemq.rpc_timeout"),
        ({"tubemq.rpc_timeout_ms": "soon"}, False, "tubemq.rpc_timeout_ms"),
        ({"decode": "json"}, False, "decode"),
        ({"decode": "inlongmsg", "decodeErrors": "ignore"}, True, "decodeErrors"),
        ({"decodeErrors": "skip"}, False, "decodeErrors"),
        ({"tubemq.decode": "inlongmsg"}, False, "tubemq.decode"),
    ],
)
def test_bad_source_options_raise_config_error_naming_the_option(extra, streaming, named):
    with pytest.raises(ConfigError) as caught:
        source_options({**BASE, **extra}, streaming=streaming)
    assert caught.value.key.lower() == named.lower()
    assert named.lower() in str(caught.value).lower()


def test_decode_options():
    plain = source_options(BASE, streaming=False)
    assert (plain.decode, plain.skip_bad_packs) == (False, False)
    decoded = source_options({**BASE, "Decode": "InLongMsg"}, streaming=True)
    assert (decoded.decode, decoded.skip_bad_packs) == (True, False)
    skipping = source_options({**BASE, "decode": "inlongmsg", "decodeerrors": "skip"}, False)
    assert (skipping.decode, skipping.skip_bad_packs) == (True, True)


def test_unknown_option_suggests_the_close_one():
    with pytest.raises(ConfigError, match="did you mean 'startingOffsets'"):
        source_options({**BASE, "startingoffset": "earliest"}, streaming=False)


def test_missing_master_and_sink_options():
    with pytest.raises(ConfigError, match="'master'"):
        source_options({"topic": "a"}, streaming=False)
    sink = sink_options({"master": "h:1", "topic": "t", "tubemq.max_in_flight": "10"})
    assert sink.producer_config() == {"master": "h:1", "max_in_flight": 10}
    assert sink_options({"master": "h:1", "checkpointLocation": "/x"}).topic is None


RANGES = {"1:a:0": PartitionRange(0, 280), "1:a:1": PartitionRange(56, 56)}


def test_resolve_earliest_latest_and_json():
    assert resolve(Offsets("earliest"), RANGES, "startingOffsets") == {"1:a:0": 0, "1:a:1": 56}
    assert resolve(Offsets("latest"), RANGES, "x") == {"1:a:0": 280, "1:a:1": 56}
    mixed = Offsets("latest", {"1:a:0": 28})
    assert resolve(mixed, RANGES, "x") == {"1:a:0": 28, "1:a:1": 56}
    with pytest.raises(ConfigError, match="1:a:7"):
        resolve(Offsets("latest", {"1:a:7": 0}), RANGES, "startingOffsets")
    with pytest.raises(ConfigError, match="multiple of 28"):
        resolve(Offsets("latest", {"1:a:0": 30}), RANGES, "startingOffsets")


def test_plan_reads_only_ranges_with_data_and_splits_on_entry_boundaries():
    ranges = plan({"1:a:0": 0, "1:a:1": 56}, {"1:a:0": 280, "1:a:1": 56}, "g", 1)
    assert [(r.key, r.start, r.end, r.group) for r in ranges] == [("1:a:0", 0, 280, "g")]
    split = plan({"1:a:0": 0}, {"1:a:0": 280}, "g", 3)
    assert [(r.start, r.end) for r in split] == [(0, 56), (56, 140), (140, 280)]
    assert [r.group for r in split] == ["g", "g-1", "g-2"]
    assert sum(r.messages for r in split) == 10
    # New partitions (no start) are read from their first offset.
    assert plan({}, {"1:b:0": 84}, "g", 1)[0].start == 0
    # A partition that went back below its start (re-created) is read from its beginning.
    assert [(r.start, r.end) for r in plan({"1:a:0": 560}, {"1:a:0": 84}, "g", 1)] == [(0, 84)]
    # One message cannot be split.
    assert len(plan({"1:a:0": 0}, {"1:a:0": 28}, "g", 4)) == 1


def test_cap_messages_bounds_each_store_by_an_index_span():
    # Partitions 0 and 1 share store 0's index; partition 10000 is store 1.
    starts = {"1:t:0": 280, "1:t:1": 280, "1:t:10000": 0}
    ends = {"1:t:0": 280 + 28 * 90, "1:t:1": 280 + 28 * 90, "1:t:10000": 28 * 10}
    capped = cap_messages(starts, ends, 20)
    # Store 0 has 90 entries of backlog, store 1 has 10: shares 18 and 2.
    assert capped == {"1:t:0": 280 + 28 * 18, "1:t:1": 280 + 28 * 18, "1:t:10000": 56}
    assert cap_messages(starts, ends, 1000) == ends
    assert cap_messages(starts, ends, 20) == capped  # deterministic
    # A partition behind the others in its store never moves backwards.
    behind = cap_messages({"1:t:0": 0, "1:t:1": 560}, {"1:t:0": 1120, "1:t:1": 1120}, 5)
    assert behind == {"1:t:0": 140, "1:t:1": 560}
    one = cap_messages({"1:t:0": 0}, {"1:t:0": 28 * 5}, 1)
    assert one == {"1:t:0": 28}


def test_advance_never_goes_back_and_adds_new_partitions_with_data():
    base = {"k0": 280, "k1": 56}
    assert _advance(base, {"k0": 560, "k1": 28, "k2": 0, "k3": 84}) == {
        "k0": 560,
        "k1": 56,
        "k3": 84,
    }


class _GrowingTopicConsumer:
    """Stands in for the planner's consumer while a topic grows: the master lists the new
    partition, its broker refuses readers of it the first ``refusals`` times."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.assigned: dict[str, int] = {}

    def partitions(self, refresh: bool) -> list[Any]:
        return [SimpleNamespace(topic="a", key=f"1:a:{p}", subscribable=True) for p in range(5)]

    def assignment(self) -> list[str]:
        return list(self.assigned)

    def assign(self, offsets: dict[str, int]) -> None:
        if self.refusals:
            self.refusals -= 1
            raise ServerError(
                500,
                "Register broker failure!, exception is Wrong partition value 4,"
                "valid partitions in (0,3)",
            )
        self.assigned = dict(offsets)

    def offsets(self) -> dict[str, dict[str, int]]:
        return {key: {"offset": 0, "max_offset": 280} for key in self.assigned}

    def unassign(self, keys: list[str], commit: bool) -> None:
        self.assigned = {}


def test_the_planner_waits_for_a_new_partition_its_broker_has_not_loaded():
    options = source_options({"master": "127.0.0.1:8715", "topic": "a"}, streaming=True)
    consumer = _GrowingTopicConsumer(refusals=2)
    ranges = _query(consumer, options)
    assert consumer.refusals == 0
    assert ranges == {f"1:a:{p}": PartitionRange(low=0, high=280) for p in range(5)}


def test_the_planner_passes_other_server_errors_on_at_once():
    class Refusing(_GrowingTopicConsumer):
        def assign(self, offsets: dict[str, int]) -> None:
            raise ServerError(500, "something else")

    with pytest.raises(ServerError, match="something else"):
        _query(Refusing(0), source_options({"master": "m:1", "topic": "a"}, streaming=True))


def test_the_streaming_source_refuses_pyspark_before_4_2():
    from tubemq.spark._versions import require_streaming_source

    for older in ("4.0.5", "4.1.4", "3.5.9"):
        with pytest.raises(RuntimeError, match=f"needs PySpark 4.2 or newer.*PySpark {older}"):
            require_streaming_source(older)
    for newer in ("4.2.0", "4.3.0", "4.10.1", "5.0.0.dev0"):
        require_streaming_source(newer)
