"""TLS to a cluster whose master and broker serve TLS on ports of their own (docs/security.md,
behaviour.md §1.4): messages round-trip with the server certificate verified against the
harness's CA file; a wrong CA, a host name the certificate does not carry, plaintext to a
TLS port and TLS to a plain port each fail fast with a typed error that says why."""

from __future__ import annotations

import time
import uuid

import pytest

import tubemq

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "tls_topic"
FAST = {"register_attempts": 1, "connect_timeout_ms": 3000, "rpc_timeout_ms": 3000}


@pytest.fixture(scope="module")
def tls_cluster(private_cluster):
    with private_cluster([TOPIC], partitions=2, tls=True) as cluster:
        yield cluster


def tls_settings(cluster) -> dict:
    cert, key = cluster.tls_client_files  # 2.4.0 servers speak two-way TLS only
    return {
        "master": cluster.master_tls_address,
        "tls_enable": True,
        "tls_ca_file": str(cluster.tls_ca_file),
        "tls_cert_file": str(cert),
        "tls_key_file": str(key),
    }


def test_messages_round_trip_over_tls_to_master_and_broker(tls_cluster):
    marker = f"tls-{uuid.uuid4().hex[:8]}".encode()
    values = {marker + b"-%d" % index for index in range(50)}
    with tubemq.Producer(**tls_settings(tls_cluster)) as producer:
        producer.publish(TOPIC)
        for value in values:
            assert producer.send(TOPIC, value, attrs={"k": "v"}).message_id >= 0
        # The master handed out the broker's TLS port: sends went there, not to the plain one.
        brokers = {partition.broker_address for partition in producer.partitions(TOPIC)}
        assert brokers == {tls_cluster.broker_tls_address}
    seen: set[bytes] = set()
    with tubemq.Consumer(
        group=f"tls_{uuid.uuid4().hex[:8]}",
        topics=[TOPIC],
        consume_from="earliest",
        **tls_settings(tls_cluster),
    ) as consumer:
        deadline = time.monotonic() + 60
        while not values <= seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and bytes(message).startswith(marker):
                assert message.attrs == {"k": "v"}
                seen.add(bytes(message))
        assert consumer.metrics()["fetch_errors"] == 0
    assert seen == values


def refused(**settings) -> tubemq.TubeMQError:
    started = time.monotonic()
    with pytest.raises(tubemq.TubeMQError) as info:
        tubemq.Producer(**FAST, **settings)
    assert time.monotonic() - started < 8, "it hung instead of failing"
    return info.value


def test_a_certificate_from_another_ca_is_refused(tls_cluster, tmp_path):
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_text(OTHER_CA_PEM)
    error = refused(**{**tls_settings(tls_cluster), "tls_ca_file": str(other_ca)})
    assert "certificate verify failed" in str(error), error


def test_a_host_name_the_certificate_lacks_is_refused_unless_the_check_is_off(tls_cluster):
    port = tls_cluster.master_tls_address.rsplit(":", 1)[1]
    by_name = {**tls_settings(tls_cluster), "master": f"localhost:{port}"}
    error = refused(**by_name)
    assert "certificate verify failed" in str(error) or "hostname" in str(error).lower(), error
    with tubemq.Producer(**by_name, tls_verify_hostname=False) as producer:
        producer.publish(TOPIC)
        assert producer.send(TOPIC, b"no hostname check").message_id >= 0


def test_plaintext_to_a_tls_port_fails_fast_and_says_so(tls_cluster):
    error = refused(master=tls_cluster.master_tls_address)
    assert isinstance(error, (tubemq.ConnectionError, tubemq.TimeoutError)), error
    assert error.retriable


def test_tls_to_a_plain_port_fails_fast_and_says_so(tls_cluster):
    error = refused(**{**tls_settings(tls_cluster), "master": tls_cluster.master_address})
    assert "TLS handshake" in str(error), error


def test_a_missing_ca_file_is_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(tubemq.ConfigError, match="tls_ca_file"):
        tubemq.Producer(
            master="127.0.0.1:8716", tls_enable=True, tls_ca_file=str(tmp_path / "none.pem")
        )


# A self-signed CA certificate that signed nothing the tests use.
OTHER_CA_PEM = """\
-----BEGIN CERTIFICATE-----
MIIDGzCCAgOgAwIBAgIUKLMoL81QIvta4Sdq3n7JMoynz88wDQYJKoZIhvcNAQEL
BQAwHDEaMBgGA1UEAwwRVW5yZWxhdGVkIFRlc3QgQ0EwIBcNMjYxMTIzMDQyOTQ2
WhgPMjEyNjEwMzAwNDI5NDZaMBwxGjAYBgNVBAMMEVVucmVsYXRlZCBUZXN0IENB
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqoyWQWeza9S07y2lZ8D6
AU9SSMtY4qhEu1JvigUX1OZ5X6gLU/aDALWosIfO+y4GRLjXLIxjHTnAJnYGbMe9
08CXBRW3vBFSOk52HvKz8m4/+SJmEnrUgDLU7URBFDX47H7nQaBrNDUcifk07JC9
ikzdwl7eo+h2Iu1rYC1QaBbOMku/2YAX9Kg6jGuT6czfqJmE2hRfruO6imtSyknS
/MzC+u8tROk96YR8EtNuKIrodooNObbdO/lMVAJl6wmKOjCiHwnImk/V89Weo1Bi
p9K0Ocw7uu1Nnxt3ziVGhzMvfyNr7o/HqSukwjy9DsY++1ub5Gl2Gmt5+RoZFsu3
dQIDAQABo1MwUTAdBgNVHQ4EFgQUoxuKf8MXhKx2I2ovbF4+f5PqGBEwHwYDVR0j
BBgwFoAUoxuKf8MXhKx2I2ovbF4+f5PqGBEwDwYDVR0TAQH/BAUwAwEB/zANBgkq
hkiG9w0BAQsFAAOCAQEAhHUZyRTHaJe0XawEDcmvhu72xnlOmjx5K2IA8eZIcWsa
cmnoAHHCrONfXBorVGQiYXQnpx1hccUuRuG+lH4iVqNslf7wXvpEKAHOCUxdCFds
BJxySSKcihllIYD36wZHFikrfIs6lk9iDMLAdmwPvgqs0YOL7UZRra39+Uzujp0y
2075uAgk7XtRwYTTejrG3WqTlDLwqBBYcNte+fJN1Paf7JvP/BLd9YtPMsYWawNn
iUhq8m3ULYVoMMrZwdtLAPDwoOQhB5G+w7FbRc2d+/Rk8YWGMJAhpJJOM9hYo3e8
ss3udvXuVzQSfqnrSH95qQ9LBVZ+b1lEOVkK5V6Akg==
-----END CERTIFICATE-----
"""
