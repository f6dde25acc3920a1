"""Masters and brokers on this machine, and the topics the caller asked for.

By default one master and one broker on 127.0.0.1. ``up(brokers=N, masters=M)`` makes a
bigger cluster: the M masters form one BDB-JE replication group (one is active, the others
are standbys), every broker and client gets the list of all of them, and each topic is
deployed on every broker. TubeMQ 2.4.0 refuses a second broker with the same IP address
("Duplicated broker configure record, query by brokerIp"), so broker N listens on the
N-th loopback address counted from ``host`` (127.0.0.1, 127.0.0.2, ...); the masters
share ``host`` and differ by port.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Union

from tubemq.cluster import maven, process
from tubemq.cluster.admin import AdminClient
from tubemq.cluster.config_files import (
    HOST,
    BrokerNode,
    MasterNode,
    Ports,
    Topology,
    write_config,
)
from tubemq.cluster.errors import ClusterError
from tubemq.cluster.tls_keys import make_tls_files
from tubemq.cluster.workdir_lock import preparing

Node = Union[MasterNode, BrokerNode]

STATE_FILE = "cluster.json"
MASTER_READY_TIMEOUT_S = 120.0
# How long standby masters may take to join the active one's replication group.
GROUP_READY_TIMEOUT_S = 120.0
MAX_NODES = 9
# A new topic waits a fixed 30 s in the master before it may be published to.
TOPICS_READY_TIMEOUT_S = 180.0


class LocalCluster:
    """A cluster whose files, logs and state live in ``workdir``.

    Nodes are named ``master-1`` .. ``master-M`` and ``broker-1`` .. ``broker-N``; broker
    N has broker id N. The first node of each kind keeps the file names of the one-node
    cluster (``master.ini``, ``broker.log``, ...), the others have their name in theirs
    (``broker-2.ini``, ``broker-2.log``, ``broker-2-data``).
    """

    def __init__(self, workdir: Path | str) -> None:
        self.workdir = Path(workdir).resolve()
        # A workdir that holds a cluster's state describes that cluster, so that
        # LocalCluster(workdir).down() stops what runs there, as `tubemq cluster down`
        # does (with an empty state it did nothing, silently). State that cannot be read
        # is left to load() and up() to report.
        self._state: dict[str, Any] = {}
        try:
            self._state = json.loads((self.workdir / STATE_FILE).read_text())
        except (OSError, ValueError):
            pass

    # -- addresses ---------------------------------------------------------------------
    @property
    def ports(self) -> Ports:
        """The ports of ``master-1`` and ``broker-1``."""
        if not self._state:
            raise ClusterError(f"no cluster state in {self.workdir}; run 'up' first")
        return Ports(**self._state["ports"])

    @property
    def host(self) -> str:
        """The address the masters (and the first broker) bind and advertise."""
        return str(self._state.get("host", HOST))

    @property
    def full_jit(self) -> bool:
        """Whether the server JVMs have their C2 compiler (``up(full_jit=True)``)."""
        return bool(self._state.get("full_jit", False))

    @property
    def topology(self) -> Topology:
        """Every node with its addresses."""
        saved = self._state.get("topology")
        if not saved:
            # State written before clusters had several nodes.
            return Topology.single(self.ports, self.host)
        return Topology(
            tuple(MasterNode(**item) for item in saved["masters"]),
            tuple(BrokerNode(**item) for item in saved["brokers"]),
        )

    @property
    def master_address(self) -> str:
        """``host:port`` of ``master-1`` (see ``master_list`` for all of them)."""
        master = self.topology.masters[0]
        return f"{master.host}:{master.port}"

    @property
    def master_list(self) -> str:
        """``host:port,host:port`` of every master: what a client's ``master=`` takes."""
        return self.topology.master_list

    @property
    def broker_address(self) -> str:
        """``host:port`` of ``broker-1``."""
        broker = self.topology.brokers[0]
        return f"{broker.host}:{broker.port}"

    @property
    def broker_addresses(self) -> list[str]:
        return [f"{b.host}:{b.port}" for b in self.topology.brokers]

    @property
    def broker_ids(self) -> list[int]:
        return [b.index for b in self.topology.brokers]

    @property
    def master_web_address(self) -> str:
        """The admin (web) address of ``master-1``."""
        master = self.topology.masters[0]
        return f"{master.host}:{master.web_port}"

    @property
    def node_names(self) -> list[str]:
        topology = self.topology
        return [m.name for m in topology.masters] + [b.name for b in topology.brokers]

    def node(self, name: str) -> Node:
        """The node called ``name`` (``master`` and ``broker`` mean the first of each)."""
        wanted = {"master": "master-1", "broker": "broker-1"}.get(name, name)
        topology = self.topology
        nodes: list[Node] = [*topology.masters, *topology.brokers]
        for node in nodes:
            if node.name == wanted:
                return node
        raise ClusterError(f"no node {name!r}; the cluster has {', '.join(self.node_names)}")

    def node_address(self, name: str) -> str:
        node = self.node(name)
        return f"{node.host}:{node.port}"

    @property
    def tls(self) -> bool:
        """Whether master and broker also serve TLS (``up(tls=True)``)."""
        return bool(self.ports.master_tls)

    @property
    def master_tls_address(self) -> str:
        self._require_tls()
        return f"{HOST}:{self.ports.master_tls}"

    @property
    def broker_tls_address(self) -> str:
        self._require_tls()
        return f"{HOST}:{self.ports.broker_tls_listen}"

    @property
    def tls_ca_file(self) -> Path:
        """The PEM file that verifies the servers' certificate (clients' ``tls_ca_file``)."""
        self._require_tls()
        return self.workdir / "tls" / "ca.pem"

    @property
    def tls_client_files(self) -> tuple[Path, Path]:
        """(certificate, key) PEM files of a client the servers accept (two-way TLS)."""
        self._require_tls()
        return self.workdir / "tls" / "client.pem", self.workdir / "tls" / "client.key"

    def _refuse_another_kind(
        self, masters: int, brokers: int, host: str, tls: bool, full_jit: bool
    ) -> None:
        """Raises ClusterError naming how this running cluster differs from the one asked."""
        shape = (len(self.topology.masters), len(self.topology.brokers))
        if shape != (masters, brokers) or self.host != host:
            raise ClusterError(
                f"{self.workdir} runs {shape[0]} master(s) and {shape[1]} broker(s) "
                f"on {self.host}; run 'down' first for another topology"
            )
        for name, running, asked in (("tls", self.tls, tls), ("full_jit", self.full_jit, full_jit)):
            if running != asked:
                raise ClusterError(
                    f"{self.workdir} runs with {name}={running}, not {name}={asked}; "
                    "run 'down' first to start it otherwise"
                )

    def _require_tls(self) -> None:
        if not self.tls:
            raise ClusterError(f"the cluster in {self.workdir} was not made with tls=True")

    @property
    def topics(self) -> list[str]:
        return list(self._state.get("topics", []))

    def admin(self) -> AdminClient:
        """The admin API of the active master (of ``master-1`` in a one-master cluster)."""
        if len(self.topology.masters) == 1:
            return AdminClient(self.master_web_address)
        active = self.node(self.active_master())
        return AdminClient(f"{active.host}:{active.web_port}")

    def active_master(self) -> str:
        """The name of the master that serves now; the others are standbys.

        Only the active master answers admin calls; a standby redirects them (in 2.4.0, to
        its own web port when all masters share one address, which loops), so a redirect
        is taken as "standby" and never followed.
        """
        errors = []
        for master in self.topology.masters:
            if not process.is_alive(self._pid(master.name), process.MASTER_CLASS):
                continue
            client = AdminClient(
                f"{master.host}:{master.web_port}", timeout_s=3.0, follow_redirects=False
            )
            try:
                if client.query("admin_query_cluster_default_setting").get("result"):
                    return master.name
            except ClusterError as error:
                errors.append(f"{master.name}: {error}")
        raise ClusterError(
            f"no active master in {self.workdir}: {'; '.join(errors) or 'none runs'}"
        )

    # -- state ---------------------------------------------------------------------------
    @classmethod
    def load(cls, workdir: Path | str) -> LocalCluster:
        """The cluster described by ``workdir/cluster.json`` (running or not)."""
        cluster = cls(workdir)
        path = cluster.workdir / STATE_FILE
        try:
            cluster._state = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ClusterError(f"no readable cluster state at {path}: {error}") from error
        return cluster

    def _save(self) -> None:
        (self.workdir / STATE_FILE).write_text(json.dumps(self._state, indent=2))

    def _pid(self, name: str) -> int:
        # The first master and broker keep the keys of the one-node cluster's state.
        key = {"master-1": "master", "broker-1": "broker"}.get(name, name)
        return int(self._state.get("pids", {}).get(key, 0))

    def _set_pid(self, name: str, pid: int) -> None:
        key = {"master-1": "master", "broker-1": "broker"}.get(name, name)
        self._state["pids"][key] = pid
        self._save()

    def node_pid(self, name: str) -> int:
        """The process id of node ``name`` while it runs, else 0 (to sample its CPU)."""
        node = self.node(name)
        pid = self._pid(node.name)
        return pid if process.is_alive(pid, _main_class(node)) else 0

    def is_node_running(self, name: str) -> bool:
        return self.node_pid(name) != 0

    def is_running(self) -> bool:
        """True while every node runs."""
        return bool(self._state.get("pids")) and all(
            self.is_node_running(name) for name in self.node_names
        )

    def describe(self) -> str:
        """``master=`` per master, ``broker=`` per broker, then ``master_web=`` (of
        ``master-1``) and, with TLS, the TLS addresses and files."""
        topology = self.topology
        text = "\n".join(
            [f"master={m.host}:{m.port}" for m in topology.masters]
            + [f"broker={b.host}:{b.port}" for b in topology.brokers]
            + [f"master_web={self.master_web_address}"]
        )
        if self.tls:
            text += (
                f"\nmaster_tls={self.master_tls_address}\nbroker_tls={self.broker_tls_address}"
                f"\ntls_ca_file={self.tls_ca_file}"
                f"\ntls_cert_file={self.tls_client_files[0]}"
                f"\ntls_key_file={self.tls_client_files[1]}"
            )
        return text

    def node_lines(self) -> list[str]:
        """One line per node: name, address, pid, running or not, and which master is
        active (``tubemq cluster status``)."""
        try:
            active = self.active_master() if len(self.topology.masters) > 1 else None
        except ClusterError:
            active = None
        lines = []
        for name in self.node_names:
            node = self.node(name)
            running = self.is_node_running(name)
            line = (
                f"{name} {node.host}:{node.port} pid={self._pid(name)} "
                f"{'running' if running else 'stopped'}"
            )
            if isinstance(node, MasterNode) and len(self.topology.masters) > 1 and running:
                line += " active" if name == active else " standby"
            lines.append(line)
        return lines

    # -- up ------------------------------------------------------------------------------
    def up(
        self,
        topics: Iterable[str],
        partitions: int = 4,
        master_settings: Mapping[str, str] | None = None,
        broker_env: Mapping[str, str] | Callable[[Ports], Mapping[str, str]] | None = None,
        broker_settings: Mapping[str, str] | None = None,
        topic_settings: Mapping[str, str] | None = None,
        tls: bool = False,
        brokers: int = 1,
        masters: int = 1,
        host: str = HOST,
        full_jit: bool = False,
    ) -> None:
        """Starts the masters and brokers with ``topics``; returns once all are usable.

        ``brokers`` brokers (ids 1..N) and ``masters`` masters, which form one replication
        group when there are several. Every topic is deployed on every broker with
        ``partitions`` partitions each, so it has ``brokers * partitions`` partitions in
        all. ``host`` is the address the masters and broker-1 advertise (the 2.4.0
        servers bind their RPC, web and metrics ports on every address, BDB-JE's port on
        ``host`` alone); brokers 2..N take the following addresses (one broker per IP
        address is all TubeMQ accepts), so several brokers need a loopback ``host``
        (127.x.y.z).

        ``master_settings`` adds keys to master.ini's ``[master]`` section,
        ``broker_settings`` to broker.ini's ``[broker]`` section; ``topic_settings`` are
        extra topic properties of the admin API (e.g. ``deletePolicy="delete,1s"``) for
        every topic this cluster deploys. With ``tls``, master and broker also serve TLS
        on ports of their own, with a self-signed certificate for 127.0.0.1 made by
        ``keytool`` (see ``tls_ca_file``). ``broker_env``
        adds variables to the broker's environment (kept for restarts), or is called with
        the chosen ports to make them; fault tests use it to preload a shim.
        ``full_jit`` gives the server JVMs their C2 compiler, as in production (kept for
        restarts): a broker then serves about twice the messages per second once warm,
        but starts slower; tests keep the quick-starting C1-only JVMs.

        One ``up()`` runs at a time per workdir: another one (in any process) waits for
        it, then finds its cluster running and only adds its own topics.
        """
        wanted = _check_topics(topics)
        if not 1 <= partitions <= 100:
            raise ClusterError(f"partitions must be within 1..100, got {partitions}")
        broker_hosts = _broker_hosts(host, brokers)
        if not 1 <= masters <= MAX_NODES:
            raise ClusterError(f"masters must be within 1..{MAX_NODES}, got {masters}")
        single = brokers == 1 and masters == 1
        if tls and not (single and host == HOST):
            # The self-signed certificate names 127.0.0.1 only.
            raise ClusterError("tls=True needs the one-master, one-broker cluster on 127.0.0.1")
        self.workdir.mkdir(parents=True, exist_ok=True)
        with preparing(self.workdir):
            if (self.workdir / STATE_FILE).exists():
                running = LocalCluster.load(self.workdir)
                if running.is_running():
                    # Adding topics to a cluster made otherwise would hide the mismatch.
                    running._refuse_another_kind(masters, brokers, host, tls, full_jit)
                    running.add_topics(wanted)
                    self._state = running._state
                    return
                running.down()
                # A new cluster gets new ports; BDB refuses metadata written under old ones.
                for stale in (
                    "master-meta",
                    "broker-data",
                    *(path.name for path in self.workdir.glob("master-*-meta")),
                    *(path.name for path in self.workdir.glob("broker-*-data")),
                ):
                    shutil.rmtree(self.workdir / stale, ignore_errors=True)
            classpath = maven.server_classpath()
            tls_files = make_tls_files(self.workdir / "tls") if tls else None
            if single:
                # The default keeps its loopback-only port choice, as before topologies.
                count = 9 if tls else 7
                ports = Ports(
                    *(process.free_ports(count) if host == HOST else _free_ports(count, host))
                )
                topology = Topology.single(ports, host)
            else:
                topology = _plan_topology(host, masters, broker_hosts)
                first_master, first_broker = topology.masters[0], topology.brokers[0]
                ports = Ports(
                    master=first_master.port,
                    master_web=first_master.web_port,
                    master_replication=first_master.replication_port,
                    broker=first_broker.port,
                    broker_web=first_broker.web_port,
                    master_metrics=first_master.metrics_port,
                    broker_metrics=first_broker.metrics_port,
                )
            write_config(
                self.workdir,
                topology,
                dict(master_settings or {}),
                dict(broker_settings or {}),
                tls_files,
            )
            if callable(broker_env):
                broker_env = broker_env(ports)
            self._state = {
                "ports": asdict(ports),
                "host": host,
                "topology": {
                    "masters": [asdict(m) for m in topology.masters],
                    "brokers": [asdict(b) for b in topology.brokers],
                },
                "broker_env": dict(broker_env or {}),
                "full_jit": full_jit,
                "pids": {},
                "topics": [],
                "partitions": partitions,
                "topic_settings": dict(topic_settings or {}),
                "server_version": maven.SERVER_VERSION,
            }
            self._save()
            try:
                self._start_master(classpath)
                # Standbys join through master-1, which must already lead the group.
                launched = time.time()
                for master in topology.masters[1:]:
                    self._launch(master, classpath)
                self._configure_brokers(partitions)
                self._deploy_topics(wanted, partitions)
                for broker in topology.brokers:
                    self._launch(broker, classpath)
                self._wait_topics_usable(wanted, partitions)
                for master in topology.masters[1:]:
                    self._wait_standby(master, launched)
            except BaseException:
                self.down()
                raise

    def add_topics(self, topics: Iterable[str]) -> None:
        """Creates more topics on a running cluster (each batch takes ~35 s)."""
        missing = [topic for topic in _check_topics(topics) if topic not in self.topics]
        if not missing:
            return
        if not self.is_running():
            raise ClusterError(f"the cluster in {self.workdir} is not running")
        partitions = self._state["partitions"]
        self._deploy_topics(missing, partitions)
        self._wait_topics_usable(missing, partitions)

    def partition_count(self, topic: str) -> int:
        """How many partitions the brokers run for ``topic`` now, all brokers together
        (0 if none)."""
        answer = self.admin().query("admin_query_topic_info", topicName=topic)
        for item in answer.get("data") or []:
            if item.get("topicName") == topic:
                return int(item.get("totalRunNumPartCount") or 0)
        return 0

    def grow_topic(self, topic: str, partitions: int) -> None:
        """Raises ``topic``'s partition count per broker (in its one store) to
        ``partitions`` and waits until the brokers serve them all; the master takes ~40 s
        to publish the change."""
        if not 1 <= partitions <= 100:
            raise ClusterError(f"partitions must be within 1..100, got {partitions}")
        current = self.partition_count(topic) // len(self.broker_ids)
        if partitions < current:
            raise ClusterError(f"{topic} has {current} partitions; TubeMQ cannot remove any")
        self.admin().modify(
            "admin_update_topic_deploy_info",
            topicName=topic,
            brokerId=",".join(str(i) for i in self.broker_ids),
            numPartitions=partitions,
        )
        self._wait_topics_usable([topic], partitions)

    def _launch(self, node: Node, classpath: list[Path]) -> None:
        env = self._state.get("broker_env") if isinstance(node, BrokerNode) else None
        pid = process.start_jvm(
            _main_class(node),
            self.workdir / f"{node.stem}.ini",
            classpath,
            self.workdir,
            self.workdir / f"{node.stem}.log",
            env=env,
            full_jit=self.full_jit,
        )
        self._set_pid(node.name, pid)

    def _start_master(self, classpath: list[Path]) -> None:
        """Starts master-1 and waits until it leads (its admin API answers)."""
        self._start_lone_master(self.topology.masters[0], classpath)

    def _start_lone_master(self, master: MasterNode, classpath: list[Path]) -> None:
        log = self.workdir / f"{master.stem}.log"
        self._launch(master, classpath)
        pid = self._pid(master.name)
        admin = AdminClient(f"{master.host}:{master.web_port}")
        deadline = time.monotonic() + MASTER_READY_TIMEOUT_S
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not process.is_alive(pid, process.MASTER_CLASS):
                raise ClusterError(f"{master.name} exited during start:\n{process.log_tail(log)}")
            try:
                answer = admin.query("admin_query_cluster_default_setting")
                if answer.get("result"):
                    return
                last = str(answer.get("errMsg"))
            except ClusterError as error:
                last = str(error)
            time.sleep(0.25)
        raise ClusterError(
            f"{master.name} did not become ready within {MASTER_READY_TIMEOUT_S:.0f}"
            f" s ({last}):\n{process.log_tail(log)}"
        )

    def _wait_standby(self, master: MasterNode, since: float) -> None:
        """Waits until ``master`` has joined the replication group (as a replica, or as
        the active master) at ``since`` (a ``time.time()``) or later: the group keeps a
        stopped member's last status, so only a fresh join time proves it is back."""
        log = self.workdir / f"{master.stem}.log"
        member = f"tubemqLocalNode{master.index}"
        deadline = time.monotonic() + GROUP_READY_TIMEOUT_S
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not self.is_node_running(master.name):
                raise ClusterError(f"{master.name} exited during start:\n{process.log_tail(log)}")
            try:
                answer = self.admin().query("admin_query_master_group_info")
                states = {
                    item.get("name"): item.get("statusInfo") or {}
                    for item in answer.get("data") or []
                }
                status = states.get(member, {})
                joined_ms = int(status.get("joinTime") or 0)
                if status.get("nodeStatus") in ("MASTER", "REPLICA") and joined_ms >= int(
                    since * 1000
                ):
                    return
                last = str(states)
            except ClusterError as error:
                last = str(error)
            time.sleep(0.5)
        raise ClusterError(
            f"{master.name} did not join the master group within "
            f"{GROUP_READY_TIMEOUT_S:.0f} s ({last}):\n{process.log_tail(log)}"
        )

    def _configure_brokers(self, partitions: int) -> None:
        admin = self.admin()
        # The master refuses a broker it does not know as online, so this precedes its start.
        for broker in self.topology.brokers:
            admin.modify(
                "admin_add_broker_configure",
                brokerId=broker.index,
                brokerIp=broker.host,
                brokerPort=broker.port,
                brokerWebPort=broker.web_port,
                brokerTLSPort=broker.tls_port,
                numPartitions=partitions,
                numTopicStores=1,
                acceptPublish="true",
                acceptSubscribe="true",
            )
            admin.modify("admin_online_broker_configure", brokerId=broker.index)

    def _deploy_topics(self, topics: list[str], partitions: int) -> None:
        # One call deploys the topics on every broker; each broker holds ``partitions``.
        self.admin().modify(
            "admin_add_topic_deploy_info",
            topicName=",".join(topics),
            brokerId=",".join(str(i) for i in self.broker_ids),
            numPartitions=partitions,
            numTopicStores=1,
            acceptPublish="true",
            acceptSubscribe="true",
            **self._state.get("topic_settings", {}),
        )
        self._state["topics"] = sorted(set(self._state["topics"]) | set(topics))
        self._save()

    def _wait_topics_usable(self, topics: list[str], partitions: int) -> None:
        """Waits until every broker serves ``partitions`` partitions of each topic."""
        admin = self.admin()
        total = partitions * len(self.broker_ids)
        deadline = time.monotonic() + TOPICS_READY_TIMEOUT_S
        pending = list(topics)
        while time.monotonic() < deadline:
            for name in self.node_names:
                if not self.is_node_running(name):
                    log = self.workdir / f"{self.node(name).stem}.log"
                    raise ClusterError(
                        f"{name} exited while topics were being deployed:\n{process.log_tail(log)}"
                    )
            answer = admin.query("admin_query_topic_info", topicName=",".join(pending))
            pending = [t for t in pending if not _topic_usable(answer, t, total)]
            if not pending:
                return
            time.sleep(0.5)
        # The brokers' logs say why they never reported the topics (store, registration).
        logs = "\n".join(
            f"{b.name} log:\n{process.log_tail(self.workdir / f'{b.stem}.log', 10)}"
            for b in self.topology.brokers
        )
        raise ClusterError(
            f"topics {pending} not publishable and subscribable within "
            f"{TOPICS_READY_TIMEOUT_S:.0f} s; last answer: {answer}\n{logs}"
        )

    # -- faults, for tests --------------------------------------------------------------
    def stop_node(self, name: str) -> None:
        """Stops one node (SIGTERM, SIGKILL after a bound), as maintenance would."""
        node = self.node(name)
        process.stop(self._pid(node.name), _main_class(node))

    def kill_node(self, name: str) -> None:
        """Kills one node (SIGKILL), as a crash would: no shutdown hook runs, and what a
        broker kept in memory (offsets committed since its last flush) is lost."""
        node = self.node(name)
        process.stop(self._pid(node.name), _main_class(node), hard=True)

    def start_node(self, name: str) -> None:
        """Starts a stopped node again with its old configuration and data.

        A broker is launched and left to register. A master returns once it serves: the
        only master once its admin API answers, a member of a group once the active
        master lists it (or it has become the active one itself).
        """
        node = self.node(name)
        if self.is_node_running(node.name):
            raise ClusterError(f"{node.name} is running already")
        classpath = maven.server_classpath()
        if isinstance(node, BrokerNode):
            self._launch(node, classpath)
        elif len(self.topology.masters) == 1:
            self._start_lone_master(node, classpath)
        else:
            launched = time.time()
            self._launch(node, classpath)
            self._wait_standby(node, launched)

    def restart_node(self, name: str, hard: bool = False) -> None:
        """Stops (``hard``: kills) one node and starts it again."""
        if hard:
            self.kill_node(name)
        else:
            self.stop_node(name)
        self.start_node(name)

    def offline_broker(self, name: str) -> None:
        """Takes a broker out of service through the master, as an operator does before
        maintenance (``admin_offline_broker_configure``): the process keeps running, the
        master stops offering its partitions to producers and consumers."""
        broker = self._broker(name)
        self.admin().modify("admin_offline_broker_configure", brokerId=broker.index)

    def online_broker(self, name: str) -> None:
        """Puts a broker taken offline back into service (``admin_online_broker_configure``)."""
        broker = self._broker(name)
        self.admin().modify("admin_online_broker_configure", brokerId=broker.index)

    def _broker(self, name: str) -> BrokerNode:
        node = self.node(name)
        if not isinstance(node, BrokerNode):
            raise ClusterError(f"{name} is not a broker")
        return node

    def stop_broker(self) -> None:
        """Stops broker-1 alone (SIGTERM), as maintenance would."""
        self.stop_node("broker-1")

    def kill_broker(self) -> None:
        """Kills broker-1 alone (SIGKILL), as a crash would: nothing it kept in memory
        (offsets committed since its last flush) survives."""
        self.kill_node("broker-1")

    def start_broker(self) -> None:
        """Starts broker-1 again with its old configuration and data."""
        self._launch(self.node("broker-1"), maven.server_classpath())

    def stop_master(self) -> None:
        """Stops master-1 alone (SIGTERM): clients lose it, the broker keeps serving."""
        self.stop_node("master-1")

    def start_master(self) -> None:
        """Starts master-1 again on the same ports and metadata; returns once it serves."""
        self.start_node("master-1")

    def restart_master(self) -> None:
        """Stops the master and starts it again on the same ports and metadata."""
        self.stop_master()
        self.start_master()

    # -- down ------------------------------------------------------------------------------
    def down(self) -> None:
        """Stops the brokers, then the masters (SIGTERM, SIGKILL after a bound);
        idempotent."""
        if not self._state.get("pids"):
            return
        topology = self.topology
        errors: list[str] = []

        def stop(node: Node) -> None:
            try:
                process.stop(self._pid(node.name), _main_class(node))
            except ClusterError as error:
                errors.append(str(error))

        # The nodes of one kind stop side by side: each may take its grace period.
        for group in (topology.brokers, topology.masters):
            if len(group) == 1:
                stop(group[0])
                continue
            with ThreadPoolExecutor(len(group)) as pool:
                list(pool.map(stop, group))
        if errors:
            raise ClusterError("; ".join(errors))


