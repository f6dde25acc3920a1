"""Produce/consume round trip of an installed tubemq wheel against a running cluster.

Run it with the Python of a fresh virtual environment that has the wheel installed, from a
directory outside the source tree (so that `import tubemq` finds the installed package):

    VENV/bin/python scripts/wheel_roundtrip.py --master HOST:PORT --topic TOPIC

It sends 20 messages, consumes them back with a new group, checks that the package and its
native libraries came from the wheel (not the source tree, not the system), and prints
``ROUND TRIP OK <version> <python>``; it exits non-zero otherwise. tests/packaging/test_wheel.py
and scripts/wheels.sh both run it. No f-strings with `=` or other syntax newer than 3.9.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

# The libraries the wheel must bring itself: bundled by auditwheel, or linked statically.
NATIVE = ("libprotobuf", "liblog4cplus", "libcrypto", "libssl")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", required=True, help="HOST:PORT of the master")
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--source", default="", help="the source tree, whose python/ must not be imported"
    )
    parser.add_argument(
        "--bundled",
        action="store_true",
        help="the native libraries must be mapped from tubemq.libs/ (an auditwheel-bundled "
        "wheel; without it they may also be linked statically)",
    )
    parser.add_argument(
        "--system-libs",
        action="store_true",
        help="a wheel built from the sdist against this machine's libraries: they come "
        "from the system, so where they are mapped from is not checked",
    )
    args = parser.parse_args()

    import tubemq

    where = tubemq.__file__ or ""
    assert "site-packages" in where, where
    assert not args.source or not where.startswith(os.path.join(args.source, "python")), where
    marker = "wheel_" + uuid.uuid4().hex[:8]
    with tubemq.Producer(master=args.master) as producer:
        producer.publish(args.topic)
        sends = [producer.send(args.topic, b"%s-%d" % (marker.encode(), i)) for i in range(20)]
        sent = {result.message_id for result in sends}
    got = set()
    with tubemq.Consumer(
        master=args.master, group=marker, topics=[args.topic], consume_from="earliest"
    ) as consumer:
        deadline = time.monotonic() + 60
        while got != sent and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and bytes(message).startswith(marker.encode()):
                got.add(message.message_id)
    assert got == sent, (len(got), len(sent))
    # A native library mapped from anywhere but the wheel's own tubemq.libs/ means the
    # system's copy was used (or the extension needs one the target machine may lack).
    # Libraries linked statically into the extension map no file of their own.
    with open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for name in () if args.system_libs else NATIVE:
        paths = {line.split()[-1] for line in lines if name in line}
        assert all("tubemq.libs" in path for path in paths), (name, paths)
        assert paths or not args.bundled, f"{name} is not mapped at all"
    print("ROUND TRIP OK", tubemq.__version__, sys.version.split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
