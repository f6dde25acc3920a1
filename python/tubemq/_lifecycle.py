"""What every client shares: the registry of live clients closed at interpreter exit,
and the fork policy (a client belongs to the process that created it).

At exit, clients are closed first (their last log records included), then the log
dispatcher stops after delivering what is left.
"""

from __future__ import annotations

import atexit
import os
import time
import weakref
from typing import Protocol, TypeVar

from tubemq import _log
from tubemq.errors import ClientClosedError, ForkedClientError

_Native = TypeVar("_Native")


class _Closable(Protocol):
    def close(self, timeout: float | None = ...) -> None: ...


# Weak, so that registering a client never keeps it alive.
_live: weakref.WeakSet[_Closable] = weakref.WeakSet()

# Bound on how long interpreter exit may wait for all clients still open together
# (sends in flight get that long to be answered), so that a program that forgot to
# close its clients still exits within 2 s.
EXIT_CLOSE_BUDGET_S = 1.5


# This process's id, kept current across fork() by the hook below, so that a client can
# tell it was inherited without a getpid() system call per check (poll() checks once
# per message it hands out).
process_pid = os.getpid()


def _note_fork() -> None:
    global process_pid
    process_pid = os.getpid()


os.register_at_fork(after_in_child=_note_fork)


def usable(native: _Native | None, pid: int, kind: str) -> _Native:
    """The native client, unless it was closed (420) or created in another process, the
    parent of a fork() (1012)."""
    if pid != process_pid:
        raise ForkedClientError(
            1012,
            f"this {kind} was created in process {pid} before fork(); "
            "create a new client in the child process",
        )
    if native is None:
        raise ClientClosedError(420, f"the {kind} is closed")
    return native


def track(client: _Closable) -> None:
    _live.add(client)


def untrack(client: _Closable) -> None:
    _live.discard(client)


def _close_all_at_exit() -> None:
    deadline = time.monotonic() + EXIT_CLOSE_BUDGET_S
    for client in list(_live):
        try:
            client.close(timeout=max(0.05, deadline - time.monotonic()))
        except Exception:
            pass
    _log.stop_log_dispatcher()


atexit.register(_close_all_at_exit)
