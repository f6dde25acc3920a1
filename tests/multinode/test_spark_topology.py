"""The Spark data source and sink on the three-broker, three-master cluster (issue 16): a
batch read covers the partitions of every broker, and the sink's rows land on all of them.
"""

from __future__ import annotations

import collections
import os
import sys
import uuid

import pytest
from multinode_support import BROKERS, PARTITIONS, broker_id

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
