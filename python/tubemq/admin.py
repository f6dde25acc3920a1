"""``tubemq.AdminClient``: the master's HTTP admin API (``/webapi.htm?method=...``).

Topics (list, describe, create, delete), brokers (list with state) and consumer groups
(list, describe with members, partitions, committed offsets and lag), over the standard
library's urllib: no dependency beyond the package itself.

What the server needs: query methods need no credentials; modifying methods need the
master's ``confModAuthToken`` (``token``) and a user name to record (``user``). The token
travels in the request (the API has no other place for it) and is never logged or put in
an error message: errors quote the method and the parameters with the token masked.

Committed offsets and lag come from the brokers' own admin API (``admin_query_group_offset``
on each broker's web port, which the master reports), because the master does not keep
offsets.
"""

from __future__ import annotations

import json
import logging
import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tubemq._config import check_text, check_timeout, check_topic_name
from tubemq.assigned_consumer import INDEX_ENTRY_SIZE
from tubemq.errors import AdminError, ConfigError, ConnectionError, TimeoutError

__all__ = [
    "AdminClient",
    "BrokerInfo",
    "GroupInfo",
    "GroupMember",
    "GroupPartition",
    "TopicBroker",
    "TopicInfo",
    "TopicPartition",
]

_logger = logging.getLogger("tubemq.admin")

# The master's web port is its RPC port's neighbour in no fixed way, but TubeMQ's own
# defaults are 8715 (RPC) and 8080 (web): derive that pair, and ask for web= otherwise.
_DEFAULT_RPC_PORT = 8715
_DEFAULT_WEB_PORT = 8080
_SECRET_PARAMS = frozenset({"confModAuthToken"})
_DEFAULT_USER = "tubemqpython"


@dataclass(frozen=True)
class TopicPartition:
    """One partition of a topic as the master deploys it."""

    key: str  # "brokerId:topic:partitionId"
    broker_id: int
    partition_id: int
    broker_address: str


@dataclass(frozen=True)
class TopicBroker:
    """A topic's deployment on one broker and whether it serves it now."""

    broker_id: int
    broker_address: str
    partitions: int  # configured, over all stores
    stores: int
    accept_publish: bool
    accept_subscribe: bool
    running_partitions: int  # the broker runs them now (0 when it does not serve the topic)
    manage_status: str


