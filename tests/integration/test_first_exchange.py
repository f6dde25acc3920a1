"""The first real exchange: a producer registers to the real master, heartbeats, closes."""

from __future__ import annotations

import logging
import os
import socket
import time

import pytest

import tubemq
from tubemq import _core

pytestmark = pytest.mark.integration


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def test_producer_registers_publishes_heartbeats_and_closes(master, topics, cluster):
    with tubemq.Producer(master=master, heartbeat_period_ms=300) as producer:
        assert producer.client_id  # assigned at registration
        assert _core.service_state()["io_threads"] > 0
        producer.publish(topics[0])
        assert producer.published_topics() == [topics[0]]
        partitions = producer.partitions(topics[0])
        assert sorted(p.partition_id for p in partitions) == [0, 1, 2, 3]
        assert {p.broker_address for p in partitions} == {cluster.broker_address}
        assert all(p.topic == topics[0] for p in partitions)
        # Heartbeats keep flowing and succeed.
        assert wait_until(lambda: producer._native.counters()["heartbeats_ok"] >= 3)
        counters = producer._native.counters()
        assert counters["registrations"] == 1
        assert counters["heartbeats_failed"] == 0
    assert producer.closed
    with pytest.raises(tubemq.ClientClosedError):
        producer.partitions(topics[0])
    producer.close()  # idempotent
    # The last client gone, the I/O threads stop.
    assert wait_until(lambda: _core.service_state()["io_threads"] == 0, timeout=5)


def test_service_starts_again_after_stopping(master, topics):
    for _ in range(3):
        with tubemq.Producer(master=master) as producer:
            assert _core.service_state()["io_threads"] > 0
            producer.publish(topics[1])
            assert len(producer.partitions(topics[1])) == 4
        assert _core.service_state() | {"generation": 0} == {
            "users": 0,
            "io_threads": 0,
            "connections": 0,
            "generation": 0,
        }


def test_two_producers_share_one_service(master, topics):
    with tubemq.Producer(master=master) as first, tubemq.Producer(master=master) as second:
        assert first.client_id != second.client_id
        state = _core.service_state()
        assert state["users"] == 2
        first.publish(topics[0])
        second.publish(topics[0])
        # One pooled connection to the master serves both producers.
        assert state["connections"] >= 1


def test_unknown_topic_fails_with_a_typed_error(master):
    with tubemq.Producer(master=master) as producer:
        with pytest.raises(tubemq.TubeMQError) as info:
            producer.publish("no_such_topic_here", timeout=30)
        assert info.value.code < 1000  # the server's verdict, not a transport error
        assert "no_such_topic_here" in info.value.message


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_wrong_master_address_is_a_typed_connection_error():
    port = free_port()
    started = time.monotonic()
    with pytest.raises(tubemq.ConnectionError) as info:
        tubemq.Producer(master=f"127.0.0.1:{port}", register_attempts=2, register_retry_wait_ms=100)
    assert time.monotonic() - started < 10
    assert info.value.code == 1001
    assert f"127.0.0.1:{port}" in info.value.message
    assert info.value.retriable


def test_a_broker_is_not_a_master(cluster):
    # A real TubeMQ server that is not a master refuses the master service.
    with pytest.raises(tubemq.TubeMQError) as info:
        tubemq.Producer(master=cluster.broker_address, register_attempts=1, rpc_timeout_ms=5000)
    assert not isinstance(info.value, tubemq.ConfigError)
    assert info.value.message


def test_failover_skips_a_dead_master_address(master, topics):
    dead = f"127.0.0.1:{free_port()}"
    with tubemq.Producer(master=[dead, master]) as producer:
        producer.publish(topics[2])
        assert len(producer.partitions(topics[2])) == 4


def test_forked_child_gets_a_clear_error_and_can_start_its_own(master, topics):
    producer = tubemq.Producer(master=master)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        status = 1
        try:
            try:
                producer.partitions(topics[0])
                outcome = "no error"
            except tubemq.ForkedClientError as error:
                outcome = f"forked:{error.code}"
            with tubemq.Producer(master=master) as own:
                own.publish(topics[0])
                outcome += f" own:{len(own.partitions(topics[0]))}"
            os.write(write_end, outcome.encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    report = os.read(read_end, 1000).decode()
    os.close(read_end)
    # The parent's client is unaffected.
    producer.publish(topics[0])
    producer.close()
    assert os.waitstatus_to_exitcode(status) == 0, report
    assert report == "forked:1012 own:4"


def test_native_log_records_reach_python_logging(master, caplog):
    caplog.set_level(logging.DEBUG, logger="tubemq")
    with tubemq.Producer(master=master) as producer:
        client_id = producer.client_id

    def mentions_client() -> bool:
        return any(client_id in r.getMessage() for r in caplog.records if r.name == "tubemq")

    assert wait_until(mentions_client, timeout=5), [r.getMessage() for r in caplog.records]
    record = next(r for r in caplog.records if client_id in r.getMessage())
    assert record.threadName  # the native thread that wrote it
