"""The background loops (deadlines, the delivery engine) end when their event loop ends."""

from __future__ import annotations

import asyncio

from askuser_app.runtime.background import Loop


async def test_a_loop_cancelled_in_the_step_it_is_woken_still_ends():
    turns = 0
    asleep = asyncio.Event()

    async def turn():
        nonlocal turns
        turns += 1
        asleep.set()  # the loop goes to sleep after this turn
        return None

    loop = Loop("Testing", turn, recheck=3600)
    loop.ensure_running()
    await asyncio.wait_for(asleep.wait(), 5)
    await asyncio.sleep(0)  # into its sleep
    assert loop.task is not None and loop.woken is not None

    loop.woken.set()  # woken, and cancelled before it runs again: as when a server stops mid-wake
    loop.task.cancel()

    done, _ = await asyncio.wait([loop.task], timeout=5)
    assert done, "the loop swallowed its cancellation and kept running"
    assert loop.task.cancelled()
    assert turns == 1


async def test_wakes_that_come_while_a_calm_loop_rests_make_one_turn():
    turns: list[int] = []
    second = asyncio.Event()

    async def turn():
        turns.append(len(turns) + 1)
        if len(turns) == 2:
            second.set()
        return None

    loop = Loop("Testing", turn, recheck=3600, calm=0.2)
    loop.ensure_running()
    for _n in range(100):  # a burst, as attempts landing one by one wake it
        loop.wake()
        await asyncio.sleep(0)
    await asyncio.wait_for(second.wait(), 5)
    for _n in range(3):
        await asyncio.sleep(0)
    assert loop.task is not None
    loop.task.cancel()

    assert turns == [1, 2]  # the first at once, then one for the whole burst
