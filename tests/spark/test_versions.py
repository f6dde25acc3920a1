"""What works on which PySpark: the barrier helper and send_dataframe need no Python data
source API and work on PySpark 3.5 as on 4.x; the data source says which version it needs.
scripts/spark_versions.sh runs this module (and test_barrier.py) on a chosen PySpark."""

from __future__ import annotations

import uuid

import pyspark
import pytest

import tubemq
import tubemq.spark

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MAJOR = int(pyspark.__version__.split(".")[0])


def test_the_data_source_says_which_pyspark_it_needs(spark):
    from tubemq.spark._versions import DATA_SOURCE_MIN_PYSPARK

    if MAJOR >= 4:
        assert tubemq.spark.TubeMQDataSource.name() == "tubemq"
        return
    # PySpark 3.5: the package imports; the data source names the version it needs.
    with pytest.raises(ImportError) as caught:
        tubemq.spark.register(spark)
    text = str(caught.value)
    assert f"needs PySpark {DATA_SOURCE_MIN_PYSPARK} or newer" in text
    assert pyspark.__version__ in text
    assert "consume_in_barrier" in text and "send_dataframe" in text
    with pytest.raises(ImportError, match=f"PySpark {DATA_SOURCE_MIN_PYSPARK}"):
        from tubemq.spark import TubeMQDataSource  # noqa: F401


def test_send_dataframe_sends_every_row_once_with_its_columns(
    spark, master, spark_topics, consume_marked
):
    from pyspark.sql import functions as F

    topic, mark = spark_topics[1], f"send-{uuid.uuid4().hex[:8]}"
    frame = spark.range(0, 1500, 1, numPartitions=3).select(
        F.concat(F.lit(mark + "-"), F.col("id").cast("string")).alias("value"),
        (F.col("id") % 5).cast("string").alias("key"),
        F.lit("sent").alias("msg_type"),
    )
    assert tubemq.spark.send_dataframe(frame, master, topic) == 1500
    got = consume_marked(topic, mark, 1500)
    values = sorted(bytes(m).decode() for m in got)
    assert values == sorted(f"{mark}-{i}" for i in range(1500))  # each once
    assert {m.msg_type for m in got} == {"sent"}


def test_send_dataframe_refuses_what_the_sink_refuses(spark, master):
    frame = spark.range(3).selectExpr("cast(id as string) AS body")
    with pytest.raises(tubemq.ConfigError, match="'value'"):
        tubemq.spark.send_dataframe(frame, master, "t")
    frame = spark.range(3).selectExpr("cast(id as string) AS value")
    with pytest.raises(tubemq.ConfigError, match="'topic'"):
        tubemq.spark.send_dataframe(frame, master)
