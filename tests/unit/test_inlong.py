"""tubemq.inlong without Java: worked examples of the format (docs/inlong.md) decode
as stated and our encoder rebuilds them byte for byte; every malformed pack is one typed
InLongMsgError; bodies are views, not copies."""

from __future__ import annotations

import pytest

import tubemq
import tubemq.aio
from tubemq import inlong


def _hex(text: str) -> bytes:
    return bytes.fromhex(text)


CREATE = 1700000000000
V1 = _hex(
    "0F01 0000018BCFE56800 00000001 001B 6D3D3026696E616D653D64656D6F26743D32303233313131343232"
    " 00000014 00 00000005 68656C6C6F 00000006 776F726C6421 0F01"
)
V1_SNAPPY = _hex(
    "0F01 0000018BCFE56800 00000001 001B 6D3D3026696E616D653D64656D6F26743D32303233313131343232"
    " 00000016 01 13 48 00000005 68656C6C6F 00000006 776F726C6421 0F01"
)
V2 = _hex(
    "0F02 0000018BCFE56800 00000002 00000002"
    " 0018 6D3D3026696E616D653D6126743D32303233313131343232 00000001 0000000A 00"
    " 00000005 68656C6C6F"
    " 0018 6D3D3026696E616D653D6226743D32303233313131343232 00000001 0000000B 00"
    " 00000006 776F726C6421 0F02"
)
V3 = _hex(
    "0F03 0000018BCFE56800 00000002 00000001 000E 6D3D3026696E616D653D64656D6F"
    " 0000002A 00 00000025 00000005 68656C6C6F 00000005 7365713D31"
    " 00000006 776F726C6421 00000005 7365713D32 0F03"
)
V4_A = _hex(
    "0F04 00000042 07 0000 0000 0004 6553F100 0002 00000001 00000013"
    " 00000005 68656C6C6F 00000006 776F726C6421"
    " 0016 67726F757049643D673126737472656D49643D7331 EE01 0F04".replace(
        "737472656D", "73747265616D"
    )
)
V4_B = _hex(
    "0F04 00000050 07 0007 0009 0001 6553F100 0002 00000001 00000025"
    " 00000005 68656C6C6F 00000005 7365713D31 00000006 776F726C6421 00000005 7365713D32"
    " 0012 72746D733D31373030303030303030313233 EE01 0F04"
)
DEMO = {"m": "0", "iname": "demo", "t": "2023111422"}


def _content(records):
    return [(bytes(r.body), r.attrs) for r in records]


def test_v1_stored_and_snappy_decode_to_the_same_records():
    for pack in (V1, V1_SNAPPY):
        decoded = inlong.decode_pack(pack)
        assert (decoded.version, decoded.create_time_ms, decoded.msg_count) == (1, CREATE, None)
        assert _content(decoded.records) == [(b"hello", DEMO), (b"world!", DEMO)]
        assert decoded.records[0].raw_attr == "m=0&iname=demo&t=2023111422"
        assert decoded.records[0].create_time.year == 2023


def test_v2_v3_and_v4_examples():
    assert _content(inlong.decode(V2)) == [
        (b"hello", {"m": "0", "iname": "a", "t": "2023111422"}),
        (b"world!", {"m": "0", "iname": "b", "t": "2023111422"}),
    ]
    v3 = inlong.decode(V3)
    assert [r.raw_attr for r in v3] == ["m=0&iname=demo&seq=1", "m=0&iname=demo&seq=2"]
    assert v3[1].attrs == {"m": "0", "iname": "demo", "seq": "2"}
    common = {"dt": str(CREATE), "cnt": "1"}  # cnt as inlong-common 1.5.0 writes it
    pack = inlong.decode_pack(V4_A)
    assert pack.create_time_ms == CREATE and pack.msg_count == 2
    assert pack.v4 is not None and pack.v4["ext_field"] == 4 and not pack.v4["compressed"]
    assert _content(pack.records) == [
        (b"hello", {"groupId": "g1", "streamId": "s1", **common}),
        (b"world!", {"groupId": "g1", "streamId": "s1", **common}),
    ]
    numeric = {"rtms": "1700000000123", "groupId": "7", "streamId": "9", **common}
    assert _content(inlong.decode(V4_B)) == [
        (b"hello", {"seq": "1", **numeric}),
        (b"world!", {"seq": "2", **numeric}),
    ]


