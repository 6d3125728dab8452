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
