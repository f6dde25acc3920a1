"""The cluster tool's own logic, without starting Java: files, names, command line."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict

import pytest

from tubemq.cluster import ClusterError, LocalCluster
from tubemq.cluster.cli import main as cluster_main
from tubemq.cluster.config_files import BrokerNode, MasterNode, Ports, Topology, write_config
from tubemq.cluster.local_cluster import _broker_hosts
from tubemq.cluster.process import BROKER_CLASS, MASTER_CLASS, is_alive
from tubemq.cluster.tls_keys import TlsFiles
from tubemq.cluster.workdir_lock import preparing

PORTS = Ports(
    master=1001,
    master_web=1002,
    master_replication=1003,
    broker=1004,
    broker_web=1005,
    master_metrics=1006,
    broker_metrics=1007,
)


def read_ini(path):
    parser = configparser.ConfigParser()
    parser.optionxform = str
    parser.read(path)
    return parser


def test_config_files_use_absolute_paths_and_the_chosen_ports(tmp_path):
    write_config(tmp_path, PORTS)
    master = read_ini(tmp_path / "master.ini")
    assert master["master"]["port"] == "1001"
    assert master["master"]["webPort"] == "1002"
    assert master["meta_bdb"]["repHelperHost"] == "127.0.0.1:1003"
    assert master["meta_bdb"]["metaDataPath"].startswith(str(tmp_path))
    assert master["prometheus"]["promHttpPort"] == "1006"
    broker = read_ini(tmp_path / "broker.ini")
    assert broker["broker"]["masterAddressList"] == "127.0.0.1:1001"
    assert broker["broker"]["primaryPath"].startswith(str(tmp_path))
    assert broker["broker"]["enableMemStore"] == "false"
    assert broker["prometheus"]["promHttpPort"] == "1007"
    assert (tmp_path / "resources/templates/screen/webapi.vm").read_text() == "$sb"
    assert not (tmp_path / "resources/velocity.properties").exists()


def test_a_tls_cluster_serves_tls_on_ports_of_its_own(tmp_path):
    ports = Ports(*range(1001, 1010))
    files = TlsFiles(*(tmp_path / name for name in ("s.jks", "ca.pem", "t.jks", "c.pem", "c.key")))
    write_config(tmp_path, ports, tls=files)
    for name, port in (("master.ini", "1008"), ("broker.ini", "1009")):
        section = read_ini(tmp_path / name)["tlsSetting"]
        assert section["tlsEnable"] == "true" and section["tlsPort"] == port
        assert section["tlsKeyStorePath"] == str(files.key_store)
        # 2.4.0 servers exit on the first TLS connection without a trust store, which
        # they read only with two-way authentication on.
        assert section["tlsTwoWayAuthEnable"] == "true"
        assert section["tlsTrustStorePath"] == str(files.trust_store)
    assert ports.broker_tls == 1009  # what the master's record of the broker must say
    write_config(tmp_path, PORTS)
    assert "tlsSetting" not in read_ini(tmp_path / "master.ini")
    assert PORTS.broker_tls == 8124


def test_broker_settings_replace_or_add_broker_ini_keys(tmp_path):
    write_config(tmp_path, PORTS, broker_settings={"maxSegmentSize": "1048576", "x": "1"})
    broker = read_ini(tmp_path / "broker.ini")["broker"]
    assert broker["maxSegmentSize"] == "1048576"  # replaced, not repeated
    assert broker["x"] == "1"
    assert broker["port"] == "1004"


@pytest.mark.parametrize("name", ["1topic", "a", "has-dash", "x" * 65, "tópico", ""])
def test_invalid_topic_names_are_refused_before_anything_starts(tmp_path, name):
    with pytest.raises(ClusterError, match="invalid topic name"):
        LocalCluster(tmp_path).up([name])
    assert not (tmp_path / "cluster.json").exists()


def test_status_of_an_empty_directory_fails_and_down_is_a_no_op(tmp_path, capsys):
    assert cluster_main(["status", "--workdir", str(tmp_path)]) == 1
    assert "no readable cluster state" in capsys.readouterr().err
    assert cluster_main(["down", "--workdir", str(tmp_path)]) == 0


def test_the_command_line_requires_a_workdir(capsys):
    with pytest.raises(SystemExit) as info:
        cluster_main(["up", "--topics", "a1"])
    assert info.value.code == 2
    assert "--workdir" in capsys.readouterr().err


def test_master_settings_are_added_to_the_master_section(tmp_path):
    write_config(tmp_path, PORTS, {"startProduceAuthenticate": "true"})
    assert read_ini(tmp_path / "master.ini")["master"]["startProduceAuthenticate"] == "true"


def test_a_stopped_cluster_directory_is_started_afresh(tmp_path, monkeypatch):
    # Leftover metadata of a stopped cluster would make BDB refuse the new ports.
    (tmp_path / "cluster.json").write_text('{"ports": {}, "pids": {}, "topics": []}')
    (tmp_path / "master-meta").mkdir()
    (tmp_path / "master-meta" / "je.lck").write_text("old")
    started = []

    def fake_start(self, classpath):
        started.append(classpath)
        raise ClusterError("stop here")

    monkeypatch.setattr("tubemq.cluster.maven.server_classpath", lambda: [])
    monkeypatch.setattr(LocalCluster, "_start_master", fake_start)
    with pytest.raises(ClusterError, match="stop here"):
        LocalCluster(tmp_path).up(["topic_a"])
    assert not (tmp_path / "master-meta" / "je.lck").exists()
    assert started == [[]]


def two_by_two() -> Topology:
    return Topology(
        (
            MasterNode(1, "127.0.0.1", 2001, 2002, 2003, 2004),
            MasterNode(2, "127.0.0.1", 2011, 2012, 2013, 2014),
        ),
        (
            BrokerNode(1, "127.0.0.1", 2101, 2102, 2103),
            BrokerNode(2, "127.0.0.2", 2111, 2112, 2113),
        ),
    )


def test_several_masters_form_one_group_founded_by_the_first(tmp_path):
    write_config(tmp_path, two_by_two())
    first = read_ini(tmp_path / "master.ini")["meta_bdb"]
    second = read_ini(tmp_path / "master-2.ini")["meta_bdb"]
    assert first["repGroupName"] == second["repGroupName"]
    assert (first["repNodeName"], second["repNodeName"]) == ("tubemqLocalNode1", "tubemqLocalNode2")
    # The founder is its own helper; the others join through it.
    assert first["repHelperHost"] == second["repHelperHost"] == "127.0.0.1:2003"
    assert second["repNodePort"] == "2013"
    assert first["metaDataPath"] != second["metaDataPath"]
    assert read_ini(tmp_path / "master-2.ini")["master"]["port"] == "2011"


def test_every_broker_has_its_id_address_directory_and_all_masters(tmp_path):
    write_config(tmp_path, two_by_two())
    first = read_ini(tmp_path / "broker.ini")["broker"]
    second = read_ini(tmp_path / "broker-2.ini")["broker"]
    assert (first["brokerId"], second["brokerId"]) == ("1", "2")
    assert (first["hostName"], second["hostName"]) == ("127.0.0.1", "127.0.0.2")
    assert first["masterAddressList"] == second["masterAddressList"]
    assert second["masterAddressList"] == "127.0.0.1:2001,127.0.0.1:2011"
    assert second["primaryPath"] == str(tmp_path / "broker-2-data")
    assert (tmp_path / "broker-2-data").is_dir()


def test_brokers_take_consecutive_loopback_addresses():
    assert _broker_hosts("127.0.0.1", 3) == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    assert _broker_hosts("10.1.2.3", 1) == ["10.1.2.3"]
    # TubeMQ takes one broker per IP address; a real interface has only one.
    with pytest.raises(ClusterError, match="one broker per"):
        _broker_hosts("10.1.2.3", 2)
    with pytest.raises(ClusterError, match="one broker per"):
        _broker_hosts("127.255.255.255", 2)
    with pytest.raises(ClusterError, match="IPv4"):
        _broker_hosts("localhost", 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"brokers": 0},
        {"masters": 10},
        {"brokers": 2, "tls": True},
        {"host": "127.0.0.2", "tls": True},
    ],
)
def test_impossible_topologies_are_refused_before_anything_starts(tmp_path, kwargs):
    with pytest.raises(ClusterError):
        LocalCluster(tmp_path).up(["topic_a"], **kwargs)
    assert not (tmp_path / "cluster.json").exists()


def test_state_of_a_one_node_cluster_from_before_topologies_still_loads(tmp_path):
    state = {"ports": asdict(PORTS), "pids": {"master": 0, "broker": 0}, "topics": ["a1"]}
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    cluster = LocalCluster.load(tmp_path)
    assert cluster.node_names == ["master-1", "broker-1"]
    assert cluster.describe().splitlines() == [
        "master=127.0.0.1:1001",
        "broker=127.0.0.1:1004",
        "master_web=127.0.0.1:1002",
    ]
    assert cluster.node("broker").name == "broker-1"
    with pytest.raises(ClusterError, match="no node 'broker-2'"):
        cluster.node("broker-2")
    assert not cluster.is_running()


def test_a_cluster_made_from_its_workdir_stops_what_runs_there(tmp_path):
    # LocalCluster(workdir), not LocalCluster.load(workdir), as a user writes it: down()
    # must stop the nodes the workdir's state names. Stand-ins carry the main class in
    # their command line, which is how down() knows a node from another process.
    stand_ins = [
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", main_class],
        )
        for main_class in (MASTER_CLASS, BROKER_CLASS)
    ]
    try:
        pids = {"master": stand_ins[0].pid, "broker": stand_ins[1].pid}
        # Popen returns once the child has exec'd (vfork), but the kernel may not yet show
        # its new command line; down() would then rightly take it for another program.
        for pid, main_class in zip(pids.values(), (MASTER_CLASS, BROKER_CLASS)):
            deadline = time.monotonic() + 10
            while not is_alive(pid, main_class) and time.monotonic() < deadline:
                time.sleep(0.01)
        state = {"ports": asdict(PORTS), "pids": pids, "topics": ["a1"]}
        (tmp_path / "cluster.json").write_text(json.dumps(state))
        cluster = LocalCluster(tmp_path)
        assert cluster.ports == PORTS
        cluster.down()
        assert [process.wait(timeout=10) for process in stand_ins] == [-15, -15]
    finally:
        for process in stand_ins:
            process.kill()
            process.wait()
    assert LocalCluster(tmp_path / "nothing here")._state == {}


def test_a_bigger_cluster_prints_every_master_and_broker(tmp_path):
    topology = two_by_two()
    state = {
        "ports": asdict(PORTS),
        "host": "127.0.0.1",
        "topology": {
            "masters": [asdict(m) for m in topology.masters],
            "brokers": [asdict(b) for b in topology.brokers],
        },
        "pids": {"master": 0, "broker": 0, "master-2": 0, "broker-2": 0},
        "topics": [],
    }
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    cluster = LocalCluster.load(tmp_path)
    assert cluster.describe().splitlines() == [
        "master=127.0.0.1:2001",
        "master=127.0.0.1:2011",
        "broker=127.0.0.1:2101",
        "broker=127.0.0.2:2111",
        "master_web=127.0.0.1:2002",
    ]
    assert cluster.master_list == "127.0.0.1:2001,127.0.0.1:2011"
    assert cluster.node_address("broker-2") == "127.0.0.2:2111"
    assert [line.split()[0] for line in cluster.node_lines()] == [
        "master-1",
        "master-2",
        "broker-1",
        "broker-2",
    ]
    assert all(line.endswith(" stopped") for line in cluster.node_lines())
    with pytest.raises(ClusterError, match="not a broker"):
        cluster.offline_broker("master-2")


def test_a_host_not_on_this_machine_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tubemq.cluster.maven.server_classpath", lambda: [])
    with pytest.raises(ClusterError, match="not an address of this machine"):
        LocalCluster(tmp_path).up(["topic_a"], host="203.0.113.9")  # TEST-NET-3


def test_up_on_a_running_cluster_of_another_kind_is_refused(tmp_path, monkeypatch):
    state = {"ports": asdict(PORTS), "pids": {"master": 1, "broker": 2}, "topics": []}
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    monkeypatch.setattr(LocalCluster, "is_running", lambda self: True)
    added = []
    monkeypatch.setattr(LocalCluster, "add_topics", lambda self, topics: added.append(topics))
    with pytest.raises(ClusterError, match="1 master\\(s\\) and 1 broker\\(s\\)"):
        LocalCluster(tmp_path).up(["topic_a"], brokers=3)
    # A quick-start cluster is not silently taken for a full-JIT one (a bench would then
    # measure the C1 broker), nor a plain one for TLS.
    with pytest.raises(ClusterError, match="full_jit=False, not full_jit=True"):
        LocalCluster(tmp_path).up(["topic_a"], full_jit=True)
    with pytest.raises(ClusterError, match="tls=False, not tls=True"):
        LocalCluster(tmp_path).up(["topic_a"], tls=True)
    LocalCluster(tmp_path).up(["topic_a"])  # the same kind: only adds the topics
    assert added == [["topic_a"]]


@pytest.mark.parametrize("full_jit", [False, True])
def test_a_full_jit_cluster_keeps_the_c2_compiler_and_a_test_cluster_does_not(
    tmp_path, monkeypatch, full_jit
):
    from tubemq.cluster import process

    launched = []

    def fake_run(argv, **kwargs):
        launched.append(argv[-1])
        return type("Done", (), {"returncode": 0, "stdout": "4242\n", "stderr": ""})()

    monkeypatch.setattr(process.subprocess, "run", fake_run)
    pid = process.start_jvm(
        process.BROKER_CLASS,
        tmp_path / "broker.ini",
        [],
        tmp_path,
        tmp_path / "broker.log",
        full_jit=full_jit,
    )
    assert pid == 4242
    assert ("-XX:TieredStopAtLevel=1" in launched[0]) is not full_jit
    assert "-XX:+UseSerialGC" in launched[0]


def test_two_ups_on_one_workdir_make_one_cluster(tmp_path, monkeypatch):
    # Without a lock, both found no running cluster: the second started a master of its
    # own on new ports, and failed minutes later with "did not become ready".
    masters_started, topics_added = [], []
    first_is_starting = threading.Event()

    def fake_start_master(self, classpath):
        masters_started.append(self.ports.master)
        first_is_starting.set()
        time.sleep(0.5)  # the other up() arrives meanwhile
        self._set_pid("master-1", 1)

    monkeypatch.setattr("tubemq.cluster.maven.server_classpath", lambda: [])
    monkeypatch.setattr(LocalCluster, "_start_master", fake_start_master)
    for step in ("_configure_brokers", "_deploy_topics", "_wait_topics_usable"):
        monkeypatch.setattr(LocalCluster, step, lambda self, *args: None)
    monkeypatch.setattr(LocalCluster, "_launch", lambda self, node, classpath: None)
    monkeypatch.setattr(LocalCluster, "is_running", lambda self: bool(self._state.get("pids")))
    monkeypatch.setattr(
        LocalCluster, "add_topics", lambda self, topics: topics_added.append(list(topics))
    )
    errors = []

    def up(topic):
        try:
            LocalCluster(tmp_path).up([topic])
        except Exception as error:  # reported below, with the thread's topic
            errors.append((topic, error))

    first = threading.Thread(target=up, args=("topic_a",))
    first.start()
    assert first_is_starting.wait(10)
    second = threading.Thread(target=up, args=("topic_b",))
    second.start()
    first.join(10)
    second.join(10)
    assert errors == []
    assert len(masters_started) == 1  # one cluster
    assert topics_added == [["topic_b"]]  # the second up() only added its topic
    assert LocalCluster.load(tmp_path).ports.master == masters_started[0]


def test_an_up_that_waited_too_long_for_another_says_which_process_holds_the_workdir(
    tmp_path,
):
    failures = []

    def second_up():
        try:
            with preparing(tmp_path, wait_s=0.3):
                pass
        except ClusterError as error:
            failures.append(str(error))

    with preparing(tmp_path):
        waiter = threading.Thread(target=second_up)
        waiter.start()
        waiter.join(10)
    assert len(failures) == 1
    assert f"(process {os.getpid()})" in failures[0]
    assert str(tmp_path) in failures[0]
    with preparing(tmp_path, wait_s=0.3):  # released when its holder is done
        pass
