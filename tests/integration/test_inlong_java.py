"""tubemq.inlong against InLong's own InLongMsg class (inlong-common 1.5.0, resolved from
Maven Central by tubemq.cluster.maven): packs Java builds, of every version, stored and
Snappy-compressed, decode to what Java itself reads from them; and packs we build decode
in Java to the records we put in. Compared per attribute set, as the spec says (Java
groups records by attribute string). No TubeMQ cluster is needed."""

from __future__ import annotations

import collections
import json
import os
import subprocess
from pathlib import Path

import pytest

from tubemq import inlong

pytestmark = pytest.mark.integration

CREATE = 1700000000000
PEER = "InLongMsgPeer"


@pytest.fixture(scope="module")
def inlong_java(tmp_path_factory: pytest.TempPathFactory):
    """``run(*args)``: tests/java/inlong/InLongMsgPeer.java, compiled against inlong-common."""
    from tubemq.cluster import maven

    classes = tmp_path_factory.mktemp("inlong-java")
    classpath = os.pathsep.join(str(jar) for jar in maven.inlong_common_classpath())
    source = Path(__file__).parents[1] / "java" / "inlong" / f"{PEER}.java"
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", classpath, str(source)],
        check=True,
        capture_output=True,
        timeout=180,
    )

    def run(*args: str) -> str:
        done = subprocess.run(
            ["java", "-Xmx128m", "-cp", f"{classes}{os.pathsep}{classpath}", PEER, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def _parse(attr: str) -> frozenset[tuple[str, str]]:
    """InLong's attribute strings: split at '&', empties skipped, key before the first '='."""
    out: dict[str, str] = {}
    for item in attr.split("&"):
        if item:
            key, _, value = item.partition("=")
            out[key] = value
    return frozenset(out.items())


def _java_view(line: dict) -> collections.Counter:
    return collections.Counter(
        (_parse(group["attr"]), bytes.fromhex(body))
        for group in line["groups"]
        for body in group["bodies"]
    )


def _our_view(records) -> collections.Counter:
    return collections.Counter((frozenset(r.attrs.items()), bytes(r.body)) for r in records)


def _bodies() -> list[bytes]:  # as InLongMsgPeer.bodies()
    big = "".join(f"row-{i % 7};" for i in range(500)).encode()
    return [b"hello", bytes([0, 1, 2, 0xFF, 0, 0x0F, 0x01]), big, b""]


def test_packs_built_by_java_decode_as_java_reads_them(inlong_java, tmp_path):
    inlong_java("build", str(tmp_path))
    files = sorted(tmp_path.glob("*.bin"))
    assert len(files) == 14  # v1-v3 and four v4 layouts, stored and compressed
    lines = [json.loads(line) for line in inlong_java("decode", *map(str, files)).splitlines()]
    attr_a = "m=0&iname=demo&t=2023111422&note=café\U0001f600"
    for path, line in zip(files, lines):
        pack = inlong.decode_pack(path.read_bytes())
        assert pack.version == line["version"], path.name
        assert pack.create_time_ms == line["create_time"] == CREATE
        assert _our_view(pack.records) == _java_view(line), path.name
        if pack.version in (1, 2):  # and both are what the peer put in, in pack order
            assert [bytes(r.body) for r in pack.records] == [_bodies()[i] for i in (0, 2, 1, 3)]
            assert pack.records[0].raw_attr == attr_a
            assert dict(pack.records[0].attrs)["note"] == "café\U0001f600"
        if pack.version == 4:
            assert pack.v4 is not None
            assert pack.v4["compressed"] == path.name.startswith("v4c")
    assert any(inlong.decode_pack(p.read_bytes()).v4 for p in files)


def _ours() -> dict[str, tuple[bytes, list]]:
    """Packs we build, with the records each must decode to in Java."""
    out = {}
    bodies = _bodies()
    for compress in (False, True):
        tag = "c" if compress else "p"
        for version in (1, 2):
            records = [(body, {"seq": str(i)}) for i, body in enumerate(bodies)]
            pack = inlong.encode(
                records,
                attrs={"iname": "demo", "note": "café\U0001f600"},
                version=version,
                compress=compress,
                create_time_ms=CREATE,
            )
            out[f"v{version}{tag}"] = (pack, records)
        own = [(body, {"seq": str(i)}) for i, body in enumerate(bodies) if body]
        out[f"v3{tag}"] = (
            inlong.encode(
                own, attrs="m=0&iname=demo", version=3, compress=compress, create_time_ms=CREATE
            ),
            own,
        )
        out[f"v4{tag}a"] = (
            inlong.encode(
                bodies,
                attrs={"groupId": "g1", "streamId": "s1"},
                version=4,
                compress=compress,
                create_time_ms=CREATE,
            ),
            [(body, {}) for body in bodies],
        )
        out[f"v4{tag}b"] = (
            inlong.encode(
                own,
                attrs="rtms=1",
                version=4,
                compress=compress,
                create_time_ms=CREATE,
                group_id_num=7,
                stream_id_num=9,
            ),
            own,
        )
    return out


def test_packs_we_build_decode_in_java(inlong_java, tmp_path):
    packs = _ours()
    for name, (pack, _) in packs.items():
        (tmp_path / f"{name}.bin").write_bytes(pack)
    names = sorted(packs)
    output = inlong_java("decode", *(str(tmp_path / f"{name}.bin") for name in names))
    lines = [json.loads(line) for line in output.splitlines()]
    for name, line in zip(names, lines):
        pack, records = packs[name]
        assert "error" not in line, name
        assert line["version"] == int(name[1]) and line["create_time"] == CREATE
        # What Java reads is what we decode, and holds every body we put in.
        assert _java_view(line) == _our_view(inlong.decode(pack)), name
        java_bodies = sorted(body for _, body in _java_view(line).elements())
        assert java_bodies == sorted(bytes(body) for body, _ in records), name
        for attrs, _body in _java_view(line):
            attrs = dict(attrs)
            if name.startswith(("v1", "v2")):
                assert attrs["note"] == "café\U0001f600" and "seq" in attrs
            if name.startswith("v3"):
                assert attrs["iname"] == "demo" and "seq" in attrs
            if name.startswith("v4") and name.endswith("a"):
                assert attrs["groupId"] == "g1" and attrs["dt"] == str(CREATE)
            if name.startswith("v4") and name.endswith("b"):
                assert (attrs["groupId"], attrs["streamId"]) == ("7", "9") and "seq" in attrs
