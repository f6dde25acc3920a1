"""The key store a TLS-enabled test cluster serves with, made by ``keytool``.

One self-signed certificate for 127.0.0.1 (and the name ``tubemq.test``, but not
``localhost``, so that a client dialling "localhost" can check host-name verification),
kept in a JKS store for the servers, and exported as PEM for clients to trust.

TLS with 2.4.0 servers is two-way or nothing: the TLS engine of every accepted
connection opens ``tlsTrustStorePath``, which the servers read only with
``tlsTwoWayAuthEnable=true`` (without it the path is blank and the master or broker exits:
"init SSLEngine error, system auto exit!"), and two-way means a client certificate. So a
client key pair is made too (PEM, by ``openssl``), and its certificate is the one entry of
the servers' trust store.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tubemq.cluster.errors import ClusterError

STORE_PASSWORD = "tubemq-test-store"
_ALIAS = "tubemq"


@dataclass(frozen=True)
class TlsFiles:
    key_store: Path  # JKS, for master.ini and broker.ini
    ca_file: Path  # PEM, for clients' tls_ca_file
    trust_store: Path  # JKS: the client certificate the servers accept
    client_cert: Path  # PEM, for clients' tls_cert_file
    client_key: Path  # PEM, unencrypted, for clients' tls_key_file


def make_tls_files(directory: Path) -> TlsFiles:
    """Creates the key store and its certificate in ``directory`` unless present."""
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(
        directory / "server.jks",
        directory / "ca.pem",
        directory / "trust.jks",
        directory / "client.pem",
        directory / "client.key",
    )
    every = (files.key_store, files.ca_file, files.trust_store, files.client_cert, files.client_key)
    if all(path.exists() for path in every):
        return files
    keytool, openssl = shutil.which("keytool"), shutil.which("openssl")
    if keytool is None or openssl is None:
        raise ClusterError("keytool (from the JDK) and openssl make a TLS test cluster's keys")
    for stale in every:
        stale.unlink(missing_ok=True)
    _run(
        [
            keytool, "-genkeypair", "-storetype", "JKS", "-keystore", str(files.key_store),
            "-storepass", STORE_PASSWORD, "-keypass", STORE_PASSWORD, "-alias", _ALIAS,
            "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
            "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1,dns:tubemq.test",
        ]
    )  # fmt: skip
    _run(
        [
            keytool, "-exportcert", "-rfc", "-keystore", str(files.key_store),
            "-storepass", STORE_PASSWORD, "-alias", _ALIAS, "-file", str(files.ca_file),
        ]
    )  # fmt: skip
    _run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
            "-subj", "/CN=tubemq-test-client", "-keyout", str(files.client_key),
            "-out", str(files.client_cert),
        ]
    )  # fmt: skip
    _run(
        [
            keytool, "-importcert", "-noprompt", "-storetype", "JKS",
            "-keystore", str(files.trust_store), "-storepass", STORE_PASSWORD,
            "-alias", "client", "-file", str(files.client_cert),
        ]
    )  # fmt: skip
    return files


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise ClusterError(f"{' '.join(command[:2])} failed: {done.stderr.strip() or done.stdout}")
