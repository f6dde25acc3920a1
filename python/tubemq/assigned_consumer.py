"""``tubemq.AssignedConsumer``: the application, not the master, picks the partitions.

A client-balanced group member (behaviour.md §5) lists the partitions of its topics
with :meth:`AssignedConsumer.partitions`, takes the ones it wants with
:meth:`AssignedConsumer.assign` (each from the group's committed offset or from an
explicit offset), and gives them back with :meth:`AssignedConsumer.unassign`. Polling,
committing and offsets work as in :class:`tubemq.Consumer`.

Offsets are positions in the broker's index, 28 bytes per message
(:data:`INDEX_ENTRY_SIZE`). The partitions of one store share its index, so the offsets
of one partition's messages are increasing but not consecutive; a batch starts at
``message.batch_offset`` and, once committed, the partition's ``offsets()[key]["offset"]``
is where the next batch starts.

Members that split a group's partitions between them declare ``source_count`` (how
many members) and a distinct ``node_id`` each; :func:`partitions_for_node` computes a
member's share exactly as the upstream Java example does, so Python and Java members
of one group agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, overload

from tubemq import _core, _log
from tubemq._config import (
    ASSIGNED_CONSUMER_SCHEMA,
    check_text,
    native_client_config,
    native_consumer_options,
)
from tubemq._consumer_base import INDEX_ENTRY_SIZE, ConsumerBase, Item, Message, _check_keys
from tubemq.errors import ArgumentTypeError, ConfigError
from tubemq.inlong import ConsumedRecord

PartitionMeta = _core.PartitionMeta

__all__ = [
    "INDEX_ENTRY_SIZE",
    "AssignedConsumer",
    "PartitionMeta",
    "java_string_hash",
    "message_count",
    "partitions_for_node",
]


class AssignedConsumer(ConsumerBase[Item]):
    """A client-balanced consumer group member.

    ``AssignedConsumer(master=..., group="g", topics=["t"], source_count=2, node_id=0)``.
    The constructor registers with the master; nothing is held until :meth:`assign`.
    ``decode="inlongmsg"`` hands out InLongMsg records, as for :class:`tubemq.Consumer`.
    """

    _kind = "assigned consumer"

    @overload
    def __init__(
        self: AssignedConsumer[Message],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["none"] | None = None,
        stats_cb: Callable[[dict[str, Any]], Any] | None = None,
        **overrides: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: AssignedConsumer[ConsumedRecord],
        config: Mapping[str, Any] | None = None,
        *,
        decode: Literal["inlongmsg"],
        stats_cb: Callable[[dict[str, Any]], Any] | None = None,
        **overrides: Any,
    ) -> None: ...

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        decode: str | None = None,
        stats_cb: Callable[[dict[str, Any]], Any] | None = None,
        **overrides: Any,
    ) -> None:
        if decode is not None:
            overrides["decode"] = decode
        validated = ASSIGNED_CONSUMER_SCHEMA.validate(config, overrides)
        source_count, node_id = validated["source_count"], validated["node_id"]
        if source_count > 0 and not 0 <= node_id < source_count:
            raise ConfigError(
                f"node_id {node_id} must be in [0, {source_count}) for source_count {source_count}",
                key="node_id",
            )
        _log.start_log_dispatcher()
        native = _core.Consumer(
            native_client_config(validated),
            native_consumer_options(validated, assigned=True),
        )
        super().__init__(validated, native, stats_cb)

    def __enter__(self) -> AssignedConsumer[Item]:
        return self

    @property
    def source_count(self) -> int:
        return int(self._config["source_count"])

    @property
    def node_id(self) -> int:
        return int(self._config["node_id"])

    def partitions(self, refresh: bool = False) -> list[PartitionMeta]:
        """The partitions of the subscribed topics, sorted by key. The master is asked
        again only if the last answer is older than 10 s, or with ``refresh``."""
        _check_flag(refresh, "refresh")
        return sorted(self._live().query_partitions(refresh), key=lambda meta: meta.key)

    def my_partitions(self, refresh: bool = False) -> list[str]:
        """Keys of the subscribable partitions that are this member's share
        (:func:`partitions_for_node`); all of them when ``source_count`` is 0."""
        _check_flag(refresh, "refresh")
        keys = [meta.key for meta in self.partitions(refresh) if meta.subscribable]
        if self.source_count <= 0:
            return keys
        return partitions_for_node(keys, self.source_count, self.node_id)

    def assign(self, offsets: Mapping[str, int | None] | Iterable[str]) -> None:
        """Takes partitions: ``{key: offset}`` starts a partition at that index offset
        (the broker clamps it to what it holds), ``{key: None}`` (or a plain list of
        keys) resumes at the group's committed offset. Taking a held partition again
        moves it; the messages of its current batch not handed out yet are dropped.

        Raises :class:`tubemq.PartitionOccupiedError` when another member holds one
        (and, within 5 s of such a refusal, without asking the broker again)."""
        if isinstance(offsets, Mapping):
            items = list(offsets.items())
        else:
            items = [(key, None) for key in _check_keys(offsets, "offsets")]
        for key, offset in items:
            check_text(key, "offsets")
            if offset is not None and (
                isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
            ):
                raise ConfigError(
                    f"offsets: the offset of {key} must be a non-negative int or None, "
                    f"got {offset!r}",
                    key="offsets",
                )
        native = self._live()
        for key, offset in items:
            self._settle_partition(key, consumed=False)
            native.assign(key, -1 if offset is None else offset)

    def seek(self, partition_key: str, offset: int) -> None:
        """Moves a held (or not yet held) partition to ``offset``."""
        check_text(partition_key, "partition_key")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ArgumentTypeError(
                f"offset must be an int, got {type(offset).__name__}", key="offset"
            )
        if offset < 0:
            raise ConfigError(f"offset must be 0 or more, got {offset}", key="offset")
        self.assign({partition_key: offset})

    def unassign(self, partition_keys: Iterable[str], commit: bool = True) -> None:
        """Gives partitions back. With ``commit`` the last batch fetched from each counts
        as consumed if all its messages were handed out; otherwise, or without
        ``commit``, it is rolled back for the group's next reader."""
        partition_keys = _check_keys(partition_keys)
        _check_flag(commit, "commit")
        native = self._live()
        for key in partition_keys:
            self._settle_partition(key, consumed=commit)
            native.unassign(key, commit)


