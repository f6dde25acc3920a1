"""The files a master and a broker need, written into the cluster's working directory.

Every path is absolute: the server resolves relative ones against its working directory.
Periods are shortened for tests (balancing every second, broker heartbeats every second);
the master's fixed 30 s wait before a new topic becomes publishable cannot be configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tubemq.cluster.tls_keys import STORE_PASSWORD, TlsFiles

# The master's admin token; the cluster only ever listens on loopback.
ADMIN_TOKEN = "tubemq-python-local"
BROKER_ID = 1
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    master: int
    master_web: int
    master_replication: int
    broker: int
    broker_web: int
    master_metrics: int
    broker_metrics: int
    # TLS ports of a cluster made with tls=True; 0 without TLS.
    master_tls: int = 0
    broker_tls_listen: int = 0

    @property
    def broker_tls(self) -> int:
        # The TLS port the broker reports (8124 when it serves no TLS); the master's
        # record of the broker must match it.
        return self.broker_tls_listen or 8124


def _metrics_section(port: int) -> str:
    # In 2.4.0 both servers start their Prometheus endpoint whatever promEnable says, and
    # with promEnable=false they ignore promHttpPort and bind the fixed default 9081, so a
    # broker next to its master (or a second cluster) collides. Enabled, they honour the
    # port, so each gets a free one.
    return f"""
[prometheus]
promEnable=true
promHttpPort={port}
"""


def _tls_section(port: int, tls: TlsFiles | None) -> str:
    if tls is None:
        return ""
    return f"""
[tlsSetting]
tlsEnable=true
tlsPort={port}
tlsKeyStorePath={tls.key_store}
tlsKeyStorePassword={STORE_PASSWORD}
tlsTwoWayAuthEnable=true
tlsTrustStorePath={tls.trust_store}
tlsTrustStorePassword={STORE_PASSWORD}
"""


def _master_ini(
    workdir: Path, ports: Ports, extra: Mapping[str, str], tls: TlsFiles | None = None
) -> str:
    extra_lines = "".join(f"{key}={value}\n" for key, value in extra.items())
    return f"""[master]
hostName={HOST}
port={ports.master}
webPort={ports.master_web}
webResourcePath={workdir / "resources"}
confModAuthToken={ADMIN_TOKEN}
consumerBalancePeriodMs=1000
brokerHeartbeatTimeoutMs=20000
consumerHeartbeatTimeoutMs=20000
producerHeartbeatTimeoutMs=20000
{extra_lines}
[meta_bdb]
repGroupName=tubemqLocalGroup
repNodeName=tubemqLocalNode1
repNodePort={ports.master_replication}
repHelperHost={HOST}:{ports.master_replication}
metaDataPath={workdir / "master-meta"}
metaLocalSyncPolicy=3
{_metrics_section(ports.master_metrics)}{_tls_section(ports.master_tls, tls)}"""


def _broker_ini(
    workdir: Path, ports: Ports, overrides: Mapping[str, str], tls: TlsFiles | None = None
) -> str:
    settings = {
        "brokerId": str(BROKER_ID),
        "hostName": HOST,
        "port": str(ports.broker),
        "webPort": str(ports.broker_web),
        "masterAddressList": f"{HOST}:{ports.master}",
        "primaryPath": str(workdir / "broker-data"),
        "maxSegmentSize": "134217728",
        "maxIndexSegmentSize": "14000000",
        "transferSize": "524288",
        "heartbeatPeriodMs": "1000",
        "enableMemStore": "false",
        **overrides,
    }
    lines = "".join(f"{key}={value}\n" for key, value in settings.items())
    return (
        f"[broker]\n{lines}{_metrics_section(ports.broker_metrics)}"
        f"{_tls_section(ports.broker_tls_listen, tls)}"
    )


_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="console" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{HH:mm:ss.SSS} %-5level [%t] %c{1} - %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="console"/></Root>
  </Loggers>
</Configuration>
"""


def write_config(
    workdir: Path,
    ports: Ports,
    master_settings: Mapping[str, str] | None = None,
    broker_settings: Mapping[str, str] | None = None,
    tls: TlsFiles | None = None,
) -> None:
    """Writes master.ini, broker.ini, log4j2.xml and the two admin-page templates.

    ``master_settings`` adds keys to the ``[master]`` section, e.g. the authentication
    switches ``startProduceAuthenticate=true``; ``broker_settings`` adds or replaces keys
    of the ``[broker]`` section, e.g. a small ``maxSegmentSize`` so that retention has
    whole segments to delete. With ``tls``, both also serve TLS on ``ports.master_tls``
    and ``ports.broker_tls_listen`` with that key store.
    """
    (workdir / "master.ini").write_text(_master_ini(workdir, ports, master_settings or {}, tls))
    (workdir / "broker.ini").write_text(_broker_ini(workdir, ports, broker_settings or {}, tls))
    (workdir / "log4j2.xml").write_text(_LOG4J2)
    # The admin API renders its JSON through two Velocity templates: the page prints the
    # variable the action filled in, the layout prints the page.
    templates = workdir / "resources" / "templates"
    (templates / "screen").mkdir(parents=True, exist_ok=True)
    (templates / "layout").mkdir(parents=True, exist_ok=True)
    (templates / "screen" / "webapi.vm").write_text("$sb")
    (templates / "layout" / "webapi.vm").write_text("$screen_placeholder")
    (workdir / "broker-data").mkdir(exist_ok=True)
