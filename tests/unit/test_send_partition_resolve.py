"""How partition= is resolved against the partitions the master reported (no cluster):
a key matches exactly, an id matches when one partition has it, and an id that several
brokers share is refused with the keys to choose from."""

from __future__ import annotations

import pytest

import tubemq
from tubemq import producer as module


class _Info:
    def __init__(self, key: str) -> None:
        self.key = key
        self.partition_id = int(key.rsplit(":", 1)[1])


class _Native:
    def __init__(self, *keys: str) -> None:
        self.keys = keys

    def partitions(self, topic: str) -> list[_Info]:
        return [_Info(key) for key in self.keys]

    def published_topics(self) -> list[str]:
        return ["t"]  # published already: resolving asks the master nothing


def test_a_key_or_a_unique_id_resolves_to_its_key() -> None:
    native = _Native("1:t:0", "1:t:1", "2:t:10000")
    assert module._resolve_partition(native, "t", "1:t:1") == "1:t:1"  # type: ignore[arg-type]
    assert module._resolve_partition(native, "t", " 1:t:1 ") == "1:t:1"  # type: ignore[arg-type]
    assert module._resolve_partition(native, "t", 10000) == "2:t:10000"  # type: ignore[arg-type]


def test_an_id_shared_by_brokers_is_ambiguous() -> None:
    native = _Native("1:t:0", "2:t:0")
    with pytest.raises(tubemq.ConfigError) as info:
        module._resolve_partition(native, "t", 0)  # type: ignore[arg-type]
    assert info.value.key == "partition"
    assert "ambiguous" in str(info.value) and "1:t:0, 2:t:0" in str(info.value)


def test_no_writable_partition_lists_none() -> None:
    with pytest.raises(tubemq.ConfigError) as info:
        module._resolve_partition(_Native(), "t", "1:t:0")  # type: ignore[arg-type]
    assert "writable: none" in str(info.value)


@pytest.mark.parametrize("bad", [1.5, True, b"1:t:0", ["1:t:0"], "1:t\udc80:0"])
def test_static_checks_need_no_producer(bad: object) -> None:
    with pytest.raises(tubemq.ConfigError) as info:
        module._check_partition(bad, None)
    assert info.value.key == "partition"


def test_key_and_partition_together_are_refused() -> None:
    with pytest.raises(tubemq.ConfigError, match="not both"):
        module._check_partition(0, "k")
