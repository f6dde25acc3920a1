"""The table of bad arguments to public methods and module functions: each must raise a
``tubemq.ConfigError`` naming the argument (an ``ArgumentTypeError``, also a
``TypeError``, for a wrong type) before any native call.

Rows are generated from two tables: the good call of each method (``GOOD_CALLS``), and
the bad values of each of its arguments (``BAD_VALUES``), each with its kind. A test
swaps one argument of the good call for one bad value. tests/unit/test_argument_errors.py
runs the rows that need no cluster and checks that every parameter of every public
method has rows; tests/integration/test_bad_sends.py runs the rest against a live
producer and checks that nothing was sent.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from typing import Any

TOPIC = "{topic}"  # replaced by a real, published topic when the row runs

# Kinds of bad value. A wrong type (including None where None is not allowed, and bytes
# where text is wanted) must raise ArgumentTypeError; every kind raises ConfigError.
TYPE_KINDS = {"type", "none", "bytes"}
KINDS = TYPE_KINDS | {"surrogate", "range", "value"}


def _released_view() -> memoryview:
    view = memoryview(b"released")
    view.release()
    return view


# --- bad values shared by arguments of the same sort ----------------------------------
TEXT = [(5, "type"), (b"name", "bytes"), ("lone\udc80surrogate", "surrogate"), (["t"], "type")]
REQUIRED_TEXT = [*TEXT, (None, "none")]
# Text a consumer may have handed out (msg_type, attributes): lone surrogates
# U+DC80..U+DCFF stand for bytes that are not UTF-8 and are sent as those bytes; others
# are no text.
WIRE_TEXT = [(5, "type"), (b"name", "bytes"), ("lone\ud800surrogate", "surrogate"), (["t"], "type")]
# Every timeout: not a number, or not a finite number within a year.
TIMEOUT_ALWAYS_BAD = [
    ("1", "type"),
    (True, "type"),
    (b"1", "bytes"),
    ([1], "type"),
    (-1, "range"),
    (-0.001, "range"),
    (math.nan, "range"),
    (math.inf, "range"),
    (-math.inf, "range"),
    (1e12, "range"),
    (10**400, "range"),  # beyond any float
]
# Where 0 has no meaning (publish): a positive number or None.
POSITIVE_TIMEOUT = [*TIMEOUT_ALWAYS_BAD, (0, "range"), (0.0, "range")]
# A send's timeout: at least 1 ms, so that it cannot end before any broker answers.
SEND_TIMEOUT = [*POSITIVE_TIMEOUT, (1e-9, "range"), (0.0009, "range")]
# flush() and close() accept 0 ("do not wait"): only the always-bad values remain.
WAIT_TIMEOUT = TIMEOUT_ALWAYS_BAD
VALUE = [
    ("text", "type"),
    (None, "none"),
    (5, "type"),
    ([1, 2], "type"),
    (memoryview(b"abcdef")[::2], "value"),  # strided: its bytes are not one run
    (_released_view(), "value"),
]
ATTRS = [
    ([("k", "v")], "type"),
    ("k=v", "type"),
    ({1: "v"}, "type"),
    ({"k": 1}, "type"),
    ({"k": None}, "none"),
    ({b"k": "v"}, "bytes"),
    ({"k": b"v"}, "bytes"),
    ({"k\ud800": "v"}, "surrogate"),  # a surrogate no consumer hands out (not U+DC80..DCFF)
    ({"k": "v\ud800"}, "surrogate"),
]
MSG_TIME = [
    (202501011230, "type"),
    (1.5, "type"),
    (b"202501011230", "bytes"),
    (datetime.date(2025, 1, 1), "type"),
    ("20250101\udc80230", "surrogate"),
]
CALLBACK = [("print", "type"), (5, "type")]
TOPICS = [
    (5, "type"),
    (None, "none"),
    (b"topic", "bytes"),
    ([None], "none"),
    ([b"topic"], "bytes"),
    (["bad\udc80name"], "surrogate"),
]
CONFIG = [(5, "type"), ("master=127.0.0.1:1", "type"), ([("master", "h:1")], "type")]

# --- the producer side ----------------------------------------------------------------
# (target, method): the good call whose arguments the rows spoil one at a time. Targets:
# "Producer" is a live tubemq.Producer; "aio.Producer" a tubemq.aio.Producer not started
# (its checks come first, so a good call raises ClientClosedError); "Producer()" and
# "aio.Producer()" the constructors (with a master nobody listens on); "tubemq.errors"
# the module's functions.
GOOD_CALLS: dict[tuple[str, str], dict[str, Any]] = {
    ("Producer", "send"): {"topic": TOPIC, "value": b"x"},
    ("Producer", "send_async"): {"topic": TOPIC, "value": b"x"},
    ("Producer", "produce"): {"topic": TOPIC, "value": b"x"},
    ("Producer", "publish"): {"topics": TOPIC},
    ("Producer", "partitions"): {"topic": TOPIC},
    ("Producer", "flush"): {},
    ("Producer", "poll"): {},
    ("Producer", "close"): {},
    ("aio.Producer", "send"): {"topic": TOPIC, "value": b"x"},
    ("aio.Producer", "publish"): {"topics": TOPIC},
    ("aio.Producer", "flush"): {},
    ("aio.Producer", "close"): {},
    ("Producer()", "__init__"): {},
    ("aio.Producer()", "__init__"): {},
    ("tubemq.errors", "error_from_code"): {"code": 1000, "message": "m"},
    ("tubemq.errors", "error_class_for"): {"code": 1000},
}

# partition=: a key or an id of a writable partition. The "value" rows need a live
# producer (an aio.Producer not started has no partitions to look in).
PARTITION_TYPES = [
    (1.5, "type"),
    (True, "type"),
    (b"1:t:0", "bytes"),
    (["1:t:0"], "type"),
    ("1:t\udc80:0", "surrogate"),
]
PARTITION = [
    *PARTITION_TYPES,
    ("999999:nosuchtopic:0", "value"),  # no such partition
    ("", "value"),
    (987654, "value"),  # no partition has this id
    (-1, "value"),
]

_MESSAGE = {
    "topic": REQUIRED_TEXT,
    "value": VALUE,
    "key": TEXT,
    "attrs": ATTRS,
    "msg_type": WIRE_TEXT,
    "msg_time": MSG_TIME,
}

BAD_VALUES: dict[tuple[str, str], dict[str, list[tuple[Any, str]]]] = {
    ("Producer", "send"): {**_MESSAGE, "timeout": SEND_TIMEOUT, "partition": PARTITION},
    ("Producer", "send_async"): {**_MESSAGE, "callback": CALLBACK, "partition": PARTITION},
    ("Producer", "produce"): {
        **_MESSAGE,
        "on_delivery": CALLBACK,
        "callback": CALLBACK,
        "partition": PARTITION,
    },
    ("Producer", "publish"): {"topics": TOPICS, "timeout": POSITIVE_TIMEOUT},
    ("Producer", "partitions"): {"topic": REQUIRED_TEXT},
    ("Producer", "flush"): {"timeout": WAIT_TIMEOUT},
    ("Producer", "poll"): {"timeout": WAIT_TIMEOUT},
    ("Producer", "close"): {"timeout": WAIT_TIMEOUT},
    ("aio.Producer", "send"): {**_MESSAGE, "partition": PARTITION_TYPES},
    ("aio.Producer", "publish"): {"topics": TOPICS, "timeout": POSITIVE_TIMEOUT},
    ("aio.Producer", "flush"): {"timeout": WAIT_TIMEOUT},
    ("aio.Producer", "close"): {"timeout": WAIT_TIMEOUT},
    # The keys of the configuration are tests/unit/test_bad_input.py's table.
    ("Producer()", "__init__"): {"config": CONFIG, "stats_cb": CALLBACK},
    ("aio.Producer()", "__init__"): {"config": CONFIG},
    ("tubemq.errors", "error_from_code"): {
        "code": [
            ("1000", "type"),
            (True, "type"),
            (None, "none"),
            (1.0, "type"),
            (1 << 40, "range"),
        ],
        "message": [(None, "none"), (b"m", "bytes"), (5, "type")],
    },
    ("tubemq.errors", "error_class_for"): {
        "code": [("1000", "type"), (None, "none"), (1.0, "type"), (-(1 << 40), "range")]
    },
}

# Parameters of public methods that take no checked value, and why.
NOT_CHECKED: dict[tuple[str, str], dict[str, str]] = {
    ("Producer()", "__init__"): {"overrides": "configuration keys: test_bad_input.py's table"},
    ("aio.Producer()", "__init__"): {"overrides": "configuration keys: test_bad_input.py's table"},
}

# --- consumer methods -------------------------------------------------------------------
# "Consumer" is what tubemq.Consumer and tubemq.AssignedConsumer share (ConsumerBase); its
# rows and AssignedConsumer's run on live members in tests/integration/
# test_consumer_arguments.py, the asyncio consumer's and the module's in tests/unit.
# A poll's timeout takes 0 (do not wait) and None (no bound): the always-bad values remain.
POLL_TIMEOUT = TIMEOUT_ALWAYS_BAD
COMMITTABLE = [("x", "type"), (5, "type"), (b"m", "bytes"), ([1], "type")]
KEYS = [("1:t:0", "type"), (None, "none"), ([5], "type"), (b"1:t:0", "bytes")]
FLAG = [("yes", "type"), (None, "none"), (1, "type")]
OPTIONAL_FLAG = [("yes", "type"), (1, "type"), (0, "type")]  # None: as configured
COUNT = [("1", "type"), (None, "none"), (True, "type"), (1.5, "type"), (-1, "range")]

GOOD_CALLS.update(
    {
        ("Consumer", "poll"): {},
        ("Consumer", "poll_batch"): {},
        ("Consumer", "consume"): {},
        ("Consumer", "commit"): {},
        ("Consumer", "nack"): {"message": None},  # the bad value replaces it
        ("Consumer", "pause"): {"partition_keys": []},
        ("Consumer", "resume"): {"partition_keys": []},
        ("Consumer", "close"): {},
        ("AssignedConsumer", "partitions"): {},
        ("AssignedConsumer", "my_partitions"): {},
        ("AssignedConsumer", "assign"): {"offsets": {}},
        ("AssignedConsumer", "seek"): {"partition_key": "1:t:0", "offset": 0},
        ("AssignedConsumer", "unassign"): {"partition_keys": []},
        ("aio.Consumer", "poll"): {},
        ("aio.Consumer", "commit"): {},
        ("aio.Consumer", "nack"): {"message": None},
        ("aio.Consumer", "close"): {},
        ("tubemq.assigned_consumer", "java_string_hash"): {"text": "1:t:0"},
        ("tubemq.assigned_consumer", "partitions_for_node"): {
            "keys": ["1:t:0"],
            "source_count": 2,
            "node_id": 0,
        },
        ("tubemq.assigned_consumer", "message_count"): {"start_offset": 0, "end_offset": 28},
    }
)
BAD_VALUES.update(
    {
        ("Consumer", "poll"): {"timeout": POLL_TIMEOUT},
        ("Consumer", "poll_batch"): {"timeout": POLL_TIMEOUT},
        ("Consumer", "consume"): {
            "max_messages": [*COUNT, (0, "range")],
            "timeout": POLL_TIMEOUT,
        },
        ("Consumer", "commit"): {"message": COMMITTABLE, "asynchronous": OPTIONAL_FLAG},
        ("Consumer", "nack"): {"message": [*COMMITTABLE, (None, "none")]},
        ("Consumer", "pause"): {"partition_keys": KEYS},
        ("Consumer", "resume"): {"partition_keys": KEYS},
        ("Consumer", "close"): {"timeout": WAIT_TIMEOUT},
        ("AssignedConsumer", "partitions"): {"refresh": FLAG},
        ("AssignedConsumer", "my_partitions"): {"refresh": FLAG},
        ("AssignedConsumer", "assign"): {
            "offsets": [
                *KEYS,
                (5, "type"),
                ({"1:t:0": -1}, "range"),
                ({"1:t:0": "0"}, "value"),
                ({5: 0}, "value"),
            ]
        },
        ("AssignedConsumer", "seek"): {
            "partition_key": [(5, "type"), (None, "none"), (b"1:t:0", "bytes")],
            "offset": COUNT,
        },
        ("AssignedConsumer", "unassign"): {"partition_keys": KEYS, "commit": FLAG},
        ("aio.Consumer", "poll"): {"timeout": POLL_TIMEOUT},
        ("aio.Consumer", "commit"): {"message": COMMITTABLE, "asynchronous": OPTIONAL_FLAG},
        ("aio.Consumer", "nack"): {"message": [*COMMITTABLE, (None, "none")]},
        ("aio.Consumer", "close"): {"timeout": WAIT_TIMEOUT},
        ("tubemq.assigned_consumer", "java_string_hash"): {
            "text": [(5, "type"), (None, "none"), (b"x", "bytes")]
        },
        ("tubemq.assigned_consumer", "partitions_for_node"): {
            "keys": [("1:t:0", "type"), (None, "none"), ([5], "type")],
            "source_count": COUNT,
            "node_id": COUNT,
        },
        ("tubemq.assigned_consumer", "message_count"): {
            "start_offset": COUNT,
            "end_offset": COUNT,
        },
    }
)
# --- end of the consumer section ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    target: str
    method: str
    argument: str
    value: Any
    kind: str

    @property
    def id(self) -> str:
        return f"{self.target}.{self.method}-{self.argument}-{self.kind}-{self.value!r:.30}"

    def arguments(self, topic: str) -> dict[str, Any]:
        """The good call's arguments with this row's bad value in place."""
        good = {
            name: topic if value == TOPIC else value
            for name, value in GOOD_CALLS[(self.target, self.method)].items()
        }
        return {**good, self.argument: self.value}


def check_error(error: BaseException, row: Row) -> None:
    """What every row's error must be: a ConfigError naming the argument (in ``key`` and
    in the text), also a TypeError for a wrong type, and not pybind11's own TypeError."""
    import tubemq

    assert isinstance(error, tubemq.ConfigError), repr(error)
    assert error.key == row.argument, error
    assert row.argument in str(error), error
    assert error.code == 1010 and not error.retriable
    if row.kind in TYPE_KINDS:
        assert isinstance(error, tubemq.ArgumentTypeError), repr(error)
        assert isinstance(error, TypeError)
    assert "incompatible function arguments" not in str(error)


def rows(*targets: str) -> list[Row]:
    out = []
    for (target, method), arguments in BAD_VALUES.items():
        if targets and target not in targets:
            continue
        for argument, values in arguments.items():
            for value, kind in values:
                assert kind in KINDS, kind
                out.append(Row(target, method, argument, value, kind))
    return out
