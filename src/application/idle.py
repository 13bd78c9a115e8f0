"""How the workers wait between rounds: until they are stopped, woken or their poll is over."""

from __future__ import annotations

import asyncio


async def idle(stop: asyncio.Event, seconds: float, wake: asyncio.Event | None = None) -> None:
    """Wait until ``stop`` is set, ``wake`` is set or ``seconds`` have passed, whichever comes
    first. ``wake`` is cleared before the wait, so only a wake-up from then on ends it (a set
    ``stop`` ends it at once)."""
    if wake is not None:
        wake.clear()
    waiters = [asyncio.ensure_future(e.wait()) for e in (stop, wake) if e is not None]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
