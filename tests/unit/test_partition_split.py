"""The partition split rule shared with Java members of a client-balanced group."""

from __future__ import annotations

import pytest

import tubemq


@pytest.mark.parametrize(
    ("text", "java_hash"),
    [  # values printed by Java's String.hashCode() on this machine
        ("1:demo:0", -1901454398),
        ("1:pool_topic_3:10002", 40237474),
        ("é€𝄞x", 519296651),  # a surrogate pair counts as two UTF-16 units
        ("", 0),
    ],
)
def test_the_hash_is_javas_string_hash(text, java_hash):
    assert tubemq.java_string_hash(text) == java_hash


def test_every_key_goes_to_exactly_one_node():
    keys = [f"1:topic_{t}:{p}" for t in range(5) for p in range(8)]
    shares = [tubemq.partitions_for_node(keys, 3, node) for node in range(3)]
    assert sorted(k for share in shares for k in share) == sorted(keys)
    assert all(shares)  # 40 keys over 3 nodes: nobody is left empty


def test_a_bad_node_id_is_a_config_error():
    with pytest.raises(tubemq.ConfigError, match="node_id"):
        tubemq.partitions_for_node(["1:t:0"], 2, 2)


def test_message_count_is_index_entries():
    assert tubemq.message_count(0, 1120) == 40
    assert tubemq.message_count(1120, 0) == 0