def _check_topics(topics: Iterable[str]) -> list[str]:
    names = [topics] if isinstance(topics, str) else list(topics)
    for name in names:
        # The master's own rule for topic names.
        if not (
            isinstance(name, str)
            and 2 <= len(name) <= 64
            and name[0].isascii()
            and name[0].isalpha()
            and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
        ):
            raise ClusterError(
                f"invalid topic name {name!r}: 2-64 characters, letters, digits "
                "and '_', starting with a letter"
            )
    return names


def _topic_usable(answer: dict[str, Any], topic: str, partitions: int) -> bool:
    for item in answer.get("data") or []:
        if item.get("topicName") != topic:
            continue
        return (
            bool(item.get("isSrvAcceptPublish"))
            and bool(item.get("isSrvAcceptSubscribe"))
            and item.get("totalRunNumPartCount") == partitions
        )
    return False


def _main_class(node: Node) -> str:
    return process.MASTER_CLASS if isinstance(node, MasterNode) else process.BROKER_CLASS


def _broker_hosts(host: str, brokers: int) -> list[str]:
    """The address of each broker: ``host``, then the addresses after it."""
    if not 1 <= brokers <= MAX_NODES:
        raise ClusterError(f"brokers must be within 1..{MAX_NODES}, got {brokers}")
    try:
        first = ipaddress.IPv4Address(host)
    except ValueError as error:
        raise ClusterError(f"host must be an IPv4 address, got {host!r}") from error
    if brokers == 1:
        return [host]
    hosts = [first + offset for offset in range(brokers)]
    if not all(address.is_loopback for address in hosts):
        # TubeMQ accepts one broker per IP address; only loopback offers spare ones here.
        raise ClusterError(
            f"{brokers} brokers need {brokers} addresses and TubeMQ takes one broker per "
            f"address; use a loopback host (127.x.y.z, all on this machine), not {host}"
        )
    return [str(address) for address in hosts]


def _free_ports(count: int, host: str) -> list[int]:
    """``count`` ports for nodes advertising ``host``, which must be on this machine."""
    try:
        process.free_ports(1, host)
    except OSError as error:
        raise ClusterError(
            f"cannot bind {host}: {error} (not an address of this machine?)"
        ) from error
    # The 2.4.0 servers bind their RPC, web and metrics ports on every address (only
    # BDB-JE's port on hostName), so the ports must be free on all of them.
    return process.free_ports(count, "0.0.0.0")


def _plan_topology(host: str, masters: int, broker_hosts: list[str]) -> Topology:
    ports = iter(_free_ports(4 * masters + 3 * len(broker_hosts), host))
    return Topology(
        tuple(
            MasterNode(index, host, next(ports), next(ports), next(ports), next(ports))
            for index in range(1, masters + 1)
        ),
        tuple(
            BrokerNode(index, broker_host, next(ports), next(ports), next(ports))
            for index, broker_host in enumerate(broker_hosts, 1)
        ),
    )
