"""The ``tubemq`` sink: ``df.write.format("tubemq")`` and ``df.writeStream.format("tubemq")``.

Each row becomes one message. Columns (anything else is refused when the query starts):

========== ================================ ===============================================
column     type                             meaning
========== ================================ ===============================================
value      binary or string (required)      the message body; strings are sent as UTF-8
topic      string                           the topic; null or absent: the ``topic`` option
key        string                           partition key: rows with one key go to one
                                            partition (the producer hashes it)
partition  string or int                    the partition to send the row to: its key
                                            ``brokerId:topic:partitionId`` or its id; null:
                                            routed as usual. Not with a non-null ``key``
attrs      map<string,string>               message attributes
msg_type   string                           the msgType consumers can filter on
msg_time   timestamp or string              the message time (``yyyyMMddHHmm`` if string)
========== ================================ ===============================================

Each task sends its rows asynchronously through its process's cached producer, flushes,
and returns its commit message only when the broker has confirmed every send; any failed
send fails the task. A retried task or a re-run micro-batch sends its rows again, so the
sink is at-least-once: a consumer may see a row twice, never lose one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import Row

from tubemq.spark._options import SinkOptions
from tubemq.spark._send import check_schema, write_rows

__all__ = ["SinkCommitMessage", "TubeMQStreamWriter", "TubeMQWriter", "check_schema"]

_logger = logging.getLogger("tubemq.spark")


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task sent: row count and the topics it wrote to."""

    rows: int
    topics: tuple[str, ...]


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.rows for m in messages if isinstance(m, SinkCommitMessage))


class TubeMQWriter(DataSourceWriter):
    """Batch writes: ``df.write.format("tubemq")``."""

    def __init__(self, options: SinkOptions, columns: tuple[str, ...]) -> None:
        self._options = options
        self._columns = columns

    def write(self, iterator: Iterator[Row]) -> SinkCommitMessage:
        rows, topics = write_rows(self._options, self._columns, iterator)
        return SinkCommitMessage(rows=rows, topics=topics)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _logger.info("tubemq sink: %d rows written", _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _logger.warning(
            "tubemq sink: write aborted after %d rows were sent (they stay sent)",
            _total(messages),
        )


class TubeMQStreamWriter(DataSourceStreamWriter):
    """Streaming writes: ``df.writeStream.format("tubemq")``."""

    def __init__(self, options: SinkOptions, columns: tuple[str, ...]) -> None:
        self._options = options
        self._columns = columns

    def write(self, iterator: Iterator[Row]) -> SinkCommitMessage:
        rows, topics = write_rows(self._options, self._columns, iterator)
        return SinkCommitMessage(rows=rows, topics=topics)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _logger.info("tubemq sink: batch %d, %d rows written", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _logger.warning(
            "tubemq sink: batch %d aborted after %d rows were sent (they stay sent)",
            batchId,
            _total(messages),
        )
