"""The tubemq source against the real cluster: batch reads of known content, explicit
offset ranges, splitting, filters, and a sink-to-source round trip of 100 000 rows."""

from __future__ import annotations

import json
import uuid

import pytest

import tubemq
from tubemq.spark._offsets import query_ranges
from tubemq.spark._options import source_options

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def ends_now(master: str, topic: str) -> dict[str, int]:
    """Every partition's current end offset."""
    options = source_options({"master": master, "topic": topic}, streaming=False)
    return {key: span.high for key, span in query_ranges(options).items()}


def produce(master: str, topic: str, mark: str, count: int) -> dict[int, dict]:
    """Sends ``count`` messages; returns {message id: what was sent and where}."""
    sent = {}
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for index in range(count):
            value = f"{mark}-{index}".encode()
            kind = "even" if index % 2 == 0 else "odd"
            result = producer.send(
                topic,
                value,
                attrs={"n": str(index)},
                msg_type=kind,
                msg_time="202501021530",
            )
            sent[result.message_id] = {
                "value": value,
                "partition": result.partition_key,
                "offset": result.append_offset,
                "msg_type": kind,
                "n": str(index),
            }
    return sent


def read(spark, master: str, topic: str, **options: str):
    reader = spark.read.format("tubemq").option("master", master).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture(scope="module")
def known(master, spark_topics):
    """A 4-partition topic with 240 known messages after ``start``."""
    topic = spark_topics[2]
    start = ends_now(master, topic)
    mark = f"known-{uuid.uuid4().hex[:8]}"
    sent = produce(master, topic, mark, 240)
    return topic, mark, start, sent


def test_earliest_to_latest_returns_exactly_what_was_sent(spark, master, known):
    topic, mark, _, sent = known
    frame = read(spark, master, topic)
    assert frame.columns == [
        "value",
        "topic",
        "partition",
        "batch_offset",
        "message_id",
        "msg_type",
        "msg_time",
        "attrs",
        "timestamp",
    ]
    rows = [r for r in frame.collect() if r.value.startswith(mark.encode())]
    assert len(rows) == len(sent)
    assert {r.message_id for r in rows} == set(sent)
    assert len({r.partition for r in rows}) == 4
    for row in rows:
        expected = sent[row.message_id]
        assert bytes(row.value) == expected["value"]
        assert row.topic == topic and row.partition == expected["partition"]
        assert row.attrs == {"n": expected["n"]}
        assert row.msg_type == expected["msg_type"] and row.msg_time == "202501021530"
        assert row.batch_offset <= expected["offset"]
        assert row.timestamp is not None and row.timestamp.year == 2025


def test_an_explicit_range_holds_the_messages_stored_inside_it(spark, master, known):
    topic, _, start, sent = known
    base = min(start.values())
    # Index positions are shared by the partitions of a store: cut through the middle
    # of what was sent, away from any batch boundary the broker might pick.
    low, high = base + 28 * 37, base + 28 * 181
    starting = json.dumps(dict.fromkeys(start, low))
    ending = json.dumps(dict.fromkeys(start, high))
    expected = {mid for mid, info in sent.items() if low <= info["offset"] < high}
    assert len(expected) == 144
    for extra in ({}, {"minPartitions": "9"}):
        frame = read(spark, master, topic, startingOffsets=starting, endingOffsets=ending, **extra)
        ids = [r.message_id for r in frame.select("message_id").collect()]
        assert sorted(ids) == sorted(expected), extra


def test_filters_keep_only_the_named_msg_types(spark, master, known):
    topic, _, start, sent = known
    frame = read(spark, master, topic, startingOffsets=json.dumps(start), filters="odd")
    rows = frame.select("message_id", "msg_type").collect()
    assert {r.msg_type for r in rows} == {"odd"}
    assert {r.message_id for r in rows} == {m for m, i in sent.items() if i["msg_type"] == "odd"}


