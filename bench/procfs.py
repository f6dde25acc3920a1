"""What /proc says of a process's memory, for the runner (of a driver) and for a driver
(of itself): kept apart from ``bench.drivers`` so that a driver imports nothing more."""

from __future__ import annotations

from pathlib import Path


def status_mib(pid: int | str, field: str) -> float:
    """A size field of /proc/<pid>/status (``VmRSS``, ``VmHWM``) in MiB; pid may be "self"."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0