@dataclass(frozen=True)
class TopicInfo:
    name: str
    accept_publish: bool  # some broker accepts publishing it now
    accept_subscribe: bool
    configured_partitions: int
    running_partitions: int
    brokers: tuple[TopicBroker, ...] = ()
    partitions: tuple[TopicPartition, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    address: str  # "ip:port"
    web_port: int
    manage_status: str  # "online", "draft", "offline", ...
    run_status: str  # "running", "notRegister", ...
    online: bool
    accept_publish: bool
    accept_subscribe: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GroupMember:
    consumer_id: str
    partitions: tuple[str, ...]  # partition keys it holds


@dataclass(frozen=True)
class GroupPartition:
    key: str
    topic: str
    broker_id: int
    partition_id: int
    committed_offset: int  # index offset (bytes); -1 when nothing was committed there
    max_offset: int  # the partition's end, in the same unit; -1 if unknown
    lag: int  # max_offset - committed_offset (store-wide), 0 when either is unknown
    consumer_id: str  # "" when no member holds it

    @property
    def lag_messages(self) -> int:
        """The lag in index entries, one per message. The partitions of a broker's store
        share one index (docs/offsets.md), so this counts the messages of all of them
        behind the committed offset, not only this partition's."""
        return self.lag // INDEX_ENTRY_SIZE


@dataclass(frozen=True)
class GroupInfo:
    name: str
    topics: tuple[str, ...]
    members: tuple[GroupMember, ...] = ()
    partitions: tuple[GroupPartition, ...] = field(default_factory=tuple)

    @property
    def lag(self) -> int:
        return sum(partition.lag for partition in self.partitions)

    @property
    def lag_messages(self) -> int:
        return sum(partition.lag_messages for partition in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for row, partition in zip(out["partitions"], self.partitions):
            row["lag_messages"] = partition.lag_messages
        return {**out, "lag": self.lag, "lag_messages": self.lag_messages}


def _host_port(address: str, what: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{what}: expected host:port, got {address!r:.80}", key=what)
    return host, int(port)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes")


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class AdminClient:
    """A client of a TubeMQ master's admin API.

    ``AdminClient(master="127.0.0.1:8715")`` talks to the master's web port: ``web`` when
    given (``host:port``), else 8080 on the master's host when the master's port is 8715
    (TubeMQ's defaults); any other master port needs ``web``. ``token`` is the master's
    ``confModAuthToken``, needed only by create and delete; ``user`` is the name they
    record. ``timeout`` bounds each HTTP request, in seconds.

    Errors: :class:`tubemq.AdminError` when the master refuses or fails a call (its
    ``code`` and ``message`` are the server's), :class:`tubemq.ConnectionError` when it
    cannot be reached, :class:`tubemq.TimeoutError` when it does not answer in time.
    """

    def __init__(
        self,
        master: str | None = None,
        *,
        web: str | None = None,
        token: str | None = None,
        user: str = _DEFAULT_USER,
        timeout: float | None = 10.0,
    ) -> None:
        check_text(master, "master", allow_none=True)
        check_text(web, "web", allow_none=True)
        check_text(token, "token", allow_none=True)
        check_text(user, "user")
        self._timeout = check_timeout(timeout, "timeout")
        if web is None:
            if master is None:
                raise ConfigError("give master= or web= (the master's web address)", key="master")
            first = master.split(",")[0]
            host, port = _host_port(first, "master")
            if port != _DEFAULT_RPC_PORT:
                raise ConfigError(
                    f"web: the master's web port cannot be derived from port {port} (only "
                    f"from TubeMQ's default {_DEFAULT_RPC_PORT}); give web='host:port'",
                    key="web",
                )
            web = f"{host}:{_DEFAULT_WEB_PORT}"
        host, port = _host_port(web, "web")
        self._web = f"{host}:{port}"
        self._token = token
        self._user = user
        # urllib.request loads ssl (and the system's libcrypto) with it: imported here,
        # not with the module, so that `import tubemq` stays light.
        from urllib.request import build_opener

        self._opener = build_opener()

    @property
    def web_address(self) -> str:
        return self._web

    def __repr__(self) -> str:  # never the token
        return f"<tubemq.AdminClient web={self._web} token={'set' if self._token else 'none'}>"

    # -- transport ------------------------------------------------------------------------
    def _get(self, address: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        from urllib.error import HTTPError, URLError

        query = urllib.parse.urlencode({"method": method, **params})
        url = f"http://{address}/webapi.htm?{query}"
        shown = {k: ("***" if k in _SECRET_PARAMS else v) for k, v in params.items()}
        _logger.debug("admin call %s %s on %s", method, shown, address)
        try:
            with self._opener.open(url, timeout=self._timeout) as reply:
                body = reply.read().decode("utf-8", "replace")
        except HTTPError as error:
            raise AdminError(
                error.code, f"{method} on {address}: HTTP {error.code} {error.reason}"
            ) from None
        except (socket.timeout, TimeoutError) as error:
            raise TimeoutError(
                1000, f"{method} on {address}: no answer within {self._timeout} s"
            ) from error
        except URLError as error:
            if isinstance(error.reason, (socket.timeout, TimeoutError)):
                raise TimeoutError(
                    1000, f"{method} on {address}: no answer within {self._timeout} s"
                ) from None
            raise ConnectionError(
                1001, f"{method}: cannot reach the admin API at {address}: {error.reason}"
            ) from None
        except OSError as error:
            raise ConnectionError(1001, f"{method}: admin API at {address}: {error}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise AdminError(
                500, f"{method} on {address} answered non-JSON: {body[:200]!r}"
            ) from None
        if not isinstance(answer, dict):
            raise AdminError(500, f"{method} on {address} answered {type(answer).__name__}")
        return answer

    def _call(self, method: str, address: str | None = None, **params: Any) -> dict[str, Any]:
        """A call whose answer must say ``result: true``; raises AdminError otherwise."""
        address = address or self._web
        answer = self._get(address, method, params)
        if not answer.get("result"):
            code = _int(answer.get("errCode"), 500) or 500
            raise AdminError(code, f"{method}: {answer.get('errMsg') or 'refused'}")
        return answer

    def _require_token(self, what: str) -> None:
        if not self._token:
            raise ConfigError(
                f"token: {what} modifies the cluster and needs the master's "
                "confModAuthToken (AdminClient(token=...))",
                key="token",
            )

    def _modify(self, method: str, **params: Any) -> dict[str, Any]:
        """A modifying call (token and user added); every item of it must have succeeded."""
        self._require_token(method)
        answer = self._call(
            method,
            confModAuthToken=self._token,
            createUser=self._user,
            modifyUser=self._user,
            **params,
        )
        for item in answer.get("data") or []:
            if isinstance(item, dict) and item.get("success") is False:
                code = _int(item.get("errCode"), 500) or 500
                raise AdminError(code, f"{method}: {item.get('errInfo') or 'refused'}")
        return answer

    # -- brokers --------------------------------------------------------------------------
    def list_brokers(self) -> list[BrokerInfo]:
        """Every broker the master knows, with its configured and running state."""
        configured = self._call("admin_query_broker_configure").get("data") or []
        running = {
            _int(item.get("brokerId")): item
            for item in self._call("admin_query_broker_run_status").get("data") or []
            if isinstance(item, dict)
        }
        brokers = []
        for item in configured:
            broker_id = _int(item.get("brokerId"))
            run = running.get(broker_id, {})
            brokers.append(
                BrokerInfo(
                    broker_id=broker_id,
                    address=f"{item.get('brokerIp')}:{item.get('brokerPort')}",
                    web_port=_int(item.get("brokerWebPort")),
                    manage_status=str(item.get("manageStatus") or ""),
                    run_status=str(run.get("runStatus") or "notRegister"),
                    online=_flag(run.get("isBrokerOnline", False)),
                    accept_publish=_flag(run.get("acceptPublish", item.get("acceptPublish"))),
                    accept_subscribe=_flag(run.get("acceptSubscribe", item.get("acceptSubscribe"))),
                )
            )
        return sorted(brokers, key=lambda broker: broker.broker_id)

    # -- topics ---------------------------------------------------------------------------
    def _topic_items(self, names: Iterable[str] = ()) -> list[dict[str, Any]]:
        params = {"topicName": ",".join(names)} if names else {}
        return [
            item
            for item in self._call("admin_query_topic_info", **params).get("data") or []
            if isinstance(item, dict)
        ]

    def list_topics(self) -> list[str]:
        """The names of every deployed topic (TubeMQ's system topics included)."""
        return sorted({str(item.get("topicName")) for item in self._topic_items()})

    def describe_topic(self, topic: str) -> TopicInfo:
        """A topic's partitions, brokers and publish/subscribe state; AdminError (404)
        if the master has no such topic."""
        name = self._topic_name(topic)
        items = [item for item in self._topic_items([name]) if item.get("topicName") == name]
        if not items:
            raise AdminError(404, f"admin_query_topic_info: no topic {name!r}")
        item = items[0]
        addresses = {broker.broker_id: broker.address for broker in self.list_brokers()}
        brokers = []
        partitions = []
        for entry in item.get("topicInfo") or []:
            broker_id = _int(entry.get("brokerId"))
            run = entry.get("runInfo") or {}
            count = _int(entry.get("numPartitions"))
            stores = max(1, _int(entry.get("numTopicStores"), 1))
            address = (
                addresses.get(broker_id) or f"{entry.get('brokerIp')}:{entry.get('brokerPort')}"
            )
            brokers.append(
                TopicBroker(
                    broker_id=broker_id,
                    broker_address=address,
                    partitions=count * stores,
                    stores=stores,
                    accept_publish=_flag(run.get("acceptPublish", entry.get("acceptPublish"))),
                    accept_subscribe=_flag(
                        run.get("acceptSubscribe", entry.get("acceptSubscribe"))
                    ),
                    running_partitions=_int(run.get("numPartitions")) * stores if run else 0,
                    manage_status=str(run.get("brokerManageStatus") or ""),
                )
            )
            # Partition ids follow the broker's store layout: store s holds ids
            # s*10000 .. s*10000+count-1.
            for store in range(stores):
                for index in range(count):
                    partition_id = store * 10000 + index
                    partitions.append(
                        TopicPartition(
                            key=f"{broker_id}:{name}:{partition_id}",
                            broker_id=broker_id,
                            partition_id=partition_id,
                            broker_address=address,
                        )
                    )
        return TopicInfo(
            name=name,
            accept_publish=_flag(item.get("isSrvAcceptPublish")),
            accept_subscribe=_flag(item.get("isSrvAcceptSubscribe")),
            configured_partitions=_int(item.get("totalCfgNumPart")),
            running_partitions=_int(item.get("totalRunNumPartCount")),
            brokers=tuple(sorted(brokers, key=lambda broker: broker.broker_id)),
            partitions=tuple(partitions),
        )

    def create_topic(
        self,
        topic: str,
        *,
        partitions: int = 3,
        brokers: Iterable[int] | None = None,
        stores: int = 1,
        accept_publish: bool = True,
        accept_subscribe: bool = True,
    ) -> None:
        """Deploys ``topic`` with ``partitions`` per store on each of ``brokers`` (default:
        every broker the master knows). The brokers start serving it within seconds (the
        master pushes the change with their next heartbeat)."""
        name = self._topic_name(topic)
        self._require_token("create_topic")
        for value, what, low, high in (
            (partitions, "partitions", 1, 10000),
            (stores, "stores", 1, 9),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{what} must be an int, got {type(value).__name__}", key=what)
            if not low <= value <= high:
                raise ConfigError(f"{what} must be within {low}..{high}, got {value}", key=what)
        ids = self._broker_ids(brokers)
        self._modify(
            "admin_add_topic_deploy_info",
            topicName=name,
            brokerId=",".join(str(i) for i in ids),
            numPartitions=partitions,
            numTopicStores=stores,
            acceptPublish=str(accept_publish).lower(),
            acceptSubscribe=str(accept_subscribe).lower(),
        )

    def delete_topic(self, topic: str, *, brokers: Iterable[int] | None = None) -> None:
        """Removes ``topic`` from ``brokers`` (default: every broker that has it): stops
        publishing and subscribing, soft-deletes, then removes (the server's three steps)."""
        name = self._topic_name(topic)
        self._require_token("delete_topic")  # before any call
        if brokers is None:
            deployed = [broker.broker_id for broker in self.describe_topic(name).brokers]
            ids = deployed
        else:
            ids = self._broker_ids(brokers)
        if not ids:
            raise AdminError(404, f"delete_topic: topic {name!r} is on no broker")
        common = {"topicName": name, "brokerId": ",".join(str(i) for i in ids)}
        self._modify(
            "admin_update_topic_deploy_info",
            acceptPublish="false",
            acceptSubscribe="false",
            **common,
        )
        self._modify("admin_delete_topic_info", **common)
        self._modify("admin_remove_topic_info", **common)

    # -- consumer groups ------------------------------------------------------------------
    def list_groups(self) -> list[str]:
        """The consumer groups with members registered at the master now."""
        answer = self._call("admin_query_sub_info")
        names = {
            str(item.get("consumeGroup") or "")
            for item in answer.get("data") or []
            if isinstance(item, dict)
        }
        return sorted(name for name in names if name)

    def describe_group(self, group: str, topics: Iterable[str] | None = None) -> GroupInfo:
        """A group's members and the partitions each holds, with the group's committed
        offset, the partition's end and the lag of every partition of its topics (offsets
        in the server's unit: index bytes, :data:`tubemq.INDEX_ENTRY_SIZE` per message).
        Committed offsets are those the brokers last stored: a broker writes a group's
        commits every few seconds, so a commit shows up here after up to ~5 s.

        The master knows a group's topics only while it has members: for a group with
        none, pass ``topics`` to read its committed offsets from the brokers. AdminError
        (404) when there is nothing to describe (no member and no ``topics``).
        """
        check_text(group, "group")
        name = group.strip()
        wanted = [
            self._topic_name(topic)
            for topic in ([topics] if isinstance(topics, str) else topics or [])
        ]
        detail = self._call("admin_query_consume_group_detail", consumeGroup=name)
        names = {str(topic) for topic in detail.get("topicSet") or []} | set(wanted)
        members: list[GroupMember] = []
        holder: dict[str, str] = {}
        for member in detail.get("data") or []:
            if not isinstance(member, dict):
                continue
            consumer_id = str(member.get("consumerId") or "")
            keys = []
            for held in member.get("parInfo") or []:
                # brokerAddr is "brokerId:ip:port"
                broker_id = str(held.get("brokerAddr") or "").split(":")[0]
                keys.append(f"{broker_id}:{held.get('topicName')}:{held.get('partId')}")
            members.append(GroupMember(consumer_id=consumer_id, partitions=tuple(sorted(keys))))
            for key in keys:
                holder[key] = consumer_id
        if not names and not members:
            raise AdminError(
                404, f"admin_query_consume_group_detail: group {name!r} has no member now"
            )
        partitions = self._group_offsets(name, sorted(names), holder)
        return GroupInfo(
            name=name,
            topics=tuple(sorted(names)),
            members=tuple(sorted(members, key=lambda member: member.consumer_id)),
            partitions=tuple(partitions),
        )

    def _group_offsets(
        self, group: str, topics: list[str], holder: Mapping[str, str]
    ) -> list[GroupPartition]:
        """Committed offsets and ends from each online broker's own admin API (the master
        keeps no offsets); the broker's web port is the one the master reports."""
        if not topics:
            return []
        out: list[GroupPartition] = []
        for broker in self.list_brokers():
            if not broker.online:
                continue
            host = broker.address.rpartition(":")[0]
            answer = self._call(
                "admin_query_offset",
                address=f"{host}:{broker.web_port}",
                groupName=group,
                topicName=",".join(topics),
            )
            for item in answer.get("dataSet") or []:
                for sub in (item or {}).get("subInfo") or []:
                    out.extend(self._offset_rows(broker.broker_id, sub, holder))
        return sorted(out, key=lambda partition: (partition.topic, partition.key))

    @staticmethod
    def _offset_rows(
        broker_id: int, item: Mapping[str, Any], holder: Mapping[str, str]
    ) -> list[GroupPartition]:
        rows = []
        topic = str(item.get("topicName") or "")
        for info in item.get("offsets") or []:
            partition_id = _int(info.get("partitionId"), -1)
            committed = _int(info.get("curOffset"), -1)
            end = _int(info.get("offsetMax"), -1)
            key = f"{broker_id}:{topic}:{partition_id}"
            rows.append(
                GroupPartition(
                    key=key,
                    topic=topic,
                    broker_id=broker_id,
                    partition_id=partition_id,
                    committed_offset=committed,
                    max_offset=end,
                    lag=max(0, end - committed) if committed >= 0 and end >= 0 else 0,
                    consumer_id=holder.get(key, ""),
                )
            )
        return rows

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _topic_name(topic: object) -> str:
        check_text(topic, "topic")
        try:
            return check_topic_name(topic)
        except ValueError as error:
            raise ConfigError(f"topic: {error}", key="topic") from None

    def _broker_ids(self, brokers: Iterable[int] | None) -> list[int]:
        if brokers is None:
            ids = [broker.broker_id for broker in self.list_brokers()]
            if not ids:
                raise AdminError(404, "the master knows no broker")
            return ids
        ids = list(brokers)
        for broker_id in ids:
            if isinstance(broker_id, bool) or not isinstance(broker_id, int) or broker_id < 0:
                raise ConfigError(
                    f"brokers must be broker ids (int), got {broker_id!r}", key="brokers"
                )
        if not ids:
            raise ConfigError("brokers: no broker id given", key="brokers")
        return ids
