"""``tubemq.Consumer``: consumes topics as a member of a server-balanced group.

The master assigns the partitions of the group's topics to its members; the consumer
fetches batches from the partitions it holds and hands out their messages one by one
(see :mod:`tubemq._consumer_base` for commits and delivery guarantees).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, overload

from tubemq import _core, _log
from tubemq._config import CONSUMER_SCHEMA, native_client_config, native_consumer_options
from tubemq._consumer_base import ConsumerBase, Item, Message
from tubemq.inlong import ConsumedRecord

__all__ = ["Consumer", "Message"]

PartitionsCallback = Callable[[list[str]], Any]
StatsCallback = Callable[[dict[str, Any]], Any]


class Consumer(ConsumerBase[Item]):
    """A member of a consumer group.

    ``Consumer(master="127.0.0.1:8715", group="g1", topics=["t1"])``; ``topics`` may be a
    dict of topic to msgType filter items. The constructor joins the group and returns
    once the master has answered; partitions arrive with the following rebalance.
    ``on_assign(keys)`` / ``on_revoke(keys)`` are called from ``poll()``, on the caller's
    thread, with the partition keys this member gained or lost since the last call.
    ``stats_cb(metrics)`` is called every ``stats_interval_ms`` from a thread of its own.

    ``decode="inlongmsg"`` makes it a ``Consumer[ConsumedRecord]``: ``poll()`` hands out
    the records of InLongMsg packs (pass it as a keyword for type checkers to see it).
    """

    @overload
    def __init__(
        self: Consumer[Message],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["none"] | None = None,
        on_assign: PartitionsCallback | None = None,
        on_revoke: PartitionsCallback | None = None,
        stats_cb: StatsCallback | None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: Consumer[ConsumedRecord],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["inlongmsg"],
        on_assign: PartitionsCallback | None = None,
        on_revoke: PartitionsCallback | None = None,
        stats_cb: StatsCallback | None = None,
        **overrides: Any,
    ) -> None: ...

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        decode: str | None = None,
        on_assign: PartitionsCallback | None = None,
        on_revoke: PartitionsCallback | None = None,
        stats_cb: StatsCallback | None = None,
        **overrides: Any,
    ) -> None:
        if decode is not None:
            overrides["decode"] = decode
        validated = CONSUMER_SCHEMA.validate(config, overrides)
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._assigned: set[str] = set()
        _log.start_log_dispatcher()
        native = _core.Consumer(
            native_client_config(validated),
            native_consumer_options(validated, assigned=False),
        )
        super().__init__(validated, native, stats_cb)

    def __enter__(self) -> Consumer[Item]:
        return self

    @property
    def bound_offsets_applied(self) -> bool | None:
        """Bound consume (``session_key``): True once this member's ``bound_offsets``
        took effect; False when it joined a session the master had allocated already,
        so its partitions resume at the group's commits instead (also logged once as a
        warning); None before its first assignment, or without a session."""
        return self._live().bound_offsets_applied()

    def _after_fetch(self, native: _core.Consumer) -> None:
        # Rebalances happen on I/O threads; the callbacks run here, on the caller's
        # thread, between fetches, with the partitions that left first.
        if self._on_assign is None and self._on_revoke is None:
            return
        held = set(native.held_partitions())
        revoked, assigned = sorted(self._assigned - held), sorted(held - self._assigned)
        self._assigned = held
        if revoked and self._on_revoke is not None:
            self._on_revoke(revoked)
        if assigned and self._on_assign is not None:
            self._on_assign(assigned)
