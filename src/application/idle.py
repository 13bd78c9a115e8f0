"""How the workers wait between rounds: until they are stopped, woken or their poll is over."""

from __future__ import annotations

import asyncio


async def idle(stop: asyncio.Event, seconds: float, wake: asyncio.Event | None = None) -> None:
    """Wait until ``stop`` is set, ``wake`` is set or ``seconds`` have passed, whichever comes
    first. A wake-up that came during the round just finished ends the wait at once: that
    round may have looked for work before the work it announces was committed. ``wake`` is
    cleared when it ends a wait, so the next round's own wake-ups count."""
    if wake is not None and wake.is_set():
        wake.clear()
        return
    waiters = [asyncio.ensure_future(e.wait()) for e in (stop, wake) if e is not None]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
    if wake is not None:
        wake.clear()
