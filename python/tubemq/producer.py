"""``tubemq.Producer``: publishes messages to TubeMQ topics.

The class is a thin shell over the native producer: it validates the configuration,
starts the native client, and turns native errors into :mod:`tubemq.errors` exceptions.
Every blocking call releases the GIL and can be interrupted with Ctrl-C.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from tubemq import _core, _lifecycle, _log
from tubemq._config import PRODUCER_SCHEMA, native_client_config
from tubemq.errors import ClientClosedError, ConfigError, ForkedClientError


def _topic_list(topics: str | Iterable[str]) -> list[str]:
    items = [topics] if isinstance(topics, str) else list(topics)
    for topic in items:
        if not isinstance(topic, str) or not topic.strip():
            raise ConfigError(f"topic names must be non-blank strings, got {topic!r}", key="topics")
    return [topic.strip() for topic in items]


class Producer:
    """A producer registered to a TubeMQ master.

    ``Producer({"master": "127.0.0.1:8715"})`` or ``Producer(master="127.0.0.1:8715")``.
    The constructor registers to the master and returns once it has answered; it raises a
    :class:`tubemq.TubeMQError` subclass if that fails. Use it as a context manager, or call
    :meth:`close`; clients still open at interpreter exit are closed there.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        self._config = PRODUCER_SCHEMA.validate(config, overrides)
        self._pid = os.getpid()
        _log.start_log_dispatcher()
        self._native: _core.Producer | None = _core.Producer(native_client_config(self._config))
        try:
            self._native.start()
        except BaseException:
            self._native.close(timeout=1.0)
            self._native = None
            raise
        _lifecycle.track(self)

    @property
    def config(self) -> dict[str, Any]:
        """The validated configuration, defaults filled in (a copy)."""
        return dict(self._config)

    @property
    def client_id(self) -> str:
        return self._live().client_id

    def publish(self, topics: str | Iterable[str], timeout: float | None = None) -> None:
        """Declares topics to publish to; returns once the master lists them usable."""
        self._live().publish(_topic_list(topics), timeout)

    def published_topics(self) -> list[str]:
        return sorted(self._live().published_topics())

    def partitions(self, topic: str) -> list[_core.PartitionInfo]:
        """The writable partitions of a published topic, as the master last reported them."""
        return list(self._live().partitions(topic))

    def close(self, timeout: float | None = 5.0) -> None:
        """Unregisters from the master and releases connections; idempotent."""
        if self._native is None:
            return
        native = self._live()
        self._native = None
        _lifecycle.untrack(self)
        native.close(timeout)

    @property
    def closed(self) -> bool:
        return self._native is None

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._native is None else self._native.client_id
        return f"<tubemq.Producer {state} master={self._config['master']}>"

    def _live(self) -> _core.Producer:
        native = self._native
        if self._pid != os.getpid():
            raise ForkedClientError(
                1012,
                f"this producer was created in process {self._pid} before fork(); "
                "create a new client in the child process",
            )
        if native is None:
            raise ClientClosedError(2002, "the producer is closed")
        return native
