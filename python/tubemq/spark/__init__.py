"""PySpark support: the ``tubemq`` data source and sink (needs ``pip install tubemq[spark]``).

>>> import tubemq.spark
>>> tubemq.spark.register(spark)
>>> df = spark.read.format("tubemq").option("master", "127.0.0.1:8715") \\
...     .option("topic", "events").load()

``consume_in_barrier`` builds the function for ``df.mapInArrow(..., barrier=True)`` that
keeps consuming in every task of a barrier stage (bound consume). See the README for the
options of the source and the sink.
"""

from __future__ import annotations

from typing import Any

from tubemq.spark.barrier import consume_in_barrier, written_positions
from tubemq.spark.datasource import TubeMQDataSource

__all__ = ["TubeMQDataSource", "consume_in_barrier", "register", "written_positions"]


def register(spark: Any) -> None:
    """Registers the ``tubemq`` format with a SparkSession."""
    spark.dataSource.register(TubeMQDataSource)
