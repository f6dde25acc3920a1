"""Clients of a Python worker process: created inside tasks, cached, closed at exit.

Spark reuses a Python worker process for many tasks, one task at a time. Registering a
client to the master costs a round trip or two and a heartbeat thread on the master, so
each process keeps one client per kind and configuration and hands it to every task that
asks with the same settings. Clients are never pickled: tasks carry plain options and
look their client up here.

The cache closes its clients when the interpreter exits normally (``atexit``). Spark's
daemon-forked workers end with ``os._exit``, which skips ``atexit``; there each task
already leaves its client settled (sends flushed, partitions released), and the master
forgets the silent client after its heartbeat timeout. A process forked from one that
holds clients starts with an empty cache: clients never cross a fork.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Callable, TypeVar

import tubemq
from tubemq.spark._files import materialize

_logger = logging.getLogger("tubemq.spark")

_Client = TypeVar("_Client")

_lock = threading.Lock()
_clients: dict[tuple[str, str], Any] = {}

# How long interpreter exit waits for each cached client.
EXIT_CLOSE_TIMEOUT_S = 2.0


def _cache_key(kind: str, config: Mapping[str, Any]) -> tuple[str, str]:
    return kind, json.dumps(config, sort_keys=True, default=str)


def _cached(kind: str, config: Mapping[str, Any], create: Callable[[], _Client]) -> _Client:
    key = _cache_key(kind, config)
    with _lock:
        cached: _Client | None = _clients.get(key)
        if cached is not None and not getattr(cached, "closed", False):
            return cached
        client = create()
        _clients[key] = client
        return client


_reader_groups: dict[tuple[str, ...], str] = {}


def _forget_the_parents() -> None:
    """In a fork()ed child (Spark's daemon forks its Python workers): the parent's
    clients and reader groups are not this process's, and a lock another thread of the
    parent held at the fork would stay held."""
    global _lock
    _lock = threading.Lock()
    _clients.clear()
    _reader_groups.clear()


os.register_at_fork(after_in_child=_forget_the_parents)


def reader_group(master: str, topics: Iterable[str]) -> str:
    """This process's consumer group for reading ``topics``, when the query names none.

    A reader assigns each range at its planned offsets and never relies on what its group
    committed, so the tasks of one process (Spark runs them one at a time) share a group
    and its registered client across tasks and queries. The master wants every member of
    a group to subscribe to the same topics: one group per master and topic set. Two
    processes never share one: a killed task's retry, in another process, does not wait
    for the dead registration.
    """
    key = (master, *sorted(topics))
    with _lock:
        group = _reader_groups.get(key)
        if group is None:
            group = _reader_groups[key] = f"spark-{uuid.uuid4().hex[:12]}"
        return group


def producer(config: Mapping[str, Any]) -> tubemq.Producer:
    """This process's producer for ``config``."""
    return _cached("producer", config, lambda: tubemq.Producer(materialize(config)))


def assigned_consumer(config: Mapping[str, Any]) -> Any:
    """This process's client-balanced consumer for ``config`` (no partition assigned)."""
    return _cached("assigned", config, lambda: _assigned_consumer_class()(materialize(config)))


def _assigned_consumer_class() -> Any:
    try:
        return tubemq.AssignedConsumer
    except AttributeError:
        raise ImportError(
            "this tubemq build has no AssignedConsumer (the client-balanced consumer); "
            "the tubemq data source needs it to read"
        ) from None


def discard(client: Any) -> None:
    """Closes a client that failed and drops it from the cache. The process's reader
    groups are replaced too: the failed client may still hold a partition in one until
    the broker expires its registration."""
    with _lock:
        _reader_groups.clear()
        for key, cached in list(_clients.items()):
            if cached is client:
                del _clients[key]
    try:
        client.close(timeout=EXIT_CLOSE_TIMEOUT_S)
    except Exception as error:  # closing a broken client may fail again
        _logger.debug("closing a discarded client failed: %s", error)


def close_for(kind: str, config: Mapping[str, Any]) -> None:
    """Closes and forgets this process's client of ``kind`` for ``config``, if any."""
    with _lock:
        client = _clients.pop(_cache_key(kind, config), None)
    if client is not None:
        try:
            client.close(timeout=EXIT_CLOSE_TIMEOUT_S)
        except Exception as error:
            _logger.debug("closing a cached client failed: %s", error)


def close_all(timeout: float = EXIT_CLOSE_TIMEOUT_S) -> int:
    """Closes every cached client of this process; returns how many were closed."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        try:
            client.close(timeout=timeout)
        except Exception as error:
            _logger.debug("closing a cached client at exit failed: %s", error)
    return len(clients)


def cached_count() -> int:
    with _lock:
        return len(_clients)


atexit.register(close_all)
