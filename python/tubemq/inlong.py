"""``tubemq.inlong``: InLongMsg packs, the envelope InLong's DataProxy stores in one TubeMQ
message, holding many records with attributes (versions 1-4; version 0 is read too).

``decode(message_or_bytes)`` returns the records of a pack in pack order. Each record's
``body`` is ``bytes``, as InLong's Java class gives a ``byte[]`` (and as a message's
``value`` is): the pack is read in place, and each body copied once. Its ``attrs`` are the pack's
attributes merged with the record's own as InLong's Java class does (v3: the record's own
win; v4: the pack's win, with ``dt``, ``cnt`` and numeric ``groupId``/``streamId`` from the
header). A payload that is not a valid pack raises :class:`InLongMsgError` naming what is
wrong and where; the native decoder checks every length before it uses it.

``encode(records, attrs=...)`` builds a pack that InLong's own ``InLongMsg`` class reads.

A consumer made with ``decode="inlongmsg"`` hands out :class:`ConsumedRecord` s instead of
messages (:mod:`tubemq._consumer_base` has the commit rule); a pack it cannot decode raises
:class:`PackDecodeError`, naming the partition and the message.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from tubemq import _core
from tubemq._config import check_bytes_like
from tubemq.errors import ArgumentTypeError, ConfigError, TubeMQError

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "ConsumedRecord",
    "InLongMsgError",
    "Pack",
    "PackDecodeError",
    "Record",
    "decode",
    "decode_pack",
    "encode",
    "is_inlong_msg",
]

DEFAULT_MAX_DECOMPRESSED = 64 << 20  # per compressed block
INLONG_ERROR_CODE = 1020  # a client code of its own: a payload, not an argument, is bad

BytesLike = Union[bytes, bytearray, memoryview]
Attrs = Union[Mapping[str, str], str, None]


class InLongMsgError(TubeMQError, ValueError):
    """A payload that is not a valid InLongMsg pack. ``kind`` says what is wrong
    (``not_inlongmsg``, ``unsupported_version``, ``truncated``, ``length_out_of_range``,
    ``malformed``, ``unsupported_encoding``, ``decompression``, ``attribute_format``,
    ``attribute_encoding``) and ``offset`` where, in bytes from the pack's start."""

    def __init__(self, kind: str, offset: int, message: str, where: str = "") -> None:
        super().__init__(INLONG_ERROR_CODE, f"{where}{kind} at offset {offset}: {message}")
        self.kind = kind
        self.offset = offset
        self.detail = message

    @property
    def retriable(self) -> bool:
        return False


@dataclass(frozen=True)
class Record:
    """One record of a pack."""

    body: bytes
    attrs: dict[str, str]
    raw_attr: str | None  # v0-v3: the attribute string the record came with
    create_time_ms: int | None  # the pack's (v4: its data time), None for v0

    @property
    def create_time(self) -> datetime.datetime | None:
        if self.create_time_ms is None:
            return None
        return datetime.datetime.fromtimestamp(self.create_time_ms / 1000, datetime.timezone.utc)


class PackDecodeError(InLongMsgError):
    """A consumed message (``decode="inlongmsg"``) that is not a valid pack. Besides
    ``kind`` and ``offset`` (in the pack) it names where the message is: ``topic``,
    ``partition_key``, ``batch_offset`` (where its fetched batch starts), ``index`` (in
    that batch) and ``message_id``; ``consumed_message`` is the message itself, to inspect,
    store aside, ``commit()`` or ``nack()`` (``message`` is the error's text, as for
    every :class:`TubeMQError`). The consumer counts the message as handed out: the
    next ``poll()`` goes on with the next message."""

    def __init__(self, error: InLongMsgError, message: _core.Message) -> None:
        super().__init__(
            error.kind,
            error.offset,
            error.detail,
            where=f"{message.partition_key}: message {message.index} of the batch at offset "
            f"{message.batch_offset} (message id {message.message_id}) is not a valid "
            "InLongMsg pack: ",
        )
        self.consumed_message = message
        self.topic = message.topic
        self.partition_key = message.partition_key
        self.batch_offset = message.batch_offset
        self.index = message.index
        self.message_id = message.message_id


