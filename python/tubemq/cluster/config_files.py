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

# The master's admin token; the cluster is a local one for tests and demos.
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


@dataclass(frozen=True)
class MasterNode:
    """One master of the cluster: the addresses it binds and advertises."""

    index: int
    host: str
    port: int
    web_port: int
    replication_port: int
    metrics_port: int
    tls_port: int = 0

    @property
    def name(self) -> str:
        return f"master-{self.index}"

    @property
    def stem(self) -> str:
        # The first node keeps the file names of the one-master cluster (master.ini,
        # master.log, master-meta), so that layout is unchanged.
        return "master" if self.index == 1 else self.name


@dataclass(frozen=True)
class BrokerNode:
    """One broker; its broker id is ``index``."""

    index: int
    host: str
    port: int
    web_port: int
    metrics_port: int
    tls_listen: int = 0

    @property
    def name(self) -> str:
        return f"broker-{self.index}"

    @property
    def stem(self) -> str:
        return "broker" if self.index == 1 else self.name

    @property
    def tls_port(self) -> int:
        # What the broker reports (8124 without TLS); the master's record must match it.
        return self.tls_listen or 8124


@dataclass(frozen=True)
class Topology:
    """Every node of a cluster. ``masters[0]`` starts the replication group."""

    masters: tuple[MasterNode, ...]
    brokers: tuple[BrokerNode, ...]

    @classmethod
    def single(cls, ports: Ports, host: str = HOST) -> Topology:
        """The one-master, one-broker cluster whose ports are ``ports``."""
        master = MasterNode(
            1,
            host,
            ports.master,
            ports.master_web,
            ports.master_replication,
            ports.master_metrics,
            ports.master_tls,
        )
        broker = BrokerNode(
            BROKER_ID,
            host,
            ports.broker,
            ports.broker_web,
            ports.broker_metrics,
            ports.broker_tls_listen,
        )
        return cls((master,), (broker,))

    @property
    def master_list(self) -> str:
        """``host:port,host:port`` of every master, as brokers and clients take it."""
        return ",".join(f"{m.host}:{m.port}" for m in self.masters)


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
    workdir: Path,
    node: MasterNode,
    helper: MasterNode,
    extra: Mapping[str, str],
    tls: TlsFiles | None = None,
) -> str:
    extra_lines = "".join(f"{key}={value}\n" for key, value in extra.items())
    # Every master names the first one as its helper: the first, its own helper, founds
    # the BDB-JE group, and the others join it through that address. The node names
    # must differ within the group, the group name is shared.
    return f"""[master]
hostName={node.host}
port={node.port}
webPort={node.web_port}
webResourcePath={workdir / "resources"}
confModAuthToken={ADMIN_TOKEN}
consumerBalancePeriodMs=1000
brokerHeartbeatTimeoutMs=20000
consumerHeartbeatTimeoutMs=20000
producerHeartbeatTimeoutMs=20000
{extra_lines}
[meta_bdb]
repGroupName=tubemqLocalGroup
repNodeName=tubemqLocalNode{node.index}
repNodePort={node.replication_port}
repHelperHost={helper.host}:{helper.replication_port}
metaDataPath={workdir / f"{node.stem}-meta"}
metaLocalSyncPolicy=3
{_metrics_section(node.metrics_port)}{_tls_section(node.tls_port, tls)}"""


def _broker_ini(
    workdir: Path,
    node: BrokerNode,
    master_list: str,
    overrides: Mapping[str, str],
    tls: TlsFiles | None = None,
) -> str:
    settings = {
        "brokerId": str(node.index),
        "hostName": node.host,
        "port": str(node.port),
        "webPort": str(node.web_port),
        "masterAddressList": master_list,
        "primaryPath": str(workdir / f"{node.stem}-data"),
        "maxSegmentSize": "134217728",
        "maxIndexSegmentSize": "14000000",
        "transferSize": "524288",
        "heartbeatPeriodMs": "1000",
        "enableMemStore": "false",
        **overrides,
    }
    lines = "".join(f"{key}={value}\n" for key, value in settings.items())
    return (
        f"[broker]\n{lines}{_metrics_section(node.metrics_port)}"
        f"{_tls_section(node.tls_listen, tls)}"
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
    layout: Ports | Topology,
    master_settings: Mapping[str, str] | None = None,
    broker_settings: Mapping[str, str] | None = None,
    tls: TlsFiles | None = None,
) -> None:
    """Writes master.ini, broker.ini, log4j2.xml and the two admin-page templates.

    ``layout`` is either the ports of the one-master, one-broker cluster on ``HOST`` or a
    whole :class:`Topology`; node N > 1 gets ``master-N.ini`` / ``broker-N.ini`` and data
    directories of its own, and every broker is given the list of all masters.

    ``master_settings`` adds keys to the ``[master]`` section, e.g. the authentication
    switches ``startProduceAuthenticate=true``; ``broker_settings`` adds or replaces keys
    of the ``[broker]`` section, e.g. a small ``maxSegmentSize`` so that retention has
    whole segments to delete. With ``tls``, both also serve TLS on ``ports.master_tls``
    and ``ports.broker_tls_listen`` with that key store.
    """
    topology = layout if isinstance(layout, Topology) else Topology.single(layout)
    helper = topology.masters[0]
    for master in topology.masters:
        (workdir / f"{master.stem}.ini").write_text(
            _master_ini(workdir, master, helper, master_settings or {}, tls)
        )
    for broker in topology.brokers:
        (workdir / f"{broker.stem}.ini").write_text(
            _broker_ini(workdir, broker, topology.master_list, broker_settings or {}, tls)
        )
        (workdir / f"{broker.stem}-data").mkdir(exist_ok=True)
    (workdir / "log4j2.xml").write_text(_LOG4J2)
    # The admin API renders its JSON through two Velocity templates: the page prints the
    # variable the action filled in, the layout prints the page.
    templates = workdir / "resources" / "templates"
    (templates / "screen").mkdir(parents=True, exist_ok=True)
    (templates / "layout").mkdir(parents=True, exist_ok=True)
    (templates / "screen" / "webapi.vm").write_text("$sb")
    (templates / "layout" / "webapi.vm").write_text("$screen_placeholder")
