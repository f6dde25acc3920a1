"""The exceptions of tubemq: one hierarchy under :class:`TubeMQError`.

Every error carries the numeric ``code`` (TubeMQ's own server codes below 1000, the
client's codes from 1000 up), the ``message`` as the native core or the server wrote it,
and ``retriable``: whether the same operation may succeed if tried again later.
"""

from __future__ import annotations

import builtins

from tubemq import _core


class TubeMQError(Exception):
    """Base class of every error raised by tubemq."""

    code: int
    message: str

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{code} {_core.error_code_name(code)}] {message}")
        self.code = code
        self.message = message

    @property
    def code_name(self) -> str:
        """The symbolic name of the code, e.g. ``"HB_NO_NODE"``."""
        return _core.error_code_name(self.code)

    @property
    def retriable(self) -> bool:
        return _core.is_retriable(self.code)


class ConfigError(TubeMQError, ValueError):
    """A configuration key or argument is missing, unknown, mistyped or out of range."""

    def __init__(self, message: str, key: str | None = None, code: int = 1010) -> None:
        super().__init__(code, message)
        self.key = key


class ArgumentTypeError(ConfigError, TypeError):
    """A configuration key or argument of the wrong type (also a ``TypeError``)."""


class TimeoutError(TubeMQError, builtins.TimeoutError):
    """No answer within the deadline, from a call that is safe to repeat (``retriable``):
    a publish, a send that waited in vain for a place in the in-flight window (nothing
    was sent), a close. A send that timed out after its message was handed to the
    network raises the subclass :class:`OutcomeUnknownError` instead."""


class OutcomeUnknownError(TimeoutError):
    """A send timed out after its message was handed to the network (1003): the broker
    may have stored it or not, and may still store it. ``retriable`` is False because a
    blind retry may store the message twice; retry only if duplicates are acceptable (or
    deduplicated downstream), or check what the topic holds first."""


class ConnectionError(TubeMQError, builtins.ConnectionError):
    """A connection could not be made, was closed or reset, or carried bad bytes."""


class RemoteError(TubeMQError):
    """The server answered with an exception; ``message`` is ``"<class>#<text>"``."""


class ServerError(TubeMQError):
    """The server refused or failed the request (a TubeMQ error code)."""


class AuthenticationError(ServerError):
    """Credentials missing, wrong or stale (415)."""


class AuthorizationError(ServerError):
    """The consumer group is not allowed to consume (450, 455)."""


class AdminError(ServerError):
    """The master's admin API refused or failed a call: ``code`` and ``message`` are the
    server's (its ``errCode``, or the HTTP status when it answered no JSON)."""


class PartitionOccupiedError(ServerError):
    """Another consumer holds the partition (410), or held it less than 5 s ago (421)."""


class ConsumerGroupConflictError(ServerError):
    """This member's settings disagree with the rest of its group (424-430)."""


class TopicNotDeployedError(ServerError):
    """A subscribed topic is unknown to the master (431)."""


class InvalidMessageError(TubeMQError, ValueError):
    """A message failed a local check before anything was sent (440-445)."""


class QueueFullError(TubeMQError):
    """The in-flight window is full and the call was asked not to block."""


class ClientClosedError(TubeMQError):
    """The client is closed, or was closed while the call waited (420, 2002)."""


class CommitError(TubeMQError):
    """A commit or nack for a batch that is no longer outstanding (2004)."""


class ForkedClientError(TubeMQError):
    """A client created before ``fork()`` was used in the child process."""


# One table from code to class; codes not listed are plain ServerErrors.
_CLASS_BY_CODE: dict[int, type[TubeMQError]] = {
    410: PartitionOccupiedError,
    421: PartitionOccupiedError,
    415: AuthenticationError,
    420: ClientClosedError,
    **{code: ConsumerGroupConflictError for code in range(424, 431)},
    431: TopicNotDeployedError,
    **{code: InvalidMessageError for code in range(440, 446)},
    450: AuthorizationError,
    455: AuthorizationError,
    1000: TimeoutError,
    1001: ConnectionError,
    1002: ConnectionError,
    1003: OutcomeUnknownError,
    1004: RemoteError,
    1010: ConfigError,
    1011: QueueFullError,
    1012: ForkedClientError,
    2002: ClientClosedError,
    2004: CommitError,
    5001: ConnectionError,
}


def _check_code(code: object) -> None:
    if isinstance(code, bool) or not isinstance(code, int):
        raise ArgumentTypeError(f"code must be int, got {type(code).__name__}", key="code")
    if not -(2**31) <= code < 2**31:  # the native codes are 32-bit
        raise ConfigError(f"code must fit in 32 bits, got {code}", key="code")


def error_class_for(code: int) -> type[TubeMQError]:
    """The exception class raised for ``code``."""
    _check_code(code)
    return _CLASS_BY_CODE.get(code, ServerError)


def error_from_code(code: int, message: str) -> TubeMQError:
    """Builds the exception for a native error (installed into ``_core``)."""
    _check_code(code)
    if not isinstance(message, str):
        raise ArgumentTypeError(f"message must be str, got {type(message).__name__}", key="message")
    cls = error_class_for(code)
    if cls is ConfigError:
        return ConfigError(message, code=code)
    return cls(code, message)


_core.set_error_factory(error_from_code)
