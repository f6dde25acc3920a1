"""Native log records, delivered to Python's ``logging`` under the logger ``tubemq``.

The core never calls into Python to log: its log4cplus appender puts records on a bounded
native queue. One daemon thread, started the first time a client is created (never at
import), waits on that queue with the GIL released and hands each record to ``logging``.
Records keep the time and thread name of the native code that wrote them. Nothing is
written to files unless the application configures ``logging`` to do so.
"""

from __future__ import annotations

import logging
import os
import threading

from tubemq import _core

LOGGER_NAME = "tubemq"
_WAIT_SLICE_S = 0.25

_lock = threading.Lock()
_thread: threading.Thread | None = None
_stopping = threading.Event()


def _emit(records: list[tuple[int, str, str, float, str]]) -> None:
    root = logging.getLogger(LOGGER_NAME)
    for level, name, message, created, thread_name in records:
        # Native logger names are already absolute ("tubemq" or "tubemq.<part>").
        logger = logging.getLogger(name) if name.startswith(LOGGER_NAME + ".") else root
        if not logger.isEnabledFor(level):
            continue
        record = logger.makeRecord(logger.name, level, "(native)", 0, message, (), None)
        record.created = created
        record.msecs = (created - int(created)) * 1000
        record.threadName = thread_name
        logger.handle(record)


def _sync_native_level() -> None:
    """Lets the core skip formatting records that Python would discard anyway."""
    _core.set_log_level(logging.getLogger(LOGGER_NAME).getEffectiveLevel())


def _dispatch_loop() -> None:
    while not _stopping.is_set():
        records = _core.drain_log_records(_WAIT_SLICE_S)
        if records:
            _emit(records)
        _sync_native_level()


def start_log_dispatcher() -> None:
    """Starts the dispatcher thread if it is not running (idempotent, cheap)."""
    global _thread
    # A client about to start must log at the level Python wants now, not a moment later.
    _sync_native_level()
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _stopping.clear()
        _thread = threading.Thread(target=_dispatch_loop, name="tubemq-log", daemon=True)
        _thread.start()


def flush_logs() -> None:
    """Delivers every record queued so far on the calling thread (used at close and exit)."""
    while True:
        records = _core.drain_log_records(0.0)
        if not records:
            return
        _emit(records)


def stop_log_dispatcher() -> None:
    """Stops the dispatcher and delivers what is left (called once, at interpreter exit)."""
    _stopping.set()
    _core.wake_log_drainers()
    thread = _thread
    if thread is not None:
        thread.join(timeout=2.0)
    flush_logs()


def _after_fork_in_child() -> None:
    # The parent's dispatcher thread does not exist in the child; start afresh on demand.
    global _thread, _lock
    _thread = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
