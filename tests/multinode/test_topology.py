"""A cluster of three brokers and three masters (issue 16): the harness brings it up, topics
spread over every broker, producers and consumer groups use all of them, a broker taken
offline or killed is avoided, and a standby master takes over when the active one is
killed. The cluster (conftest.py) serves every module of tests/multinode.
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from multinode_support import BROKERS, MASTERS, PARTITIONS, broker_id, cluster_command

import tubemq
from tubemq.cluster import ClusterError

pytestmark = [pytest.mark.multinode, pytest.mark.slow]

FAST = {"heartbeat_period_ms": 1000}


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def test_up_prints_every_master_and_broker_and_status_lists_every_node(started):
    cluster, printed = started
    lines = [line.split("=", 1) for line in printed.splitlines()]
    assert [value for key, value in lines if key == "master"] == cluster.master_list.split(",")
    assert [value for key, value in lines if key == "broker"] == cluster.broker_addresses
    assert [key for key, _ in lines] == ["master"] * MASTERS + ["broker"] * BROKERS + ["master_web"]
    status = cluster_command("status", "--workdir", str(cluster.workdir))
    assert status.returncode == 0, status.stderr
    nodes = [
        line.split()
        for line in status.stdout.splitlines()
        if line.startswith(("master-", "broker-"))
    ]
    assert [fields[0] for fields in nodes] == cluster.node_names
    assert all(fields[3] == "running" for fields in nodes)


def test_every_node_runs_with_an_address_of_its_own(topology):
    assert topology.node_names == [
        *(f"master-{i}" for i in range(1, MASTERS + 1)),
        *(f"broker-{i}" for i in range(1, BROKERS + 1)),
    ]
    assert all(topology.is_node_running(name) for name in topology.node_names)
    assert topology.broker_ids == [1, 2, 3]
    # One broker per IP address: the server refuses a second one on the same address.
    assert [a.split(":")[0] for a in topology.broker_addresses] == [
        "127.0.0.1",
        "127.0.0.2",
        "127.0.0.3",
    ]
    assert len(topology.master_list.split(",")) == MASTERS
    roles = [line.split()[-1] for line in topology.node_lines() if line.startswith("master-")]
    assert sorted(roles) == ["active", "standby", "standby"]
    group = topology.admin().query("admin_query_master_group_info")
    states = sorted(item["statusInfo"]["nodeStatus"] for item in group["data"])
    assert states == ["MASTER", "REPLICA", "REPLICA"]


def test_a_topic_has_its_partitions_on_every_broker(topology):
    topic = "topo_spread"
    assert topology.partition_count(topic) == BROKERS * PARTITIONS
    with tubemq.AssignedConsumer(
        master=topology.master_list, group=unique("g_parts"), topics=[topic]
    ) as consumer:
        keys = [meta.key for meta in consumer.partitions(refresh=True)]
    assert keys == [f"{b}:{topic}:{p}" for b in range(1, BROKERS + 1) for p in range(PARTITIONS)]


def test_sends_land_on_every_broker(topology):
    topic = "topo_spread"
    with tubemq.Producer(master=topology.master_list) as producer:
        producer.publish(topic)
        keys = [producer.send(topic, b"spread-%d" % i).partition_key for i in range(60)]
    per_broker = collections.Counter(broker_id(key) for key in keys)
    assert set(per_broker) == {1, 2, 3}, per_broker
    assert len(set(keys)) == BROKERS * PARTITIONS


def test_a_two_member_group_reads_every_broker_and_every_message_once(topology):
    topic, group, marker = "topo_group", unique("g_two"), unique("m").encode()
    config = dict(master=topology.master_list, group=group, topics=[topic], **FAST)
    started = time.monotonic()
    events: list[tuple[float, int, str, list[str]]] = []

    def recorder(index: int, kind: str):
        def record(keys: list[str]) -> None:
            events.append((round(time.monotonic() - started, 1), index, kind, keys))

        return record

    with (
        tubemq.Consumer(
            consume_from="earliest",
            on_assign=recorder(0, "+"),
            on_revoke=recorder(0, "-"),
            **config,
        ) as first,
        tubemq.Consumer(
            consume_from="earliest",
            on_assign=recorder(1, "+"),
            on_revoke=recorder(1, "-"),
            **config,
        ) as second,
    ):
        members = (first, second)
        # Both members settle their shares before anything is sent, so no partition moves
        # while the messages are read: a partition that moves in the middle of a read is
        # read again from its last commit by its new holder (at least once, not once). The
        # master deals partitions in several balance rounds (1 s apart here), so a split
        # only counts once it has lasted a few rounds.
        deadline = time.monotonic() + 90
        held: list[set[str]] = [set(), set()]
        stable_since = time.monotonic()
        while True:
            now_held = [set(member.assignment()) for member in members]
            if now_held != held:
                held, stable_since = now_held, time.monotonic()
            settled = all(held) and not held[0] & held[1] and len(held[0] | held[1]) == 6
            if settled and time.monotonic() - stable_since >= 5:
                break
            assert time.monotonic() < deadline, (held, events)
            for member in members:
                member.poll(0.2)
        assert {broker_id(key) for key in held[0] | held[1]} == {1, 2, 3}

        with tubemq.Producer(master=topology.master_list) as producer:
            producer.publish(topic)
            sent = set()
            for i in range(90):
                body = marker + b"-%d" % i
                producer.send(topic, body)  # returns once the broker has stored it
                sent.add(body)
        got: dict[int, list[bytes]] = {0: [], 1: []}
        keys: set[str] = set()
        deadline = time.monotonic() + 60
        while sum(map(len, got.values())) < len(sent) and time.monotonic() < deadline:
            for index, member in enumerate(members):
                message = member.poll(0.2)
                if message is not None and bytes(message).startswith(marker):
                    got[index].append(bytes(message))
                    keys.add(message.partition_key)
    everything = got[0] + got[1]
    duplicates = [body for body, n in collections.Counter(everything).items() if n > 1]
    assert not duplicates, (len(duplicates), events)
    assert set(everything) == sent
    assert got[0] and got[1]
    assert {broker_id(key) for key in keys} == {1, 2, 3}


def send_until_stored(producer: tubemq.Producer, topic: str, body: bytes, until: float) -> int:
    """Sends ``body`` until the broker stores it; returns how many attempts failed."""
    failures = 0
    while True:
        try:
            producer.send(topic, body)
            return failures
        except tubemq.TubeMQError:
            # While the new active master has not yet heard from the brokers, it lists
            # no writable partition (443) and heartbeats may leave the producer none.
            failures += 1
            assert time.monotonic() < until, f"{body!r} not stored after {failures} tries"
            time.sleep(0.2)


def test_a_broker_taken_offline_and_back_loses_no_message(topology):
    topic, group, marker = "topo_offline", unique("g_off"), unique("o").encode()
    with (
        tubemq.Producer(master=topology.master_list, **FAST) as producer,
        tubemq.Consumer(
            master=topology.master_list,
            group=group,
            topics=[topic],
            consume_from="earliest",
            **FAST,
        ) as consumer,
    ):
        producer.publish(topic)
        deadline = time.monotonic() + 90
        while len(consumer.assignment()) < BROKERS * PARTITIONS:
            assert time.monotonic() < deadline, consumer.assignment()
            consumer.poll(0.2)
        sent: list[bytes] = []
        got: collections.Counter[bytes] = collections.Counter()

        def step(phase: str) -> str:
            """Sends one message (it must be stored at once) and reads what has come."""
            body = marker + b"-%s-%d" % (phase.encode(), len(sent))
            key = producer.send(topic, body).partition_key
            sent.append(body)
            message = consumer.poll(0.05)
            if message is not None and bytes(message).startswith(marker):
                got[bytes(message)] += 1
            return key

        def on_broker_2() -> bool:
            return any(broker_id(key) == 2 for key in consumer.assignment())

        topology.offline_broker("broker-2")
        offline_at = time.monotonic()
        # Producer and consumer learn it from their next heartbeats, a few seconds apart;
        # meanwhile broker-2 still takes sends, and nothing may fail.
        recent: collections.deque[str] = collections.deque(maxlen=30)
        while on_broker_2() or any(broker_id(key) == 2 for key in recent) or len(recent) < 30:
            assert time.monotonic() - offline_at < 90, (consumer.assignment(), list(recent))
            recent.append(step("off"))
        left_s = time.monotonic() - offline_at

        topology.online_broker("broker-2")
        online_at = time.monotonic()
        producer_back = consumer_back = None
        while producer_back is None or consumer_back is None:
            assert time.monotonic() - online_at < 90, "broker-2 never came back"
            key = step("on")
            if producer_back is None and broker_id(key) == 2:
                producer_back = time.monotonic() - online_at
            if consumer_back is None and on_broker_2():
                consumer_back = time.monotonic() - online_at
        # What was sent to broker-2 after the consumer let go of it is read now.
        deadline = time.monotonic() + 60
        while not set(sent) <= set(got) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and bytes(message).startswith(marker):
                got[bytes(message)] += 1
    assert set(sent) - set(got) == set()
    twice = sum(1 for n in got.values() if n > 1)
    print(
        f"\nbroker-2 offline: producer and consumer off it after {left_s:.1f} s, no send"
        f" failed; online: producer back after {producer_back:.1f} s, consumer after"
        f" {consumer_back:.1f} s; {len(sent)} sent, all read, {twice} read twice"
    )


def test_a_killed_broker_is_avoided_and_serves_again_once_restarted(topology):
    topic, group, marker = "topo_broker_kill", unique("g_bk"), unique("b").encode()
    with (
        tubemq.Producer(master=topology.master_list, **FAST) as producer,
        tubemq.Consumer(
            master=topology.master_list,
            group=group,
            topics=[topic],
            consume_from="earliest",
            **FAST,
        ) as consumer,
    ):
        producer.publish(topic)
        deadline = time.monotonic() + 90
        while len(consumer.assignment()) < BROKERS * PARTITIONS:
            assert time.monotonic() < deadline, consumer.assignment()
            consumer.poll(0.2)

        got: set[bytes] = set()

        def read(expected: set[bytes], seconds: float) -> set[bytes]:
            """Everything read so far, once ``expected`` arrived or after ``seconds``."""
            until = time.monotonic() + seconds
            while got < expected and time.monotonic() < until:
                try:
                    message = consumer.poll(0.5)
                except tubemq.TubeMQError as error:
                    # Fetches from the dead broker fail until the consumer drops it.
                    assert error.retriable, error
                    continue
                if message is not None and bytes(message).startswith(marker):
                    got.add(bytes(message))
            return got

        topology.kill_node("broker-2")
        killed_at = time.monotonic()
        sent, failures, brokers_used = set(), 0, collections.Counter()
        for i in range(40):
            body = marker + b"-down-%d" % i
            failures += send_until_stored(producer, topic, body, killed_at + 60)
            sent.add(body)
        # The producer learns nothing from the master yet (it notices the broker's loss
        # after its heartbeat timeout); it stops choosing partitions it cannot reach.
        try:
            assert read(sent, 60) == sent
        finally:
            # The following test needs every broker, whatever happened here.
            topology.start_node("broker-2")
        started_at = time.monotonic()
        back_s = None
        while back_s is None:
            assert time.monotonic() - started_at < 150, "broker-2 never served again"
            body = marker + b"-up-%d" % len(sent)
            result = producer.send(topic, body)
            sent.add(body)
            brokers_used[broker_id(result.partition_key)] += 1
            if broker_id(result.partition_key) == 2:
                back_s = time.monotonic() - started_at
            else:
                time.sleep(0.2)
        assert read(sent, 90) == sent
        print(
            f"\nbroker-2 killed: {failures} failed sends of 40; restarted, it took sends"
            f" again after {back_s:.1f} s; sends meanwhile per broker {dict(brokers_used)}"
        )
    assert topology.is_running()


def test_a_standby_takes_over_when_the_active_master_is_killed(topology):
    # Last in the module: it kills a master (and starts it again at the end).
    topic, group, marker = "topo_failover", unique("g_fail"), unique("f").encode()
    with (
        tubemq.Producer(master=topology.master_list, **FAST) as producer,
        tubemq.Consumer(
            master=topology.master_list,
            group=group,
            topics=[topic],
            consume_from="earliest",
            **FAST,
        ) as consumer,
    ):
        producer.publish(topic)
        deadline = time.monotonic() + 90
        while len(consumer.assignment()) < BROKERS * PARTITIONS:
            assert time.monotonic() < deadline, consumer.assignment()
            consumer.poll(0.2)
        old = topology.active_master()
        killed_at = time.monotonic()
        until = killed_at + 120
        topology.kill_node(old)

        # The running producer sends straight to the brokers.
        send_until_stored(producer, topic, marker + b"-after-kill", until)
        first_send_s = time.monotonic() - killed_at
        new_active = None
        while new_active is None:
            assert time.monotonic() < until, "no standby took over"
            try:
                new_active = topology.active_master()
            except ClusterError:
                time.sleep(0.2)
        takeover_s = time.monotonic() - killed_at
        assert new_active != old
        # A new producer registers with the new active master, which must first learn
        # the brokers' partitions from their registrations.
        while True:
            try:
                with tubemq.Producer(master=topology.master_list) as late:
                    late.publish(topic)
                    late.send(topic, marker + b"-new-producer")
                break
            except tubemq.TubeMQError:
                assert time.monotonic() < until, "no new producer could send"
                time.sleep(0.5)
        new_producer_s = time.monotonic() - killed_at
        sent = {marker + b"-after-kill", marker + b"-new-producer"}
        failed_sends = 0
        for i in range(30):
            sent.add(marker + b"-%d" % i)
            failed_sends += send_until_stored(producer, topic, marker + b"-%d" % i, until)
        got: list[bytes] = []
        while set(got) < sent and time.monotonic() < until:
            message = consumer.poll(0.5)
            if message is not None and bytes(message).startswith(marker):
                got.append(bytes(message))
        assert set(got) == sent
        print(
            f"\nkilled {old}: the running producer stored a message after {first_send_s:.2f} s;"
            f" {new_active} active after {takeover_s:.1f} s; a new producer's first send"
            f" after {new_producer_s:.1f} s; {failed_sends} failed sends of 30 after that;"
            f" the consumer read all {len(sent)} after {time.monotonic() - killed_at:.1f} s"
        )
    # The killed master comes back as a standby of the new active one.
    topology.start_node(old)
    assert topology.active_master() == new_active
    assert topology.is_running()
