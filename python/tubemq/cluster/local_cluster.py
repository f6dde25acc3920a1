"""One master and one broker on loopback, and the topics the caller asked for."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from tubemq.cluster import maven, process
from tubemq.cluster.admin import AdminClient
from tubemq.cluster.config_files import BROKER_ID, HOST, Ports, write_config
from tubemq.cluster.errors import ClusterError
from tubemq.cluster.tls_keys import make_tls_files
from tubemq.errors import AdminError, TubeMQError

STATE_FILE = "cluster.json"
MASTER_READY_TIMEOUT_S = 120.0
# A new topic waits a fixed 30 s in the master before it may be published to.
TOPICS_READY_TIMEOUT_S = 180.0


class LocalCluster:
    """A cluster whose files, logs and state live in ``workdir``."""

    def __init__(self, workdir: Path | str) -> None:
        self.workdir = Path(workdir).resolve()
        self._state: dict[str, Any] = {}

    # -- addresses ---------------------------------------------------------------------
    @property
    def ports(self) -> Ports:
        if not self._state:
            raise ClusterError(f"no cluster state in {self.workdir}; run 'up' first")
        return Ports(**self._state["ports"])

    @property
    def master_address(self) -> str:
        return f"{HOST}:{self.ports.master}"

    @property
    def broker_address(self) -> str:
        return f"{HOST}:{self.ports.broker}"

    @property
    def master_web_address(self) -> str:
        return f"{HOST}:{self.ports.master_web}"

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

    def _require_tls(self) -> None:
        if not self.tls:
            raise ClusterError(f"the cluster in {self.workdir} was not made with tls=True")

    @property
    def topics(self) -> list[str]:
        return list(self._state.get("topics", []))

    def admin(self) -> AdminClient:
        return AdminClient(self.master_web_address)

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

    def is_running(self) -> bool:
        pids = self._state.get("pids", {})
        return (
            bool(pids)
            and process.is_alive(pids.get("master", 0), process.MASTER_CLASS)
            and process.is_alive(pids.get("broker", 0), process.BROKER_CLASS)
        )

    def describe(self) -> str:
        text = (
            f"master={self.master_address}\nbroker={self.broker_address}\n"
            f"master_web={self.master_web_address}"
        )
        if self.tls:
            text += (
                f"\nmaster_tls={self.master_tls_address}\nbroker_tls={self.broker_tls_address}"
                f"\ntls_ca_file={self.tls_ca_file}"
                f"\ntls_cert_file={self.tls_client_files[0]}"
                f"\ntls_key_file={self.tls_client_files[1]}"
            )
        return text

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
    ) -> None:
        """Starts master and broker with ``topics``; returns once all are usable.

        ``master_settings`` adds keys to master.ini's ``[master]`` section,
        ``broker_settings`` to broker.ini's ``[broker]`` section; ``topic_settings`` are
        extra topic properties of the admin API (e.g. ``deletePolicy="delete,1s"``) for
        every topic this cluster deploys. With ``tls``, master and broker also serve TLS
        on ports of their own, with a self-signed certificate for 127.0.0.1 made by
        ``keytool`` (see ``tls_ca_file``). ``broker_env``
        adds variables to the broker's environment (kept for restarts), or is called with
        the chosen ports to make them; fault tests use it to preload a shim.
        """
        wanted = _check_topics(topics)
        if not 1 <= partitions <= 100:
            raise ClusterError(f"partitions must be within 1..100, got {partitions}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if (self.workdir / STATE_FILE).exists():
            running = LocalCluster.load(self.workdir)
            if running.is_running():
                running.add_topics(wanted)
                self._state = running._state
                return
            running.down()
            # A new cluster gets new ports; BDB refuses metadata written under old ones.
            for stale in ("master-meta", "broker-data"):
                shutil.rmtree(self.workdir / stale, ignore_errors=True)
        classpath = maven.server_classpath()
        tls_files = make_tls_files(self.workdir / "tls") if tls else None
        ports = Ports(*process.free_ports(9 if tls else 7))
        write_config(
            self.workdir,
            ports,
            dict(master_settings or {}),
            dict(broker_settings or {}),
            tls_files,
        )
        if callable(broker_env):
            broker_env = broker_env(ports)
        self._state = {
            "ports": asdict(ports),
            "broker_env": dict(broker_env or {}),
            "pids": {},
            "topics": [],
            "partitions": partitions,
            "topic_settings": dict(topic_settings or {}),
            "server_version": maven.SERVER_VERSION,
        }
        self._save()
        try:
            self._start_master(classpath)
            self._configure_broker(partitions)
            self._deploy_topics(wanted, partitions)
            self._start_broker(classpath)
            self._wait_topics_usable(wanted, partitions)
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
        """How many partitions the broker runs for ``topic`` now (0 if none)."""
        try:
            return self.admin().describe_topic(topic).running_partitions
        except AdminError as error:
            if error.code == 404:
                return 0
            raise ClusterError(f"cannot describe {topic}: {error}") from error
        except TubeMQError as error:
            raise ClusterError(f"cannot describe {topic}: {error}") from error

    def grow_topic(self, topic: str, partitions: int) -> None:
        """Raises ``topic``'s partition count (in its one store) to ``partitions`` and waits
        until the broker serves them all; the master takes ~40 s to publish the change."""
        if not 1 <= partitions <= 100:
            raise ClusterError(f"partitions must be within 1..100, got {partitions}")
        current = self.partition_count(topic)
        if partitions < current:
            raise ClusterError(f"{topic} has {current} partitions; TubeMQ cannot remove any")
        self.admin().modify(
            "admin_update_topic_deploy_info",
            topicName=topic,
            brokerId=BROKER_ID,
            numPartitions=partitions,
        )
        self._wait_topics_usable([topic], partitions)

    def _start_master(self, classpath: list[Path]) -> None:
        log = self.workdir / "master.log"
        pid = process.start_jvm(
            process.MASTER_CLASS, self.workdir / "master.ini", classpath, self.workdir, log
        )
        self._state["pids"]["master"] = pid
        self._save()
        admin = self.admin()
        deadline = time.monotonic() + MASTER_READY_TIMEOUT_S
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not process.is_alive(pid, process.MASTER_CLASS):
                raise ClusterError(f"the master exited during start:\n{process.log_tail(log)}")
            try:
                answer = admin.query("admin_query_cluster_default_setting")
                if answer.get("result"):
                    return
                last = str(answer.get("errMsg"))
            except ClusterError as error:
                last = str(error)
            time.sleep(0.25)
        raise ClusterError(
            f"the master did not become ready within {MASTER_READY_TIMEOUT_S:.0f}"
            f" s ({last}):\n{process.log_tail(log)}"
        )

    def _configure_broker(self, partitions: int) -> None:
        ports = self.ports
        admin = self.admin()
        # The master refuses a broker it does not know as online, so this precedes its start.
        admin.modify(
            "admin_add_broker_configure",
            brokerId=BROKER_ID,
            brokerIp=HOST,
            brokerPort=ports.broker,
            brokerWebPort=ports.broker_web,
            brokerTLSPort=ports.broker_tls,
            numPartitions=partitions,
            numTopicStores=1,
            acceptPublish="true",
            acceptSubscribe="true",
        )
        admin.modify("admin_online_broker_configure", brokerId=BROKER_ID)

    def _deploy_topics(self, topics: list[str], partitions: int) -> None:
        self.admin().modify(
            "admin_add_topic_deploy_info",
            topicName=",".join(topics),
            brokerId=BROKER_ID,
            numPartitions=partitions,
            numTopicStores=1,
            acceptPublish="true",
            acceptSubscribe="true",
            **self._state.get("topic_settings", {}),
        )
        self._state["topics"] = sorted(set(self._state["topics"]) | set(topics))
        self._save()

    def _start_broker(self, classpath: list[Path]) -> None:
        pid = process.start_jvm(
            process.BROKER_CLASS,
            self.workdir / "broker.ini",
            classpath,
            self.workdir,
            self.workdir / "broker.log",
            env=self._state.get("broker_env"),
        )
        self._state["pids"]["broker"] = pid
        self._save()

    def _wait_topics_usable(self, topics: list[str], partitions: int) -> None:
        admin = self.admin()
        deadline = time.monotonic() + TOPICS_READY_TIMEOUT_S
        pending = list(topics)
        while time.monotonic() < deadline:
            for role, main_class in (
                ("master", process.MASTER_CLASS),
                ("broker", process.BROKER_CLASS),
            ):
                if not process.is_alive(self._state["pids"][role], main_class):
                    raise ClusterError(
                        f"the {role} exited while topics were being deployed:\n"
                        f"{process.log_tail(self.workdir / f'{role}.log')}"
                    )
            answer = admin.query("admin_query_topic_info", topicName=",".join(pending))
            pending = [t for t in pending if not _topic_usable(answer, t, partitions)]
            if not pending:
                return
            time.sleep(0.5)
        raise ClusterError(
            f"topics {pending} not publishable and subscribable within "
            f"{TOPICS_READY_TIMEOUT_S:.0f} s; last answer: {answer}\n"
            # The broker's log says why it never reported the topics (store, registration).
            f"broker log:\n{process.log_tail(self.workdir / 'broker.log')}"
        )

    # -- faults, for tests --------------------------------------------------------------
    def stop_broker(self) -> None:
        """Stops the broker alone (SIGTERM), as maintenance would."""
        process.stop(self._state["pids"]["broker"], process.BROKER_CLASS)

    def kill_broker(self) -> None:
        """Kills the broker alone (SIGKILL), as a crash would: nothing it kept in memory
        (offsets committed since its last flush) survives."""
        process.stop(self._state["pids"]["broker"], process.BROKER_CLASS, hard=True)

    def start_broker(self) -> None:
        """Starts the broker again with its old configuration and data."""
        self._start_broker(maven.server_classpath())

    def stop_master(self) -> None:
        """Stops the master alone (SIGTERM): clients lose it, the broker keeps serving."""
        process.stop(self._state["pids"]["master"], process.MASTER_CLASS)

    def start_master(self) -> None:
        """Starts the master again on the same ports and metadata; returns once its admin
        API answers."""
        self._start_master(maven.server_classpath())

    def restart_master(self) -> None:
        """Stops the master and starts it again on the same ports and metadata."""
        self.stop_master()
        self.start_master()

    # -- down ------------------------------------------------------------------------------
    def down(self) -> None:
        """Stops broker then master (SIGTERM, SIGKILL after a bound); idempotent."""
        pids = self._state.get("pids", {})
        errors = []
        for role, main_class in (
            ("broker", process.BROKER_CLASS),
            ("master", process.MASTER_CLASS),
        ):
            if role in pids:
                try:
                    process.stop(pids[role], main_class)
                except ClusterError as error:
                    errors.append(str(error))
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
