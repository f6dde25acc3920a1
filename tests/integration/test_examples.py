"""The small examples run as a user runs them, against the real cluster."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_quickstart(master, topics):
    out = _example("quickstart.py", "--master", master, "--topic", topics[4])
    assert out.count("sent ") == 5 and out.count("got ") == 5


def test_asyncio_roundtrip(master, topics):
    out = _example("aio_roundtrip.py", "--master", master, "--topic", topics[4])
    assert "received all 100 back" in out


def test_split_partitions_takes_this_nodes_share(master, topics):
    group = f"example_{uuid.uuid4().hex[:8]}"
    out = _example(
        "split_partitions.py",
        "--master",
        master,
        "--topic",
        topics[4],
        "--group",
        group,
        "--nodes",
        "2",
        "--node",
        "1",
        "--seconds",
        "3",
    )
    assert "node 1 of 2 holds ['1:" in out


def test_inlong_records(master, topics):
    out = _example("inlong_records.py", "--master", master, "--topic", topics[5])
    lines = out.splitlines()
    assert sum(line.startswith("record ") for line in lines) == 6
    assert any(line.startswith("not a pack") for line in lines)
