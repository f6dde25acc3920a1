"""TLS files named in Spark options travel as bytes: read on the driver (a missing one
is refused there, naming the option, the path and why) and written again, privately,
where the task runs - whatever that process's working directory."""

from __future__ import annotations

import os
import pickle
import stat

import pytest

import tubemq
from tubemq.spark._files import ShippedFile, materialize, ship
from tubemq.spark._options import sink_options


def test_a_relative_path_is_read_on_the_driver_and_written_again_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.pem").write_bytes(b"-----BEGIN CERTIFICATE-----\nabc\n")
    options = sink_options({"master": "127.0.0.1:1", "tubemq.tls_ca_file": "ca.pem"})
    shipped = options.client["tls_ca_file"]
    assert isinstance(shipped, ShippedFile)
    # The task pickles to an executor whose working directory is somewhere else.
    elsewhere = tmp_path / "executor"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = materialize(pickle.loads(pickle.dumps(options.producer_config())))
    path = config["tls_ca_file"]
    with open(path, "rb") as written:
        assert os.path.isabs(path) and written.read() == shipped.content
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert materialize(options.producer_config())["tls_ca_file"] == path  # written once


def test_a_file_missing_on_the_driver_is_refused_there_naming_option_and_path(tmp_path):
    with pytest.raises(tubemq.ConfigError) as info:
        sink_options({"master": "127.0.0.1:1", "tubemq.tls_key_file": "no/such/key.pem"})
    assert info.value.key == "tubemq.tls_key_file"
    assert "no/such/key.pem" in str(info.value) and "driver" in str(info.value)


def test_the_text_form_names_the_file_never_its_contents():
    secret = ShippedFile("/keys/client.key", b"PRIVATE KEY MATERIAL")
    assert "PRIVATE" not in str(secret) and "PRIVATE" not in repr(secret)
    assert "/keys/client.key" in str(secret)


def test_the_barrier_helper_ships_its_config_files_too(tmp_path):
    key = tmp_path / "client.key"
    key.write_bytes(b"k")
    shipped = ship({"tls_key_file": str(key), "rpc_timeout_ms": 5000})
    assert isinstance(shipped["tls_key_file"], ShippedFile)
    assert shipped["rpc_timeout_ms"] == 5000
    with pytest.raises(tubemq.ConfigError, match="tls_ca_file"):
        ship({"tls_ca_file": str(tmp_path / "absent.pem")})