@dataclass(frozen=True)
class ConsumedRecord(Record):
    """A record handed out by a consumer with ``decode="inlongmsg"``: the record's
    fields, the message (pack) it came from, its ``position`` in the pack and how many
    records the pack holds (``count``). ``commit(record)`` commits the message once the
    record is the pack's last (:mod:`tubemq._consumer_base`)."""

    message: _core.Message
    position: int
    count: int

    @property
    def last(self) -> bool:
        """Whether this is the last record of its pack."""
        return self.position + 1 == self.count

    # A poll loop written for plain messages reads these names; they mean the same here
    # (and are the Spark source's column names with decode).
    @property
    def value(self) -> bytes:
        """The record's body (``body``), as ``Message.value`` is a message's."""
        return self.body

    @property
    def msg_type(self) -> str | None:
        return self.message.msg_type

    @property
    def msg_time(self) -> str | None:
        return self.message.msg_time

    @property
    def topic(self) -> str:
        return self.message.topic

    @property
    def partition_key(self) -> str:
        return self.message.partition_key

    @property
    def batch_offset(self) -> int:
        return self.message.batch_offset

    @property
    def message_id(self) -> int:
        return self.message.message_id


@dataclass(frozen=True)
class Pack:
    """A decoded pack: its header fields and records (``v4`` holds the v4 header)."""

    version: int
    create_time_ms: int | None
    msg_count: int | None
    records: list[Record]
    v4: dict[str, Any] | None = field(default=None)


def _view(data: object) -> memoryview:
    """The bytes of a message or any contiguous buffer, as a flat read-only view."""
    if isinstance(data, str):
        raise ArgumentTypeError("data must be bytes-like or a message, not str", key="data")
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise ArgumentTypeError(
            f"data must be bytes-like or a message, got {type(data).__name__}", key="data"
        ) from None
    check_bytes_like(view, "data")
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view.toreadonly()


def is_inlong_msg(data: object) -> bool:
    """Whether ``data`` has InLongMsg's frame (``0F vv`` at both ends); cheap, and not a
    proof: :func:`decode` still checks the whole pack."""
    return bool(_core.inlong_is_pack(_view(data)))


