"""Batch reads: ``spark.read.format("tubemq")``.

The reader resolves ``startingOffsets`` / ``endingOffsets`` against what the brokers hold
when the query is planned, and reads each partition's range in a task of its own (more
with ``minPartitions``). What was planned is what is read: messages that arrive later are
not part of the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from tubemq.errors import ConfigError
from tubemq.spark._offsets import ReadRange, plan, query_ranges, resolve
from tubemq.spark._options import SourceOptions
from tubemq.spark._reader import read_range


class TubeMQBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self._options
        ranges = query_ranges(options)
        starts = resolve(options.starting, ranges, "startingOffsets")
        ends = resolve(options.ending, ranges, "endingOffsets")
        for key, start in starts.items():
            if start > ends[key]:
                raise ConfigError(
                    f"{key} starts at {start}, after its end {ends[key]} "
                    "(startingOffsets / endingOffsets)",
                    key="startingOffsets",
                )
        return plan(starts, ends, options.group, options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ReadRange):
            return iter(())  # Spark's stand-in when there is nothing to read
        return read_range(partition, self._options)
