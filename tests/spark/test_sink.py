"""The tubemq sink against the real cluster: batch and streaming writes, refused schemas."""

from __future__ import annotations

import datetime
import json
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def marker(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_batch_write_sends_every_row_with_attrs_msg_type_and_key(
    spark, master, spark_topics, consume_marked
):
    from pyspark.sql import functions as F

    topic, mark = spark_topics[0], marker("batch")
    rows = spark.range(2000).select(
        F.concat(F.lit(mark + "-"), F.col("id").cast("string")).alias("value"),
        F.create_map(F.lit("row"), F.col("id").cast("string")).alias("attrs"),
        F.when(F.col("id") % 2 == 0, "even").otherwise("odd").alias("msg_type"),
        (F.col("id") % 3).cast("string").alias("key"),
    )
    rows.write.format("tubemq").option("master", master).option("topic", topic).mode(
        "append"
    ).save()

    got = consume_marked(topic, mark, 2000)
    assert len(got) == 2000
    by_value = {bytes(m).decode(): m for m in got}
    assert len(by_value) == 2000  # each row once
    for index in (0, 1, 1999):
        message = by_value[f"{mark}-{index}"]
        assert message.attrs == {"row": str(index)}
        assert message.msg_type == ("even" if index % 2 == 0 else "odd")
    # One key, one partition.
    partitions_of_key = {}
    for value, message in by_value.items():
        key = int(value.rsplit("-", 1)[1]) % 3
        partitions_of_key.setdefault(key, set()).add(message.partition_key)
    assert all(len(keys) == 1 for keys in partitions_of_key.values()), partitions_of_key


def test_partition_column_sends_each_row_to_its_partition(
    spark, master, spark_topics, consume_marked
):
    topic, mark = spark_topics[2], marker("pinned")
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        partitions = producer.partitions(topic)
    # Half the rows name their partition by key, half by id; a null is routed as usual.
    data = []
    for index in range(40):
        info = partitions[index % len(partitions)]
        target = info.key if index % 2 else str(info.partition_id)
        data.append((f"{mark}-{index}", target if index % 2 else None, info.partition_id))
    frame = spark.createDataFrame(data, "value string, pkey string, pid int")
    keyed = frame.where("pkey IS NOT NULL").selectExpr("value", "pkey AS partition")
    by_id = frame.where("pkey IS NULL").selectExpr("value", "pid AS partition")
    for part in (keyed, by_id):
        part.write.format("tubemq").option("master", master).option("topic", topic).mode(
            "append"
        ).save()
    got = consume_marked(topic, mark, 40)
    assert len(got) == 40
    for message in got:
        index = int(bytes(message).decode().rsplit("-", 1)[1])
        assert message.partition_key == partitions[index % len(partitions)].key


def test_a_row_with_an_unknown_partition_fails_the_task(spark, master, spark_topics):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    frame = spark.createDataFrame([("v", "999:nowhere:0")], "value string, partition string")
    with pytest.raises((PySparkException, Py4JJavaError)) as caught:
        frame.write.format("tubemq").option("master", master).option("topic", spark_topics[2]).mode(
            "append"
        ).save()
    assert "not a writable partition" in str(caught.value)


def test_topic_column_overrides_the_option_and_binary_values_pass_unchanged(
    spark, master, spark_topics, consume_marked
):
    mark = marker("cols")
    first, second = spark_topics[0], spark_topics[1]
    stamp = datetime.datetime(2025, 3, 4, 5, 6)
    data = [
        (f"{mark}-a".encode() + b"\x00\xff", first, stamp),
        (f"{mark}-b".encode() + b"\x01", None, stamp),  # null topic: the option's
    ]
    frame = spark.createDataFrame(data, "value binary, topic string, msg_time timestamp")
    frame.write.format("tubemq").option("master", master).option("topic", second).mode(
        "append"
    ).save()
    in_first = consume_marked(first, mark, 1, seconds=30)
    in_second = consume_marked(second, mark, 1, seconds=30)
    assert [bytes(m) for m in in_first] == [f"{mark}-a".encode() + b"\x00\xff"]
    assert [bytes(m) for m in in_second] == [f"{mark}-b".encode() + b"\x01"]
    assert in_first[0].msg_time == "202503040506"


def test_streaming_write_sends_each_file_row(spark, master, spark_topics, consume_marked, tmp_path):
    topic, mark = spark_topics[1], marker("stream")
    incoming = tmp_path / "in"
    incoming.mkdir()
    for part in range(3):
        lines = [json.dumps({"n": part * 100 + i}) for i in range(100)]
        (incoming / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    query = (
        spark.readStream.schema("n long")
        .json(str(incoming))
        .selectExpr(f"concat('{mark}-', cast(n as string)) AS value", "'s' AS msg_type")
        .writeStream.format("tubemq")
        .option("master", master)
        .option("topic", topic)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    got = consume_marked(topic, mark, 300)
    assert sorted(int(bytes(m).decode().rsplit("-", 1)[1]) for m in got) == list(range(300))
    assert {m.msg_type for m in got} == {"s"}


@pytest.mark.parametrize(
    ("columns", "options", "named"),
    [
        ("cast(id as string) AS body", {"topic": "t"}, "'value'"),
        ("cast(id as string) AS value, id AS extra", {"topic": "t"}, "'extra'"),
        ("id AS value", {"topic": "t"}, "'value' must be binary or string"),
        ("cast(id as string) AS value", {}, "'topic'"),
        ("cast(id as string) AS value", {"topic": "t", "topik": "x"}, "did you mean 'topic'"),
        (
            "cast(id as string) AS value",
            {"topic": "t", "tubemq.max_in_flite": "5"},
            "max_in_flight",
        ),
        ("cast(id as string) AS value", {"topic": "t", "flushTimeoutMs": "soon"}, "flushTimeoutMs"),
    ],
)
def test_refused_schemas_and_options_name_the_culprit(spark, master, columns, options, named):
    from pyspark.errors import AnalysisException

    writer = spark.range(1).selectExpr(*columns.split(", ")).write.format("tubemq")
    writer = writer.option("master", master)
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(AnalysisException) as caught:
        writer.mode("append").save()
    assert "ConfigError" in str(caught.value)
    assert named in str(caught.value)


def test_a_failed_send_fails_the_task(spark, master):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    frame = spark.range(5).selectExpr("cast(id as string) AS value")
    with pytest.raises((PySparkException, Py4JJavaError)) as caught:
        frame.write.format("tubemq").option("master", master).option(
            "topic", "no_such_topic_here"
        ).option("tubemq.rpc_timeout_ms", "2000").mode("append").save()
    assert "no_such_topic_here" in str(caught.value)
