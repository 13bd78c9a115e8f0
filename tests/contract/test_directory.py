"""The directory adapter over real HTTP, against a test indexer on 127.0.0.1 per environment
(``directory_indexer``): what it sends the indexer (NETWORK.md section 6), that each
environment's participant goes to that environment's indexer only, and how a directory that
refuses or cannot be reached is told."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from aiohttp import web

from directory_indexer import PATH, Indexer
from fourcorner.adapters.directory import EnvironmentDirectories, IndexerDirectoryPublisher
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.adapter_setup import directory
from fourcorner.entrypoints.config import Settings

TEST, PROD = Environment.TEST, Environment.PROD
ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]
ID = "0088:7300010000715"
FULL = f"iso6523-actorid-upis::{ID}"


@pytest.fixture
async def indexers(aiohttp_server: ServerFactory) -> dict[Environment, tuple[Indexer, str]]:
    """An indexer for TEST and one for PROD, each with its URL."""
    out = {}
    for env in (TEST, PROD):
        indexer = Indexer()
        server = await aiohttp_server(indexer.app())
        out[env] = (indexer, str(server.make_url(PATH)))
    return out


@pytest.fixture
async def both(indexers: Any) -> AsyncIterator[EnvironmentDirectories]:
    """The directories as the container makes them from the two settings."""
    made = directory(
        Settings(directory_url_test=indexers[TEST][1], directory_url_prod=indexers[PROD][1])
    )
    assert isinstance(made, EnvironmentDirectories)
    yield made
    await made.aclose()


async def test_each_environment_publishes_to_its_own_indexer(indexers, both) -> None:
    (test, _), (prod, _) = indexers[TEST], indexers[PROD]
    await both.publish(TEST, ID.upper())
    assert (test.calls, prod.calls) == ([("PUT", FULL)], [])
    await both.publish(PROD, ID)
    assert prod.calls == [("PUT", FULL)] and set(test.cards) == set(prod.cards) == {FULL}


async def test_withdrawing_in_one_environment_leaves_the_others_card(indexers, both) -> None:
    (test, _), (prod, _) = indexers[TEST], indexers[PROD]
    for env in (TEST, PROD):
        await both.publish(env, ID)
    await both.withdraw(TEST, ID)
    assert test.calls[-1] == ("DELETE", FULL)  # the identifier, percent-encoded in the path
    assert (set(test.cards), set(prod.cards)) == (set(), {FULL})
    assert [m for m, _ in prod.calls] == ["PUT"]
    # a card the directory no longer has is withdrawn already
    await both.withdraw(TEST, ID)
    assert test.calls[-1] == ("DELETE", FULL)


async def test_an_environment_without_an_indexer_contacts_none(indexers) -> None:
    (test, url), (prod, _) = indexers[TEST], indexers[PROD]
    only_test = directory(Settings(directory_url_test=url))
    assert isinstance(only_test, EnvironmentDirectories)
    try:
        await only_test.publish(PROD, ID)
        await only_test.withdraw(PROD, ID)
        assert prod.calls == [] and test.calls == []
        await only_test.publish(TEST, ID)
        assert test.calls == [("PUT", FULL)]
    finally:
        await only_test.aclose()
    nowhere = directory(Settings())
    await nowhere.publish(TEST, ID)
    assert test.calls == [("PUT", FULL)]


@pytest.mark.parametrize("status", [500, 503, 403])
async def test_a_refusing_directory_is_unavailable(indexers, both, status) -> None:
    indexers[PROD][0].refuse = status
    for call in (both.publish, both.withdraw):
        with pytest.raises(ServiceUnavailable) as e:
            await call(PROD, ID)
        assert e.value.reason == f"the directory answered {status}"
    await both.publish(TEST, ID)  # the other environment's directory is another one


async def test_a_directory_that_cannot_be_reached_is_unavailable(aiohttp_server) -> None:
    server = await aiohttp_server(Indexer().app())
    url = str(server.make_url(PATH))
    await server.close()
    gone = IndexerDirectoryPublisher(url, timeout=5)
    try:
        for call in (gone.publish, gone.withdraw):
            with pytest.raises(ServiceUnavailable) as e:
                await call(ID)
            assert e.value.reason.startswith("the directory cannot be reached")
    finally:
        await gone.aclose()
