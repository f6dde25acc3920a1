"""One ``up()`` at a time per workdir.

Two ``up()`` calls on one workdir (two test sessions, two terminals, two threads) used to
race: both found no running cluster, and the second started a master on new ports next to
the first one's, then failed after minutes with "did not become ready". An exclusive
``flock`` on a file of the workdir serialises them: the second waits for the first, then
finds its cluster running and only adds its topics. The kernel drops the lock when its
holder exits, so a crashed ``up()`` leaves nothing to clean up.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tubemq.cluster.errors import ClusterError

LOCK_FILE = "up.lock"
# An up() that fetches the server and deploys several batches of topics takes minutes.
WAIT_FOR_OTHER_UP_S = 900.0
_POLL_S = 0.2


@contextmanager
def preparing(workdir: Path, wait_s: float = WAIT_FOR_OTHER_UP_S) -> Iterator[None]:
    """Holds ``workdir``'s lock while a cluster is prepared there; waits up to ``wait_s``
    for another holder, then raises ClusterError naming it."""
    with open(workdir / LOCK_FILE, "a+", encoding="ascii") as lock:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    lock.seek(0)
                    holder = lock.read().strip() or "unknown"
                    raise ClusterError(
                        f"another up() has been preparing the cluster in {workdir} for "
                        f"more than {wait_s:.0f} s (process {holder}); wait for it to "
                        "finish, or use another workdir"
                    ) from None
                time.sleep(_POLL_S)
        try:
            lock.seek(0)
            lock.truncate()
            lock.write(str(os.getpid()))
            lock.flush()
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