def test_the_encoder_rebuilds_the_examples_byte_for_byte():
    demo = "m=0&iname=demo&t=2023111422"
    assert inlong.encode([b"hello", b"world!"], attrs=demo, create_time_ms=CREATE) == V1
    assert (
        inlong.encode([b"hello", b"world!"], attrs=demo, create_time_ms=CREATE, compress=True)
        == V1_SNAPPY
    )
    pairs = [(b"hello", "m=0&iname=a&t=2023111422"), (b"world!", "m=0&iname=b&t=2023111422")]
    assert inlong.encode(pairs, version=2, create_time_ms=CREATE) == V2
    own = [(b"hello", {"seq": "1"}), (b"world!", {"seq": "2"})]
    assert inlong.encode(own, attrs="m=0&iname=demo", version=3, create_time_ms=CREATE) == V3
    assert (
        inlong.encode(
            [b"hello", b"world!"],
            attrs={"groupId": "g1", "streamId": "s1"},
            version=4,
            create_time_ms=CREATE,
            unique_id=1,
        )
        == V4_A
    )
    assert (
        inlong.encode(
            own,
            attrs="rtms=1700000000123",
            version=4,
            create_time_ms=CREATE,
            unique_id=1,
            group_id_num=7,
            stream_id_num=9,
        )
        == V4_B
    )


@pytest.mark.parametrize("version", [1, 2, 3, 4])
@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(version, compress):
    bodies = [b"a", bytes(range(256)), b"x" * 70000, b"\x0f\x01"]
    records = [(body, {"seq": str(i)}) for i, body in enumerate(bodies)]
    pack = inlong.encode(
        records, attrs={"k": "v é"}, version=version, compress=compress, create_time_ms=CREATE
    )
    decoded = inlong.decode(pack)
    assert [bytes(r.body) for r in decoded] == bodies
    assert all(r.attrs["k"] == "v é" for r in decoded)
    if version >= 3:
        assert [r.attrs["seq"] for r in decoded] == ["0", "1", "2", "3"]


def test_bodies_are_bytes_of_their_own():
    buffer = bytearray(V1)
    records = inlong.decode(buffer)
    assert type(records[0].body) is bytes and records[0].body.startswith(b"h")
    buffer[0x34] = ord("J")  # a body is its own bytes, as Java's byte[] is
    assert records[0].body == b"hello"
    assert inlong.is_inlong_msg(V1) and not inlong.is_inlong_msg(b"plain text")


def test_zero_records_and_an_empty_record_are_valid():
    empty = inlong.encode([], create_time_ms=CREATE)
    assert len(empty) == 16 and inlong.decode(empty) == []
    [record] = inlong.decode(inlong.encode([b""], attrs="a=1", create_time_ms=CREATE))
    assert bytes(record.body) == b""


def _patch(pack: bytes, offset: int, new: bytes) -> bytes:
    return pack[:offset] + new + pack[offset + len(new) :]


MALFORMED = [
    ("short", b"\x0f\x01\x0f", "not_inlongmsg"),
    ("no frame", b"hello world", "not_inlongmsg"),
    ("tail version differs", V1[:-1] + b"\x02", "not_inlongmsg"),
    ("version 5", b"\x0f\x05" + V1[2:-2] + b"\x0f\x05", "unsupported_version"),
    ("truncated header", b"\x0f\x01\x00\x00\x0f\x01", "truncated"),
    ("group data too long", _patch(V1, 0x2B, b"\x00\x00\x00\x15"), "length_out_of_range"),
    ("length 2**32-1", _patch(V1, 0x2B, b"\xff\xff\xff\xff"), "length_out_of_range"),
    ("attr too long", _patch(V1, 0x0E, b"\xff\xff"), "length_out_of_range"),
    ("item too long", _patch(V1, 0x39, b"\x00\x00\x00\x07"), "length_out_of_range"),
    ("item list leftover", V1[:-2] + b"\x00\x0f\x01", "malformed"),
    ("bytes after groups", _patch(V1, 0x0A, b"\x00\x00\x00\x00"), "malformed"),
    ("huge group count", _patch(V1, 0x0A, b"\x7f\xff\xff\xff"), "malformed"),
    ("bad flag", _patch(V1, 0x2F, b"\x02"), "malformed"),
    ("dataLen 0", _patch(V1, 0x2B, b"\x00\x00\x00\x00"), "malformed"),
    ("bad snappy", _patch(V1_SNAPPY, 0x30, b"\x14"), "decompression"),
    ("snappy copy before start", _patch(V1_SNAPPY, 0x31, b"\x01"), "decompression"),
    ("attribute without =", _patch(V1, 0x10, b"m_0"), "attribute_format"),
    ("attribute with empty key", _patch(V1, 0x10, b"=00"), "attribute_format"),
    ("attribute not UTF-8", _patch(V1, 0x10, b"\xff"), "attribute_encoding"),
    ("lone surrogate", _patch(V1, 0x10, b"\xed\xa0\x80"), "attribute_encoding"),
    ("v3 pair with empty msg", _patch(V3, 0x2B, b"\x00\x00\x00\x00"), "malformed"),
    ("v4 totalLen", _patch(V4_A, 2, b"\x00\x00\x00\x41"), "malformed"),
    ("v4 inner magic", _patch(V4_A, 0x46, b"\xee\x02"), "malformed"),
    ("v4 encrypted", _patch(V4_A, 6, b"\x47"), "unsupported_encoding"),
    ("v4 body too long", _patch(V4_A, 0x17, b"\x00\x00\x00\x40"), "length_out_of_range"),
    ("v4 pair attr empty", _patch(V4_B, 0x24, b"\x00\x00\x00\x00"), "malformed"),
]


