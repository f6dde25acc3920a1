"""Network faults between the client and the servers, made by the fault proxy
(tests/faults/proxy.py): a blackholed broker, a reply cut by a reset or a close, a slow
master, a master list whose first entry is dead (behaviour.md §10 scenario 7).

The client learns broker addresses from the master, which hands out the port the broker
reports, and the master refuses a broker reporting another port than its record. So the
module's cluster runs its broker under tests/faults/bind_remap.c: the broker reports port
P but listens on Q, and a proxy listens on P and relays to Q. Every client connection to
the broker goes through that proxy.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import subprocess
import sys
import time
import uuid

import pytest
from proxy import FaultProxy

import tubemq
from ctrl_c import delay_after_signal, interrupting_script
from tubemq.cluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "proxied_topic"
CONSUMED_TOPIC = "proxied_consumed"
RPC_TIMEOUT_MS = 2000


def free_port(avoid: set[int] = frozenset()) -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in avoid:
            return port


@dataclasses.dataclass
class Proxied:
    cluster: LocalCluster
    broker: FaultProxy  # listens where the master says the broker is


@pytest.fixture(scope="module")
def proxied(private_cluster, bind_remap_library):
    real_port = {}

    def broker_env(ports):
        real_port["value"] = free_port(set(dataclasses.asdict(ports).values()))
        return {
            "LD_PRELOAD": str(bind_remap_library),
            "TUBEMQ_TEST_BIND_REMAP": f"{ports.broker}:{real_port['value']}",
        }

    with private_cluster([TOPIC, CONSUMED_TOPIC], partitions=2, broker_env=broker_env) as cluster:
        upstream = ("127.0.0.1", real_port["value"])
        with FaultProxy(upstream, listen_port=cluster.ports.broker) as broker:
            yield Proxied(cluster, broker)


@pytest.fixture
def broker_proxy(proxied):
    proxied.broker.set_mode("pass")
    yield proxied.broker
    proxied.broker.set_mode("pass")


def send_until_stored(producer: tubemq.Producer, topic: str, seconds: float) -> float:
    """Sends until one send succeeds; returns how long that took."""
    started = time.monotonic()
    while True:
        try:
            producer.send(topic, b"probe")
            return time.monotonic() - started
        except tubemq.TubeMQError as error:
            # A send into a connection still blackholed may time out: its outcome is
            # unknown, and it says so instead of claiming a retry is safe.
            assert error.retriable or isinstance(error, tubemq.OutcomeUnknownError), error
            assert time.monotonic() - started < seconds, f"no send succeeded: {error}"


def test_the_broker_is_reached_only_through_the_proxy(proxied, broker_proxy):
    before = broker_proxy.bytes_up
    with tubemq.Producer(master=proxied.cluster.master_address) as producer:
        producer.publish(TOPIC)
        result = producer.send(TOPIC, b"via the proxy")
    assert result.broker_address == proxied.cluster.broker_address
    assert broker_proxy.bytes_up > before


def test_a_blackholed_broker_times_out_within_the_deadline_and_is_shielded(proxied, broker_proxy):
    deadline_s = RPC_TIMEOUT_MS / 1000
    with tubemq.Producer(
        master=proxied.cluster.master_address, rpc_timeout_ms=RPC_TIMEOUT_MS
    ) as producer:
        producer.publish(TOPIC)
        assert producer.send(TOPIC, b"before").message_id >= 0
        assert producer.counters()["brokers_shielded"] == 0

        broker_proxy.set_mode("blackhole")
        started = time.monotonic()
        with pytest.raises(tubemq.OutcomeUnknownError) as info:
            producer.send(TOPIC, b"into the void")
        elapsed = time.monotonic() - started
        assert info.value.code == 1003
        assert not info.value.retriable  # the request went out: a retry may duplicate
        assert "may have stored" in info.value.message  # never re-sent: no duplicate
        assert deadline_s * 0.9 <= elapsed <= deadline_s + 1.0, elapsed
        assert producer.counters()["brokers_shielded"] == 1

        # Asynchronous sends: every future fails with the same type, none hangs.
        started = time.monotonic()
        futures = [producer.send_async(TOPIC, b"void %d" % i) for i in range(50)]
        assert producer.flush(timeout=deadline_s + 3.0) == 0
        assert time.monotonic() - started <= deadline_s + 1.5
        assert all(isinstance(f.exception(), tubemq.OutcomeUnknownError) for f in futures)

        # The network heals: sends succeed again, and success lifts the shield.
        broker_proxy.set_mode("pass")
        assert send_until_stored(producer, TOPIC, seconds=3 * deadline_s) < 3 * deadline_s
        assert producer.counters()["brokers_shielded"] == 0


def test_a_send_timeout_after_the_hand_off_is_an_unknown_outcome(proxied, broker_proxy):
    # The caller's own timeout, shorter than the RPC deadline, runs out while the message
    # sits at the silent broker: the outcome is unknown, and the error does not call a
    # retry safe. Both ways to give a send timeout: the call's, and send_timeout_s.
    with tubemq.Producer(
        master=proxied.cluster.master_address, rpc_timeout_ms=RPC_TIMEOUT_MS, send_timeout_s=0.3
    ) as producer:
        producer.publish(TOPIC)
        assert producer.send(TOPIC, b"before").message_id >= 0
        broker_proxy.set_mode("blackhole")
        for timeout in (0.3, None):
            started = time.monotonic()
            with pytest.raises(tubemq.OutcomeUnknownError) as info:
                producer.send(TOPIC, b"into the void", timeout=timeout)
            assert 0.25 <= time.monotonic() - started < 1.0
            assert info.value.code == 1003 and not info.value.retriable
            assert isinstance(info.value, tubemq.TimeoutError)  # still caught as one
            assert "may be stored" in info.value.message
        broker_proxy.set_mode("pass")


def test_close_does_not_hang_on_a_blackholed_broker(proxied, broker_proxy):
    producer = tubemq.Producer(master=proxied.cluster.master_address, rpc_timeout_ms=RPC_TIMEOUT_MS)
    producer.publish(TOPIC)
    producer.send(TOPIC, b"warm")
    broker_proxy.set_mode("blackhole")
    futures = [producer.send_async(TOPIC, b"pending") for _ in range(20)]
    started = time.monotonic()
    # close() waits for the sends as long as it was told, then says it gave up on them.
    with pytest.raises(tubemq.TimeoutError):
        producer.close(timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert producer.closed
    for future in futures:  # none is left hanging, and none claims a retry is safe
        error = future.exception(timeout=RPC_TIMEOUT_MS / 1000 + 1.0)
        assert isinstance(error, tubemq.OutcomeUnknownError), error
        assert not error.retriable


@pytest.mark.parametrize("mode", ["reset", "truncate"])
def test_a_reply_cut_mid_frame_is_a_typed_connection_error_and_the_next_send_works(
    proxied, broker_proxy, mode
):
    with tubemq.Producer(master=proxied.cluster.master_address, rpc_timeout_ms=5000) as producer:
        producer.publish(TOPIC)
        assert producer.send(TOPIC, b"before").message_id >= 0
        assert producer.metrics()["reconnects"] == 0
        # The reply frame is cut 10 bytes in (inside its 12-byte header), then the
        # connection is reset (RST) or closed (FIN).
        broker_proxy.set_mode(mode, reset_after=10, truncate_after=10)
        started = time.monotonic()
        with pytest.raises(tubemq.ConnectionError) as info:
            producer.send(TOPIC, b"cut")
        assert time.monotonic() - started < 2.0  # noticed at once, not at the deadline
        assert info.value.code == 1002, info.value
        assert info.value.retriable
        broker_proxy.set_mode("pass")
        result = producer.send(TOPIC, b"after")  # a new connection, at once
        assert result.message_id >= 0
        assert producer.metrics()["reconnects"] == 1


def test_a_consumer_reads_everything_through_repeated_connection_resets(proxied, broker_proxy):
    marker = f"reset-{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=proxied.cluster.master_address) as producer:
        producer.publish(CONSUMED_TOPIC)
        sent = {
            producer.send(CONSUMED_TOPIC, f"{marker}-{i}".encode()).message_id for i in range(300)
        }
    seen: set[int] = set()
    resets = cut = 0
    with tubemq.Consumer(
        master=proxied.cluster.master_address,
        group=f"g_{marker.replace('-', '_')}",
        topics=[CONSUMED_TOPIC],
        consume_from="earliest",
        rpc_timeout_ms=3000,
        heartbeat_period_ms=1000,
    ) as consumer:
        deadline = time.monotonic() + 90
        while not sent <= seen and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and bytes(message).startswith(marker.encode()):
                seen.add(message.message_id)
                # Every 20 new messages, RST on every open broker connection: fetches
                # and commits in flight are cut, the next ones need new connections.
                if len(seen) >= 20 * (resets + 1):
                    cut += broker_proxy.drop_all()
                    resets += 1
        reconnects = consumer.metrics()["reconnects"]
    assert resets >= 10
    # Every connection cut was the consumer's one to the broker (the master is not
    # proxied), and it fetched again over a new one - except perhaps after the last cut.
    # A reset that found no open connection cut nothing.
    assert cut >= 5
    assert cut - 1 <= reconnects <= cut, (cut, reconnects)
    assert sent <= seen, f"lost {len(sent - seen)} of {len(sent)}"


@pytest.mark.parametrize("mode, settings", [("delay", {"delay_s": 0.4}), ("slow", {"rate": 3000})])
def test_a_slow_master_still_serves_producer_and_consumer(proxied, mode, settings):
    marker = f"slow-{uuid.uuid4().hex[:8]}".encode()
    with FaultProxy(("127.0.0.1", proxied.cluster.ports.master)) as master_proxy:
        master_proxy.set_mode(mode, **settings)
        started = time.monotonic()
        with tubemq.Producer(master=master_proxy.address, rpc_timeout_ms=8000) as producer:
            registered = time.monotonic() - started
            producer.publish(TOPIC)
            producer.send(TOPIC, marker)
        with tubemq.Consumer(
            master=master_proxy.address,
            group=f"g_{uuid.uuid4().hex[:8]}",
            topics=[TOPIC],
            consume_from="earliest",
            rpc_timeout_ms=8000,
        ) as consumer:
            deadline = time.monotonic() + 60
            found = False
            while not found and time.monotonic() < deadline:
                message = consumer.poll(1.0)
                found = message is not None and bytes(message) == marker
        assert found
        assert master_proxy.bytes_down > 0
    if mode == "delay":
        assert registered >= 0.8  # the register exchange really was held both ways


@pytest.mark.parametrize("dead", ["refused", "blackholed"])
def test_a_dead_first_master_is_skipped_by_producer_and_consumer(proxied, dead, caplog):
    # Scenario 7: the first entry is a stopped master (nothing listens) or a hung one
    # (the connection opens and nothing ever answers).
    marker = f"dead-{uuid.uuid4().hex[:8]}".encode()
    with FaultProxy(("127.0.0.1", proxied.cluster.ports.master)) as hung:
        hung.set_mode("blackhole")
        first = hung.address if dead == "blackholed" else f"127.0.0.1:{free_port()}"
        masters = [first, proxied.cluster.master_address]
        caplog.set_level(logging.WARNING, logger="tubemq")
        with tubemq.Producer(master=masters, rpc_timeout_ms=RPC_TIMEOUT_MS) as producer:
            producer.publish(TOPIC)
            assert producer.send(TOPIC, marker).message_id >= 0
        with tubemq.Consumer(
            master=masters,
            group=f"g_{uuid.uuid4().hex[:8]}",
            topics=[TOPIC],
            consume_from="earliest",
            rpc_timeout_ms=RPC_TIMEOUT_MS,
        ) as consumer:
            deadline = time.monotonic() + 60
            found = False
            while not found and time.monotonic() < deadline:
                message = consumer.poll(1.0)
                found = message is not None and bytes(message) == marker
        assert found
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors


@pytest.mark.parametrize("blocking_call", ["send", "flush"])
def test_ctrl_c_interrupts_a_call_blocked_on_a_blackholed_broker(
    proxied, broker_proxy, blocking_call
):
    script = interrupting_script(f"""
        import tubemq
        client = tubemq.Producer(master={proxied.cluster.master_address!r},
                                 rpc_timeout_ms=60000)
        client.publish({TOPIC!r})
        client.send({TOPIC!r}, b"warm")
        print("ready", flush=True)
        sys.stdin.readline()  # the parent blackholes the broker, then writes a line
        interrupt_in_a_second()
        try:
            if {blocking_call!r} == "flush":
                client.send_async({TOPIC!r}, b"stuck")
                client.flush()
            else:
                client.send({TOPIC!r}, b"stuck")
        except KeyboardInterrupt:
            report_interrupted()
        report_not_interrupted()
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        broker_proxy.set_mode("blackhole")
        child.stdin.write("go\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, out + err
    delay = delay_after_signal(out)
    assert delay < 0.2, delay