def test_latest_to_latest_is_empty_and_bad_ranges_are_refused(spark, master, known):
    from pyspark.errors import PySparkException

    topic, _, start, _ = known
    assert read(spark, master, topic, startingOffsets="latest").count() == 0
    key = sorted(start)[0]
    with pytest.raises(PySparkException, match="1:nope:0"):
        read(spark, master, topic, startingOffsets=json.dumps({"1:nope:0": 0})).count()
    with pytest.raises(PySparkException, match="after its end"):
        read(
            spark,
            master,
            topic,
            startingOffsets=json.dumps({key: start[key] + 280}),
            endingOffsets=json.dumps({key: start[key]}),
        ).count()


def test_100k_rows_written_by_the_sink_read_back_identical(spark, master, spark_topics):
    from pyspark.sql import functions as F

    topic, mark = spark_topics[3], f"round-{uuid.uuid4().hex[:8]}"
    start = ends_now(master, topic)
    rows = spark.range(100_000).select(
        F.concat(F.lit(mark + "-"), F.col("id").cast("string")).cast("binary").alias("value"),
        F.create_map(
            F.lit("id"), F.col("id").cast("string"), F.lit("mod"), (F.col("id") % 7).cast("string")
        ).alias("attrs"),
    )
    rows.write.format("tubemq").option("master", master).option("topic", topic).mode(
        "append"
    ).save()
    back = (
        read(spark, master, topic, startingOffsets=json.dumps(start))
        .where(F.col("value").startswith(F.lit(mark.encode())))
        .select("value", "attrs")
    )
    as_text = [F.col("value").cast("string"), F.to_json("attrs")]
    assert back.count() == 100_000
    assert rows.select(*as_text).exceptAll(back.select(*as_text)).count() == 0
    assert back.select(*as_text).exceptAll(rows.select(*as_text)).count() == 0


def test_starts_followed_by_other_partitions_messages_are_no_loss(spark, master, spark_topics):
    """The partitions of a store share one index, so the entries just after a planned
    start may belong to other partitions. The broker may then report a partition's first
    batch at a later position than the start; that is no data loss (failOnDataLoss stays
    on), and each start yields exactly the messages stored from it on."""
    topic, mark = spark_topics[5], f"interleaved-{uuid.uuid4().hex[:8]}"
    produce(master, topic, f"before-{mark}", 8)  # the starts lie past offset 0
    start = ends_now(master, topic)
    keys = sorted(start)
    order = [keys[0], keys[2], keys[3], keys[1], keys[0], keys[1], keys[3], keys[2]]
    sent = {}
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for index, key in enumerate(order):
            value = f"{mark}-{index}".encode()
            result = producer.send(topic, value, partition=key)
            sent[result.message_id] = (key, value, result.append_offset)
    base = min(start.values())
    assert base > 0
    for entry in range(len(order)):
        low = base + 28 * entry
        rows = read(spark, master, topic, startingOffsets=json.dumps(dict.fromkeys(keys, low)))
        got = {r.message_id: (r.partition, bytes(r.value)) for r in rows.collect()}
        expected = {mid: (key, value) for mid, (key, value, at) in sent.items() if at >= low}
        assert got == expected, f"starting {entry} entries in"


def test_repeated_queries_read_in_the_groups_their_processes_registered_once(
    spark, cluster, master, known
):
    """A Python worker reads every range in one group and client of its own: a second and
    third query register no new reader group at the master (only their planners)."""
    topic, mark, start, sent = known
    admin = tubemq.AdminClient(master, web=cluster.master_web_address)

    def readers() -> set[str]:
        return {g for g in admin.list_groups() if g.startswith("spark-") and "-plan" not in g}

    def query() -> list[int]:
        rows = read(spark, master, topic, startingOffsets=json.dumps(start)).collect()
        return sorted(r.message_id for r in rows if bytes(r.value).startswith(mark.encode()))

    # The same ranges read again in the kept groups: from the planned starts each time,
    # never from where a group's earlier read ended.
    assert query() == sorted(sent)
    after_first = readers()
    assert after_first  # the readers' groups are registered while their processes live
    for _ in range(2):
        assert query() == sorted(sent)
    assert readers() <= after_first  # no new reader group, whatever the query
