"""Periodic statistics: a client made with ``stats_cb=`` calls it with its ``metrics()``
every ``stats_interval_ms``, from a thread of its own (``tubemq-stats``), never under a
native lock. A callback that raises is logged and called again at the next interval."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

_logger = logging.getLogger("tubemq.stats")

StatsCallback = Callable[[dict[str, Any]], Any]


class StatsReporter:
    def __init__(
        self, metrics: Callable[[], dict[str, Any]], callback: StatsCallback, interval_ms: int
    ) -> None:
        self._metrics = metrics
        self._callback = callback
        self._interval_s = interval_ms / 1000.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tubemq-stats", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._callback(self._metrics())
            except Exception:  # the application's callback must not end the reporting
                _logger.exception("stats_cb raised")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
