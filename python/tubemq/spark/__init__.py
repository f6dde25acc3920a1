"""PySpark support (needs ``pip install tubemq[spark]``).

>>> import tubemq.spark
>>> tubemq.spark.register(spark)
>>> df = spark.read.format("tubemq").option("master", "127.0.0.1:8715") \\
...     .option("topic", "events").load()

The ``tubemq`` data source and sink (``register``, ``TubeMQDataSource``) need PySpark's
Python data source API (PySpark 4); on an older PySpark, using them raises ImportError
naming the version needed. ``consume_in_barrier`` (the function for
``df.mapInArrow(..., barrier=True)`` that keeps consuming in every task of a barrier
stage) and ``send_dataframe`` (a DataFrame's rows sent as messages) work on PySpark 3.5
too. See the README for the options of the source and the sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tubemq.spark._send import send_dataframe
from tubemq.spark.barrier import consume_in_barrier, written_positions

if TYPE_CHECKING:
    from tubemq.spark.datasource import TubeMQDataSource

__all__ = [
    "TubeMQDataSource",
    "consume_in_barrier",
    "register",
    "send_dataframe",
    "written_positions",
]


def register(spark: Any) -> None:
    """Registers the ``tubemq`` format with a SparkSession."""
    from tubemq.spark.datasource import TubeMQDataSource

    spark.dataSource.register(TubeMQDataSource)


def __getattr__(name: str) -> Any:
    # The data source is imported on first use, so that the rest of the package imports
    # on a PySpark without the data source API.
    if name == "TubeMQDataSource":
        from tubemq.spark.datasource import TubeMQDataSource

        return TubeMQDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
