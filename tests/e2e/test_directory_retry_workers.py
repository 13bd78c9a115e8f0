"""The directory's retries by two ``fourcorner worker`` processes on one PostgreSQL: business
cards left OUTDATED while the directory did not answer are asked for again, with backoff,
while it still refuses, and once it answers each card is indexed by exactly one call and is
PUBLISHED."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pg
from directory_indexer import PATH, SCHEME, Indexer
from directory_world import World, directory_world, gln
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import BusinessCard, Participant, PublicationState
from fourcorner.entrypoints.config import Settings

from .test_sml_serve import eventually
from .test_workers import start_worker

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
CARDS = 25


async def states(world: World, made: list[Participant]) -> Counter[PublicationState]:
    return Counter([(await world.get(p)).directory.state for p in made])


async def test_two_worker_processes_ask_again_and_index_each_card_once(
    tmp_path: Path, aiohttp_server: Any
) -> None:
    pg.require()
    indexer = Indexer()
    indexer.refuse = 503
    server = await aiohttp_server(indexer.app())
    ensure_test_pki(tmp_path)
    with pg.fresh_schema("fc_dirretry") as schema:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATA_DIR": str(tmp_path),
            "FOURCORNER_DATABASE_URL": pg.URL,
            "FOURCORNER_DATABASE_SCHEMA": schema,
            "FOURCORNER_DIRECTORY_RETRY_DELAYS": "0.5",
            "FOURCORNER_LOG_LEVEL": "warning",
        }
        # the cards changed while the directory did not answer (this process's directory is
        # the in-memory one; the workers', the indexer)
        async with directory_world(Settings.load(env)) as world:
            made = []
            for i in range(CARDS):
                p = await world.participant(f"0088:{gln(500 + i)}", Environment.TEST, "A")
                made.append(p)
            await world.publish(*made)
            world.directory.down = "the directory answered 503"
            for p in made:
                await world.update(p, business_card=BusinessCard(legal_name="B", country_code="SE"))
            assert (await states(world, made))[PublicationState.OUTDATED] == CARDS
            url = str(server.make_url(PATH))
            workers = [start_worker(env, FOURCORNER_DIRECTORY_URL_TEST=url) for _ in range(2)]
            try:
                # refused: each card asked again after an unanswered attempt
                async def each_asked_twice() -> bool:
                    assert all(w.poll() is None for w in workers)
                    asked = Counter(p for _, p in indexer.calls)
                    return len(asked) == CARDS and min(asked.values()) >= 2

                await eventually(each_asked_twice, "each card asked twice", tmp_path / "worker.log")
                indexer.refuse = None
                switched = len(indexer.calls)

                async def published() -> bool:
                    return (await states(world, made))[PublicationState.PUBLISHED] == CARDS

                await eventually(published, "every card PUBLISHED", tmp_path / "worker.log")
            finally:
                for w in workers:
                    w.terminate()
                for w in workers:
                    assert w.wait(timeout=20) == 0
            after = Counter(p for _, p in indexer.calls[switched:])
            wanted = {f"{SCHEME}::{p.identifier_key}" for p in made}
            assert set(after) == wanted and set(after.values()) == {1}, after
            for p in made:
                now = await world.get(p)
                assert now.directory.reason is None and now.directory_retry.attempts == 0
            refused = Counter(p for _, p in indexer.calls[:switched])
            assert set(refused) == wanted and min(refused.values()) >= 2
