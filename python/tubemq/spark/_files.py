"""Files named in options travel with the task, not as paths.

A TLS CA, certificate or key given to the source, the sink or the barrier helper is a
path on the driver; on a cluster the executors run elsewhere, where that path (relative
to the driver's directory, or on its disk only) names nothing. So the driver reads each
such file when the options are parsed - a missing one fails there, naming the option,
the path and why - and the task carries its bytes; the executor writes them to a private
file of its own (mode 0600) before it makes a client.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import tubemq

# The client keys whose values are paths of files the client reads.
FILE_KEYS = ("tls_ca_file", "tls_cert_file", "tls_key_file")


@dataclass(frozen=True)
class ShippedFile:
    """A file's bytes, read on the driver. Its text form (used in the client cache key
    and in logs) names the file and its digest, never its contents: it may be a key."""

    source: str
    content: bytes

    def __str__(self) -> str:
        digest = hashlib.sha256(self.content).hexdigest()[:16]
        return f"<{self.source} sha256:{digest}>"

    __repr__ = __str__


def ship(settings: Mapping[str, Any], option_prefix: str = "") -> dict[str, Any]:
    """``settings`` with each file key's path replaced by the file's bytes (on the
    driver). ``option_prefix`` is how the caller spells the key in errors
    (``"tubemq."`` for the data source's options)."""
    shipped = dict(settings)
    for key in FILE_KEYS:
        path = shipped.get(key)
        if isinstance(path, ShippedFile) or not path:
            continue
        if not isinstance(path, (str, os.PathLike)):
            raise tubemq.ArgumentTypeError(
                f"option '{option_prefix}{key}' must be a path, got {type(path).__name__}",
                key=f"{option_prefix}{key}",
            )
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError as error:
            raise tubemq.ConfigError(
                f"option '{option_prefix}{key}': cannot read {os.fspath(path)!r} on the "
                f"driver ({error.strerror or error}); the driver reads it and sends its "
                "contents to the executors, so it must exist where the job is submitted",
                key=f"{option_prefix}{key}",
            ) from None
        shipped[key] = ShippedFile(os.path.abspath(path), content)
    return shipped


_written: dict[bytes, str] = {}  # digest -> the file this process wrote for it
_lock = threading.Lock()


def materialize(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with every shipped file written to a private file of this process
    and named by its path, ready for a client."""
    ready = dict(config)
    for key in FILE_KEYS:
        value = ready.get(key)
        if isinstance(value, ShippedFile):
            ready[key] = _write_once(value)
    return ready


def _write_once(shipped: ShippedFile) -> str:
    digest = hashlib.sha256(shipped.content).digest()
    with _lock:
        path = _written.get(digest)
        if path is not None and os.path.isfile(path):
            return path
        directory = tempfile.mkdtemp(prefix="tubemq-files-")  # mode 0700
        path = os.path.join(directory, os.path.basename(shipped.source) or "file")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(shipped.content)
        _written[digest] = path
        return path
