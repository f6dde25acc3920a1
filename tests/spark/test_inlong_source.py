"""``option("decode", "inlongmsg")`` of the tubemq source against the real cluster: one row
per record of the InLongMsg packs, in batch and streaming queries; a message that is not a
pack fails the query with PackDecodeError naming it, or is left out with
``decodeErrors=skip``."""

from __future__ import annotations

import json
import uuid

import pytest
from test_source import ends_now

import tubemq
from tubemq import inlong

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COLUMNS = [
    "value",
    "attrs",
    "create_time",
    "record_index",
    "record_count",
    "topic",
    "partition",
    "batch_offset",
    "message_id",
    "msg_type",
    "msg_time",
]


def reader(spark, master: str, topic: str, stream: bool = False, **options: str):
    base = spark.readStream if stream else spark.read
    frame = base.format("tubemq").option("master", master).option("topic", topic)
    frame = frame.option("decode", "inlongmsg")
    for key, value in options.items():
        frame = frame.option(key, value)
    return frame.load()


@pytest.fixture(scope="module")
def packs(master, spark_topics):
    """Four packs (v1 compressed, v2, v3, v4) and one bad message after ``start``; the
    expected rows by (message id, record index)."""
    topic = spark_topics[2]
    start = ends_now(master, topic)
    mark = f"inl-{uuid.uuid4().hex[:8]}"
    expected: dict[tuple[int, int], dict] = {}
    bad = None
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for version in (1, 2, 3, 4):
            records = [(f"{mark}-v{version}-{i}".encode(), {"seq": str(i)}) for i in range(3)]
            payload = inlong.encode(
                records,
                attrs={"mark": mark},
                version=version,
                compress=version == 1,
                create_time_ms=1_735_000_000_000,
            )
            result = producer.send(topic, payload, msg_type="inl", msg_time="202501021530")
            for index, (body, attrs) in enumerate(records):
                expected[(result.message_id, index)] = {
                    "value": body,
                    "seq": attrs["seq"],
                    "partition": result.partition_key,
                }
        bad = producer.send(topic, b"\x0f\x01 not a pack " + mark.encode() + b"\x0f\x01")
    return topic, mark, start, expected, bad


def test_one_row_per_record_and_bad_packs_fail_or_are_skipped(spark, master, packs):
    from pyspark.errors import PySparkException

    topic, mark, start, expected, bad = packs
    starting = json.dumps(start)
    frame = reader(spark, master, topic, startingOffsets=starting)
    assert frame.columns == COLUMNS
    with pytest.raises(PySparkException) as caught:
        frame.collect()
    text = str(caught.value)
    assert "PackDecodeError" in text and bad.partition_key in text, text[-2000:]
    assert f"message id {bad.message_id}" in text

    rows = reader(spark, master, topic, startingOffsets=starting, decodeErrors="skip").collect()
    rows = [r for r in rows if r.attrs.get("mark") == mark]
    assert {(r.message_id, r.record_index) for r in rows} == set(expected)
    for row in rows:
        sent = expected[(row.message_id, row.record_index)]
        assert bytes(row.value) == sent["value"] and row.attrs["seq"] == sent["seq"]
        assert row.record_count == 3 and row.topic == topic
        assert row.partition == sent["partition"] and row.batch_offset >= start[row.partition]
        assert row.msg_type == "inl" and row.msg_time == "202501021530"
        assert row.create_time is not None and row.create_time.year == 2024


def test_streaming_reads_records(spark, master, packs, tmp_path):
    topic, mark, start, expected, _ = packs
    query = (
        reader(
            spark,
            master,
            topic,
            stream=True,
            startingOffsets=json.dumps(start),
            decodeErrors="skip",
        )
        .select("value", "attrs", "message_id", "record_index")
        .writeStream.format("memory")
        .queryName(f"inl_{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    assert query.exception() is None
    rows = spark.sql(f"SELECT * FROM {query.name}").collect()
    mine = {
        (r.message_id, r.record_index): bytes(r.value) for r in rows if r.attrs.get("mark") == mark
    }
    assert mine == {key: sent["value"] for key, sent in expected.items()}
