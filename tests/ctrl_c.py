"""The child side of the Ctrl-C tests: a script that arms an interrupt, then blocks in a call.

Each Ctrl-C test runs its blocking call in a child interpreter, because the SIGINT is sent to
the whole process. `interrupting_script(body)` puts a prelude in front of the test's own body:

- It installs Python's KeyboardInterrupt handler explicitly. A process started with SIGINT
  ignored (anything launched by `nohup` or `cmd &` in a non-interactive shell, and every
  process it starts) inherits the ignore, and Python then installs no handler at all: no
  Ctrl-C would ever interrupt anything, and the test would blame the client for how the
  suite was launched.
- `interrupt_in_a_second()` starts a thread that, a second later, notes the time in
  `stamp["sent"]` and sends the process a SIGINT.
- `report_interrupted()` prints how long after the signal the KeyboardInterrupt arrived and
  exits 0; `report_not_interrupted()` exits 1. `delay_after_signal(stdout)` reads it back.
"""

from __future__ import annotations

import textwrap

_PRELUDE = """\
import os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
stamp = {}

def _interrupt():
    time.sleep(1.0)
    stamp["sent"] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)

def interrupt_in_a_second():
    threading.Thread(target=_interrupt, daemon=True).start()

def report_interrupted():
    print("interrupted after", time.monotonic() - stamp["sent"], flush=True)
    os._exit(0)

def report_not_interrupted():
    print("not interrupted", flush=True)
    os._exit(1)

"""


def interrupting_script(body: str) -> str:
    """The prelude above, then `body` (dedented): Python source for `python -c`."""
    return _PRELUDE + textwrap.dedent(body)


def delay_after_signal(stdout: str) -> float:
    """Seconds from the SIGINT to the KeyboardInterrupt, as the child reported them."""
    return float(stdout.strip().splitlines()[-1].split()[-1])
