"""Importing tubemq must be cheap and inert: no thread, no socket, no native service."""

from __future__ import annotations

import subprocess
import sys


def test_import_starts_no_thread_and_no_service():
    script = (
        "import threading, tubemq\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "state = tubemq._core.service_state()\n"
        "assert state['io_threads'] == 0 and state['users'] == 0, state\n"
        "import os\n"
        "print(len(os.listdir('/proc/self/task')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    # (An editable install may print its rebuild first; the count is the last line.)
    assert result.stdout.strip().splitlines()[-1] == "1"


def test_import_loads_no_ssl():
    # asyncio imports ssl, and ssl the system's OpenSSL, beside the one a wheel bundles
    # (tests/packaging): only tubemq.aio, or awaiting a handle, may bring it in.
    script = "import sys, tubemq\nprint(sorted({'asyncio', 'ssl'} & set(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_version_is_exposed():
    import tubemq

    assert tubemq.__version__.count(".") == 2
