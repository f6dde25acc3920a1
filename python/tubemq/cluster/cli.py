"""``tubemq cluster up|down|status|add-topics|kill|start|restart``: a local TubeMQ
cluster from the shell."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tubemq.cluster.config_files import HOST
from tubemq.cluster.errors import ClusterError
from tubemq.cluster.local_cluster import LocalCluster


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tubemq cluster",
        description="Run TubeMQ masters and brokers on this machine (free ports), with "
        "the server jars from Maven Central: one of each on 127.0.0.1 by default.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the cluster; returns once the topics are usable")
    add = commands.add_parser("add-topics", help="create more topics on a running cluster")
    for sub in (up, add):
        sub.add_argument(
            "--topics", required=sub is add, default="", help="comma-separated topic names"
        )
    up.add_argument(
        "--partitions",
        type=int,
        default=4,
        help="partitions of each topic on each broker (4); a topic has brokers x partitions",
    )
    up.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="number of brokers (1); broker N has id N and the N-th address from --host, "
        "as TubeMQ takes one broker per IP address",
    )
    up.add_argument(
        "--masters",
        type=int,
        default=1,
        help="number of masters (1); several form one replication group, one active",
    )
    up.add_argument(
        "--host",
        default=HOST,
        help=f"address the masters and broker-1 advertise ({HOST}); several brokers "
        "need a loopback address",
    )
    up.add_argument(
        "--tls",
        action="store_true",
        help="also serve TLS, with a self-signed certificate for 127.0.0.1 (see tls_ca_file)",
    )
    up.add_argument(
        "--full-jit",
        action="store_true",
        help="give the server JVMs their C2 compiler, as in production: slower to start, "
        "about twice the broker throughput once warm (default: C1 only, quick to start)",
    )
    commands.add_parser("status", help="list the nodes; exit 0 only while all are up")
    commands.add_parser("down", help="stop every node")
    for name, text in (
        ("kill", "SIGKILL one node, as a crash would"),
        ("stop", "stop one node (SIGTERM)"),
        ("start", "start a stopped node again"),
        ("restart", "stop one node and start it again"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("node", help="master-N or broker-N (see status)")
    for sub in commands.choices.values():
        sub.add_argument(
            "--workdir",
            type=Path,
            required=True,
            help="directory holding the cluster's files, logs and state",
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    topics = [t for t in getattr(args, "topics", "").split(",") if t.strip()]
    try:
        if args.command == "up":
            started = time.monotonic()
            cluster = LocalCluster(args.workdir)
            cluster.up(
                topics=[t.strip() for t in topics],
                partitions=args.partitions,
                tls=args.tls,
                brokers=args.brokers,
                masters=args.masters,
                host=args.host,
                full_jit=args.full_jit,
            )
            print(cluster.describe())
            print(
                f"ready in {time.monotonic() - started:.1f} s; topics: "
                f"{','.join(cluster.topics) or '(none)'}",
                file=sys.stderr,
            )
            return 0
        cluster = LocalCluster.load(args.workdir)
        if args.command == "add-topics":
            cluster.add_topics([t.strip() for t in topics])
            print(cluster.describe())
            return 0
        if args.command == "status":
            running = cluster.is_running()
            print(cluster.describe())
            print(f"topics={','.join(cluster.topics)}")
            for line in cluster.node_lines():
                print(line)
            print("running" if running else "not running")
            return 0 if running else 1
        if args.command in ("kill", "stop", "start", "restart"):
            action = {
                "kill": cluster.kill_node,
                "stop": cluster.stop_node,
                "start": cluster.start_node,
                "restart": cluster.restart_node,
            }[args.command]
            action(args.node)
            return 0
        cluster.down()
        return 0
    except ClusterError as error:
        if args.command == "down" and "no readable cluster state" in str(error):
            return 0  # nothing was started there: already down
        print(f"tubemq cluster {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
