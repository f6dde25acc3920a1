"""tubemq.aio against the real cluster: awaitable sends, async iteration, and an event
loop that stays free while the clients wait."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

import tubemq
import tubemq.aio

pytestmark = pytest.mark.integration


def test_concurrent_sends_and_async_iteration_deliver_every_message(master, topics):
    topic, marker = topics[4], f"aio_{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[list[tubemq.SendResult], set[int]]:
        async with tubemq.aio.Producer(master=master, max_in_flight=16) as producer:
            await producer.publish(topic)
            results = await asyncio.gather(
                *(producer.send(topic, f"{marker}-{i}".encode()) for i in range(300))
            )
        received: set[int] = set()
        async with tubemq.aio.Consumer(
            master=master,
            group=f"aio_{uuid.uuid4().hex[:8]}",
            topics=[topic],
            consume_from="earliest",
        ) as consumer:
            deadline = time.monotonic() + 60
            async for message in consumer:
                if bytes(message).startswith(marker.encode()):
                    received.add(message.message_id)
                if len(received) == 300 or time.monotonic() > deadline:
                    break
        return results, received

    results, received = asyncio.run(scenario())
    assert len(results) == 300
    assert {result.message_id for result in results} == received


@pytest.mark.parametrize("window", [2, 8])
def test_a_send_made_as_the_previous_outcome_arrives_never_finds_the_window_full(
    master, topics, window
):
    # Each send waits for a place, and a place frees as an outcome reaches the loop. The
    # I/O thread used to give the native place back only after it had handed the outcome
    # on, so the next send could find the window full (QueueFullError) a few times in
    # 10 000 sends.
    topic = topics[4]

    async def scenario() -> list[BaseException]:
        async with tubemq.aio.Producer(master=master, max_in_flight=window) as producer:
            await producer.publish(topic)
            outcomes = await asyncio.gather(
                *(producer.send(topic, b"w%d" % i) for i in range(10_000)),
                return_exceptions=True,
            )
        return [outcome for outcome in outcomes if isinstance(outcome, BaseException)]

    assert asyncio.run(scenario()) == []


def test_the_loop_keeps_running_while_a_poll_waits(master, topics):
    async def scenario() -> tuple[int, float, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        async with tubemq.aio.Consumer(
            master=master,
            group=f"aio_{uuid.uuid4().hex[:8]}",
            topics=[topics[4]],
            consume_from="latest",
        ) as consumer:
            task = asyncio.create_task(ticker())
            threads_before = threading.active_count()
            started = time.monotonic()
            for _ in range(3):
                assert await consumer.poll(0.5) is None  # nothing new arrives
            waited = time.monotonic() - started
            threads_during = threading.active_count()
            task.cancel()
        return ticks, waited, threads_during - threads_before

    ticks, waited, extra_threads = asyncio.run(scenario())
    assert waited >= 1.4
    assert ticks >= 50  # about 140 ticks of 10 ms: the loop was never blocked for long
    assert extra_threads <= 0  # the waits use the client's one worker thread


def test_a_closed_or_unstarted_client_raises_a_typed_error(master):
    async def scenario() -> None:
        producer = tubemq.aio.Producer(master=master)
        with pytest.raises(tubemq.ClientClosedError):
            await producer.send("t", b"x")
        await producer.start()
        await producer.close()
        with pytest.raises(tubemq.ClientClosedError):
            await producer.send("t", b"x")

    asyncio.run(scenario())
