"""Which PySpark the parts of ``tubemq.spark`` need.

The ``tubemq`` data source (batch and streaming reads, the sink) is built on PySpark's
Python data source API, ``pyspark.sql.datasource``, which PySpark 3.5 lacks. The barrier
helper and ``send_dataframe`` use only ``mapInArrow`` and ``mapPartitions`` and work on
3.5 too. ``scripts/spark_versions.sh`` runs the tests on a given PySpark.
"""

from __future__ import annotations

# The lowest PySpark the data source's tests pass on (scripts/spark_versions.sh). 4.0 and
# 4.1 have the API but pass no read limit to a streaming source and have no
# Trigger.AvailableNow for it: a query restarted from its checkpoint there read two
# committed micro-batches again, and maxMessagesPerTrigger is not honoured.
DATA_SOURCE_MIN_PYSPARK = "4.2"


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def require_data_source_api() -> None:
    """Raises ImportError naming the version needed when this PySpark lacks the API.

    PySpark 4.0 and 4.1 pass: they have the API, and batch reads and the sink work there;
    the streaming source's guarantees need 4.2 (docs/spark.md, PySpark versions).
    """
    try:
        import pyspark.sql.datasource  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"the tubemq data source (spark.read/readStream/write.format('tubemq'), "
            f"tubemq.spark.register) needs PySpark {DATA_SOURCE_MIN_PYSPARK} or newer for "
            f"its Python data source API (pyspark.sql.datasource); this is PySpark "
            f"{pyspark_version()}. On this version use tubemq.spark.consume_in_barrier to "
            f"read and tubemq.spark.send_dataframe to write."
        ) from error


STREAMING_MIN_PYSPARK = (4, 2)


def require_streaming_source(version: str | None = None) -> None:
    """Refuses ``readStream.format("tubemq")`` on PySpark 4.0 and 4.1, where the source
    cannot keep its exactly-once promise (see ``DATA_SOURCE_MIN_PYSPARK``): a clear error
    when the query starts instead of duplicates after a restart."""
    text = version or pyspark_version()
    numbers = tuple(int(part) for part in text.split(".")[:2] if part.isdigit())
    if numbers < STREAMING_MIN_PYSPARK:
        raise RuntimeError(
            f"the tubemq streaming source needs PySpark {DATA_SOURCE_MIN_PYSPARK} or newer "
            f"(read limits and Trigger.AvailableNow for Python sources); this is PySpark "
            f"{text}, where a query restarted from its checkpoint would read committed "
            "micro-batches again. Batch reads and the sink work on it."
        )
