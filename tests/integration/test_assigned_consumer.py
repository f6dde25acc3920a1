"""The client-balanced consumer against the real cluster: the application picks the
partitions and their offsets (behaviour.md §5, §10 scenarios 28 and 30-33)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration


def _group() -> str:
    return f"cb_{uuid.uuid4().hex[:10]}"


def _produce(master: str, topic: str, marker: str, count: int) -> set[int]:
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        return {
            producer.send(topic, f"{marker}-{index}".encode()).message_id for index in range(count)
        }


def _drain(consumer: tubemq.AssignedConsumer, marker: str, idle_s: float = 3.0) -> list:
    """Messages carrying ``marker`` until nothing arrived for ``idle_s`` seconds."""
    seen = []
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < idle_s:
        message = consumer.poll(0.5)
        if message is None:
            continue
        idle_since = time.monotonic()
        if bytes(message).startswith(marker.encode()):
            seen.append(message)
    return seen


def test_partitions_lists_every_partition_with_its_broker(master, topics):
    topic = topics[1]
    with tubemq.AssignedConsumer(master=master, group=_group(), topics=[topic]) as consumer:
        partitions = consumer.partitions()
        assert [meta.key for meta in partitions] == [f"1:{topic}:{index}" for index in range(4)]
        assert all(meta.subscribable and meta.topic == topic for meta in partitions)
        assert all(meta.broker.startswith("127.0.0.1:") for meta in partitions)
        assert consumer.assignment() == []  # nothing is held until assigned


def test_an_occupied_partition_is_refused_then_refused_locally(master, topics):
    """Scenario 28: 410 from the broker, then 421 without asking it again within 5 s."""
    topic, group = topics[1], _group()
    key = f"1:{topic}:2"
    with (
        tubemq.AssignedConsumer(master=master, group=group, topics=[topic]) as holder,
        tubemq.AssignedConsumer(master=master, group=group, topics=[topic]) as other,
    ):
        holder.assign([key])
        with pytest.raises(tubemq.PartitionOccupiedError) as first:
            other.assign([key])
        assert first.value.code == 410
        started = time.monotonic()
        with pytest.raises(tubemq.PartitionOccupiedError) as second:
            other.assign([key])
        assert second.value.code == 421
        assert time.monotonic() - started < 0.5  # answered locally
        assert other.assignment() == []
        holder.unassign([key])
        time.sleep(5.2)  # the refusal is forgotten after 5 s
        other.assign([key])
        assert other.assignment() == [key]


def test_members_must_agree_on_source_count_and_use_distinct_node_ids(master, topics):
    """Scenario 30: 430 for a taken node id, 429 for another source count."""
    topic, group = topics[1], _group()
    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], source_count=2, node_id=0
    ):
        with pytest.raises(tubemq.ConsumerGroupConflictError) as same_node:
            tubemq.AssignedConsumer(
                master=master, group=group, topics=[topic], source_count=2, node_id=0
            )
        assert same_node.value.code == 430
        with pytest.raises(tubemq.ConsumerGroupConflictError) as other_count:
            tubemq.AssignedConsumer(
                master=master, group=group, topics=[topic], source_count=3, node_id=1
            )
        assert other_count.value.code == 429
        with tubemq.AssignedConsumer(
            master=master, group=group, topics=[topic], source_count=2, node_id=1
        ) as second:
            assert second.node_id == 1


def test_a_node_id_outside_the_source_count_is_a_config_error(master, topics):
    with pytest.raises(tubemq.ConfigError, match="node_id"):
        tubemq.AssignedConsumer(
            master=master, group=_group(), topics=[topics[1]], source_count=2, node_id=2
        )


def test_a_server_balanced_member_cannot_join_a_client_balanced_group(master, topics):
    """Scenario 32."""
    topic, group = topics[1], _group()
    with tubemq.AssignedConsumer(master=master, group=group, topics=[topic]):
        with pytest.raises(tubemq.ConsumerGroupConflictError) as refused:
            tubemq.Consumer(master=master, group=group, topics=[topic])
        assert refused.value.code == 424


def test_explicit_offsets_replay_and_none_resumes_after_the_last_commit(master, topics):
    """Scenario 31 and the issue's replay check: read from X, stop, resume with None at
    the last commit; assign X again and get the same messages byte for byte."""
    topic, group, marker = topics[1], _group(), f"replay_{uuid.uuid4().hex[:8]}"
    key = f"1:{topic}:0"
    with tubemq.AssignedConsumer(master=master, group=_group(), topics=[topic]) as probe:
        probe.assign({key: None})
        probe.poll(0.5)
        start = probe.offsets()[key]["max_offset"]  # X: the end before our messages
    _produce(master, topic, marker, 40)

    with tubemq.AssignedConsumer(
        master=master, group=group, topics=[topic], auto_commit=False
    ) as consumer:
        consumer.assign({key: start})
        first_batch = []
        while not first_batch:
            message = consumer.poll(2.0)
            assert message is not None, "no data from the explicit offset"
            first_batch = [message, *consumer.consume(1000, timeout=0)]
        assert first_batch[0].batch_offset == start
        consumer.commit(first_batch[-1], asynchronous=False)  # stored on return
        committed = consumer.offsets()[key]["offset"]
        assert committed > start
        first_values = [bytes(m) for m in first_batch if bytes(m).startswith(marker.encode())]
        consumer.unassign([key])

    with tubemq.AssignedConsumer(master=master, group=group, topics=[topic]) as resumed:
        resumed.assign({key: None})
        message = resumed.poll(3.0)
        assert message is not None
        assert message.batch_offset == committed  # right after the committed batch
        rest = [message, *_drain(resumed, marker)]
        later = [bytes(m) for m in rest if bytes(m).startswith(marker.encode())]
        assert set(later).isdisjoint(first_values)

        resumed.seek(key, start)  # the same offset again: the same messages
        replay = _drain(resumed, marker)
        replayed = [bytes(m) for m in replay]
        assert replayed[: len(first_values)] == first_values
        assert replayed == first_values + later


def test_admin_consume_from_max_moves_held_partitions_to_their_max(cluster, master, topics):
    """Scenario 33: within two heartbeats every held partition's offset jumps to the max
    the client last saw; what is produced afterwards is still delivered."""
    topic, group, marker = topics[1], _group(), f"frommax_{uuid.uuid4().hex[:8]}"
    _produce(master, topic, f"{marker}-old", 20)
    with tubemq.AssignedConsumer(
        master=master,
        group=group,
        topics=[topic],
        consume_from="earliest",
        heartbeat_period_ms=1000,
    ) as consumer:
        consumer.assign(consumer.my_partitions())
        assert len(consumer.assignment()) == 4
        assert all(item["lag"] > 0 for item in consumer.offsets().values())
        cluster.admin().modify("admin_set_client_balance_group_consume_from_max", groupName=group)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            offsets = consumer.offsets()
            if len(offsets) == 4 and all(o["offset"] == o["max_offset"] for o in offsets.values()):
                break
            time.sleep(0.2)
        offsets = consumer.offsets()
        assert len(offsets) == 4
        assert all(item["offset"] == item["max_offset"] for item in offsets.values()), offsets
        fresh = _produce(master, topic, f"{marker}-new", 8)
        received = _drain(consumer, marker)
        assert {m.message_id for m in received} == fresh  # the backlog was skipped


def test_two_processes_split_a_topic_and_read_every_message_once(master, topics):
    """source_count=2 with node ids 0 and 1 in two processes: together they read every
    message of a 4-partition topic exactly once, counted by message id."""
    topic, group, marker = topics[1], _group(), f"split_{uuid.uuid4().hex[:8]}"
    sent = _produce(master, topic, marker, 200)
    script = textwrap.dedent(f"""
        import sys, time, tubemq
        with tubemq.AssignedConsumer(master={master!r}, group={group!r}, topics=[{topic!r}],
                                     consume_from="earliest", source_count=2,
                                     node_id=int(sys.argv[1])) as consumer:
            mine = consumer.my_partitions()
            consumer.assign(mine)
            print("HELD", ",".join(mine), flush=True)
            idle = time.monotonic()
            while time.monotonic() - idle < 4:
                message = consumer.poll(0.5)
                if message is None:
                    continue
                idle = time.monotonic()
                if bytes(message).startswith({marker.encode()!r}):
                    print("ID", message.message_id, flush=True)
    """)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(node)], stdout=subprocess.PIPE, text=True
        )
        for node in (0, 1)
    ]
    held: list[set[str]] = []
    ids: list[list[int]] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        held.append(
            {
                k
                for line in out.splitlines()
                if line.startswith("HELD ")
                for k in line[5:].split(",")
                if k
            }
        )
        ids.append([int(line[3:]) for line in out.splitlines() if line.startswith("ID ")])
    assert held[0].isdisjoint(held[1]) and len(held[0] | held[1]) == 4
    everything = ids[0] + ids[1]
    assert len(everything) == len(set(everything))  # nobody read a message twice
    assert set(everything) == sent


@pytest.mark.slow
def test_a_java_member_and_a_python_member_share_a_group_without_overlap(master, topics, java_main):
    """The official Java client-balanced consumer as node 1 and ours as node 0 of one
    group: they agree on who takes which partition and read every message once."""
    topic, group, marker = topics[1], _group(), f"javamix_{uuid.uuid4().hex[:8]}"
    sent = _produce(master, topic, marker, 120)
    with tubemq.AssignedConsumer(
        master=master,
        group=group,
        topics=[topic],
        consume_from="earliest",
        source_count=2,
        node_id=0,
    ) as ours:
        mine = ours.my_partitions()
        ours.assign(mine)
        java = java_main(
            "ReferenceBalanceConsumer",
            master,
            topic,
            group,
            marker,
            "2",
            "1",
            "15",
            timeout=120,
        )
        ours_seen = [m.message_id for m in _drain(ours, marker)]
    assert java.returncode == 0, java.stdout[-2000:] + java.stderr[-2000:]
    java_held = {line[5:] for line in java.stdout.splitlines() if line.startswith("HELD ")}
    java_seen = [int(line[3:]) for line in java.stdout.splitlines() if line.startswith("ID ")]
    assert java_held == {f"1:{topic}:{i}" for i in range(4)} - set(mine)
    assert java_held and mine  # both members got a share
    everything = ours_seen + java_seen
    assert len(everything) == len(set(everything))
    assert set(everything) == sent


def test_unassign_without_commit_leaves_the_batch_for_the_next_reader(master, topics):
    """Disconnect with discard: the batch fetched last is not committed, so the next
    reader of the group starts at that batch again; with commit it starts after it."""
    topic, group, marker = topics[1], _group(), f"discard_{uuid.uuid4().hex[:8]}"
    key = f"1:{topic}:3"
    with tubemq.AssignedConsumer(master=master, group=_group(), topics=[topic]) as probe:
        probe.assign({key: None})
        probe.poll(0.5)
        start = probe.offsets()[key]["max_offset"]
    _produce(master, topic, marker, 40)

    def first_batch_offset(offset: int | None, commit: bool) -> tuple[int, int]:
        with tubemq.AssignedConsumer(
            master=master, group=group, topics=[topic], auto_commit=False
        ) as consumer:
            consumer.assign({key: offset})
            message = consumer.poll(5.0)
            assert message is not None
            consumer.consume(100_000, timeout=0)  # the rest of the batch: handed out whole
            consumer.unassign([key], commit=commit)
            return message.batch_offset, message.message_id

    batch_start, first_id = first_batch_offset(start, commit=False)
    assert batch_start == start
    again_start, again_id = first_batch_offset(None, commit=True)  # the group's offset
    assert (again_start, again_id) == (start, first_id)  # the discarded batch came back
    after_start, _ = first_batch_offset(None, commit=False)
    assert after_start > start  # the committed batch did not
