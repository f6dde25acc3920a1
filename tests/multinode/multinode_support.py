"""What tests/multinode shares besides its fixtures: the cluster's shape and helpers.
(Imported by name, as pytest puts this directory on ``sys.path``; ``from conftest import``
would find whichever conftest.py pytest imported last.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BROKERS = 3
MASTERS = 3
PARTITIONS = 2  # per broker
# Every topic of tests/multinode, created in one go when the cluster starts.
TOPICS = [
    "topo_spread",
    "topo_group",
    "topo_offline",
    "topo_balance",
    "topo_soak",
    "topo_failover",
    "topo_spark_read",
    "topo_spark_sink",
    "topo_spark_stream",
]
TUBEMQ_COMMAND = str(Path(sys.executable).with_name("tubemq"))


def broker_id(partition_key: str) -> int:
    # Partition keys are "brokerId:topic:partition".
    return int(partition_key.split(":", 1)[0])


def cluster_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TUBEMQ_COMMAND, "cluster", *args], capture_output=True, text=True, timeout=600
    )
