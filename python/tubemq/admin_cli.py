"""``tubemq topics list|describe|create|delete`` and ``tubemq groups list|describe``: the
master's admin API from the shell, through :class:`tubemq.AdminClient`.

Output is a plain table, or JSON with ``--json``. The admin token (create and delete
only) comes from ``--token`` or, kept out of the process list, ``TUBEMQ_ADMIN_TOKEN``.
Errors end the command with status 1 and the error on stderr (never the token).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tubemq.admin import AdminClient, GroupInfo, TopicInfo
from tubemq.errors import TubeMQError

TOKEN_ENV = "TUBEMQ_ADMIN_TOKEN"


def _client(args: argparse.Namespace) -> AdminClient:
    return AdminClient(
        args.master,
        web=args.web,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        timeout=args.timeout,
    )


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True))


def _print_topic(info: TopicInfo) -> None:
    print(
        f"topic {info.name}: publish={'yes' if info.accept_publish else 'no'} "
        f"subscribe={'yes' if info.accept_subscribe else 'no'} "
        f"partitions={info.running_partitions}/{info.configured_partitions} running"
    )
    for broker in info.brokers:
        print(
            f"  broker {broker.broker_id} {broker.broker_address}: {broker.partitions} "
            f"partition(s) in {broker.stores} store(s), publish="
            f"{'yes' if broker.accept_publish else 'no'} subscribe="
            f"{'yes' if broker.accept_subscribe else 'no'} {broker.manage_status}"
        )
    for partition in info.partitions:
        print(f"  partition {partition.key}")


def _print_group(info: GroupInfo) -> None:
    print(f"group {info.name}: topics={','.join(info.topics) or '-'} lag={info.lag}")
    for member in info.members:
        print(f"  member {member.consumer_id}: {len(member.partitions)} partition(s)")
    print(f"  {'partition':<40} {'committed':>12} {'end':>12} {'lag':>10}  consumer")
    for partition in info.partitions:
        print(
            f"  {partition.key:<40} {partition.committed_offset:>12} "
            f"{partition.max_offset:>12} {partition.lag:>10}  {partition.consumer_id or '-'}"
        )


def topics(args: argparse.Namespace) -> int:
    admin = _client(args)
    if args.action == "list":
        names = admin.list_topics()
        if args.json:
            _print_json(names)
        else:
            print("\n".join(names))
    elif args.action == "describe":
        info = admin.describe_topic(args.topic)
        if args.json:
            _print_json(info.to_dict())
        else:
            _print_topic(info)
    elif args.action == "create":
        admin.create_topic(
            args.topic,
            partitions=args.partitions,
            brokers=args.broker or None,
            stores=args.stores,
        )
        if args.json:
            _print_json({"created": args.topic})
        else:
            print(f"created {args.topic}", file=sys.stderr)
    else:
        admin.delete_topic(args.topic, brokers=args.broker or None)
        if args.json:
            _print_json({"deleted": args.topic})
        else:
            print(f"deleted {args.topic}", file=sys.stderr)
    return 0


def groups(args: argparse.Namespace) -> int:
    admin = _client(args)
    if args.action == "list":
        names = admin.list_groups()
        if args.json:
            _print_json(names)
        else:
            print("\n".join(names))
    else:
        info = admin.describe_group(args.group, topics=args.topic or None)
        if args.json:
            _print_json(info.to_dict())
        else:
            _print_group(info)
    return 0


def _common(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--master", help="the master, host:port (its web port is derived from 8715)")
    sub.add_argument("--web", help="the master's web (admin) address, host:port")
    sub.add_argument("--token", help=f"the master's admin token (or ${TOKEN_ENV})")
    sub.add_argument("--timeout", type=float, default=10.0, help="seconds per request (10)")
    sub.add_argument("--json", action="store_true", help="print JSON")


def parser(prog: str = "tubemq") -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=prog)
    commands = top.add_subparsers(dest="command", required=True)

    t = commands.add_parser("topics", help="list, describe, create or delete topics")
    t_actions = t.add_subparsers(dest="action", required=True)
    _common(t_actions.add_parser("list", help="the names of every topic"))
    describe = t_actions.add_parser("describe", help="partitions, brokers and state of a topic")
    describe.add_argument("topic")
    create = t_actions.add_parser("create", help="deploy a topic (needs the token)")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=3, help="per store and broker (3)")
    create.add_argument("--stores", type=int, default=1, help="stores per broker (1)")
    delete = t_actions.add_parser("delete", help="remove a topic (needs the token)")
    delete.add_argument("topic")
    for sub in (create, delete):
        sub.add_argument(
            "--broker", type=int, action="append", help="broker id (repeatable; default: all)"
        )
    for sub in (describe, create, delete):
        _common(sub)
    t.set_defaults(run=topics)

    g = commands.add_parser("groups", help="list or describe consumer groups")
    g_actions = g.add_subparsers(dest="action", required=True)
    _common(g_actions.add_parser("list", help="groups with members now"))
    g_describe = g_actions.add_parser("describe", help="members, offsets and lag of a group")
    g_describe.add_argument("group")
    g_describe.add_argument(
        "--topic",
        action="append",
        help="topic whose offsets to show (repeatable; for a group with no member now)",
    )
    _common(g_describe)
    g.set_defaults(run=groups)
    return top


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except TubeMQError as error:
        print(f"tubemq {args.command} {args.action}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
