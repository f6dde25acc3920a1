"""A cluster of three brokers and three masters (issue 16): the harness brings it up, topics
spread over every broker, producers and consumer groups use all of them, a broker taken
offline or killed is avoided, and a standby master takes over when the active one is
killed. The cluster (conftest.py) serves every module of tests/multinode.
"""

from __future__ import annotations

import collections
import threading
import time
import uuid

import pytest
from multinode_support import BROKERS, MASTERS, PARTITIONS, broker_id, cluster_command

import tubemq
from tubemq.cluster import ClusterError, LocalCluster

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


def test_client_balanced_members_read_their_shares_across_brokers(topology):
    topic, group, marker = "topo_balance", unique("g_cb"), unique("c").encode()
    config = dict(master=topology.master_list, group=group, topics=[topic], consume_from="earliest")
    with (
        tubemq.AssignedConsumer(source_count=2, node_id=0, **config) as first,
        tubemq.AssignedConsumer(source_count=2, node_id=1, **config) as second,
    ):
        members = (first, second)
        shares = [member.my_partitions(refresh=True) for member in members]
        assert sorted(shares[0] + shares[1]) == sorted(meta.key for meta in first.partitions()), (
            shares
        )
        assert len(shares[0] + shares[1]) == BROKERS * PARTITIONS
        for member, share in zip(members, shares):
            assert len({broker_id(key) for key in share}) > 1, share  # spans brokers
            member.assign(share)
        with tubemq.Producer(master=topology.master_list) as producer:
            producer.publish(topic)
            sent = {producer.send(topic, marker + b"-%d" % i).partition_key for i in range(120)}
        assert len(sent) == BROKERS * PARTITIONS
        got: list[list[tuple[str, bytes]]] = [[], []]
        deadline = time.monotonic() + 60
        while sum(map(len, got)) < 120 and time.monotonic() < deadline:
            for index, member in enumerate(members):
                message = member.poll(0.2)
                if message is not None and bytes(message).startswith(marker):
                    got[index].append((message.partition_key, bytes(message)))
                    member.commit(message)
    for share, read in zip(shares, got):
        assert read and {key for key, _ in read} <= set(share)
        assert len({broker_id(key) for key, _ in read}) > 1
    everything = [body for read in got for _, body in read]
    assert sorted(everything) == sorted(marker + b"-%d" % i for i in range(120))


class SteadyRun:
    """A producer and a consumer group member at work in threads of their own, each
    message an id: which ids the brokers acknowledged, which the member read, when, and
    from which broker."""

    def __init__(self, topology: LocalCluster, topic: str) -> None:
        self.topology, self.topic, self.marker = topology, topic, unique("s")
        self.stop_sending, self.stop_reading = threading.Event(), threading.Event()
        self.acked: dict[int, tuple[float, int]] = {}  # id -> (when, broker)
        self.failed: list[tuple[float, str]] = []  # (when, error code name)
        self.read: list[tuple[float, int, int]] = []  # (when, id, broker)
        self.read_errors = 0
        self.attempts = 0
        self.consumer = tubemq.Consumer(
            master=topology.master_list,
            group=unique("g_soak"),
            topics=[topic],
            consume_from="earliest",
            **FAST,
        )
        self.threads = [
            threading.Thread(target=self._send, name="soak-send"),
            threading.Thread(target=self._consume, name="soak-read"),
        ]

    def start(self) -> None:
        deadline = time.monotonic() + 90
        while len(self.consumer.assignment()) < BROKERS * PARTITIONS:
            assert time.monotonic() < deadline, self.consumer.assignment()
            self.consumer.poll(0.2)
        for thread in self.threads:
            thread.start()

    def _send(self) -> None:
        with tubemq.Producer(master=self.topology.master_list, **FAST) as producer:
            producer.publish(self.topic)
            while not self.stop_sending.is_set():
                ident = self.attempts
                self.attempts += 1
                body = f"{self.marker}-{ident}".encode()
                try:
                    result = producer.send(self.topic, body, timeout=10)
                except tubemq.TubeMQError as error:
                    self.failed.append((time.monotonic(), type(error).__name__))
                    continue
                self.acked[ident] = (time.monotonic(), broker_id(result.partition_key))
                time.sleep(0.004)

    def _consume(self) -> None:
        prefix = f"{self.marker}-".encode()
        with self.consumer:
            while not self.stop_reading.is_set():
                try:
                    message = self.consumer.poll(0.2)
                except tubemq.TubeMQError as error:
                    # Fetches from the dead broker fail until the member drops it.
                    assert error.retriable, error
                    self.read_errors += 1
                    continue
                if message is None or not bytes(message).startswith(prefix):
                    continue
                ident = int(bytes(message)[len(prefix) :])
                self.read.append((time.monotonic(), ident, broker_id(message.partition_key)))
                self.consumer.commit(message)

    def finish(self, drain_s: float) -> None:
        self.stop_sending.set()
        self.threads[0].join(60)
        deadline = time.monotonic() + drain_s
        while not set(self.acked) <= {ident for _, ident, _ in self.read}:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.stop_reading.set()
        self.threads[1].join(60)
        assert not any(thread.is_alive() for thread in self.threads)


def longest_gap(times: list[float], start: float, end: float) -> float:
    points = [start, *sorted(t for t in times if start <= t <= end), end]
    return max(b - a for a, b in zip(points, points[1:]))