def _check_flag(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r}", key=name)


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int, got {type(value).__name__}", key=name)
    if value < minimum:
        raise ConfigError(f"{name} must be {minimum} or more, got {value}", key=name)
    return value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` of ``text`` (over UTF-16 code units), as a signed
    32-bit int."""
    check_text(text, "text")
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        value = (31 * value + int.from_bytes(encoded[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partitions_for_node(keys: Iterable[str], source_count: int, node_id: int) -> list[str]:
    """This node's share of ``keys``: those whose Java string hash, taken as unsigned
    32 bits, is ``node_id`` modulo ``source_count`` (the upstream example's rule)."""
    if isinstance(keys, Iterable) and not isinstance(keys, (str, bytes)):
        keys = list(keys)  # a generator too; _check_keys then checks each item
    keys = _check_keys(keys, "keys")
    _check_count(source_count, "source_count", 0)
    _check_count(node_id, "node_id", 0)
    if source_count <= 0 or not 0 <= node_id < source_count:
        raise ConfigError(
            f"need 0 <= node_id < source_count, got node_id={node_id}, source_count={source_count}",
            key="node_id",
        )
    return sorted(
        key for key in keys if (java_string_hash(key) & 0xFFFFFFFF) % source_count == node_id
    )


def message_count(start_offset: int, end_offset: int) -> int:
    """Index entries between two offsets of one store (28 bytes each): the messages of
    all its partitions in that span."""
    _check_count(start_offset, "start_offset", 0)
    _check_count(end_offset, "end_offset", 0)
    return max(0, end_offset - start_offset) // INDEX_ENTRY_SIZE
