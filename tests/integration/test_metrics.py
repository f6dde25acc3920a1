"""metrics() and stats_cb on the real cluster: the counts match what the application did."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration


def test_producer_metrics_count_sends_and_stats_cb_reports_them(master, topics):
    topic = topics[4]
    reports: list[dict] = []
    threads: set[str] = set()

    def on_stats(metrics: dict) -> None:
        threads.add(threading.current_thread().name)
        reports.append(metrics)

    with tubemq.Producer(master=master, stats_cb=on_stats, stats_interval_ms=200) as producer:
        producer.publish(topic)
        for index in range(30):
            producer.send(topic, b"m%d" % index)
        futures = [producer.send_async(topic, b"a%d" % index) for index in range(20)]
        producer.flush(timeout=30)
        assert all(future.exception() is None for future in futures)
        metrics = producer.metrics()
        time.sleep(0.7)
    assert metrics["sent"] == metrics["acked"] == 50
    assert metrics["failed"] == 0 and metrics["in_flight"] == 0
    assert metrics["reconnects"] == 0  # nothing was lost on a healthy cluster
    assert metrics["master_switches"] == metrics["master_standby_answers"] == 0  # one master
    assert metrics["registrations"] >= 1
    assert len(reports) >= 2 and reports[-1]["acked"] == 50
    assert threads == {"tubemq-stats"}
    count = len(reports)
    time.sleep(0.5)
    assert len(reports) == count  # closing stopped the reports


def test_consumer_metrics_count_what_was_received_and_committed(master, topics):
    topic, marker = topics[4], f"metrics_{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        for index in range(40):
            producer.send(topic, f"{marker}-{index}".encode())
    reports: list[dict] = []
    with tubemq.Consumer(
        master=master,
        group=f"metrics_{uuid.uuid4().hex[:8]}",
        topics=[topic],
        consume_from="earliest",
        stats_cb=reports.append,
        stats_interval_ms=300,
    ) as consumer:
        received = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                if received:
                    break
                continue
            received += 1
        metrics = consumer.metrics()
        assert metrics["received"] == received >= 40
        assert metrics["bytes"] > 0 and metrics["batches"] >= 1
        assert metrics["committed"] >= metrics["batches"] - 1  # auto-commit trails by one
        assert metrics["fetches"] >= metrics["batches"]
        assert metrics["registrations"] == 1 and metrics["rebalance_events"] >= 1
        assert metrics["reconnects"] == 0
        assert metrics["master_switches"] == metrics["master_standby_answers"] == 0
        assert sorted(metrics["lag"]) == consumer.assignment() and metrics["assigned"] == 4
    assert reports and "received" in reports[-1]
