"""The ``tubemq`` command. Subcommands: ``produce`` and ``consume`` (the clients from the
shell), ``topics`` and ``groups`` (the master's admin API), ``perf`` (load and rate
figures) and ``cluster`` (a local TubeMQ for tests and demos)."""

from __future__ import annotations

import sys

USAGE = (
    "usage: tubemq produce|consume ... (tubemq produce --help)\n"
    "       tubemq topics list|describe|create|delete ... (tubemq topics --help)\n"
    "       tubemq groups list|describe ... (tubemq groups --help)\n"
    "       tubemq perf produce|consume ... (tubemq perf produce --help)\n"
    "       tubemq cluster {up,down,status,add-topics} ... (tubemq cluster --help)"
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] == "cluster":
        # Imported on demand: the other subcommands do not need the cluster machinery.
        from tubemq.cluster.cli import main as cluster_main

        return cluster_main(args[1:])
    if args[0] in ("produce", "consume"):
        from tubemq.client_cli import main as client_main

        return client_main(args)
    if args[0] in ("topics", "groups"):
        from tubemq.admin_cli import main as admin_main

        return admin_main(args)
    if args[0] == "perf":
        from tubemq.perf_cli import main as perf_main

        return perf_main(args[1:])
    print(f"tubemq: unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
