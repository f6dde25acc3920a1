"""tubemq.AdminClient and the ``tubemq topics`` / ``tubemq groups`` verbs against the real
master: topics (list, describe, create, delete), brokers, groups (members, committed
offsets, lag), wrong credentials, a dead master and one that never answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

import tubemq
from tubemq.cluster.config_files import ADMIN_TOKEN

pytestmark = pytest.mark.integration

TUBEMQ = [sys.executable, "-m", "tubemq.cli"]
# A topic the master deploys reaches the broker with a later heartbeat: ~35 s here.
DEPLOY_WAIT_S = 150


@pytest.fixture(scope="module")
def admin(cluster) -> tubemq.AdminClient:
    return tubemq.AdminClient(
        cluster.master_address, web=cluster.master_web_address, token=ADMIN_TOKEN
    )


def _cli(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    done = subprocess.run([*TUBEMQ, *args], capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def test_topics_are_listed_and_described_with_partitions_brokers_and_state(admin, master, topics):
    names = admin.list_topics()
    assert set(topics) <= set(names)
    info = admin.describe_topic(topics[0])
    assert info.name == topics[0]
    assert info.accept_publish and info.accept_subscribe
    assert info.configured_partitions == info.running_partitions == 4
    [broker] = info.brokers
    assert broker.accept_publish and broker.running_partitions == 4
    with tubemq.Producer(master=master) as producer:
        producer.publish(topics[0])
        writable = sorted(p.key for p in producer.partitions(topics[0]))
    assert sorted(p.key for p in info.partitions) == writable
    assert {p.broker_address for p in info.partitions} == {broker.broker_address}
    json.dumps(info.to_dict())  # plain data


def test_an_unknown_topic_is_a_404_admin_error(admin):
    with pytest.raises(tubemq.AdminError) as info:
        admin.describe_topic("no_such_topic_anywhere")
    assert info.value.code == 404 and isinstance(info.value, tubemq.TubeMQError)


def test_brokers_are_listed_with_their_state(admin, cluster):
    [broker] = admin.list_brokers()
    assert broker.online and broker.run_status == "running"
    assert broker.manage_status == "online"
    assert broker.accept_publish and broker.accept_subscribe
    assert broker.web_port > 0


def _wait_running(admin: tubemq.AdminClient, topic: str, partitions: int) -> tubemq.admin.TopicInfo:
    deadline = time.monotonic() + DEPLOY_WAIT_S
    while True:
        info = admin.describe_topic(topic)
        if info.accept_publish and info.running_partitions == partitions:
            return info
        assert time.monotonic() < deadline, info
        time.sleep(1)


def _wait_gone(admin: tubemq.AdminClient, topic: str) -> None:
    deadline = time.monotonic() + 60
    while topic in admin.list_topics():
        assert time.monotonic() < deadline, topic
        time.sleep(0.5)


def test_topics_are_created_used_and_deleted_by_the_client_and_the_cli(admin, master, cluster):
    by_api, by_cli = (f"adm_{uuid.uuid4().hex[:10]}" for _ in range(2))
    admin.create_topic(by_api, partitions=2)
    web = ["--web", cluster.master_web_address]
    code, out, err = _cli(
        "topics", "create", by_cli, "--partitions", "3", *web, "--token", ADMIN_TOKEN, "--json"
    )
    assert code == 0, err
    assert json.loads(out) == {"created": by_cli}
    for topic, count in ((by_api, 2), (by_cli, 3)):
        info = _wait_running(admin, topic, count)
        assert len(info.partitions) == count
        with tubemq.Producer(master=master) as producer:
            producer.publish(topic)
            for partition in info.partitions:
                sent = producer.send(topic, b"created", partition=partition.key)
                assert sent.partition_key == partition.key
    code, out, err = _cli("topics", "describe", by_cli, *web, "--json")
    assert code == 0, err
    assert len(json.loads(out)["partitions"]) == 3
    code, out, err = _cli("topics", "describe", by_cli, *web)
    assert code == 0 and f"topic {by_cli}: publish=yes" in out, err
    admin.delete_topic(by_api)
    # The token from the environment keeps it out of the process list.
    done = subprocess.run(
        [*TUBEMQ, "topics", "delete", by_cli, *web],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TUBEMQ_ADMIN_TOKEN": ADMIN_TOKEN},
    )
    assert done.returncode == 0, done.stderr
    for topic in (by_api, by_cli):
        _wait_gone(admin, topic)
        with pytest.raises(tubemq.AdminError):
            admin.describe_topic(topic)
    code, out, _ = _cli("topics", "list", *web, "--json")
    assert code == 0 and by_cli not in json.loads(out)


def test_a_group_is_listed_and_described_with_members_offsets_and_lag(
    admin, master, topics, cluster
):
    topic, group = topics[5], f"adm_{uuid.uuid4().hex[:8]}"
    with tubemq.Producer(master=master) as producer:
        producer.publish(topic)
        keys = sorted(p.key for p in producer.partitions(topic))
        for key in keys:
            producer.send(topic, b"before", partition=key)
        with tubemq.Consumer(
            master=master, group=group, topics=[topic], consume_from="earliest"
        ) as consumer:
            deadline = time.monotonic() + 60
            drained, quiet = 0, 0
            # Everything the topic holds, until 3 s without a message.
            while time.monotonic() < deadline and (drained < len(keys) or quiet < 6):
                batch = consumer.consume(1000, timeout=0.5)
                drained += len(batch)
                quiet = 0 if batch else quiet + 1
            consumer.commit()
            assert group in admin.list_groups()
            # Three more to one partition. The partitions of a store share one index
            # (docs/offsets.md), so every partition's lag counts those three entries.
            for _ in range(3):
                producer.send(topic, b"after", partition=keys[0])
            # The broker stores committed offsets every few seconds; until then the
            # group has none to show.
            deadline = time.monotonic() + 60
            while True:
                info = admin.describe_group(group)
                by_key = {p.key: p for p in info.partitions}
                lags = [by_key[key].lag_messages for key in keys] if sorted(by_key) == keys else []
                if lags == [3] * len(keys):
                    break
                assert time.monotonic() < deadline, [
                    (p.key, p.committed_offset, p.max_offset) for p in info.partitions
                ]
                time.sleep(0.5)
            assert info.topics == (topic,)
            [member] = info.members
            assert sorted(member.partitions) == keys
            assert all(
                p.committed_offset >= 0 and p.consumer_id == member.consumer_id
                for p in info.partitions
            )
            assert info.lag_messages == 3 * len(keys)
            web = ["--web", cluster.master_web_address]
            code, out, err = _cli("groups", "list", *web, "--json")
            assert code == 0 and group in json.loads(out), err
            code, out, err = _cli("groups", "describe", group, *web, "--json")
            assert code == 0, err
            assert json.loads(out)["lag_messages"] == 3 * len(keys)
            code, out, err = _cli("groups", "describe", group, *web)
            assert code == 0 and keys[0] in out and "lag=" in out, err
    # Without members the master forgets the group; the brokers keep its offsets.
    deadline = time.monotonic() + 30
    while group in admin.list_groups() and time.monotonic() < deadline:
        time.sleep(0.5)
    with pytest.raises(tubemq.AdminError) as error:
        admin.describe_group(group)
    assert error.value.code == 404
    idle = admin.describe_group(group, topics=[topic])
    assert idle.members == () and idle.lag_messages == 3 * len(keys)


def test_wrong_or_missing_credentials_are_refused_and_never_shown(cluster, caplog):
    secret = "not-the-token-" + uuid.uuid4().hex
    wrong = tubemq.AdminClient(web=cluster.master_web_address, token=secret)
    caplog.set_level("DEBUG", logger="tubemq.admin")
    with pytest.raises(tubemq.AdminError) as info:
        wrong.create_topic("adm_never_made", partitions=1)
    assert info.value.code == 400 and "unauthorized" in info.value.message
    assert secret not in str(info.value) and secret not in repr(wrong)
    assert secret not in caplog.text
    assert "adm_never_made" not in wrong.list_topics()  # queries need no token
    with pytest.raises(tubemq.ConfigError) as missing:
        tubemq.AdminClient(web=cluster.master_web_address).delete_topic("adm_never_made")
    assert missing.value.key == "token"
    code, _, err = _cli(
        "topics", "create", "adm_never_made", "--web", cluster.master_web_address, "--token", secret
    )
    assert code == 1 and "unauthorized" in err and secret not in err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_master_is_a_connection_error_and_a_silent_one_a_timeout():
    dead = f"127.0.0.1:{_free_port()}"
    with pytest.raises(tubemq.ConnectionError) as info:
        tubemq.AdminClient(web=dead, timeout=2).list_topics()
    assert info.value.code == 1001 and dead in str(info.value)
    code, _, err = _cli("topics", "list", "--web", dead)
    assert code == 1 and "cannot reach" in err
    code, _, err = _cli("groups", "list", "--web", dead)
    assert code == 1 and "cannot reach" in err
    # A listener that never answers: the request's timeout ends the call.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(tubemq.TimeoutError) as slow:
            tubemq.AdminClient(web=address, timeout=0.5).list_brokers()
        assert time.monotonic() - started < 5
        assert slow.value.retriable
