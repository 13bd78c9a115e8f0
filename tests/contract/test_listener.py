"""The PostgreSQL listener hears notifications anyone able to connect may send: a malformed one,
or one whose handling fails, is ignored and the listener goes on; ``stop`` never raises
(``adapters.postgres.listener``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.changes import Watchers
from fourcorner.adapters.postgres import failures
from fourcorner.adapters.postgres.listener import CHANNEL, Listener

SENDER = "b" * 12
KEY = b"k" * 32


def failed(schema: str, address: str) -> str:
    """The notification another process of ``schema`` sends of one failure of ``address``."""
    sender = failures.FailureShare(schema, SENDER, lambda _: None, [KEY])
    sender.resume()
    sender.failed([address])
    return sender.take()[0]


async def until(condition: Callable[[], object], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"never: {what}")


@pytest.mark.postgres
async def test_malformed_or_failing_notifications_leave_the_listener_hearing(
    postgres_url_and_schema: tuple[str, str],
) -> None:
    url, schema = postgres_url_and_schema
    heard: list[Mapping[str, int]] = []
    woken: list[str] = []
    watchers = Watchers()
    watchers.add(["users"], lambda: woken.append("users"))

    def hear(note: Mapping[str, int]) -> None:
        if "addr:198.51.100.1" in note:
            raise RuntimeError("a tracker that fails")
        heard.append(note)

    listener = Listener(url, schema, timeout=5, cache=None, watchers=watchers)
    listener.share_failures(hear, [KEY])
    listener.start()
    try:
        await until(lambda: listener.listening, "listening")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for channel, payload in [
                (CHANNEL, f"{schema}:x"),
                (CHANNEL, f"{schema}:{SENDER}:users"),
                (CHANNEL, f"{schema}:{SENDER}:a:b:c"),
                (CHANNEL, f"{schema}:{'z' * 12}::users"),
                (failures.CHANNEL, failed(schema, "addr:198.51.100.1")),
                (failures.CHANNEL, f"{schema}:x"),
                (CHANNEL, f"{schema}:{SENDER}::users"),
                (failures.CHANNEL, failed(schema, "addr:192.0.2.1")),
            ]:
                await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
            await until(lambda: heard and woken, "the well-formed notifications heard")
        assert heard == [{"addr:192.0.2.1": 1}]
        assert woken == ["users"]
        assert listener.listening
    finally:
        await listener.stop()


@given(payload=st.text(max_size=200))
def test_whatever_is_notified_of_commits_only_well_formed_payloads_wake_watchers(
    payload: str,
) -> None:
    woken: list[str] = []
    watchers = Watchers()
    watchers.add(["users"], lambda: woken.append("users"))
    listener = Listener("postgresql://", "fc", timeout=5, cache=None, watchers=watchers)
    listener._notified(CHANNEL, f"fc:{payload}", "fc:", f"fc:{'a' * 12}:")
    if woken:
        sender, _, added = payload.split(":")
        assert len(sender) == 12 and sender != "a" * 12
        assert "users" in added.split(",")


async def test_stop_never_raises_what_the_listeners_task_raised() -> None:
    listener = Listener("postgresql://", "fc", timeout=5, cache=None, watchers=Watchers())

    async def failed() -> None:
        raise RuntimeError("a listener that failed")

    listener._task = asyncio.create_task(failed())
    await asyncio.sleep(0)
    await listener.stop()
