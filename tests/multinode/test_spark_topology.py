"""The Spark data source and sink on the three-broker, three-master cluster (issue 16): a
batch read covers the partitions of every broker, and the sink's rows land on all of them.
"""

from __future__ import annotations

import collections
import os
import sys
import uuid
from pathlib import Path

import pytest
from multinode_support import BROKERS, PARTITIONS, broker_id

# tests/spark/stream_job.py: the driver-kill story the Spark tests share.
sys.path.insert(0, str(Path(__file__).parents[1] / "spark"))
import stream_job

import tubemq

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    # PySpark's own warnings, as tests/spark/conftest.py lists them; the suite turns
    # warnings into errors.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tubemq.spark
    from tubemq.spark import _clients

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tubemq-multinode")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    tubemq.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
        # The clients this process cached for offset queries.
        _clients.close_all()


def test_a_batch_read_covers_every_broker(spark, topology):
    topic, mark = "topo_spark_read", f"read-{uuid.uuid4().hex[:8]}".encode()
    with tubemq.Producer(master=topology.master_list) as producer:
        producer.publish(topic)
        sent = {
            producer.send(topic, mark + b"-%d" % i).message_id: mark + b"-%d" % i
            for i in range(120)
        }
    frame = spark.read.format("tubemq").option("master", topology.master_list)
    rows = [
        row
        for row in frame.option("topic", topic).load().collect()
        if bytes(row.value).startswith(mark)
    ]
    assert {row.message_id: bytes(row.value) for row in rows} == sent
    assert len(rows) == len(sent)
    assert len({row.partition for row in rows}) == BROKERS * PARTITIONS
    assert {broker_id(row.partition) for row in rows} == {1, 2, 3}


def test_the_sink_spreads_rows_over_every_broker(spark, topology):
    from pyspark.sql import functions as F

    topic, mark = "topo_spark_sink", f"sink-{uuid.uuid4().hex[:8]}"
    rows = spark.range(3000).select(
        F.concat(F.lit(mark + "-"), F.col("id").cast("string")).cast("binary").alias("value")
    )
    rows.write.format("tubemq").option("master", topology.master_list).option("topic", topic).mode(
        "append"
    ).save()
    back = (
        spark.read.format("tubemq")
        .option("master", topology.master_list)
        .option("topic", topic)
        .load()
        .where(F.col("value").startswith(F.lit(mark.encode())))
        .select("value", "partition")
        .collect()
    )
    assert sorted(bytes(row.value) for row in back) == sorted(
        f"{mark}-{i}".encode() for i in range(3000)
    )
    per_broker = collections.Counter(broker_id(row.partition) for row in back)
    assert set(per_broker) == {1, 2, 3}, per_broker


def test_a_streaming_query_killed_and_restarted_writes_every_broker_exactly_once(
    spark, topology, tmp_path
):
    from tubemq.spark._offsets import query_ranges
    from tubemq.spark._options import source_options

    topic, mark = "topo_spark_stream", f"stream-{uuid.uuid4().hex[:8]}"
    options = source_options({"master": topology.master_list, "topic": topic}, streaming=False)
    start = {key: span.high for key, span in query_ranges(options).items()}
    assert len(start) == BROKERS * PARTITIONS
    values = [f"{mark}-{i}".encode() for i in range(3000)]
    with tubemq.Producer(master=topology.master_list) as producer:
        producer.publish(topic)
        futures = [producer.send_async(topic, value) for value in values]
        producer.flush(timeout=60)
    assert all(future.exception() is None for future in futures)

    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    job = stream_job.launch(topology.master_list, topic, start, checkpoint, output)
    done_before_kill = stream_job.kill_after_commits(job, checkpoint)
    assert done_before_kill < 8  # 3000 messages take at least 8 batches of 400

    rows = [
        row
        for row in stream_job.finish_from_checkpoint(
            spark, topology.master_list, topic, checkpoint, output
        )
        if bytes(row.value).startswith(mark.encode())
    ]
    written = [bytes(row.value) for row in rows]
    print(
        f"\nstreaming over {BROKERS} brokers: killed after {done_before_kill} micro-batches,"
        f" restarted; {len(values)} sent, {len(set(written))} written,"
        f" {len(written) - len(set(written))} twice"
    )
    assert len(written) == len(values)  # nothing twice
    assert set(written) == set(values)  # nothing lost
    assert {broker_id(row.partition) for row in rows} == {1, 2, 3}
