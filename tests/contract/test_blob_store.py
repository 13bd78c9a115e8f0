"""The blob store port over both adapters (file system, memory): blobs read back as written,
``stored`` lists exactly the blobs stored before a moment (by the store's clock, at ``put`` or
``adopt``), and ``discard_incoming`` removes only uploads left in the incoming area for as
long."""

from __future__ import annotations

import asyncio
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.blobs import FileBlobStore, InMemoryBlobStore

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make(kind: str, folder: Path, clock: Clock) -> Any:
    if kind == "filesystem":
        return FileBlobStore(folder / "blobs", clock=clock)
    return InMemoryBlobStore(clock=clock)


@pytest.fixture(params=["filesystem", "memory"])
def kind(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(kind: str, tmp_path: Path, clock: Clock) -> Any:
    return make(kind, tmp_path, clock)


async def listed(store: Any, before: datetime) -> set[str]:
    return {key async for key in store.stored(before)}


def age(path: Path, moment: datetime) -> None:
    os.utime(path, (moment.timestamp(), moment.timestamp()))


async def test_put_get_delete(store: Any) -> None:
    assert await store.put("ab12-x", b"one") == 3
    assert await store.get("ab12-x") == b"one"
    await store.delete("ab12-x")
    await store.delete("ab12-x")  # deleting what is gone is fine
    with pytest.raises((FileNotFoundError, KeyError)):
        await store.get("ab12-x")


async def test_stored_lists_blobs_by_when_they_were_stored(store: Any, clock: Clock) -> None:
    clock.now = T0 - 2 * HOUR
    await store.put("aa-old", b"1")
    incoming = store.incoming()
    incoming.write_bytes(b"adopted")
    age(incoming, T0 - 3 * HOUR)  # an upload streamed long ago is stored when adopted
    clock.now = T0 - 10 * timedelta(minutes=1)
    await store.adopt("bb-adopted", incoming)
    await store.put("cc-young", b"2")
    assert await listed(store, T0 - HOUR) == {"aa-old"}
    assert await listed(store, T0) == {"aa-old", "bb-adopted", "cc-young"}
    assert await listed(store, T0 - 3 * HOUR) == set()
    clock.now = T0
    await store.put("aa-old", b"stored again")  # storing a key again makes it young
    await store.delete("cc-young")
    assert await listed(store, T0) == {"bb-adopted"}


async def test_only_old_uploads_left_in_the_incoming_area_are_discarded(store: Any) -> None:
    old, young = store.incoming(), store.incoming()
    old.write_bytes(b"left by a crash")
    young.write_bytes(b"still being written")
    age(old, T0 - 2 * HOUR)
    age(young, T0 - 10 * timedelta(minutes=1))
    assert await store.discard_incoming(T0 - HOUR) == 1
    assert not old.exists() and young.exists()
    assert await store.adopt("dd-upload", young) == len(b"still being written")
    assert await store.discard_incoming(T0) == 0
    assert await listed(store, T0 + HOUR) == {"dd-upload"}


def test_the_file_store_lists_only_its_blobs(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, clock=Clock())

    async def run() -> set[str]:
        await store.put("ee-blob", b"x")
        (tmp_path / "ee" / "not a key").write_bytes(b"y")
        (tmp_path / "stray.txt").write_bytes(b"z")
        (tmp_path / "ee" / "nested").mkdir()
        store.incoming().write_bytes(b"an upload")
        return await listed(store, T0 + HOUR)

    assert asyncio.run(run()) == {"ee-blob"}


ages = st.dictionaries(
    st.from_regex(r"[0-9a-f]{2}[0-9a-z-]{1,20}", fullmatch=True),
    st.integers(-300, 300),  # minutes before T0 (negative: after)
    max_size=12,
)


@pytest.mark.parametrize("backend", ["filesystem", "memory"])
@settings(max_examples=40, deadline=None)
@given(ages=ages, grace=st.integers(0, 240))
def test_stored_is_exactly_the_blobs_older_than_the_moment(
    backend: str, ages: dict[str, int], grace: int
) -> None:
    with tempfile.TemporaryDirectory(prefix="fourcorner-blobs-test-") as folder:
        clock = Clock()
        store = make(backend, Path(folder), clock)

        async def run() -> set[str]:
            for key, minutes in ages.items():
                clock.now = T0 - timedelta(minutes=minutes)
                await store.put(key, key.encode())
            return await listed(store, T0 - timedelta(minutes=grace))

        assert asyncio.run(run()) == {k for k, m in ages.items() if m > grace}