@pytest.mark.parametrize(("pack", "kind"), [pytest.param(p, k, id=n) for n, p, k in MALFORMED])
def test_malformed_packs_are_typed_errors(pack, kind):
    with pytest.raises(inlong.InLongMsgError) as info:
        inlong.decode(pack)
    assert info.value.kind == kind, info.value
    assert isinstance(info.value, tubemq.TubeMQError) and isinstance(info.value, ValueError)
    assert 0 <= info.value.offset < max(len(pack), 1)


def test_every_truncation_and_byte_flip_is_a_result_or_a_typed_error():
    for pack in (V1, V1_SNAPPY, V2, V3, V4_A, V4_B):
        for cut in range(len(pack)):
            for candidate in (pack[:cut], pack[:cut] + pack[-2:]):
                try:
                    inlong.decode(candidate)
                except inlong.InLongMsgError:
                    pass
        for index in range(len(pack)):
            for value in (0x00, 0x7F, 0xFF):
                try:
                    inlong.decode(_patch(pack, index, bytes([value])))
                except inlong.InLongMsgError:
                    pass


def test_the_decompression_cap_applies():
    big = inlong.encode([b"x" * 100000], attrs="a=1", compress=True, create_time_ms=CREATE)
    with pytest.raises(inlong.InLongMsgError) as info:
        inlong.decode(big, max_decompressed=1000)
    assert info.value.kind == "decompression" and "cap" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"records": [b"x"], "version": 5}, "version"),
        ({"records": [b"x"], "attrs": {"a&b": "c"}}, "attrs"),
        ({"records": [b"x"], "attrs": 5}, "attrs"),
        ({"records": ["text"]}, "records"),
        ({"records": b"x"}, "records"),
        ({"records": [(b"x", "a=1")], "version": 3, "attrs": "g=1", "compress": 1}, "compress"),
        ({"records": [b"x"], "version": 3}, "records"),  # v3 needs own attributes
        ({"records": [b"x"], "group_id_num": 70000, "version": 4}, "group_id_num"),
    ],
)
def test_bad_encode_arguments_are_config_errors(kwargs, key):
    records = kwargs.pop("records")
    with pytest.raises(tubemq.ConfigError) as info:
        inlong.encode(records, **kwargs)
    assert info.value.key == key


@pytest.mark.parametrize(
    ("records", "version", "said"),
    [
        ([(b"a", {"k": "v"}), (b"b", {})], 4, "record 1 has no attributes of its own"),
        ([(b"a", {"k": "v"}), (b"", {"k": "w"})], 4, "record 1 has an empty body"),
        ([(b"a", {"k": "v"}), b"b"], 3, "record 1 has no attributes of its own"),
    ],
)
def test_a_record_the_layout_cannot_carry_is_named(records, version, said):
    with pytest.raises(tubemq.ConfigError) as info:
        inlong.encode(records, version=version, attrs={"g": "1"})
    assert said in str(info.value) and f"v{version} pack" in str(info.value)


@pytest.mark.parametrize(
    ("make", "overrides", "key"),
    [
        (tubemq.Consumer, {"decode": "json"}, "decode"),
        (tubemq.Consumer, {"decode": "inlongmsg", "decode_errors": "ignore"}, "decode_errors"),
        (tubemq.AssignedConsumer, {"decode": "InLongMsg"}, "decode"),
        (tubemq.aio.Consumer, {"decode": 1}, "decode"),
    ],
)
def test_bad_decode_options_are_refused_before_any_connection(make, overrides, key):
    with pytest.raises(tubemq.ConfigError) as caught:
        make(master="127.0.0.1:1", group="group1", topics=["topic1"], **overrides)
    assert caught.value.key == key


@pytest.mark.parametrize("compress", [False, True])
def test_a_bad_record_attribute_is_reported_inside_the_pack(compress):
    # The fuzzer's find: v3, a long group string, a record attribute item without '='.
    pack = inlong.encode(
        [(b"hello", {"seq": "1"}), (b"world", "seq81")],
        attrs="m=0&iname=a-long-group-attribute-string",
        version=3,
        compress=compress,
    )
    with pytest.raises(inlong.InLongMsgError) as caught:
        inlong.decode(pack)
    assert caught.value.kind == "attribute_format" and "seq81" in str(caught.value)
    assert 0 <= caught.value.offset < len(pack)
    if not compress:
        assert caught.value.offset == pack.index(b"seq81")
