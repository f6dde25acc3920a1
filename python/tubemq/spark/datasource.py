"""The ``tubemq`` data source: one class that Spark instantiates with the options.

It only parses options and hands out the reader or writer that does the work; every
object it returns is pickled to Python workers, so none of them holds a client.
"""

from __future__ import annotations

from tubemq.spark._versions import require_data_source_api

require_data_source_api()

from pyspark.sql.datasource import (  # noqa: E402 - after the version check
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType  # noqa: E402

from tubemq.spark._arrow import DECODED_SCHEMA_DDL, SCHEMA_DDL  # noqa: E402
from tubemq.spark._options import sink_options, source_options  # noqa: E402


class TubeMQDataSource(DataSource):
    """``spark.read`` / ``readStream`` / ``write`` / ``writeStream`` ``.format("tubemq")``."""

    @classmethod
    def name(cls) -> str:
        return "tubemq"

    def schema(self) -> str:
        # Checked in full by source_options(); here only which columns to announce.
        decode = str(self.options.get("decode") or "").strip().lower()
        return DECODED_SCHEMA_DDL if decode == "inlongmsg" else SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from tubemq.spark.source import TubeMQBatchReader

        return TubeMQBatchReader(source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from tubemq.spark._versions import require_streaming_source
        from tubemq.spark.stream_source import TubeMQStreamReader

        require_streaming_source()

        return TubeMQStreamReader(source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from tubemq.spark.sink import TubeMQWriter, check_schema

        options = sink_options(self.options)
        return TubeMQWriter(options, check_schema(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from tubemq.spark.sink import TubeMQStreamWriter, check_schema

        options = sink_options(self.options)
        return TubeMQStreamWriter(options, check_schema(schema, options))
