"""Group flow-control rules set through the master's admin API pace the server-balanced
consumer (behaviour.md §6 and §10 scenarios 23 and 24), against the real cluster.

Fetch timing is observed through the core's DEBUG record
``fetch <partition key>: <code>[ escFlowCtrl]``, which reaches Python ``logging`` with the
native time it was written at.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time
import uuid

import pytest

import tubemq

pytestmark = pytest.mark.integration

FAST = {"heartbeat_period_ms": 1000}
# Topics of their own (FLOW_TOPICS in conftest.py), written to by no other test.
EMPTY_TOPIC = "flow_c"
BACKLOG_TOPIC = "flow_d"
MIB = 1024 * 1024

_FETCH = re.compile(r"fetch (\S+): (-?\d+)( escFlowCtrl)?( kept=\d+)?")


class Fetch(collections.namedtuple("Fetch", "at code escaped")):
    """One fetch as the core logged it: native time, reply code, escFlowCtrl sent."""


class FetchLog(logging.Handler):
    """Every fetch the core logs, by partition key."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._rows_lock = threading.Lock()
        self._rows: list[tuple[float, str, int, bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = _FETCH.match(record.getMessage())
        if match:
            row = (record.created, match.group(1), int(match.group(2)), bool(match.group(3)))
            with self._rows_lock:
                self._rows.append(row)

    def settle(self) -> None:
        """Waits until records written before now have been handed to Python."""
        seen, deadline = -1, time.monotonic() + 5
        while len(self._rows) != seen and time.monotonic() < deadline:
            seen = len(self._rows)
            time.sleep(0.6)  # more than the log dispatcher's wait slice

    def per_partition(self) -> dict[str, list[Fetch]]:
        with self._rows_lock:
            rows = sorted(self._rows)
        out: dict[str, list[Fetch]] = collections.defaultdict(list)
        for created, key, code, escaped in rows:
            out[key].append(Fetch(created, code, escaped))
        return dict(out)


@pytest.fixture
def fetch_log():
    logger = logging.getLogger("tubemq")
    handler, level = FetchLog(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # set before a client starts, so the core formats them
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def ruled_group(cluster):
    """``ruled_group(rules)``: a new group name with those rules set at the master."""
    admin, groups = cluster.admin(), []

    def make(rules: list[dict]) -> str:
        group = f"g_{uuid.uuid4().hex[:10]}"
        groups.append(group)
        admin.set_group_flow_control(group, rules)
        return group

    yield make
    for group in groups:
        admin.remove_group_flow_control(group)


def gaps(fetches: list[Fetch]) -> list[float]:
    return [later.at - earlier.at for earlier, later in zip(fetches, fetches[1:])]


def test_frequency_rule_spaces_empty_fetches_as_the_rule_says(master, fetch_log, ruled_group):
    # Scenario 23 (§6.6 C): after 1 empty fetch msg_not_found_wait (400 ms), after 2-5
    # consecutive empty fetches 250 ms, from the 6th on 1500 ms.
    group = ruled_group(
        [{"type": 1, "rule": [{"zeroCnt": 2, "freqInMs": 250}, {"zeroCnt": 6, "freqInMs": 1500}]}]
    )
    with tubemq.Consumer(
        master=master, group=group, topics=[EMPTY_TOPIC], consume_from="latest", **FAST
    ) as consumer:
        started = time.monotonic()
        while time.monotonic() - started < 13:
            assert consumer.poll(0.5) is None
        held = consumer.assignment()
    fetch_log.settle()
    fetches = fetch_log.per_partition()
    assert sorted(fetches) == held == [f"1:{EMPTY_TOPIC}:{i}" for i in range(4)]
    for key, rows in fetches.items():
        assert {row.code for row in rows} == {404}, (key, rows)
        spacing = gaps(rows)
        assert len(spacing) >= 8, (key, spacing)
        assert spacing[0] >= 0.35, (key, spacing)  # one empty fetch: below zeroCnt 2
        assert min(spacing[1:5]) >= 0.2, (key, spacing)
        # Shorter than the 400 ms default, so the 250 ms rule is the one in force.
        assert sum(spacing[1:5]) < 1.4, (key, spacing)
        assert min(spacing[5:]) >= 1.4, (key, spacing)


def test_data_limit_rule_paces_fetches_once_a_mib_was_read_this_minute(
    master, fetch_log, ruled_group
):
    # Scenario 24: a rule active all day (GMT+8) for any backlog (dltInM is compared with
    # the lag in bytes), 1 MiB per minute, then one fetch every 2000 ms per partition.
    group = ruled_group(
        [
            {
                "type": 0,
                "rule": [
                    {
                        "start": "00:00",
                        "end": "23:59",
                        "dltInM": 21,
                        "limitInM": 1,
                        "freqInMs": 2000,
                    }
                ],
            }
        ]
    )
    with tubemq.Consumer(
        master=master, group=group, topics=[BACKLOG_TOPIC], consume_from="latest", **FAST
    ) as consumer:
        deadline = time.monotonic() + 40
        while len(consumer.assignment()) < 4:  # joined, positioned at the end, not fetching
            assert time.monotonic() < deadline, consumer.assignment()
            time.sleep(0.2)
        # A backlog of 1.5 MiB per partition (16 KiB messages, sent round robin).
        with tubemq.Producer(master=master) as producer:
            producer.publish(BACKLOG_TOPIC)
            for i in range(384):
                producer.send_async(BACKLOG_TOPIC, i.to_bytes(4, "big") * 4096)
            assert producer.flush(60) == 0
        received: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
        total, started = 0, time.monotonic()
        while total < 6 * MIB and time.monotonic() - started < 55:
            batch = consumer.consume(1000, timeout=0.5)
            if batch:
                size = sum(len(m) for m in batch)
                received[batch[0].partition_key].append((time.time(), size))
                total += size
    fetch_log.settle()
    fetches = fetch_log.per_partition()
    assert sorted(fetches) == sorted(received) == [f"1:{BACKLOG_TOPIC}:{i}" for i in range(4)]
    for key, rows in fetches.items():
        # The group is under flow control now, so every fetch tells the broker so.
        assert all(row.escaped for row in rows), (key, rows)
        # When this partition's reads passed 1 MiB (the broker sends batches of up to
        # 512 KiB; some 200 replies carry no message of this partition at all).
        read, crossed_at = 0, None
        for at, size in received[key]:
            read += size
            if crossed_at is None and read >= MIB:
                crossed_at = at
        assert crossed_at is not None, (key, read)
        # The minute opens at the first fetch's release; stay well inside it, and look at
        # fetches while backlog is left (an empty fetch is paced by the empty-fetch rule).
        last_data = max(row.at for row in rows if row.code == 200)
        minute_end = rows[0].at + 55
        crossing = [row for row in rows if row.at <= crossed_at][-1]
        late = [row for row in rows if crossed_at < row.at <= min(last_data, minute_end)]
        late_gaps = gaps([crossing, *late])
        late_bytes = sum(size for at, size in received[key] if at > crossed_at)
        assert len(late_gaps) >= 2, (key, read, gaps(rows))
        # Past 1 MiB this minute: one fetch per 2000 ms, whatever the batch size ...
        assert min(late_gaps) >= 1.8, (key, late_gaps)
        # ... and reading goes on beyond the 1 MiB, a batch at a time: pacing, not a cap.
        assert late_bytes > 0, (key, received[key])
