"""``tubemq perf``: a periodic line per interval and a summary whose counts add up."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def _perf(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tubemq.cli", "perf", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_perf_produce_at_a_rate_then_consume_it(master, topics):
    out = _perf(
        "produce",
        "--master",
        master,
        "--topic",
        topics[4],
        "--size",
        "256",
        "--rate",
        "300",
        "--seconds",
        "3",
        "--interval",
        "0.5",
    )
    periodic = [line for line in out.splitlines() if line.startswith("produce ")]
    total = re.search(r"failed (\d+)\s+\((\d+) messages in", out)
    assert total, out
    failed, sent = int(total.group(1)), int(total.group(2))
    assert failed == 0
    assert 600 <= sent <= 1000  # about 300/s for 3 s, paced, not flat out
    assert len(periodic) >= 4 and all("msg/s" in line and "p99" in line for line in periodic)

    out = _perf("consume", "--master", master, "--topic", topics[4], "--seconds", "8")
    received = int(re.search(r"\((\d+) messages in", out).group(1))
    assert received >= sent  # a new group from the earliest offset sees at least those