def test_a_broker_killed_under_steady_load_loses_no_acknowledged_message(topology):
    run = SteadyRun(topology, "topo_soak")
    run.start()
    try:
        time.sleep(4)
        topology.kill_node("broker-2")
        killed_at = time.monotonic()
        time.sleep(15)
    finally:
        # The following tests need every broker, whatever happened here.
        topology.start_node("broker-2")
    restarted_at = time.monotonic()
    deadline = restarted_at + 150
    while True:
        on_2 = [when for when, broker in run.acked.values() if broker == 2 and when > restarted_at]
        read_2 = [when for when, _, broker in run.read if broker == 2 and when > restarted_at]
        if on_2 and read_2:
            break
        assert time.monotonic() < deadline, "broker-2 never served again"
        time.sleep(0.5)
    time.sleep(3)
    run.finish(drain_s=90)

    acked, read_ids = set(run.acked), [ident for _, ident, _ in run.read]
    lost = acked - set(read_ids)
    duplicates = len(read_ids) - len(set(read_ids))
    unacked_stored = set(read_ids) - acked  # sends that failed yet were stored
    # Sends: how soon after the kill they stopped going to broker-2 and resumed there.
    last_to_2 = max(
        (when for when, broker in run.acked.values() if broker == 2 and when < restarted_at),
        default=killed_at,
    )
    send_gap = longest_gap([when for when, _ in run.acked.values()], killed_at, restarted_at)
    read_gap = longest_gap(
        [when for when, _, broker in run.read if broker != 2], killed_at, restarted_at
    )
    print(
        f"\nbroker-2 SIGKILLed under load: {run.attempts} sends, {len(acked)} acknowledged,"
        f" {len(run.failed)} failed ({collections.Counter(n for _, n in run.failed)}),"
        f" {len(read_ids)} read, lost {len(lost)}, duplicates {duplicates}, stored though"
        f" failed {len(unacked_stored)}; last ack from broker-2 {last_to_2 - killed_at:+.1f} s"
        f" after the kill, longest pause between acks while it was down {send_gap:.1f} s;"
        f" longest pause in reads from brokers 1 and 3 {read_gap:.1f} s; after the restart"
        f" broker-2 took sends after {min(on_2) - restarted_at:.1f} s and was read after"
        f" {min(read_2) - restarted_at:.1f} s; {run.read_errors} fetch errors"
    )
    assert not lost, sorted(lost)[:20]
    assert last_to_2 - killed_at < 1  # no acknowledgement from a dead broker
    # Sends move to the live brokers within the send timeout, and the member keeps
    # reading the live brokers' partitions throughout.
    assert send_gap < 12
    assert read_gap < 10
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
        before = {"producer": producer.metrics(), "consumer": consumer.metrics()}
        killed_at = time.monotonic()
        until = killed_at + 120
        topology.kill_node(old)

        # A producer made while the group elects its next active master: registration
        # and publish wait for it (no retry loop of the application's own).
        late_producer: dict[str, float | Exception] = {}

        def make_a_producer() -> None:
            try:
                with tubemq.Producer(master=topology.master_list) as late:
                    late.publish(topic)
                    late.send(topic, marker + b"-new-producer")
                late_producer["s"] = time.monotonic() - killed_at
            except Exception as error:  # reported by the assertion below
                late_producer["error"] = error

        maker = threading.Thread(target=make_a_producer)
        maker.start()
        # Heartbeats move to the new active master: the first one it answered, per client.
        on_new_master: dict[str, float] = {}
        got: list[bytes] = []
        while len(on_new_master) < 2:
            assert time.monotonic() < until, ("no heartbeat reached a new master", before)
            for name, client in (("producer", producer), ("consumer", consumer)):
                metrics = client.metrics()
                if (
                    name not in on_new_master
                    and metrics["master_switches"] > before[name]["master_switches"]
                    and metrics["heartbeats_ok"] > before[name]["heartbeats_ok"]
                ):
                    on_new_master[name] = time.monotonic() - killed_at
            message = consumer.poll(0.05)
            if message is not None and bytes(message).startswith(marker):
                got.append(bytes(message))
        standby_answers = sum(
            client.metrics()["master_standby_answers"] for client in (producer, consumer)
        )
        new_active = None
        while new_active is None:
            assert time.monotonic() < until, "the admin API names no active master"
            try:
                new_active = topology.active_master()
            except ClusterError:
                time.sleep(0.2)
        assert new_active != old
        maker.join(120)
        assert "s" in late_producer, late_producer
        # The running producer sends straight to the brokers.
        send_until_stored(producer, topic, marker + b"-after-kill", until)
        sent = {marker + b"-after-kill", marker + b"-new-producer"}
        failed_sends = 0
        for i in range(30):
            sent.add(marker + b"-%d" % i)
            failed_sends += send_until_stored(producer, topic, marker + b"-%d" % i, until)
        while set(got) < sent and time.monotonic() < until:
            message = consumer.poll(0.5)
            if message is not None and bytes(message).startswith(marker):
                got.append(bytes(message))
        assert set(got) == sent
        print(
            f"\nkilled {old}, {new_active} took over: first heartbeat on it after"
            f" {on_new_master['producer']:.1f} s (producer) and {on_new_master['consumer']:.1f} s"
            f" (consumer), {standby_answers} standby answers met on the way; a producer made"
            f" at the kill sent after {late_producer['s']:.1f} s; {failed_sends} failed sends"
            f" of 30; the consumer read all {len(sent)} after"
            f" {time.monotonic() - killed_at:.1f} s"
        )
        # The StandbyException path, exercised for real: during the election the
        # surviving masters answer "not the active master".
        assert standby_answers > 0
    # The killed master comes back as a standby of the new active one.
    topology.start_node(old)
    assert topology.active_master() == new_active
    assert topology.is_running()
