"""Bad arguments, table-driven (tests/argument_table.py): the rows that need no cluster
(the asyncio producer before it starts, the constructors, the module functions), the
shared timeout check itself, and the table's coverage of every public parameter. The
live producer's rows are in tests/integration/test_bad_sends.py."""

from __future__ import annotations

import asyncio
import inspect
import math
import socket
from typing import Any

import pytest

import tubemq
import tubemq.aio
from argument_table import BAD_VALUES, GOOD_CALLS, NOT_CHECKED, Row, check_error, rows
from tubemq import _config, assigned_consumer, errors
from tubemq._consumer_base import ConsumerBase


def _dead_master() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


DEAD_MASTER = _dead_master()
UNIT_TARGETS = (
    "aio.Producer",
    "Producer()",
    "aio.Producer()",
    "tubemq.errors",
    "aio.Consumer",
    "tubemq.assigned_consumer",
)

# The objects whose public methods the table must cover, by target.
CLASSES: dict[str, Any] = {
    "Producer": tubemq.Producer,
    "aio.Producer": tubemq.aio.Producer,
    "Consumer": ConsumerBase,  # what Consumer and AssignedConsumer share
    "AssignedConsumer": tubemq.AssignedConsumer,
    "aio.Consumer": tubemq.aio.Consumer,
}
CONSTRUCTORS: dict[str, Any] = {
    "Producer()": tubemq.Producer,
    "aio.Producer()": tubemq.aio.Producer,
}
MODULES: dict[str, Any] = {"tubemq.errors": errors, "tubemq.assigned_consumer": assigned_consumer}


def _call(row_or_target: Row | str, method: str = "", arguments: dict[str, Any] | None = None):
    if isinstance(row_or_target, Row):
        target, method = row_or_target.target, row_or_target.method
        arguments = row_or_target.arguments("t_unit")
    else:
        target = row_or_target
    assert arguments is not None
    if target == "aio.Producer":
        producer = tubemq.aio.Producer(master=DEAD_MASTER)
        return asyncio.run(getattr(producer, method)(**arguments))
    if target == "aio.Consumer":  # not started: the arguments are checked first
        consumer = tubemq.aio.Consumer(master=DEAD_MASTER, group="g_unit", topics=["t_unit"])
        return asyncio.run(getattr(consumer, method)(**arguments))
    if target in CONSTRUCTORS:
        config = arguments.pop("config", None)
        return CONSTRUCTORS[target](config, master=DEAD_MASTER, **arguments)
    return getattr(MODULES[target], method)(**arguments)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in rows(*UNIT_TARGETS)])
def test_a_bad_argument_is_a_config_error_naming_it(row):
    with pytest.raises(tubemq.TubeMQError) as info:
        _call(row)
    check_error(info.value, row)
    assert tubemq._core.service_state()["io_threads"] == 0  # nothing started


@pytest.mark.parametrize("method", ["send", "publish", "flush", "close"])
def test_the_good_aio_calls_pass_the_checks(method):
    # The control of the aio rows: the good call gets past every check, to the
    # "not started" error (close of a producer never started is a no-op).
    arguments = {
        name: "t_unit" if value == "{topic}" else value
        for name, value in GOOD_CALLS[("aio.Producer", method)].items()
    }
    if method == "close":
        assert _call("aio.Producer", method, arguments) is None
        return
    with pytest.raises(tubemq.ClientClosedError):
        _call("aio.Producer", method, arguments)


def test_the_good_module_calls_pass_the_checks():
    assert isinstance(errors.error_from_code(1003, "m"), tubemq.OutcomeUnknownError)
    assert errors.error_class_for(1010) is tubemq.ConfigError


def _public_parameters(function: Any) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def _public_methods(cls: Any) -> dict[str, Any]:
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def test_every_parameter_of_every_public_method_has_bad_values():
    covered = {
        key: set(values) | set(NOT_CHECKED.get(key, {})) for key, values in BAD_VALUES.items()
    }
    missing = []
    for target, cls in CLASSES.items():
        for name, method in _public_methods(cls).items():
            for parameter in _public_parameters(method):
                if parameter not in covered.get((target, name), set()):
                    missing.append(f"{target}.{name}({parameter})")
    for target, cls in CONSTRUCTORS.items():
        for parameter in _public_parameters(cls.__init__):
            if parameter not in covered.get((target, "__init__"), set()):
                missing.append(f"{target}({parameter})")
    for target, module in MODULES.items():
        for name, function in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(function):
                continue
            if function.__module__ != module.__name__:
                continue
            for parameter in _public_parameters(function):
                if parameter not in covered.get((target, name), set()):
                    missing.append(f"{target}.{name}({parameter})")
    assert not missing, f"add bad values to tests/argument_table.py for: {missing}"


def test_every_table_entry_names_a_real_parameter():
    for (target, method), arguments in BAD_VALUES.items():
        if target in CONSTRUCTORS:
            function = CONSTRUCTORS[target].__init__
        else:
            function = getattr(CLASSES.get(target) or MODULES[target], method)
        parameters = set(_public_parameters(function))
        assert set(arguments) <= parameters, (target, method, set(arguments) - parameters)
        assert set(GOOD_CALLS[(target, method)]) <= parameters, (target, method)


# --- the shared timeout check ---------------------------------------------------------


@pytest.mark.parametrize(
    "value, options, expected",
    [
        (None, {}, None),
        (1, {}, 1.0),
        (0.25, {}, 0.25),
        (_config.MAX_TIMEOUT_S, {}, _config.MAX_TIMEOUT_S),
        (0, {"allow_zero": True}, 0.0),
        (0.0, {"allow_zero": True}, 0.0),
        (0.001, {"minimum": 0.001}, 0.001),
        (1e-9, {}, 1e-9),  # positive: fine where no minimum is asked for
    ],
)
def test_check_timeout_accepts(value, options, expected):
    assert _config.check_timeout(value, "timeout", **options) == expected


@pytest.mark.parametrize(
    "value, options, error_class",
    [
        (None, {"allow_none": False}, tubemq.ArgumentTypeError),
        ("1", {}, tubemq.ArgumentTypeError),
        (True, {}, tubemq.ArgumentTypeError),
        (False, {"allow_zero": True}, tubemq.ArgumentTypeError),
        (0, {}, tubemq.ConfigError),
        (-0.0, {}, tubemq.ConfigError),
        (-1, {"allow_zero": True}, tubemq.ConfigError),
        (math.nan, {"allow_zero": True}, tubemq.ConfigError),
        (math.inf, {}, tubemq.ConfigError),
        (-math.inf, {"allow_zero": True}, tubemq.ConfigError),
        (_config.MAX_TIMEOUT_S * 2, {}, tubemq.ConfigError),
        (0.0005, {"minimum": 0.001}, tubemq.ConfigError),
    ],
)
def test_check_timeout_refuses(value, options, error_class):
    with pytest.raises(error_class) as info:
        _config.check_timeout(value, "poll_timeout", **options)
    assert info.value.key == "poll_timeout"
    assert "poll_timeout" in str(info.value)


def test_an_infinite_timeout_points_at_none():
    with pytest.raises(tubemq.ConfigError, match="use None"):
        _config.check_timeout(math.inf, "timeout")
