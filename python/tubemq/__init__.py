"""tubemq: the Python client for Apache InLong TubeMQ, on a native C++ core.

Start here: :class:`Producer`, the exceptions in :mod:`tubemq.errors`, and the
``tubemq cluster`` command for a local test cluster. Importing this package starts no
thread and opens no connection.
"""

from tubemq import _core
from tubemq.admin import AdminClient
from tubemq.assigned_consumer import (
    INDEX_ENTRY_SIZE,
    AssignedConsumer,
    PartitionMeta,
    java_string_hash,
    message_count,
    partitions_for_node,
)
from tubemq.consumer import Consumer, Message
from tubemq.errors import (
    AdminError,
    ArgumentTypeError,
    AuthenticationError,
    AuthorizationError,
    ClientClosedError,
    CommitError,
    ConfigError,
    ConnectionError,
    ConsumerGroupConflictError,
    ForkedClientError,
    InvalidMessageError,
    OutcomeUnknownError,
    PartitionOccupiedError,
    QueueFullError,
    RemoteError,
    ServerError,
    TimeoutError,
    TopicNotDeployedError,
    TubeMQError,
)
from tubemq.producer import Producer, SendHandle, SendResult

__version__: str = _core.__version__

__all__ = [
    "INDEX_ENTRY_SIZE",
    "AdminClient",
    "AdminError",
    "ArgumentTypeError",
    "AssignedConsumer",
    "AuthenticationError",
    "AuthorizationError",
    "ClientClosedError",
    "CommitError",
    "ConfigError",
    "ConnectionError",
    "Consumer",
    "ConsumerGroupConflictError",
    "ForkedClientError",
    "InvalidMessageError",
    "Message",
    "OutcomeUnknownError",
    "PartitionMeta",
    "PartitionOccupiedError",
    "Producer",
    "QueueFullError",
    "RemoteError",
    "SendHandle",
    "SendResult",
    "ServerError",
    "TimeoutError",
    "TopicNotDeployedError",
    "TubeMQError",
    "__version__",
    "java_string_hash",
    "message_count",
    "partitions_for_node",
]
