"""The consumer rows of the argument table (tests/argument_table.py) on live members:
each bad argument is a ConfigError naming it, raised before the member does anything,
and the member goes on working afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import tubemq
from argument_table import Row, check_error, rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def members(master: str, topics: list[str]) -> Iterator[dict[str, tubemq.Consumer]]:
    topic = topics[5]
    group = f"g_args_{uuid.uuid4().hex[:8]}"
    consumer = tubemq.Consumer(master=master, group=group, topics=[topic])
    assigned = tubemq.AssignedConsumer(master=master, group=f"{group}_a", topics=[topic])
    try:
        yield {"Consumer": consumer, "AssignedConsumer": assigned}
    finally:
        consumer.close()
        assigned.close()


@pytest.mark.parametrize(
    "row", [pytest.param(r, id=r.id) for r in rows("Consumer", "AssignedConsumer")]
)
def test_a_bad_consumer_argument_is_a_config_error_naming_it(members, row: Row):
    member = members[row.target]
    with pytest.raises(tubemq.TubeMQError) as info:
        getattr(member, row.method)(**row.arguments("t"))
    check_error(info.value, row)
    assert not member.closed
    member.poll(0)  # still usable: a poll after the refusal neither raises nor hangs