def decode_pack(data: object, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Pack:
    """Decodes a pack: version, create time, counters and records."""
    if isinstance(max_decompressed, bool) or not isinstance(max_decompressed, int):
        raise ArgumentTypeError("max_decompressed must be an int", key="max_decompressed")
    if max_decompressed < 0:
        raise ConfigError("max_decompressed must be at least 0", key="max_decompressed")
    view = _view(data)
    ok, payload = _core.inlong_decode(view, max_decompressed)
    if not ok:
        kind, offset, message = payload
        raise InLongMsgError(kind, offset, message)
    version, create_time_ms, msg_count, blocks, rows, v4 = payload
    sources = [view, *(memoryview(block) for block in blocks)]
    records = [
        Record(
            body=sources[block][offset : offset + length].tobytes(),
            attrs=attrs,
            raw_attr=raw_attr,
            create_time_ms=create_time_ms,
        )
        for block, offset, length, attrs, raw_attr in rows
    ]
    return Pack(version, create_time_ms, msg_count, records, v4)


def decode(data: object, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list[Record]:
    """The records of the pack in ``data`` (a message or bytes), in pack order."""
    return decode_pack(data, max_decompressed=max_decompressed).records


def consumed_records(message: _core.Message) -> list[ConsumedRecord]:
    """The records of a consumed message, each knowing where it came from; raises
    :class:`PackDecodeError` naming the message if it is not a valid pack."""
    try:
        records = decode_pack(message).records
    except InLongMsgError as error:
        raise PackDecodeError(error, message) from None
    count = len(records)
    return [
        ConsumedRecord(
            record.body, record.attrs, record.raw_attr, record.create_time_ms, message, i, count
        )
        for i, record in enumerate(records)
    ]


def _attr_text(attrs: Attrs, name: str) -> str:
    """An attribute string from a mapping (or a ready string): ``k=v`` joined by ``&``."""
    if attrs is None:
        return ""
    if isinstance(attrs, str):
        return attrs
    if not isinstance(attrs, Mapping):
        raise ArgumentTypeError(
            f"{name} must be a mapping of str to str, a str or None, got {type(attrs).__name__}",
            key=name,
        )
    items = []
    for key, value in attrs.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ArgumentTypeError(f"{name} keys and values must be str", key=name)
        if not key or "&" in key or "=" in key or "&" in value:
            raise ConfigError(
                f"{name}: key {key!r:.40} or its value cannot be written ('&' separates "
                "items, '=' ends a key; keys are not empty)",
                key=name,
            )
        items.append(f"{key}={value}")
    return "&".join(items)


def encode(
    records: Iterable[BytesLike | tuple[BytesLike, Attrs]],
    *,
    attrs: Attrs = None,
    version: int = 1,
    compress: bool = False,
    create_time_ms: int | None = None,
    group_id_num: int = 0,
    stream_id_num: int = 0,
    unique_id: int = 0,
) -> bytes:
    """Builds a pack of ``records``: bodies, or ``(body, attrs)`` pairs.

    * v1/v2: a record's attribute string is ``attrs`` (the pack's) followed by its own
      (so its own win on a clash); one group per distinct string, as InLong's Java class
      builds them.
    * v3: ``attrs`` is the group's attribute string and every record needs its own.
    * v4: ``attrs`` are the common attributes; records may have their own (then all do).
      Group and stream ids travel in the attributes unless ``group_id_num`` or
      ``stream_id_num`` is given (then they are the numeric ids).

    ``compress`` compresses each group (v4: the body) with Snappy. ``create_time_ms``
    defaults to now (v4 keeps whole seconds).
    """
    if isinstance(version, bool) or version not in (1, 2, 3, 4):
        raise ConfigError(f"version must be 1, 2, 3 or 4, got {version!r}", key="version")
    if not isinstance(compress, bool):
        raise ArgumentTypeError("compress must be a bool", key="compress")
    if create_time_ms is None:
        create_time_ms = int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
    for value, name, high in (
        (create_time_ms, "create_time_ms", 2**63 - 1),
        (group_id_num, "group_id_num", 0xFFFF),
        (stream_id_num, "stream_id_num", 0xFFFF),
        (unique_id, "unique_id", 0xFFFFFFFF),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"{name} must be an int", key=name)
        if not 0 <= value <= high:
            raise ConfigError(f"{name} must be within 0..{high}, got {value}", key=name)
    pack_attr = _attr_text(attrs, "attrs")
    pairs: list[tuple[BytesLike, str]] = []
    if isinstance(records, (bytes, bytearray, memoryview, str)):
        raise ArgumentTypeError("records must be an iterable of records", key="records")
    for record in records:
        if isinstance(record, tuple):
            if len(record) != 2:
                raise ConfigError("a record is a body or a (body, attrs) pair", key="records")
            body, own = record
            own_text = _attr_text(own, "records")
        else:
            body, own_text = record, ""
        check_bytes_like(body, "records")
        if version in (1, 2):  # the pack's attributes, then the record's (which win)
            own_text = "&".join(text for text in (pack_attr, own_text) if text)
        pairs.append((body, own_text))
    numeric = group_id_num or stream_id_num
    try:
        return bytes(
            _core.inlong_encode(
                pairs,
                version,
                compress,
                create_time_ms,
                pack_attr,
                group_id_num,
                stream_id_num,
                0 if numeric else 0x0004,
                unique_id,
            )
        )
    except ValueError as error:
        raise ConfigError(f"records: {error}", key="records") from None
